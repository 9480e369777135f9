package replica_test

import (
	"testing"

	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/log"
	"github.com/partlog/partlog/record"
	"github.com/partlog/partlog/replica"
	"github.com/partlog/partlog/vfs"
)

// BenchmarkReplicateAcksAll measures the state machine and the log writes
// of three replicas on the in-memory filesystem, delivering messages at
// once: each op is one acks=all batch of 10 records of 100 bytes,
// proposed, fetched by both followers, synced everywhere and acked. The
// network is free, so this is the cost replication adds on top of the
// transport.
func BenchmarkReplicateAcksAll(b *testing.B) {
	ids := []int32{1, 2, 3}
	logs := map[int32]*log.Log{}
	reps := map[int32]*replica.Replica{}
	for _, id := range ids {
		l, err := log.Open("/p-0", log.Options{FS: vfs.NewMem(), MaxIndexBytes: 1 << 20})
		if err != nil {
			b.Fatal(err)
		}
		defer l.Close()
		r, err := replica.New(id, kafka.TopicPartition{Topic: "p"}, l, replica.Options{MinInsyncReplicas: 2})
		if err != nil {
			b.Fatal(err)
		}
		logs[id], reps[id] = l, r
	}
	state := replica.LeaderAndISR{Leader: 1, Replicas: ids, ISR: ids}
	for _, id := range ids {
		if err := reps[id].Apply(state); err != nil {
			b.Fatal(err)
		}
	}
	acked := 0
	drive := func() {
		for busy := true; busy; {
			busy = false
			for _, id := range ids {
				r := reps[id]
				for r.HasReady() {
					busy = true
					rd := r.Ready()
					if err := rd.Persist(logs[id]); err != nil {
						b.Fatal(err)
					}
					for _, m := range rd.Messages {
						if err := reps[m.To].Step(m); err != nil {
							b.Fatal(err)
						}
					}
					acked += len(rd.Completed)
					if err := r.Advance(); err != nil {
						b.Fatal(err)
					}
				}
			}
		}
	}
	drive()
	value := make([]byte, 100)
	builder := record.NewBuilder(record.DefaultBatchOptions())
	b.SetBytes(10 * 100)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		builder.Reset(record.DefaultBatchOptions())
		for range 10 {
			builder.Append(record.Record{Value: value})
		}
		if _, err := reps[1].Propose(builder.Build(), kafka.AcksAll); err != nil {
			b.Fatal(err)
		}
		drive()
	}
	b.StopTimer()
	if acked != b.N {
		b.Fatalf("acked %d of %d", acked, b.N)
	}
}
