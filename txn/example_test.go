package txn_test

import (
	"fmt"

	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/txn"
)

// ids hands out producer ids from a counter, as a node does from the block
// its controller reserved for it.
type ids struct{ next int64 }

func (a *ids) NextProducerID() (int64, error) {
	a.next++
	return a.next - 1, nil
}

// Example_transaction drives a coordinator through one transaction, doing
// its effects as a broker would: appending to __transaction_state (here,
// succeeding at once), writing markers, answering the producer.
func Example_transaction() {
	c, err := txn.New(&ids{next: 1000}, txn.Options{})
	if err != nil {
		panic(err)
	}
	now := int64(1_700_000_000_000)
	partition := txn.PartitionFor("billing", txn.DefaultStatePartitions)
	if err := c.Load(partition, 7, nil, now); err != nil { // this node now leads it, in epoch 7
		panic(err)
	}
	run := func() {
		for c.HasReady() {
			rd := c.Ready()
			for _, a := range rd.Appends {
				v, _ := txn.DecodeValue(a.Records[0].Value)
				fmt.Printf("append to %s-%d: %s, producer %d, epoch %d\n", txn.StateTopic, a.Partition, v.State, v.ProducerID, v.ProducerEpoch)
				c.AppendDone(a.ID, nil, now) // durable
			}
			for _, m := range rd.Markers {
				fmt.Printf("write %s markers of producer %d, epoch %d, coordinator epoch %d to %v\n",
					m.Result, m.ProducerID, m.ProducerEpoch, m.CoordinatorEpoch, m.Partitions)
				var results []txn.MarkerResult
				for _, tp := range m.Partitions {
					results = append(results, txn.MarkerResult{Partition: tp})
				}
				c.MarkersDone(m.ID, results, now)
			}
			for _, a := range rd.Answers {
				fmt.Printf("answer request %d: producer %d, epoch %d, err %v\n", a.Request, a.ProducerID, a.ProducerEpoch, a.Err)
			}
		}
	}

	c.InitProducerID(txn.InitProducerIDRequest{ID: 1, Version: 5, TransactionalID: "billing", TransactionTimeoutMs: 60_000,
		ProducerID: -1, ProducerEpoch: -1}, now)
	run()
	c.AddPartitions(txn.AddPartitionsRequest{ID: 2, Version: 3, TransactionalID: "billing", ProducerID: 1000, ProducerEpoch: 0,
		Partitions: []kafka.TopicPartition{{Topic: "payments", Partition: 0}, {Topic: "payments", Partition: 1}}}, now)
	run()
	fmt.Println("verify payments-1:", c.VerifyPartitions("billing", 1000, 0, []kafka.TopicPartition{{Topic: "payments", Partition: 1}})[0].Err)
	c.EndTxn(txn.EndTxnRequest{ID: 3, Version: 5, TransactionalID: "billing", ProducerID: 1000, ProducerEpoch: 0,
		Result: txn.Commit, TransactionVersion: txn.TV2}, now)
	run()
	fmt.Println("verify payments-1 at epoch 0:", c.VerifyPartitions("billing", 1000, 0, []kafka.TopicPartition{{Topic: "payments", Partition: 1}})[0].Err)
	// Output:
	// append to __transaction_state-9: Empty, producer 1000, epoch 0
	// answer request 1: producer 1000, epoch 0, err <nil>
	// append to __transaction_state-9: Ongoing, producer 1000, epoch 0
	// answer request 2: producer -1, epoch -1, err <nil>
	// verify payments-1: <nil>
	// append to __transaction_state-9: PrepareCommit, producer 1000, epoch 1
	// write COMMIT markers of producer 1000, epoch 1, coordinator epoch 7 to [payments-0 payments-1]
	// answer request 3: producer 1000, epoch 1, err <nil>
	// append to __transaction_state-9: CompleteCommit, producer 1000, epoch 1
	// verify payments-1 at epoch 0: PRODUCER_FENCED: a newer producer with the same transactional id fenced this one: "billing" has epoch 1, not 0
}

// ExampleDecodeValue reads a record of __transaction_state, as Kafka's
// tools would.
func ExampleDecodeValue() {
	v := txn.Value{Version: 1, ProducerID: 1000, PreviousProducerID: -1, NextProducerID: -1, ProducerEpoch: 3,
		TransactionTimeoutMs: 60_000, State: txn.Ongoing,
		Partitions:            []txn.TopicPartitions{{Topic: "payments", Partitions: []int32{0, 1}}},
		LastUpdateTimestampMs: 1_700_000_000_500, StartTimestampMs: 1_700_000_000_000, NextProducerEpoch: -1}
	b := v.Encode()
	got, err := txn.DecodeValue(b)
	fmt.Println(len(b), "bytes;", got.State, got.ProducerID, got.ProducerEpoch, got.Partitions[0].Topic, got.Partitions[0].Partitions, err)
	// Output: 54 bytes; Ongoing 1000 3 payments [0 1] <nil>
}
