package sharecoord_test

import (
	"fmt"
	"time"

	"github.com/partlog/partlog/sharecoord"
)

// memLog keeps the records of each partition in memory.
type memLog map[int32][]sharecoord.Record

func (l memLog) Append(partition int32, recs []sharecoord.Record) error {
	l[partition] = append(l[partition], recs...)
	return nil
}

// A share partition's state goes through its life: the group coordinator
// initializes it, a leader takes it over and writes acknowledgements, and
// a restarted coordinator loads it back from the log.
func Example() {
	log := memLog{}
	clock := func() time.Time { return time.UnixMilli(1700000000000) }
	c := sharecoord.New(log, sharecoord.Options{Now: clock})
	sp := sharecoord.SharePartition{Group: "billing", TopicID: [16]byte{1, 2, 3}, Partition: 0}

	_ = c.Initialize(sp, 0, 100)
	_, _ = c.Read(sp, 1) // leader epoch 1 takes over
	_ = c.Write(sp, sharecoord.Write{StateEpoch: 0, LeaderEpoch: 1, StartOffset: 100, Batches: []sharecoord.StateBatch{
		{FirstOffset: 100, LastOffset: 104, DeliveryState: sharecoord.Acknowledged, DeliveryCount: 1},
		{FirstOffset: 105, LastOffset: 109, DeliveryState: sharecoord.Available, DeliveryCount: 1},
	}})
	// A leader of an older epoch is fenced.
	err := c.Write(sp, sharecoord.Write{StateEpoch: 0, LeaderEpoch: 0, StartOffset: 100})
	fmt.Println(err)

	p := c.PartitionFor(sp)
	fmt.Println("partition", p, "holds", len(log[p]), "records")

	restarted := sharecoord.New(log, sharecoord.Options{Now: clock})
	_ = restarted.Load(p, func(yield func(sharecoord.Record) bool) error {
		for _, r := range log[p] {
			if !yield(r) {
				break
			}
		}
		return nil
	})
	st, _ := restarted.Read(sp, 1)
	fmt.Println("start offset", st.StartOffset, "leader epoch", st.LeaderEpoch)
	for _, b := range st.Batches {
		fmt.Printf("[%d, %d] state %d, delivered %d\n", b.FirstOffset, b.LastOffset, b.DeliveryState, b.DeliveryCount)
	}
	// Output:
	// FENCED_LEADER_EPOCH: leader epoch in the request is older than the partition's: write of billing:AQIDAAAAAAAAAAAAAAAAAA:0 with leader epoch 0, latest 1
	// partition 22 holds 3 records
	// start offset 100 leader epoch 1
	// [100, 104] state 2, delivered 1
	// [105, 109] state 0, delivered 1
}

// CombineBatches keeps, where batches overlap, the delivery that is
// further along, whichever came first.
func ExampleCombineBatches() {
	older := []sharecoord.StateBatch{{FirstOffset: 0, LastOffset: 9, DeliveryState: sharecoord.Acknowledged, DeliveryCount: 1}}
	newer := []sharecoord.StateBatch{
		{FirstOffset: 5, LastOffset: 14, DeliveryState: sharecoord.Available, DeliveryCount: 1}, // behind the acknowledgement
	}
	for _, b := range sharecoord.CombineBatches(older, newer, 2) {
		fmt.Printf("[%d, %d] state %d, delivered %d\n", b.FirstOffset, b.LastOffset, b.DeliveryState, b.DeliveryCount)
	}
	// Output:
	// [2, 9] state 2, delivered 1
	// [10, 14] state 0, delivered 1
}
