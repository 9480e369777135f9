package partlog_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"

	"github.com/partlog/partlog"
	"github.com/partlog/partlog/controller"
	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/partlogtest"
	"github.com/partlog/partlog/record"
	"github.com/partlog/partlog/transport"
	"github.com/partlog/partlog/txn"
)

// errCoordinatorCrashed fails every step a crashed coordinator would have
// taken after its crash.
var errCoordinatorCrashed = errors.New("test: the coordinator crashed before this step")

// crashFault returns a partlogtest fault that lets a coordinator's steps
// happen until crashAt says the step is the first it would not have
// taken, and fails that step and every later one; crashed is closed then.
func crashFault(crashAt func(partlogtest.TxnStep) bool) (fault func(partlogtest.TxnStep) error, crashed <-chan struct{}) {
	var mu sync.Mutex
	ch := make(chan struct{})
	down := false
	return func(s partlogtest.TxnStep) error {
		mu.Lock()
		defer mu.Unlock()
		if !down && crashAt(s) {
			down = true
			close(ch)
		}
		if down {
			return errCoordinatorCrashed
		}
		return nil
	}, ch
}

// writes reports whether an append step writes a transaction in state s.
func writes(step partlogtest.TxnStep, s txn.State) bool {
	for _, v := range step.Append {
		if v.State == s {
			return true
		}
	}
	return false
}

// TestTxnCoordinatorCrashMidCommit is reliability test 22: a transaction
// over three partitions led by three nodes, plus a group's offsets
// (AddOffsetsToTxn, TxnOffsetCommit), commits while its coordinator
// crashes — before PrepareCommit is durable, after it but before any
// marker, after some markers, after every marker but before
// CompleteCommit — and leadership of its __transaction_state partition
// fails over. Before PrepareCommit the transaction ends aborted (here by
// the next InitProducerId); from PrepareCommit on the new coordinator
// writes every COMMIT marker, the offsets' included, and a retried EndTxn
// gets the commit. Either way every partition holds exactly one marker
// of the outcome, a read_committed read sees all of the transaction or
// none of it, the offsets are visible if and only if it committed, every
// last stable offset reaches its high watermark, and the new coordinator
// writes CompleteCommit (or CompleteAbort) exactly once.
func TestTxnCoordinatorCrashMidCommit(t *testing.T) {
	for _, tc := range []struct {
		name    string
		crashAt func() func(partlogtest.TxnStep) bool
		commits bool
	}{
		{"before PrepareCommit", func() func(partlogtest.TxnStep) bool {
			return func(s partlogtest.TxnStep) bool { return writes(s, txn.PrepareCommit) }
		}, false},
		{"after PrepareCommit before any marker", func() func(partlogtest.TxnStep) bool {
			return func(s partlogtest.TxnStep) bool { return s.IsMarker }
		}, true},
		{"after some markers", func() func(partlogtest.TxnStep) bool {
			markers := 0
			return func(s partlogtest.TxnStep) bool {
				if !s.IsMarker {
					return false
				}
				markers++
				return markers > 2
			}
		}, true},
		{"after all markers before CompleteCommit", func() func(partlogtest.TxnStep) bool {
			return func(s partlogtest.TxnStep) bool { return writes(s, txn.CompleteCommit) }
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				testTxnCoordinatorCrash(t, tc.crashAt(), tc.commits)
			})
		})
	}
}

// newTxnCluster starts three nodes with topics "t" (three partitions) and
// "in" (one), replicated three times, and returns them with a context and
// a ClusterClient closed when the test ends; for a test in a synctest
// bubble.
func newTxnCluster(t *testing.T) (*testCluster, context.Context, *transport.ClusterClient) {
	t.Helper()
	c := newTestCluster(t, 1, 2, 3)
	ctx := context.Background()
	require.NoError(t, c.nodes[1].CreateTopic(ctx, partlog.NewTopic{Name: "t", Partitions: 3, ReplicationFactor: 3}))
	require.NoError(t, c.nodes[1].CreateTopic(ctx, partlog.NewTopic{Name: "in", Partitions: 1, ReplicationFactor: 3}))
	client, err := c.net.Client(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { client.Close() })
	return c, ctx, client
}

func testTxnCoordinatorCrash(t *testing.T, crashAt func(partlogtest.TxnStep) bool, commits bool) {
	c, ctx, client := newTxnCluster(t)

	r := newRawTxn(t, ctx, client, "tx", 5)
	statePart := kafka.CoordinatorPartition("tx", kafka.DefaultCoordinatorPartitions)
	coordinator := c.leader(kafka.TransactionStateTopic, statePart)
	var tps []kafka.TopicPartition
	for p := range int32(3) {
		tps = append(tps, kafka.TopicPartition{Topic: "t", Partition: p})
	}
	r.add(tps...)
	for _, tp := range tps {
		require.NoError(t, r.produceTo(tp, r.batchFor(tp, fmt.Sprintf("v%d", tp.Partition))))
	}
	r.addOffsets("g")
	r.commitOffsets("g", "in", 0, 7)
	offsetsPart := kafka.TopicPartition{Topic: kafka.OffsetsTopic, Partition: kafka.CoordinatorPartition("g", c.offsetsPartitions(t))}
	marked := append(tps, offsetsPart)

	fault, crashed := crashFault(crashAt)
	partlogtest.FailTransactionSteps(c.nodes[coordinator], fault)
	endErr := r.endOnce(transport.TxnCommit)
	if commits {
		require.NoError(t, endErr, "PrepareCommit is durable: EndTxn is answered")
	} else {
		require.Error(t, endErr, "PrepareCommit never became durable")
	}
	<-crashed
	require.NoError(t, partlogtest.Halt(c.nodes[coordinator]))
	delete(c.nodes, coordinator)
	c.waitFor("a new coordinator", func(s controller.ClusterState) bool {
		l := s.Topics[kafka.TransactionStateTopic].Partitions[statePart].Leader
		return l >= 0 && l != coordinator
	})

	want := record.ControlAbort
	if commits {
		// The client retries its EndTxn at the new coordinator: it gets
		// the outcome decided before the crash.
		want = record.ControlCommit
		r.endAgain(transport.TxnCommit)
	} else {
		// The producer restarts: its InitProducerId aborts what the
		// crashed coordinator had left Ongoing.
		newRawTxn(t, ctx, client, "tx", 5)
	}

	// Every partition, the offsets' included, gets exactly one marker,
	// of the outcome, and its LSO reaches its high watermark.
	// (A partition whose marker the crashed coordinator wrote gets the
	// new coordinator's too, as in Kafka: a marker that ends nothing
	// changes nothing.)
	for _, tp := range marked {
		waitUntil(t, fmt.Sprintf("%s's marker", tp), func() bool {
			return len(c.markersOf(t, tp, r.producerID)) > 0 && c.stable(t, ctx, client, tp)
		})
		for _, m := range c.markersOf(t, tp, r.producerID) {
			require.Equal(t, want, m, "%s", tp)
		}
	}
	for _, tp := range tps {
		got := c.readCommitted(t, tp)
		if commits {
			require.Equal(t, []string{fmt.Sprintf("v%d", tp.Partition)}, got, "%s", tp)
		} else {
			require.Empty(t, got, "%s", tp)
		}
	}
	committed := fetchOffset(t, ctx, client, "g", "in", 0)
	if commits {
		require.EqualValues(t, 7, committed, "the transaction's offsets are visible")
	} else {
		require.EqualValues(t, -1, committed, "the aborted transaction's offsets are not")
	}

	// The new coordinator ended the transaction once in
	// __transaction_state.
	end := txn.CompleteAbort
	if commits {
		end = txn.CompleteCommit
	}
	leader := c.leader(kafka.TransactionStateTopic, statePart)
	require.Equal(t, 1, c.countStates(t, leader, statePart, "tx", end), "%s written once", end)
}

// offsetsPartitions returns the partition count of __consumer_offsets,
// which the transaction's offsets created.
func (c *testCluster) offsetsPartitions(t *testing.T) int32 {
	_, err := c.ctl.Partition(kafka.OffsetsTopic, 0)
	require.NoError(t, err, "the transaction's offsets created %s", kafka.OffsetsTopic)
	return kafka.DefaultCoordinatorPartitions
}

// markersOf returns the COMMIT and ABORT markers of producerID in the
// leader's replica of tp, in log order, up to its high watermark.
func (c *testCluster) markersOf(t *testing.T, tp kafka.TopicPartition, producerID int64) []record.ControlType {
	var out []record.ControlType
	c.eachBatch(t, tp, func(h record.Header, b *record.Batch) {
		if !h.Attributes.IsControl() || h.ProducerID != producerID {
			return
		}
		cr, err := record.ParseControlRecord(b.Records[0])
		require.NoError(t, err)
		out = append(out, cr.Type)
	})
	return out
}

// readCommitted returns the values of tp's committed transactional
// records, as a read_committed consumer sees them, from the leader's
// replica: the data batches whose producer's next marker is a COMMIT.
func (c *testCluster) readCommitted(t *testing.T, tp kafka.TopicPartition) []string {
	type pending struct{ values []string }
	open := map[int64]*pending{}
	var got []string
	c.eachBatch(t, tp, func(h record.Header, b *record.Batch) {
		if !h.Attributes.IsControl() {
			if open[h.ProducerID] == nil {
				open[h.ProducerID] = &pending{}
			}
			for _, r := range b.Records {
				open[h.ProducerID].values = append(open[h.ProducerID].values, string(r.Value))
			}
			return
		}
		cr, err := record.ParseControlRecord(b.Records[0])
		require.NoError(t, err)
		if p := open[h.ProducerID]; p != nil && cr.Type == record.ControlCommit {
			got = append(got, p.values...)
		}
		delete(open, h.ProducerID)
	})
	return got
}

// eachBatch calls fn with each batch of the leader's replica of tp, in
// offset order.
func (c *testCluster) eachBatch(t *testing.T, tp kafka.TopicPartition, fn func(record.Header, *record.Batch)) {
	l, err := partlogtest.Log(c.nodes[c.leader(tp.Topic, tp.Partition)], tp.Topic, tp.Partition)
	require.NoError(t, err)
	eachLogBatch(t, l, fn)
}

// highWatermark returns tp's high watermark.
func (c *testCluster) highWatermark(t *testing.T, ctx context.Context, client txnClient, tp kafka.TopicPartition) int64 {
	resp, err := client.ListOffsets(ctx, &transport.ListOffsetsRequest{ReplicaID: kafka.ConsumerReplicaID,
		Topics: []transport.ListOffsetsTopic{{Topic: tp.Topic, Partitions: []transport.ListOffsetsPartition{
			{Partition: tp.Partition, CurrentLeaderEpoch: -1, Timestamp: kafka.LatestTimestamp}}}}})
	require.NoError(t, err)
	require.NoError(t, resp.Topics[0].Partitions[0].Err)
	return resp.Topics[0].Partitions[0].Offset
}

// stable reports whether tp's last stable offset is its high watermark.
func (c *testCluster) stable(t *testing.T, ctx context.Context, client txnClient, tp kafka.TopicPartition) bool {
	list := func(iso kafka.IsolationLevel) (int64, error) {
		resp, err := client.ListOffsets(ctx, &transport.ListOffsetsRequest{ReplicaID: kafka.ConsumerReplicaID, Isolation: iso,
			Topics: []transport.ListOffsetsTopic{{Topic: tp.Topic, Partitions: []transport.ListOffsetsPartition{
				{Partition: tp.Partition, CurrentLeaderEpoch: -1, Timestamp: kafka.LatestTimestamp}}}}})
		if err != nil {
			return 0, err
		}
		return resp.Topics[0].Partitions[0].Offset, resp.Topics[0].Partitions[0].Err
	}
	hw, err1 := list(kafka.ReadUncommitted)
	lso, err2 := list(kafka.ReadCommitted)
	return err1 == nil && err2 == nil && hw == lso
}

// countStates counts the records of transactional id id in state s in
// node's replica of partition p of __transaction_state.
func (c *testCluster) countStates(t *testing.T, node int32, p int32, id string, s txn.State) int {
	l, err := partlogtest.Log(c.nodes[node], kafka.TransactionStateTopic, p)
	require.NoError(t, err)
	n := 0
	eachLogBatch(t, l, func(_ record.Header, b *record.Batch) {
		for _, r := range b.Records {
			if k, err := txn.DecodeKey(r.Key); err != nil || k != id || r.Value == nil {
				continue
			}
			v, err := txn.DecodeValue(r.Value)
			require.NoError(t, err)
			if v.State == s {
				n++
			}
		}
	})
	return n
}

// fetchOffset returns group's committed offset of topic's partition, -1
// when it has none, waiting out UNSTABLE_OFFSET_COMMIT.
func fetchOffset(t *testing.T, ctx context.Context, client txnClient, group, topic string, partition int32) int64 {
	var offset int64
	retryBusy(t, func() error {
		resp, err := client.OffsetFetch(ctx, &transport.OffsetFetchRequest{Group: group, RequireStable: true,
			Topics: []transport.OffsetFetchTopic{{Topic: topic, Partitions: []int32{partition}}}})
		if err != nil {
			return err
		}
		if resp.Err != nil {
			return resp.Err
		}
		pr := resp.Topics[0].Partitions[0]
		if errors.Is(pr.Err, kafka.ErrUnstableOffsetCommit) {
			return kafka.ErrConcurrentTransactions // wait, as for a busy coordinator
		}
		offset = pr.Offset
		return pr.Err
	})
	return offset
}
