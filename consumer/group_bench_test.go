package consumer_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/partlog/partlog/consumer"
)

// BenchmarkRebalance measures how long a group of 10 members over 100
// partitions takes to rebalance when a member joins, and when it leaves:
// from the change until every partition has exactly one owner again,
// balanced, as seen by the members' rebalance callbacks. Members heartbeat
// every 10ms, which bounds how soon they notice a rebalance (Kafka's
// default heartbeat.interval.ms is 3s).
func BenchmarkRebalance(b *testing.B) {
	for _, a := range []consumer.Assignor{consumer.Range(), consumer.CooperativeSticky()} {
		b.Run(a.Name(), func(b *testing.B) {
			n := groupNode(b)
			const parts = 100
			createTopic(b, n, "study", parts, nil)
			out := make(chan got, 1)
			changed := make(chan struct{}, 1)
			opts := append(fastGroup("bench", "study"), consumer.Assignors(a), consumer.DisableAutoCommit())
			var ms []*member
			for i := range 9 {
				ms = append(ms, startMember(b, n, fmt.Sprintf("m%d", i), out, changed, opts...))
			}
			waitOwners(b, changed, parts, ms...)
			var join, leave time.Duration
			b.ResetTimer()
			for i := range b.N {
				start := time.Now()
				m := startMember(b, n, fmt.Sprintf("x%d", i), out, changed, opts...)
				waitOwners(b, changed, parts, append(ms, m)...)
				join += time.Since(start)
				start = time.Now()
				m.close()
				waitOwners(b, changed, parts, ms...)
				leave += time.Since(start)
			}
			b.ReportMetric(join.Seconds()*1000/float64(b.N), "ms/join")
			b.ReportMetric(leave.Seconds()*1000/float64(b.N), "ms/leave")
		})
	}
}
