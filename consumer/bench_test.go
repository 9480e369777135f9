package consumer_test

import (
	"context"
	"flag"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/partlog/partlog"
	"github.com/partlog/partlog/consumer"
	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/record"
	"github.com/partlog/partlog/transport"
)

// filledNode opens a node on the OS filesystem, in a directory of the
// benchmark's, with one partition of topic "bench" holding n records of
// size-byte values, appended in batches of perBatch. Flushing is left to
// the OS, so the log is in the page cache.
func filledNode(b *testing.B, n, size, perBatch int) *partlog.Node {
	b.Helper()
	node, err := partlog.Open(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { node.Close() })
	ctx := context.Background()
	err = node.CreateTopic(ctx, partlog.NewTopic{Name: "bench", Configs: map[string]string{
		"flush.messages": strconv.FormatInt(math.MaxInt64, 10),
	}})
	if err != nil {
		b.Fatal(err)
	}
	value := make([]byte, size)
	for i := range value {
		value[i] = byte(i*7 + i>>3)
	}
	bl := record.NewBuilder(record.DefaultBatchOptions())
	for done := 0; done < n; {
		bl.Reset(record.DefaultBatchOptions())
		for i := 0; i < perBatch && done < n; i++ {
			bl.Append(record.Record{Timestamp: baseTime + int64(done), Value: value})
			done++
		}
		produceBatch(b, node.Client(), "bench", 0, bl.Build())
	}
	return node
}

// benchShapes are the partitions the benchmarks read: issue 3's targets
// are stated for 100-byte and 1 KiB records.
var benchShapes = []struct {
	name                 string
	records, size, batch int
}{
	{"100B", 3_000_000, 100, 1000},
	{"1KiB", 500_000, 1024, 500},
}

// benchFetchBytes is MaxPartitionFetchBytes for the benchmarks: Kafka's
// default, 1 MiB, unless -fetch-bytes says otherwise.
var benchFetchBytes = flag.Int("fetch-bytes", 1<<20, "MaxPartitionFetchBytes for BenchmarkConsume and BenchmarkNodeFetch")

// BenchmarkConsume reads a partition of records from the page cache, from
// the beginning to the end, once per op: through Poll, and through the
// Records iterator, each with new memory for every fetch (the default) and
// with FetchBuffers(ReuseBuffers).
func BenchmarkConsume(b *testing.B) {
	for _, shape := range benchShapes {
		b.Run(shape.name, func(b *testing.B) {
			node := filledNode(b, shape.records, shape.size, shape.batch)
			for _, how := range []string{"poll", "iter", "poll-reuse", "iter-reuse"} {
				b.Run(how, func(b *testing.B) {
					b.SetBytes(int64(shape.records * shape.size))
					b.ReportAllocs()
					iterate := strings.HasPrefix(how, "iter")
					buffers := consumer.KeepBuffers
					if strings.HasSuffix(how, "-reuse") {
						buffers = consumer.ReuseBuffers
					}
					for b.Loop() {
						consumeAll(b, node, shape.records, shape.size, iterate, buffers)
					}
					b.ReportMetric(float64(shape.records)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
				})
			}
		})
	}
}

// BenchmarkNodeFetch reads the same partitions with the node's Fetch
// alone, one fetch after the other on one goroutine, without decoding: the
// ceiling for a consumer of one partition, whose fetches cannot overlap.
// The -buffer variants read every fetch into the same FetchRequest.Buffer,
// as a consumer with FetchBuffers(ReuseBuffers) does.
func BenchmarkNodeFetch(b *testing.B) {
	for _, shape := range benchShapes {
		for _, reuse := range []bool{false, true} {
			name := shape.name
			var buf []byte
			if reuse {
				name += "-buffer"
				buf = make([]byte, 0, *benchFetchBytes)
			}
			b.Run(name, func(b *testing.B) { nodeFetchAll(b, shape.records, shape.size, shape.batch, buf) })
		}
	}
}

// nodeFetchAll is BenchmarkNodeFetch for one shape, fetching into buf.
func nodeFetchAll(b *testing.B, records, size, batch int, buf []byte) {
	node := filledNode(b, records, size, batch)
	b.SetBytes(int64(records * size))
	b.ReportAllocs()
	for b.Loop() {
		for off := int64(0); off < int64(records); {
			resp, err := node.Client().Fetch(context.Background(), &transport.FetchRequest{
				ReplicaID: kafka.ConsumerReplicaID, MaxBytes: 50 << 20, Buffer: buf,
				Topics: []transport.FetchTopic{{Topic: "bench", Partitions: []transport.FetchPartition{{
					FetchOffset: off, MaxBytes: int32(*benchFetchBytes),
				}}}},
			})
			if err != nil {
				b.Fatal(err)
			}
			for data := resp.Topics[0].Partitions[0].Records; len(data) > 0; {
				h, err := record.ParseHeader(data)
				if err != nil {
					b.Fatal(err)
				}
				off, data = h.NextOffset(), data[h.Size():]
			}
		}
	}
	b.ReportMetric(float64(records)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
}

// consumeAll reads want records of size-byte values from the start of
// "bench"-0 and checks that they all came.
func consumeAll(b *testing.B, node *partlog.Node, want, size int, iterate bool, buffers consumer.BufferPolicy) {
	c, err := consumer.New(node.Client(),
		consumer.PartitionsAt(map[kafka.TopicPartition]int64{{Topic: "bench"}: 0}),
		consumer.MaxPartitionFetchBytes(int32(*benchFetchBytes)), consumer.FetchBuffers(buffers))
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	got, bytes := 0, 0
	if iterate {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		for rec, err := range c.Records(ctx) {
			if err != nil {
				b.Fatal(err)
			}
			got++
			bytes += len(rec.Value)
			if got == want {
				break
			}
		}
	} else {
		for got < want {
			fs, err := c.Poll(context.Background(), 10*time.Second)
			if err != nil {
				b.Fatal(err)
			}
			if fs.Empty() {
				b.Fatalf("no records after %d of %d", got, want)
			}
			for i := range fs {
				recs := fs[i].Records
				got += len(recs)
				for j := range recs {
					bytes += len(recs[j].Value)
				}
			}
		}
	}
	if got != want || bytes != want*size {
		b.Fatalf("consumed %d records, %d bytes; want %d records of %d bytes", got, bytes, want, size)
	}
}
