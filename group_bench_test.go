package partlog_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/partlog/partlog"
	"github.com/partlog/partlog/transport"
)

// BenchmarkOffsetCommit measures commits to __consumer_offsets on the OS
// filesystem, each synced before it is answered (flush.messages=1): one
// committer, and committers of different groups in parallel, whose
// appends to a partition share fsyncs.
func BenchmarkOffsetCommit(b *testing.B) {
	ctx := context.Background()
	commit := func(b *testing.B, n *partlog.Node, group string, off int64) {
		resp, err := n.Client().OffsetCommit(ctx, &transport.OffsetCommitRequest{Group: group, GenerationID: transport.NoGeneration,
			Topics: []transport.OffsetCommitTopic{{Topic: "study", Partitions: []transport.OffsetCommitPartition{{Partition: 0, Offset: off, LeaderEpoch: -1}}}}})
		if err != nil || resp.Topics[0].Partitions[0].Err != nil {
			b.Fatal(err, resp)
		}
	}
	for _, parallel := range []bool{false, true} {
		b.Run(fmt.Sprintf("parallel=%v", parallel), func(b *testing.B) {
			n, err := partlog.Open(b.TempDir())
			if err != nil {
				b.Fatal(err)
			}
			defer n.Close()
			commit(b, n, "warm-up", 0) // creates __consumer_offsets
			b.ResetTimer()
			if !parallel {
				for i := range b.N {
					commit(b, n, "bench", int64(i))
				}
			} else {
				var ids atomic.Int64
				b.SetParallelism(8)
				b.RunParallel(func(pb *testing.PB) {
					group := fmt.Sprintf("bench-%d", ids.Add(1))
					for i := int64(0); pb.Next(); i++ {
						commit(b, n, group, i)
					}
				})
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "commits/s")
		})
	}
}
