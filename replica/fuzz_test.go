package replica_test

import (
	"testing"

	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/log"
	"github.com/partlog/partlog/record"
	"github.com/partlog/partlog/replica"
	"github.com/partlog/partlog/vfs"
)

// FuzzFetchResponse hands a follower arbitrary bytes as the records of a
// fetch answer, after a log of its own. The follower must not panic, and
// whatever it decides to write, the log must take: the state machine never
// queues a batch the log would refuse, and its view of the log end matches
// the log's after the write.
func FuzzFetchResponse(f *testing.F) {
	batch := func(base int64, epoch int32, n int) []byte {
		o := record.DefaultBatchOptions()
		o.BaseOffset, o.PartitionLeaderEpoch = base, epoch
		b := record.NewBuilder(o)
		for i := range n {
			b.Append(record.Record{Timestamp: int64(i), Value: []byte("v")})
		}
		return b.Build()
	}
	cat := func(bs ...[]byte) []byte {
		var out []byte
		for _, b := range bs {
			out = append(out, b...)
		}
		return out
	}
	f.Add(cat(batch(2, 0, 3), batch(5, 1, 2)), int64(4))
	f.Add(batch(0, 0, 4), int64(1)) // straddles the local end at 2
	f.Add(cat(batch(1, 0, 1), batch(2, 0, 1)), int64(3))
	f.Add(batch(2, 0, 1)[:30], int64(0))
	f.Add([]byte{}, int64(-1))
	f.Fuzz(func(t *testing.T, records []byte, hw int64) {
		l, err := log.Open("/p-0", log.Options{FS: vfs.NewMem(), MaxIndexBytes: 4096, SegmentBytes: 4096})
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		if _, err := l.AppendAsFollower(cat(batch(0, 0, 1), batch(1, 0, 1))); err != nil {
			t.Fatal(err)
		}
		r, err := replica.New(1, kafka.TopicPartition{Topic: "p"}, l, replica.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Apply(replica.LeaderAndISR{Leader: 2, LeaderEpoch: 1, Replicas: []int32{1, 2}, ISR: []int32{1, 2}}); err != nil {
			t.Fatal(err)
		}
		rd := r.Ready()
		if len(rd.Messages) != 1 || rd.Messages[0].Fetch == nil {
			t.Fatalf("no fetch sent: %v", rd.Messages)
		}
		seq := rd.Messages[0].Seq
		if err := r.Advance(); err != nil {
			t.Fatal(err)
		}
		if err := r.Step(replica.Message{Type: replica.MsgFetchResponse, From: 2, To: 1, Seq: seq,
			FetchResponse: &kafka.ReplicaFetchPartitionResponse{LeaderEpoch: 1, HighWatermark: hw, LogEndOffset: -1, Records: records}}); err != nil {
			t.Fatal(err)
		}
		rd = r.Ready()
		if err := rd.Persist(l); err != nil {
			t.Fatalf("the log refused what the replica queued: %v", err)
		}
		if err := r.Advance(); err != nil {
			t.Fatal(err)
		}
		if got, want := l.LogEndOffset(), r.Status().LogEndOffset; got != want {
			t.Fatalf("log ends at %d, replica thinks %d", got, want)
		}
		if hw := r.HighWatermark(); hw < 0 || hw > l.LogEndOffset() {
			t.Fatalf("high watermark %d outside [0, %d]", hw, l.LogEndOffset())
		}
	})
}
