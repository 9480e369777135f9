package partlog_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/partlog/partlog"
	"github.com/partlog/partlog/consumer"
	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/producer"
	"github.com/partlog/partlog/record"
	"github.com/partlog/partlog/transport"
	"github.com/partlog/partlog/vfs"
)

// serveNode serves n's requests on a loopback port and returns the address.
func serveNode(t *testing.T, n *partlog.Node) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s := transport.NewServer(n.Client(), transport.ServerOptions{})
	go s.Serve(ln)
	t.Cleanup(func() { s.Close() })
	return ln.Addr().String()
}

// TestTCPProducerConsumer runs partlog's producer and consumer in front of
// a node they reach over TCP: every record arrives once, at contiguous
// offsets, with its key and value.
//
// On the OS filesystem the node sends fetched records with sendfile; on the
// in-memory one, which has no file descriptors, it sends bytes it read.
func TestTCPProducerConsumer(t *testing.T) {
	t.Run("fs=os", func(t *testing.T) {
		n, err := partlog.Open(t.TempDir())
		require.NoError(t, err)
		fdsBefore := openFiles(t)
		testTCPProducerConsumer(t, n)
		require.NoError(t, n.Close())
		require.LessOrEqual(t, openFiles(t), fdsBefore, "file ranges sent with sendfile are closed")
	})
	t.Run("fs=mem", func(t *testing.T) {
		n := openNode(t, vfs.NewMem())
		defer n.Close()
		testTCPProducerConsumer(t, n)
	})
}

// openFiles counts the process's open file descriptors.
func openFiles(t *testing.T) int {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	require.NoError(t, err)
	return len(fds)
}

func testTCPProducerConsumer(t *testing.T, n *partlog.Node) {
	ctx := context.Background()
	require.NoError(t, n.CreateTopic(ctx, partlog.NewTopic{Name: "study", Partitions: 3}))
	c, err := transport.Dial(ctx, serveNode(t, n), transport.DialOptions{})
	require.NoError(t, err)
	defer c.Close()

	p, err := producer.New(c)
	require.NoError(t, err)
	const total = 600
	recs := make([]*producer.Record, total)
	for i := range recs {
		recs[i] = &producer.Record{Topic: "study", Key: fmt.Appendf(nil, "k%d", i%7), Value: fmt.Appendf(nil, "v%d", i)}
	}
	require.NoError(t, p.ProduceSync(ctx, recs...).FirstErr())
	require.NoError(t, p.Close())

	cons, err := consumer.New(c, consumer.Topics("study"), consumer.AutoOffsetReset(consumer.Earliest))
	require.NoError(t, err)
	defer cons.Close()
	want := map[string]*producer.Record{}
	for _, r := range recs {
		want[string(r.Value)] = r
	}
	next := map[int32]int64{}
	readCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	seen := 0
	for rec, err := range cons.Records(readCtx) {
		require.NoError(t, err)
		w, ok := want[string(rec.Value)]
		require.True(t, ok, "record %q not produced, or consumed twice", rec.Value)
		delete(want, string(rec.Value))
		require.Equal(t, w.Key, rec.Key)
		require.Equal(t, w.Partition, rec.Partition)
		require.Equal(t, w.Offset, rec.Offset)
		require.Equal(t, next[rec.Partition], rec.Offset, "offsets are contiguous in partition %d", rec.Partition)
		next[rec.Partition]++
		if seen++; seen == total {
			break
		}
	}
	require.Empty(t, want)
}

// TestTCPKafkaClient has franz-go's kgo, a Kafka client that knows nothing
// of partlog, produce to and consume from a node over TCP: the wire format
// is Kafka's.
func TestTCPKafkaClient(t *testing.T) {
	n := openNode(t, vfs.NewMem())
	defer n.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	require.NoError(t, n.CreateTopic(ctx, partlog.NewTopic{Name: "study", Partitions: 2}))
	addr := serveNode(t, n)

	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("study"),
		kgo.DisableIdempotentWrite(), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"study": {0: kgo.NewOffset().AtStart(), 1: kgo.NewOffset().AtStart()}}))
	require.NoError(t, err)
	defer cl.Close()
	const total = 200
	for i := range total {
		r := &kgo.Record{Key: fmt.Appendf(nil, "k%d", i%5), Value: fmt.Appendf(nil, "hello %d", i)}
		require.NoError(t, cl.ProduceSync(ctx, r).FirstErr())
	}

	// What kgo wrote, read back through the node's own API.
	d, err := n.DescribeTopics("study")
	require.NoError(t, err)
	require.Equal(t, int64(total), d[0].Partitions[0].LogEndOffset+d[0].Partitions[1].LogEndOffset)

	got := map[string]bool{}
	next := map[int32]int64{}
	for len(got) < total {
		fs := cl.PollFetches(ctx)
		require.NoError(t, ctx.Err())
		for _, e := range fs.Errors() {
			t.Fatalf("fetch error: %v", e.Err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			require.Equal(t, next[r.Partition], r.Offset)
			next[r.Partition]++
			require.False(t, got[string(r.Value)], "record %q twice", r.Value)
			got[string(r.Value)] = true
		})
	}
	for i := range total {
		require.True(t, got[fmt.Sprintf("hello %d", i)])
	}
}

// BenchmarkTCPFetch reads a partition of 1 KiB records, from the page
// cache, through a consumer that reaches the node over loopback TCP: with
// the records sent by sendfile, and read into memory and written.
func BenchmarkTCPFetch(b *testing.B) {
	const records, size = 200_000, 1024
	n, err := partlog.Open(b.TempDir())
	require.NoError(b, err)
	defer n.Close()
	ctx := context.Background()
	require.NoError(b, n.CreateTopic(ctx, partlog.NewTopic{Name: "bench", Partitions: 1,
		Configs: map[string]string{partlog.ConfigFlushMessages: "9223372036854775807"}}))
	p, err := producer.New(n.Client(), producer.Acks(kafka.AcksLeader), producer.BatchSize(1<<20))
	require.NoError(b, err)
	value := make([]byte, size)
	for range records {
		p.Produce(ctx, &producer.Record{Topic: "bench", Value: value}, nil)
	}
	require.NoError(b, p.Close())
	for _, copyRecords := range []bool{false, true} {
		name := "sendfile"
		if copyRecords {
			name = "copy"
		}
		b.Run(name, func(b *testing.B) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			require.NoError(b, err)
			s := transport.NewServer(n.Client(), transport.ServerOptions{CopyRecords: copyRecords})
			go s.Serve(ln)
			defer s.Close()
			c, err := transport.Dial(ctx, ln.Addr().String(), transport.DialOptions{})
			require.NoError(b, err)
			defer c.Close()
			b.SetBytes(records * size)
			b.ResetTimer()
			for range b.N {
				for off := int64(0); off < records; {
					resp, err := c.Fetch(ctx, &transport.FetchRequest{ReplicaID: -1, MaxBytes: 8 << 20, Topics: []transport.FetchTopic{{Topic: "bench",
						Partitions: []transport.FetchPartition{{FetchOffset: off, MaxBytes: 8 << 20}}}}})
					if err != nil {
						b.Fatal(err)
					}
					pr := resp.Topics[0].Partitions[0]
					if pr.Err != nil || len(pr.Records) == 0 {
						b.Fatalf("fetch at %d: %v, %d bytes", off, pr.Err, len(pr.Records))
					}
					h, err := record.ParseHeader(pr.Records[len(pr.Records)-lastBatchSize(b, pr.Records):])
					if err != nil {
						b.Fatal(err)
					}
					off = h.NextOffset()
				}
			}
		})
	}
}

// lastBatchSize returns the size of the last batch in data.
func lastBatchSize(b *testing.B, data []byte) int {
	last := 0
	for len(data) > 0 {
		h, err := record.ParseHeader(data)
		if err != nil {
			b.Fatal(err)
		}
		last = h.Size()
		data = data[last:]
	}
	return last
}

// TestTCPAdmin creates, describes and deletes topics over TCP, with the
// node's typed errors arriving as Kafka's codes.
func TestTCPAdmin(t *testing.T) {
	n := openNode(t, vfs.NewMem())
	defer n.Close()
	ctx := context.Background()
	c, err := transport.Dial(ctx, serveNode(t, n), transport.DialOptions{})
	require.NoError(t, err)
	defer c.Close()

	cresp, err := c.CreateTopics(ctx, &transport.CreateTopicsRequest{Topics: []transport.CreatableTopic{
		{Name: "orders", Partitions: 3, ReplicationFactor: 1, Configs: map[string]string{"retention.ms": "60000"}},
		{Name: "bad name!", Partitions: 1, ReplicationFactor: 1},
		{Name: "negative", Partitions: -2, ReplicationFactor: 1},
		{Name: "zero", Partitions: 0, ReplicationFactor: -1},
		{Name: "no-replicas", Partitions: 1, ReplicationFactor: 0},
		{Name: "defaults", Partitions: -1, ReplicationFactor: -1},
	}})
	require.NoError(t, err)
	require.Len(t, cresp.Topics, 6)
	require.NoError(t, cresp.Topics[0].Err)
	require.ErrorIs(t, cresp.Topics[1].Err, kafka.ErrInvalidTopic)
	require.ErrorIs(t, cresp.Topics[2].Err, kafka.ErrInvalidPartitions)
	require.ErrorIs(t, cresp.Topics[3].Err, kafka.ErrInvalidPartitions, "zero partitions, as Kafka refuses them")
	require.ErrorIs(t, cresp.Topics[4].Err, kafka.ErrInvalidReplicationFactor)
	require.NoError(t, cresp.Topics[5].Err, "-1 asks for the defaults")
	cresp, err = c.CreateTopics(ctx, &transport.CreateTopicsRequest{Topics: []transport.CreatableTopic{{Name: "orders", Partitions: -1, ReplicationFactor: -1}}})
	require.NoError(t, err)
	require.ErrorIs(t, cresp.Topics[0].Err, kafka.ErrTopicAlreadyExists)

	d, err := n.DescribeTopics("orders")
	require.NoError(t, err)
	require.Len(t, d[0].Partitions, 3)

	dc, err := c.DescribeConfigs(ctx, &transport.DescribeConfigsRequest{Resources: []transport.ConfigResource{
		{Type: transport.ConfigTopic, Name: "orders"}, {Type: transport.ConfigTopic, Name: "nope"}}})
	require.NoError(t, err)
	require.NoError(t, dc.Resources[0].Err)
	configs := map[string]transport.ConfigEntry{}
	for _, e := range dc.Resources[0].Configs {
		configs[e.Name] = e
	}
	require.Equal(t, transport.ConfigEntry{Name: "retention.ms", Value: "60000"}, configs["retention.ms"])
	require.Equal(t, transport.ConfigEntry{Name: "cleanup.policy", Value: "delete", IsDefault: true}, configs["cleanup.policy"])
	require.ErrorIs(t, dc.Resources[1].Err, kafka.ErrUnknownTopicOrPartition)

	dresp, err := c.DeleteTopics(ctx, &transport.DeleteTopicsRequest{Topics: []string{"orders", "nope", "defaults"}})
	require.NoError(t, err)
	require.NoError(t, dresp.Topics[0].Err)
	require.ErrorIs(t, dresp.Topics[1].Err, kafka.ErrUnknownTopicOrPartition)
	require.Empty(t, n.ListTopics())
}

// BenchmarkTCPKafkaProduce produces 100 B records with franz-go's client
// (acks=all, idempotent, linger 10 ms, no compression: the bench
// harness's partlog-tcp and kfake-disk settings) to a node served over
// loopback TCP, flush.messages off: the server's produce path.
func BenchmarkTCPKafkaProduce(b *testing.B) {
	for _, size := range []int{100, 1024} {
		b.Run(strconv.Itoa(size)+"B", func(b *testing.B) { benchmarkTCPKafkaProduce(b, size, false, false) })
		b.Run(strconv.Itoa(size)+"B-null", func(b *testing.B) { benchmarkTCPKafkaProduce(b, size, true, false) })
		b.Run(strconv.Itoa(size)+"B-fsync1000", func(b *testing.B) { benchmarkTCPKafkaProduce(b, size, false, true) })
	}
}

// nullProduce answers every produce as appended without storing it: the
// ceiling of the TCP path, the client and the server's request handling
// with no log beneath.
type nullProduce struct {
	partlog.Client
	mu   sync.Mutex
	next map[kafka.TopicPartition]int64
}

func (h *nullProduce) Produce(_ context.Context, req *transport.ProduceRequest) (*transport.ProduceResponse, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	resp := &transport.ProduceResponse{}
	for _, t := range req.Topics {
		tr := transport.ProduceTopicResponse{Topic: t.Topic}
		for _, p := range t.Partitions {
			hd, err := record.ParseHeader(p.Records)
			if err != nil {
				return nil, err
			}
			tp := kafka.TopicPartition{Topic: t.Topic, Partition: p.Partition}
			tr.Partitions = append(tr.Partitions, transport.ProducePartitionResponse{Partition: p.Partition, BaseOffset: h.next[tp], LogAppendTime: -1})
			h.next[tp] += int64(hd.LastOffsetDelta) + 1
		}
		resp.Topics = append(resp.Topics, tr)
	}
	return resp, nil
}

func benchmarkTCPKafkaProduce(b *testing.B, size int, null, fsync1000 bool) {
	flushMessages := "9223372036854775807"
	if fsync1000 {
		flushMessages = "1" // sync before ack
	}
	handler := func(c partlog.Client) transport.Client { return c }
	if null {
		handler = func(c partlog.Client) transport.Client {
			return &nullProduce{Client: c, next: map[kafka.TopicPartition]int64{}}
		}
	}
	addr := servedBenchNode(b, map[string]string{partlog.ConfigFlushMessages: flushMessages, partlog.ConfigMaxMessageBytes: "8388608"}, handler)
	ctx := context.Background()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("bench"),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerLinger(10*time.Millisecond),
		kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.ProducerBatchMaxBytes(2<<20))
	require.NoError(b, err)
	defer cl.Close()
	value := make([]byte, size)
	var failed atomic.Int64
	promise := func(_ *kgo.Record, err error) {
		if err != nil {
			failed.Add(1)
		}
	}
	b.SetBytes(int64(size))
	b.ResetTimer()
	for i := range b.N {
		cl.Produce(ctx, &kgo.Record{Value: value}, promise)
		if fsync1000 && i%1000 == 999 {
			require.NoError(b, cl.Flush(ctx))
		}
	}
	require.NoError(b, cl.Flush(ctx))
	b.StopTimer() // closing syncs the log: not part of producing
	require.Zero(b, failed.Load())
}

// BenchmarkTCPProduce produces 100 B and 1 KiB records with partlog's own
// producer to a node served on loopback, as partlog perf produce
// --bootstrap-server does (batch.size 1 MiB, linger 5 ms, buffer.memory 8
// MiB; the topic leaves flushing to the OS), with acks=1 (one batch of a
// partition in flight) and acks=all (idempotent: up to five).
func BenchmarkTCPProduce(b *testing.B) {
	for _, size := range []int{100, 1024} {
		for _, acks := range []kafka.Acks{kafka.AcksLeader, kafka.AcksAll} {
			b.Run(fmt.Sprintf("%dB/acks=%d", size, acks), func(b *testing.B) { benchmarkTCPProduce(b, size, acks) })
		}
	}
}

func benchmarkTCPProduce(b *testing.B, size int, acks kafka.Acks) {
	addr := servedBenchNode(b, map[string]string{partlog.ConfigFlushMessages: "9223372036854775807"},
		func(c partlog.Client) transport.Client { return c })
	ctx := context.Background()
	cl, err := transport.DialCluster(ctx, []string{addr}, transport.DialOptions{})
	require.NoError(b, err)
	defer cl.Close()
	p, err := producer.New(cl, producer.Acks(acks), producer.BatchSize(1<<20),
		producer.Linger(5*time.Millisecond), producer.BufferMemory(8<<20))
	require.NoError(b, err)
	defer p.Close()
	value := make([]byte, size)
	var failed atomic.Int64
	promise := func(_ *producer.Record, err error) {
		if err != nil {
			failed.Add(1)
		}
	}
	b.SetBytes(int64(size))
	b.ResetTimer()
	for range b.N {
		p.Produce(ctx, &producer.Record{Topic: "bench", Value: value}, promise)
	}
	require.NoError(b, p.Flush(ctx))
	b.StopTimer() // closing syncs the log: not part of producing
	require.Zero(b, failed.Load())
}

// servedBenchNode opens a node in a directory of b's with one topic
// "bench" of one partition and the given configs, serves its requests —
// through handler, which may wrap them — on a loopback port until b ends,
// and returns the address.
func servedBenchNode(b *testing.B, configs map[string]string, handler func(partlog.Client) transport.Client) string {
	b.Helper()
	n, err := partlog.Open(b.TempDir())
	require.NoError(b, err)
	b.Cleanup(func() { n.Close() })
	require.NoError(b, n.CreateTopic(context.Background(), partlog.NewTopic{Name: "bench", Partitions: 1, Configs: configs}))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(b, err)
	s := transport.NewServer(handler(n.Client()), transport.ServerOptions{})
	go s.Serve(ln)
	b.Cleanup(func() { s.Close() }) // before the node closes
	return ln.Addr().String()
}
