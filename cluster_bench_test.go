package partlog_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/partlog/partlog"
	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/producer"
	"github.com/partlog/partlog/transport"
)

// BenchmarkClusterProduce produces 1 KiB records to one partition (1 MiB
// batches): on a node on its own with acks=1, and replicated to three
// nodes in one process (the in-memory network) with acks=1 and with
// acks=all (idempotent) — the cost of replication without the network's.
// The clock starts once every replica has a first record (warmUp).
// "sync" topics keep partlog's flush.messages=1 (every replica syncs what
// it appends before it counts); "nosync" ones Kafka's default (the page
// cache).
func BenchmarkClusterProduce(b *testing.B) {
	for _, flush := range []string{"sync", "nosync"} {
		configs := map[string]string{"min.insync.replicas": "2"}
		if flush == "nosync" {
			configs["flush.messages"] = "9223372036854775807"
		}
		b.Run(flush, func(b *testing.B) { benchmarkClusterProduce(b, configs) })
	}
}

func benchmarkClusterProduce(b *testing.B, configs map[string]string) {
	value := make([]byte, 1024)
	run := func(b *testing.B, client transport.Client, acks kafka.Acks) {
		opts := []producer.Option{producer.Linger(time.Millisecond), producer.Acks(acks),
			producer.BatchSize(1 << 20), producer.BufferMemory(8 << 20)}
		if acks != kafka.AcksAll {
			opts = append(opts, producer.Idempotent(false))
		}
		p, err := producer.New(client, opts...)
		if err != nil {
			b.Fatal(err)
		}
		defer p.Close()
		ctx := context.Background()
		var wg sync.WaitGroup
		b.SetBytes(int64(len(value)))
		b.ResetTimer()
		for range b.N {
			wg.Add(1)
			p.Produce(ctx, &producer.Record{Topic: "bench", Value: value}, func(_ *producer.Record, err error) {
				if err != nil {
					b.Error(err)
				}
				wg.Done()
			})
		}
		wg.Wait()
		b.StopTimer() // closing syncs the logs: not part of producing
	}
	b.Run("single-node/acks=1", func(b *testing.B) {
		n, err := partlog.Open(b.TempDir())
		if err != nil {
			b.Fatal(err)
		}
		defer n.Close()
		if err := n.CreateTopic(context.Background(), partlog.NewTopic{Name: "bench", Configs: configs}); err != nil {
			b.Fatal(err)
		}
		run(b, n.Client(), kafka.AcksLeader)
	})
	for _, acks := range []kafka.Acks{kafka.AcksLeader, kafka.AcksAll} {
		b.Run(fmt.Sprintf("rf=3/acks=%d", acks), func(b *testing.B) {
			ctl, err := partlog.OpenController(b.TempDir(), partlog.ControllerOptions{})
			if err != nil {
				b.Fatal(err)
			}
			defer ctl.Close()
			net := partlog.NewMemNetwork()
			for id := int32(1); id <= 3; id++ {
				n, err := partlog.Open(filepath.Join(b.TempDir(), fmt.Sprint(id)), partlog.NodeID(id), partlog.JoinCluster(ctl, net))
				if err != nil {
					b.Fatal(err)
				}
				defer n.Close()
				if id == 3 {
					if err := n.CreateTopic(context.Background(), partlog.NewTopic{Name: "bench", ReplicationFactor: 3, Configs: configs}); err != nil {
						b.Fatal(err)
					}
				}
			}
			client, err := net.Client(context.Background())
			if err != nil {
				b.Fatal(err)
			}
			defer client.Close()
			warmUp(b, client)
			run(b, client, acks)
		})
	}
}

// warmUp waits until every replica of bench-0 has the partition's first
// record (an acks=all write, the ISR being all three): a follower whose
// first fetch came before its leader was ready waits out
// replica.fetch.backoff.ms (1 s), which would otherwise count as
// producing time.
func warmUp(b *testing.B, client transport.Client) {
	b.Helper()
	p, err := producer.New(client)
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	if err := p.ProduceSync(context.Background(), &producer.Record{Topic: "bench", Value: []byte("warm-up")}).FirstErr(); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkClusterProduceTCP produces 1 KiB records (1 MiB batches,
// idempotent acks=all) to one partition replicated to three nodes that
// reach each other, and the producer them, over loopback TCP in one
// process: what bench-cluster.sh measures with processes, here with a
// CPU profile in reach. cpu-ns/record is the process's CPU time (user and
// system, every node and the producer) per record.
func BenchmarkClusterProduceTCP(b *testing.B) {
	c := newTCPCluster(b, 1, 2, 3)
	ctx := context.Background()
	require.NoError(b, c.nodes[1].CreateTopic(ctx, partlog.NewTopic{Name: "bench", ReplicationFactor: 3,
		Configs: map[string]string{"min.insync.replicas": "2", "flush.messages": "9223372036854775807", "max.message.bytes": "8388608"}}))
	client, err := transport.DialCluster(ctx, []string{c.addrs[1], c.addrs[2], c.addrs[3]}, transport.DialOptions{})
	require.NoError(b, err)
	defer client.Close()
	warmUp(b, client)
	p, err := producer.New(client, producer.Linger(5*time.Millisecond), producer.BatchSize(1<<20), producer.BufferMemory(8<<20))
	require.NoError(b, err)
	defer p.Close()
	value := make([]byte, 1024)
	var failed atomic.Int64
	promise := func(_ *producer.Record, err error) {
		if err != nil {
			failed.Add(1)
		}
	}
	before := cpuTime()
	b.SetBytes(int64(len(value)))
	b.ResetTimer()
	for range b.N {
		p.Produce(ctx, &producer.Record{Topic: "bench", Value: value}, promise)
	}
	require.NoError(b, p.Flush(ctx))
	b.StopTimer() // closing syncs the logs: not part of producing
	b.ReportMetric(float64(cpuTime()-before)/float64(b.N), "cpu-ns/record")
	require.Zero(b, failed.Load())
}

// cpuTime returns the process's CPU time so far, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
