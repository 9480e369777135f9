package replica_test

import (
	"fmt"

	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/log"
	"github.com/partlog/partlog/record"
	"github.com/partlog/partlog/replica"
	"github.com/partlog/partlog/vfs"
)

// Two replicas of a partition driven by hand: the driver's loop writes each
// Ready to the log, delivers its messages, and calls Advance; an acks=all
// append completes once the follower has it.
func Example() {
	tp := kafka.TopicPartition{Topic: "orders", Partition: 0}
	logs := map[int32]*log.Log{}
	replicas := map[int32]*replica.Replica{}
	for _, id := range []int32{1, 2} {
		l, err := log.Open("/data/orders-0", log.Options{FS: vfs.NewMem(), MaxIndexBytes: 4096})
		if err != nil {
			panic(err)
		}
		defer l.Close()
		r, err := replica.New(id, tp, l, replica.Options{MinInsyncReplicas: 2})
		if err != nil {
			panic(err)
		}
		logs[id], replicas[id] = l, r
	}
	// The controller's decision: node 1 leads epoch 0, both in sync.
	state := replica.LeaderAndISR{Leader: 1, LeaderEpoch: 0, Replicas: []int32{1, 2}, ISR: []int32{1, 2}}
	for _, r := range replicas {
		if err := r.Apply(state); err != nil {
			panic(err)
		}
	}

	b := record.NewBuilder(record.DefaultBatchOptions())
	b.Append(record.Record{Value: []byte("first order")})
	p, err := replicas[1].Propose(b.Build(), kafka.AcksAll)
	if err != nil {
		panic(err)
	}
	fmt.Println("proposed at offset", p.BaseOffset)

	// The driver loop, run until nothing is left to do.
	for busy := true; busy; {
		busy = false
		for _, id := range []int32{1, 2} {
			r := replicas[id]
			for r.HasReady() {
				busy = true
				rd := r.Ready()
				if err := rd.Persist(logs[id]); err != nil { // 1. write and sync
					panic(err)
				}
				for _, m := range rd.Messages { // 2. send
					if err := replicas[m.To].Step(m); err != nil {
						panic(err)
					}
				}
				if rd.HighWatermark >= 0 { // 3. publish the high watermark
					fmt.Printf("node %d: high watermark %d\n", id, rd.HighWatermark)
				}
				for _, c := range rd.Completed { // 5. answer producers
					fmt.Printf("node %d: append %d acked at %d, err %v\n", id, c.ID, c.BaseOffset, c.Err)
				}
				if err := r.Advance(); err != nil { // 6. advance
					panic(err)
				}
			}
		}
	}
	// Output:
	// proposed at offset 0
	// node 1: high watermark 1
	// node 1: append 1 acked at 0, err <nil>
	// node 2: high watermark 1
}
