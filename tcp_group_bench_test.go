package partlog_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/partlog/partlog"
	"github.com/partlog/partlog/transport"
	"github.com/partlog/partlog/vfs"
)

// BenchmarkGroupCalls measures a member's Heartbeat and OffsetCommit, one
// at a time, handed to a node in the process and sent to it over loopback
// TCP: the difference is the wire's cost. The node runs on the in-memory
// filesystem, so that a commit's cost is the coordinator's and not an
// fsync's.
func BenchmarkGroupCalls(b *testing.B) {
	ctx := context.Background()
	for _, via := range []string{"node", "tcp"} {
		b.Run("client="+via, func(b *testing.B) {
			n, err := partlog.Open("/data", partlog.Filesystem(vfs.NewMem()), partlog.OffsetsTopicPartitions(1))
			if err != nil {
				b.Fatal(err)
			}
			defer n.Close()
			var gc transport.GroupClient = n.Client()
			if via == "tcp" {
				ln, err := net.Listen("tcp", "127.0.0.1:0")
				if err != nil {
					b.Fatal(err)
				}
				s := transport.NewServer(n.Client(), transport.ServerOptions{})
				go s.Serve(ln)
				defer s.Close()
				c, err := transport.Dial(ctx, ln.Addr().String(), transport.DialOptions{})
				if err != nil {
					b.Fatal(err)
				}
				defer c.Close()
				gc = c
			}
			join, err := gc.JoinGroup(ctx, &transport.JoinGroupRequest{Group: "bench", ProtocolType: "consumer", SessionTimeout: time.Minute,
				RebalanceTimeout: time.Minute, Protocols: []transport.JoinGroupProtocol{{Name: "range"}}})
			if err != nil || join.Err != nil {
				b.Fatal(err, join)
			}
			sync, err := gc.SyncGroup(ctx, &transport.SyncGroupRequest{Group: "bench", GenerationID: join.GenerationID, MemberID: join.MemberID,
				Assignments: []transport.SyncGroupAssignment{{MemberID: join.MemberID}}})
			if err != nil || sync.Err != nil {
				b.Fatal(err, sync)
			}
			b.Run("call=heartbeat", func(b *testing.B) {
				for b.Loop() {
					r, err := gc.Heartbeat(ctx, &transport.HeartbeatRequest{Group: "bench", GenerationID: join.GenerationID, MemberID: join.MemberID})
					if err != nil || r.Err != nil {
						b.Fatal(err, r)
					}
				}
			})
			b.Run("call=commit", func(b *testing.B) {
				var off int64
				for b.Loop() {
					off++
					r, err := gc.OffsetCommit(ctx, &transport.OffsetCommitRequest{Group: "bench", GenerationID: join.GenerationID, MemberID: join.MemberID,
						Topics: []transport.OffsetCommitTopic{{Topic: "study", Partitions: []transport.OffsetCommitPartition{{Partition: 0, Offset: off, LeaderEpoch: -1}}}}})
					if err != nil || r.Topics[0].Partitions[0].Err != nil {
						b.Fatal(err, r)
					}
				}
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "commits/s")
			})
		})
	}
}
