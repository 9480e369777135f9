package main

import (
	"context"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/partlog/partlog/producer"
	"github.com/partlog/partlog/transport"
)

// BenchmarkClusterFailover measures how long an acks=all producer waits
// when the leader of its partition is killed: the time from the SIGKILL of
// the process leading partition 0 to the acknowledgement of the first
// write after it. Each iteration kills the current leader, measures, then
// restarts the node and waits until it is back in the ISR. It runs three
// 'partlog serve --controller' processes and a controller on loopback, with
// Kafka's default session timeout and heartbeat (9 s, 2 s) and with fast
// ones (1 s, 100 ms); the producer keeps its defaults (retry.backoff.ms
// 100). Run it as
//
//	go test -run '^$' -bench ClusterFailover -benchtime 5x ./cmd/partlog/
//
// It reports the fastest, the median and the slowest failover.
func BenchmarkClusterFailover(b *testing.B) {
	bin := buildPartlog(b)
	for _, tc := range []struct {
		name               string
		session, heartbeat time.Duration
	}{
		{"session=1s/heartbeat=100ms", time.Second, 100 * time.Millisecond},
		{"session=9s/heartbeat=2s", 9 * time.Second, 2 * time.Second},
	} {
		b.Run(tc.name, func(b *testing.B) {
			benchmarkFailover(b, bin, tc.session, tc.heartbeat)
		})
	}
}

func benchmarkFailover(b *testing.B, bin string, session, heartbeat time.Duration) {
	c := startProcessCluster(b, bin, 3, session, heartbeat)
	stdout, stderr, code := cli(b, "topics", "create", "--bootstrap-server", c.nodes[1].addr, "--topic", "t",
		"--partitions", "3", "--replication-factor", "3", "--config", "min.insync.replicas=2")
	require.Equal(b, exitOK, code, stderr)
	require.Equal(b, "Created topic t.\n", stdout)
	c.waitFor("the topic's leaders", "t", fullISR)
	ctx := context.Background()
	client, err := transport.DialCluster(ctx, c.addrs(), transport.DialOptions{})
	require.NoError(b, err)
	defer client.Close()
	p, err := producer.New(client)
	require.NoError(b, err)
	defer p.Close()
	seq := 0
	write := func() error {
		seq++
		r := &producer.Record{Topic: "t", Value: strconv.AppendInt(nil, int64(seq), 10)}
		r.SetPartition(0)
		return p.ProduceSync(ctx, r).FirstErr()
	}

	var took []time.Duration
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		for range 100 {
			require.NoError(b, write())
		}
		leader := c.waitFor("a leader of partition 0", "t", fullISR).Partitions[0].Leader
		victim := c.nodes[leader]
		b.StartTimer()
		killed := time.Now()
		victim.kill()
		for write() != nil { // a write that fails after its delivery timeout counts in the wait
		}
		d := time.Since(killed)
		b.StopTimer()
		took = append(took, d)
		b.Logf("killed node %d, the leader of partition 0: the first write after it was acknowledged in %v", leader, d.Round(time.Millisecond))
		victim.start()
		c.waitFor("the restarted node in every ISR", "t", func(tm transport.TopicMetadata) bool {
			for _, p := range tm.Partitions {
				if !slices.Contains(p.ISR, leader) {
					return false
				}
			}
			return fullISR(tm)
		})
	}
	slices.Sort(took)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	b.ReportMetric(ms(took[0]), "min-ms")
	b.ReportMetric(ms(took[len(took)/2]), "median-ms")
	b.ReportMetric(ms(took[len(took)-1]), "max-ms")
}
