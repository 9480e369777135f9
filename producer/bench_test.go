package producer_test

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/partlog/partlog"
	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/producer"
)

// benchNode opens a node on the OS filesystem in a temporary directory with
// one topic "bench" of one partition and the given configs.
func benchNode(b *testing.B, configs map[string]string) *partlog.Node {
	b.Helper()
	n, err := partlog.Open(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { n.Close() })
	if err := n.CreateTopic(context.Background(), partlog.NewTopic{Name: "bench", Partitions: 1, Configs: configs}); err != nil {
		b.Fatal(err)
	}
	return n
}

// noFlush leaves flushing to the OS: flush.messages at its maximum.
var noFlush = map[string]string{partlog.ConfigFlushMessages: strconv.FormatInt(1<<63-1, 10)}

// BenchmarkProduce produces b.N records of 100 B and of 1 KiB, acks=1
// (which turns idempotence off), to a topic that does not fsync
// (flush.messages at its maximum), with the default linger and batch.size
// (and also a batch.size of 1 MiB, franz-go's default, with a
// buffer.memory of 8 MiB, as scripts/bench-clients.sh runs perf produce).
// See benchProduce. A run that writes more than the kernel lets sit dirty
// (a few GB) measures the disk's writeback instead: bound it, as in
// -benchtime 10000000x for 100 B and 1000000x for 1 KiB.
func BenchmarkProduce(b *testing.B) {
	for _, bc := range []struct {
		size, batchSize int
		bufferMemory    int64
	}{{100, 16384, 32 << 20}, {1024, 16384, 32 << 20}, {100, 1 << 20, 8 << 20}, {1024, 1 << 20, 8 << 20}} {
		name := fmt.Sprintf("size=%d", bc.size)
		if bc.batchSize != 16384 {
			name += fmt.Sprintf("/batch.size=%d/buffer.memory=%d", bc.batchSize, bc.bufferMemory)
		}
		b.Run(name, func(b *testing.B) {
			benchProduce(b, bc.size, false, producer.Acks(kafka.AcksLeader), producer.BatchSize(bc.batchSize),
				producer.BufferMemory(bc.bufferMemory))
		})
		if bc.batchSize != 16384 {
			b.Run(name+"/reuse", func(b *testing.B) {
				benchProduce(b, bc.size, true, producer.Acks(kafka.AcksLeader), producer.BatchSize(bc.batchSize),
					producer.BufferMemory(bc.bufferMemory))
			})
		}
	}
}

// BenchmarkProduceIdempotence compares, in one run, the idempotent
// producer (the default: acks=all, producer id and sequence numbers,
// duplicates checked by the leader) with the same producer without
// idempotence, as BenchmarkProduce measures it: 100 B records, a topic
// that does not fsync. On one node acks=all waits for nothing more than
// acks=1, so the difference is idempotence's own cost.
func BenchmarkProduceIdempotence(b *testing.B) {
	for _, idempotent := range []bool{false, true} {
		b.Run(fmt.Sprintf("idempotent=%v", idempotent), func(b *testing.B) {
			benchProduce(b, 100, false, producer.Idempotent(idempotent))
		})
	}
}

// benchProduce produces b.N records of size bytes to "bench" from one
// goroutine calling Produce with a promise, as kafka-producer-perf-test
// does: records without timestamps (the producer stamps them) or keys.
// The time includes the final Flush.
func benchProduce(b *testing.B, size int, reuse bool, opts ...producer.Option) {
	n := benchNode(b, noFlush)
	p, err := producer.New(n.Client(), opts...)
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	value := make([]byte, size)
	var failed atomic.Int64
	// Records come 4096 at a time. With reuse, a chunk goes back to a free
	// list once every promise of its records has run, as a program that
	// recycles its records would do (perf produce does); without, each
	// chunk is new, as a program producing from fresh slices would do.
	type chunk struct {
		records []producer.Record
		pending atomic.Int64
		promise func(*producer.Record, error)
	}
	free := make(chan *chunk, 64)
	newChunk := func() *chunk {
		c := &chunk{records: make([]producer.Record, 4096)}
		c.promise = func(_ *producer.Record, err error) {
			if err != nil {
				failed.Add(1)
			}
			if reuse && c.pending.Add(-1) == 0 {
				select {
				case free <- c:
				default:
				}
			}
		}
		return c
	}
	ctx := context.Background()
	var (
		c    *chunk
		used int
	)
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for range b.N {
		if c == nil || used == len(c.records) {
			select {
			case c = <-free:
				clear(c.records)
			default:
				c = newChunk()
			}
			c.pending.Store(int64(len(c.records)))
			used = 0
		}
		r := &c.records[used]
		used++
		r.Topic, r.Value = "bench", value
		p.Produce(ctx, r, c.promise)
	}
	if err := p.Flush(ctx); err != nil {
		b.Fatal(err)
	}
	elapsed := time.Since(start)
	b.StopTimer()
	if f := failed.Load(); f > 0 {
		b.Fatalf("%d records failed", f)
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "records/s")
	b.ReportMetric(float64(b.N)*float64(size)/elapsed.Seconds()/1e6, "MB/s")
}

// BenchmarkProduceSyncConcurrent has 1 and 64 goroutines each calling
// ProduceSync with one 100 B record at a time, acks=all, to a topic that
// syncs before it acknowledges (the default flush.messages=1): the
// producer's batches and the log's group commit share the fsyncs.
func BenchmarkProduceSyncConcurrent(b *testing.B) {
	for _, senders := range []int{1, 64} {
		b.Run(fmt.Sprintf("senders=%d", senders), func(b *testing.B) {
			n := benchNode(b, nil)
			p, err := producer.New(n.Client())
			if err != nil {
				b.Fatal(err)
			}
			defer p.Close()
			value := make([]byte, 100)
			ctx := context.Background()
			var (
				left atomic.Int64
				wg   sync.WaitGroup
				errs atomic.Value
			)
			left.Store(int64(b.N))
			b.ResetTimer()
			start := time.Now()
			for range senders {
				wg.Go(func() {
					for left.Add(-1) >= 0 {
						r := &producer.Record{Topic: "bench", Value: value}
						if err := p.ProduceSync(ctx, r).FirstErr(); err != nil {
							errs.Store(err)
							return
						}
					}
				})
			}
			wg.Wait()
			elapsed := time.Since(start)
			b.StopTimer()
			if err, _ := errs.Load().(error); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "records/s")
		})
	}
}
