package partlog_test

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/partlog/partlog"
	"github.com/partlog/partlog/consumer"
	"github.com/partlog/partlog/internal/integrity"
	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/partlogtest"
	"github.com/partlog/partlog/producer"
	"github.com/partlog/partlog/record"
	"github.com/partlog/partlog/transport"
)

// The end-to-end integrity suite: for every produce path, what the
// producer acknowledged must be what a consumer reads back and what the
// segment files hold, byte for byte — key, value, headers, timestamp,
// partition and offset. A green unit suite once let a single-node path hand
// back other bytes than it acknowledged; these tests are the guard.
//
// -integrity.stress=D runs the stress mode for D instead of the matrix:
// random paths, partition counts, concurrency, flush policies, codecs and
// value sizes up to 1 MiB, each run reproducible from the seed it prints
// (-integrity.seed).
var (
	integrityStress = flag.Duration("integrity.stress", 0, "run the integrity stress mode for this long")
	integritySeed   = flag.Uint64("integrity.seed", 0, "seed of the integrity runs (0: a new one)")
)

// produceVia is one produce path: it produces w to topic on a fresh setup
// and returns the acknowledged records, what a consumer read back, and the
// segment files' records of every replica (keyed by a name for messages).
type produceVia func(t *testing.T, r integrityRun) (acked, consumed []integrity.Record, disks map[string][]integrity.Record)

// integrityRun is one cell of the matrix, or one stress round.
type integrityRun struct {
	partitions int
	w          integrity.Workload
	flush      flushPolicy
	codec      record.Compression
}

// flushPolicy is a topic's flush configuration.
type flushPolicy string

const (
	flushSync flushPolicy = "sync-before-ack" // flush.messages=1, the default
	flushOff  flushPolicy = "flush-off"       // flush.messages off: the OS writes back
	flushMs   flushPolicy = "flush-ms"        // flush.messages off, flush.ms=20
)

// configs returns the topic configs of a run.
func (r integrityRun) configs() map[string]string {
	c := map[string]string{"max.message.bytes": strconv.Itoa(4 << 20)}
	switch r.flush {
	case flushOff:
		c["flush.messages"] = "9223372036854775807"
	case flushMs:
		c["flush.messages"] = "9223372036854775807"
		c["flush.ms"] = "20"
	}
	return c
}

// producerOptions are partlog's producer's options for a run.
func (r integrityRun) producerOptions(more ...producer.Option) []producer.Option {
	return append([]producer.Option{producer.Compression(r.codec), producer.MaxRequestSize(8 << 20),
		producer.BatchSize(4 << 10)}, more...)
}

func (r integrityRun) String() string {
	return fmt.Sprintf("partitions=%d flush=%s codec=%v %v", r.partitions, r.flush, r.codec, r.w)
}

// integrityPaths are the produce paths the suite covers, by name.
var integrityPaths = map[string]produceVia{
	"embedded-async": func(t *testing.T, r integrityRun) ([]integrity.Record, []integrity.Record, map[string][]integrity.Record) {
		return viaNode(t, r, integrity.Async)
	},
	"embedded-sync": func(t *testing.T, r integrityRun) ([]integrity.Record, []integrity.Record, map[string][]integrity.Record) {
		return viaNode(t, r, integrity.Sync)
	},
	"tcp-partlog": viaTCP,
	"tcp-kgo":     viaKgo,
	"cluster-acks=1": func(t *testing.T, r integrityRun) ([]integrity.Record, []integrity.Record, map[string][]integrity.Record) {
		return viaCluster(t, r, kafka.AcksLeader)
	},
	"cluster-acks=all": func(t *testing.T, r integrityRun) ([]integrity.Record, []integrity.Record, map[string][]integrity.Record) {
		return viaCluster(t, r, kafka.AcksAll)
	},
}

// TestIntegrity runs every produce path with 1 and 8 partitions, keyed and
// unkeyed records, one and several concurrent producers, and each flush
// policy, and checks that every acknowledged record — and nothing else —
// is read back by a consumer and is in the segment files, byte for byte.
func TestIntegrity(t *testing.T) {
	if *integrityStress > 0 {
		testIntegrityStress(t, *integrityStress)
		return
	}
	seed := *integritySeed
	if seed == 0 {
		seed = integrity.NewSeed()
	}
	// Records per cell, by path: as many as keeps the suite within a
	// couple of minutes under -race. The corruption this suite was written
	// for showed in about one embedded-async cell in two at 20,000.
	volume := map[string]int{"embedded-async": 20000, "embedded-sync": 3000, "tcp-partlog": 12000, "tcp-kgo": 8000,
		"cluster-acks=1": 4000, "cluster-acks=all": 4000}
	for _, path := range []string{"embedded-async", "embedded-sync", "tcp-partlog", "tcp-kgo", "cluster-acks=1", "cluster-acks=all"} {
		for _, flush := range []flushPolicy{flushSync, flushOff, flushMs} {
			for _, partitions := range []int{1, 8} {
				for _, keyed := range []bool{false, true} {
					for _, producers := range []int{1, 4} {
						r := integrityRun{partitions: partitions, flush: flush, w: integrity.Workload{
							Seed: seed, Producers: producers, Records: volume[path] / producers, Keyed: keyed, Headers: keyed,
						}}
						name := fmt.Sprintf("%s/%s/partitions=%d/keyed=%v/producers=%d", path, flush, partitions, keyed, producers)
						t.Run(name, func(t *testing.T) { checkIntegrity(t, integrityPaths[path], r) })
					}
				}
			}
		}
	}
}

// checkIntegrity runs r on a path and compares the three sides.
func checkIntegrity(t *testing.T, via produceVia, r integrityRun) {
	t.Helper()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("reproduce with -run '%s' -integrity.seed=%d (%v)", t.Name(), r.w.Seed, r)
		}
	})
	acked, consumed, disks := via(t, r)
	require.Len(t, acked, r.w.Total(), "every record acknowledged")
	require.NoError(t, integrity.Compare("the consumer", acked, consumed))
	for name, disk := range disks {
		require.NoError(t, integrity.Compare(name, acked, disk))
	}
}

// produceAndLedger produces r's workload with partlog's producers over
// client, and returns the ledger's records: with Async, one producer per
// workload producer; with Sync, one producer shared by the workload's
// goroutines.
func produceAndLedger(t *testing.T, client transport.Client, topic string, r integrityRun, mode integrity.Mode, opts ...producer.Option) []integrity.Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var ps []*producer.Producer
	producers := r.w.Producers
	if mode == integrity.Sync {
		producers = 1
	}
	for range producers {
		p, err := producer.New(client, r.producerOptions(opts...)...)
		require.NoError(t, err)
		defer p.Close()
		ps = append(ps, p)
	}
	l := integrity.NewLedger()
	require.NoError(t, integrity.Produce(ctx, ps, topic, r.w, mode, l), "%v", r)
	acked, err := l.Records()
	require.NoError(t, err)
	return acked
}

// consumeAcked reads back, through client, everything acked holds.
func consumeAcked(t *testing.T, client transport.Client, topic string, acked []integrity.Record, reuse bool) []integrity.Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	got, err := integrity.Consume(ctx, client, topic, ends(acked), reuse)
	require.NoError(t, err)
	return got
}

// ends returns, per partition, the offset after the last record of rs.
func ends(rs []integrity.Record) map[int32]int64 {
	e := map[int32]int64{}
	for _, r := range rs {
		e[r.Partition] = max(e[r.Partition], r.Offset+1)
	}
	return e
}

// openIntegrityNode opens a node on a fresh directory of the OS and
// creates r's topic.
func openIntegrityNode(t *testing.T, r integrityRun) (*partlog.Node, string) {
	t.Helper()
	dir := t.TempDir()
	n, err := partlog.Open(dir)
	require.NoError(t, err)
	require.NoError(t, n.CreateTopic(context.Background(), partlog.NewTopic{Name: "t", Partitions: int32(r.partitions), Configs: r.configs()}))
	return n, dir
}

// readDisk reads a closed node directory's segment files.
func readDisk(t *testing.T, dir string, r integrityRun) []integrity.Record {
	t.Helper()
	got, err := integrity.ReadDir(dir, "t", r.partitions)
	require.NoError(t, err)
	return got
}

// viaNode produces in process, with partlog's producer on the Node.
func viaNode(t *testing.T, r integrityRun, mode integrity.Mode) ([]integrity.Record, []integrity.Record, map[string][]integrity.Record) {
	n, dir := openIntegrityNode(t, r)
	acked := produceAndLedger(t, n.Client(), "t", r, mode)
	consumed := consumeAcked(t, n.Client(), "t", acked, mode == integrity.Sync)
	require.NoError(t, n.Close())
	return acked, consumed, map[string][]integrity.Record{"the segment files": readDisk(t, dir, r)}
}

// viaTCP produces with partlog's producer over TCP, and consumes over TCP
// (the records sent with sendfile).
func viaTCP(t *testing.T, r integrityRun) ([]integrity.Record, []integrity.Record, map[string][]integrity.Record) {
	n, dir := openIntegrityNode(t, r)
	addr := serveNode(t, n)
	var clients []transport.Client
	for range 2 {
		c, err := transport.Dial(context.Background(), addr, transport.DialOptions{})
		require.NoError(t, err)
		defer c.Close()
		clients = append(clients, c)
	}
	acked := produceAndLedger(t, clients[0], "t", r, integrity.Async)
	consumed := consumeAcked(t, clients[1], "t", acked, false)
	require.NoError(t, n.Close())
	return acked, consumed, map[string][]integrity.Record{"the segment files": readDisk(t, dir, r)}
}

// viaKgo produces with franz-go's kgo, one client per workload producer,
// idempotent (kgo's default); it reads back with kgo
// and with partlog's consumer, and both must match.
func viaKgo(t *testing.T, r integrityRun) ([]integrity.Record, []integrity.Record, map[string][]integrity.Record) {
	n, dir := openIntegrityNode(t, r)
	addr := serveNode(t, n)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	l := integrity.NewLedger()
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for pr := range r.w.Producers {
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("t"),
			kgo.ProducerLinger(time.Millisecond),
			kgo.ProducerBatchMaxBytes(2<<20), kgo.ProducerBatchCompression(kgoCodec(r.codec))) // max.message.bytes is 4 MiB
		require.NoError(t, err)
		defer cl.Close()
		wg.Go(func() {
			for i := range r.w.Records {
				want := r.w.Record(pr, i)
				rec := &kgo.Record{Key: want.Key, Value: want.Value}
				for _, h := range want.Headers {
					rec.Headers = append(rec.Headers, kgo.RecordHeader{Key: h.Key, Value: h.Value})
				}
				if want.Timestamp != 0 {
					rec.Timestamp = time.UnixMilli(want.Timestamp)
				}
				cl.Produce(ctx, rec, func(rec *kgo.Record, err error) {
					if err != nil {
						mu.Lock()
						errs = append(errs, err)
						mu.Unlock()
						return
					}
					want.Partition, want.Offset, want.Timestamp = rec.Partition, rec.Offset, rec.Timestamp.UnixMilli()
					l.Ack(want)
				})
			}
			if err := cl.Flush(ctx); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(errs) > 0 {
		t.Fatalf("kgo failed %d records; the first: %v", len(errs), errs[0])
	}
	acked, err := l.Records()
	require.NoError(t, err)

	// kgo reads everything back too.
	offsets := map[int32]kgo.Offset{}
	for p := range int32(r.partitions) {
		offsets[p] = kgo.NewOffset().AtStart()
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"t": offsets}))
	require.NoError(t, err)
	defer cl.Close()
	var byKgo []integrity.Record
	for len(byKgo) < len(acked) && ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		for _, e := range fs.Errors() {
			require.NoError(t, e.Err, "kgo fetch of %s-%d", e.Topic, e.Partition)
		}
		fs.EachRecord(func(rec *kgo.Record) {
			ir := integrity.Record{Partition: rec.Partition, Offset: rec.Offset, Timestamp: rec.Timestamp.UnixMilli(), Key: rec.Key, Value: rec.Value}
			for _, h := range rec.Headers {
				ir.Headers = append(ir.Headers, record.RecordHeader{Key: h.Key, Value: h.Value})
			}
			byKgo = append(byKgo, ir)
		})
	}
	require.NoError(t, integrity.Compare("kgo's consumer", acked, byKgo))

	c, err := transport.Dial(ctx, addr, transport.DialOptions{})
	require.NoError(t, err)
	defer c.Close()
	consumed := consumeAcked(t, c, "t", acked, false)
	require.NoError(t, n.Close())
	return acked, consumed, map[string][]integrity.Record{"the segment files": readDisk(t, dir, r)}
}

// kgoCodec is kgo's name for a codec.
func kgoCodec(c record.Compression) kgo.CompressionCodec {
	switch c {
	case record.Gzip:
		return kgo.GzipCompression()
	case record.Snappy:
		return kgo.SnappyCompression()
	case record.LZ4:
		return kgo.Lz4Compression()
	case record.Zstd:
		return kgo.ZstdCompression()
	}
	return kgo.NoCompression()
}

// viaCluster produces to three nodes in one process (RF 3, min ISR 2)
// with acks, reads back through the cluster client, and reads every
// replica's segment files once each has caught up with the leader.
//
// The run has no faults: the session timeout is long enough that a node
// slowed by a loaded machine is not fenced, since a leader change is a
// fault under which acks=1 may lose what it acknowledged (as in Kafka).
// A failure names any leader change that happened.
func viaCluster(t *testing.T, r integrityRun, acks kafka.Acks) (acked, consumed []integrity.Record, disks map[string][]integrity.Record) {
	// On a virtual clock: the nodes' ticks, heartbeats and fetch waits
	// pass as fast as the nodes are idle.
	synctest.Test(t, func(t *testing.T) { acked, consumed, disks = viaClusterInBubble(t, r, acks) })
	return acked, consumed, disks
}

// viaClusterInBubble is viaCluster inside its synctest bubble.
func viaClusterInBubble(t *testing.T, r integrityRun, acks kafka.Acks) ([]integrity.Record, []integrity.Record, map[string][]integrity.Record) {
	c := newTestClusterSession(t, 10*time.Second, 1, 2, 3)
	t.Cleanup(func() {
		if t.Failed() {
			for p, s := range c.ctl.State().Topics["t"].Partitions {
				t.Logf("t-%d: leader %d, leader epoch %d, ISR %v", p, s.Leader, s.LeaderEpoch, s.ISR)
			}
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	configs := r.configs()
	configs["min.insync.replicas"] = "2"
	require.NoError(t, c.nodes[1].CreateTopic(ctx, partlog.NewTopic{Name: "t", Partitions: int32(r.partitions), ReplicationFactor: 3, Configs: configs}))
	client, err := c.net.Client(ctx)
	require.NoError(t, err)
	defer client.Close()
	acked := produceAndLedger(t, client, "t", r, integrity.Async, producer.Acks(acks), producer.RetryBackoff(20*time.Millisecond))
	consumed := consumeAcked(t, client, "t", acked, true) // the consumer reuses its buffers across leaders

	// Every replica catches up with what was acknowledged, then stops.
	end := ends(acked)
	for id, n := range c.nodes {
		for p := range int32(r.partitions) {
			l, err := partlogtest.Log(n, "t", p)
			require.NoError(t, err)
			waitUntil(t, fmt.Sprintf("node %d's replica of t-%d reaches %d", id, p, end[p]), func() bool {
				return l.LogEndOffset() >= end[p]
			})
		}
	}
	disks := map[string][]integrity.Record{}
	for _, id := range []int32{1, 2, 3} {
		c.stop(id)
		disks[fmt.Sprintf("node %d's segment files", id)] = readDisk(t, c.dirs[id], r)
	}
	return acked, consumed, disks
}

// waitUntil waits up to 20 s for cond, looking every 5 ms: replication
// between nodes has no event a test can await.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited 20s for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// testIntegrityStress runs random integrity rounds for d: each round picks
// a path, partitions, workload, flush policy and codec from its own seed,
// with values up to 1 MiB.
func testIntegrityStress(t *testing.T, d time.Duration) {
	seed := *integritySeed
	if seed == 0 {
		seed = integrity.NewSeed()
	}
	t.Logf("integrity stress for %v from seed %d", d, seed)
	paths := []string{"embedded-async", "embedded-sync", "tcp-partlog", "tcp-kgo", "cluster-acks=1", "cluster-acks=all"}
	codecs := []record.Compression{record.None, record.Gzip, record.Snappy, record.LZ4, record.Zstd}
	flushes := []flushPolicy{flushSync, flushOff, flushMs}
	deadline := time.Now().Add(d)
	for round := 0; time.Now().Before(deadline); round++ {
		rs := seed + uint64(round)
		rng := rand.New(rand.NewPCG(rs, 0))
		path := paths[rng.IntN(len(paths))]
		producers := 1 + rng.IntN(6)
		r := integrityRun{
			partitions: 1 + rng.IntN(8),
			flush:      flushes[rng.IntN(len(flushes))],
			codec:      codecs[rng.IntN(len(codecs))],
			w: integrity.Workload{Seed: rs, Producers: producers, Records: (500 + rng.IntN(4000)) / producers,
				Keyed: rng.IntN(2) == 0, Headers: rng.IntN(2) == 0, MaxValue: []int{0, 16, 200, 2000, 16 << 10}[rng.IntN(5)],
				BigValue: 1 << 20, BigEvery: 50 + rng.IntN(500)},
		}
		ok := t.Run(fmt.Sprintf("round-%d/%s", round, path), func(t *testing.T) {
			t.Logf("%s %v", path, r)
			checkIntegrity(t, integrityPaths[path], r)
		})
		if !ok {
			t.Fatalf("round %d failed: rerun it with -integrity.stress=1ns -integrity.seed=%d", round, rs)
		}
	}
}

// TestIntegrityGroupOfTwo is the program that first showed acknowledged
// records coming back corrupted: an embedded node, 4 partitions, 100,000
// keyed records produced with Produce and promises, read back by a
// consumer group of two, each record exactly once and byte for byte, and
// the segment files holding exactly the acknowledged records.
func TestIntegrityGroupOfTwo(t *testing.T) {
	seed := *integritySeed
	if seed == 0 {
		seed = integrity.NewSeed()
	}
	r := integrityRun{partitions: 4, w: integrity.Workload{Seed: seed, Producers: 1, Records: 100_000, Keyed: true, Headers: true}}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("reproduce with -run '%s' -integrity.seed=%d", t.Name(), seed)
		}
	})
	n, dir := openIntegrityNode(t, r)
	acked := produceAndLedger(t, n.Client(), "t", r, integrity.Async)
	require.Len(t, acked, 100_000)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	consumed, err := integrity.ConsumeGroup(ctx, 2, len(acked), func() (*consumer.Consumer, error) {
		return consumer.New(n.Client(), consumer.Group("integrity"), consumer.Topics("t"), consumer.AutoOffsetReset(consumer.Earliest))
	})
	require.NoError(t, err)
	require.NoError(t, integrity.Compare("the group of two", acked, consumed))
	require.NoError(t, n.Close())
	require.NoError(t, integrity.Compare("the segment files", acked, readDisk(t, dir, r)))
}
