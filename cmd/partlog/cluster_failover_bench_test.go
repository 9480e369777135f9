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
// when the leader of its partition dies: the time from the SIGKILL of the
// process leading partition 0 to the acknowledgement of the first write
// after it. Each iteration kills the current leader, measures, then
// restarts the node and waits until it is back in the ISR. It runs three
// 'partlog serve --controller' processes and a controller on loopback, with
// Kafka's default session timeout and heartbeat (9 s, 2 s) and with fast
// ones (1 s, 100 ms); the producer keeps its defaults (retry.backoff.ms
// 100). For comparison, stop=SIGTERM stops the leader cleanly instead: a
// controlled shutdown moves its leaderships before it exits, with no
// session timeout to wait out. Run it as
//
//	go test -run '^$' -bench ClusterFailover -benchtime 5x ./cmd/partlog/
//
// It reports the fastest, the median and the slowest failover.
func BenchmarkClusterFailover(b *testing.B) {
	bin := buildPartlog(b)
	for _, tc := range []struct {
		name               string
		session, heartbeat time.Duration
		stop               func(*process)
	}{
		{"stop=SIGKILL/session=1s/heartbeat=100ms", time.Second, 100 * time.Millisecond, (*process).kill},
		{"stop=SIGKILL/session=9s/heartbeat=2s", 9 * time.Second, 2 * time.Second, (*process).kill},
		{"stop=SIGTERM/session=9s/heartbeat=2s", 9 * time.Second, 2 * time.Second, (*process).terminate},
	} {
		b.Run(tc.name, func(b *testing.B) {
			benchmarkFailover(b, bin, tc.session, tc.heartbeat, tc.stop)
		})
	}
}

func benchmarkFailover(b *testing.B, bin string, session, heartbeat time.Duration, stop func(*process)) {
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
		stopped := time.Now()
		stop(victim)
		for write() != nil { // a write that fails after its delivery timeout counts in the wait
		}
		d := time.Since(stopped)
		b.StopTimer()
		took = append(took, d)
		b.Logf("stopped node %d, the leader of partition 0: the first write after it was acknowledged in %v", leader, d.Round(time.Millisecond))
		victim.start()
		c.waitFor("the restarted node in every ISR", "t", inEveryISR(leader))
	}
	slices.Sort(took)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	b.ReportMetric(ms(took[0]), "min-ms")
	b.ReportMetric(ms(took[len(took)/2]), "median-ms")
	b.ReportMetric(ms(took[len(took)-1]), "max-ms")
}
