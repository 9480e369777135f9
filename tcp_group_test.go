package partlog_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/partlog/partlog"
	"github.com/partlog/partlog/consumer"
	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/producer"
	"github.com/partlog/partlog/transport"
	"github.com/partlog/partlog/vfs"
)

// consumed is what group members took, shared between their goroutines.
type consumed struct {
	mu     sync.Mutex
	values map[string]int32 // value → the member that consumed it
	next   map[int32]int64  // partition → the next offset expected
	owner  map[int32]int32  // partition → the member that consumed it
	total  int
	err    error
	done   chan struct{} // closed once want records were taken
	want   int
}

func newConsumed(want int) *consumed {
	return &consumed{values: map[string]int32{}, next: map[int32]int64{}, owner: map[int32]int32{}, done: make(chan struct{}), want: want}
}

// add records that member took value from partition p at offset; it fails
// on a duplicate, a gap, or a partition two members read.
func (c *consumed) add(member, p int32, offset int64, value string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return
	}
	switch o, ok := c.owner[p]; {
	case ok && o != member:
		c.err = fmt.Errorf("partition %d read by members %d and %d", p, o, member)
	case c.values[value] != 0:
		c.err = fmt.Errorf("record %q consumed twice", value)
	case offset != c.next[p]:
		c.err = fmt.Errorf("partition %d: offset %d, want %d", p, offset, c.next[p])
	}
	if c.err != nil {
		close(c.done)
		return
	}
	c.owner[p], c.values[value], c.next[p] = member, member+1, offset+1
	if c.total++; c.total == c.want {
		close(c.done)
	}
}

// TestTCPGroupProducerConsumer runs partlog's idempotent producer and two
// consumer.Group members — sharing one TCPClient, so that each one's
// JoinGroup waits on a connection of its own — against a node over TCP.
// Every record is consumed exactly once, each partition by one member; the
// committed offsets are the log end offsets, and a member that connects
// afterwards goes on from them.
func TestTCPGroupProducerConsumer(t *testing.T) {
	n := openNode(t, vfs.NewMem(), partlog.OffsetsTopicPartitions(3))
	defer n.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	require.NoError(t, n.CreateTopic(ctx, partlog.NewTopic{Name: "study", Partitions: 3}))
	addr := serveNode(t, n)
	c, err := transport.Dial(ctx, addr, transport.DialOptions{})
	require.NoError(t, err)

	// Two members join before anything is produced, so that what each
	// reads is settled before there is anything to read.
	changed := make(chan struct{}, 1)
	signal := func(context.Context, *consumer.Consumer, []kafka.TopicPartition) {
		select {
		case changed <- struct{}{}:
		default:
		}
	}
	member := func() *consumer.Consumer {
		m, err := consumer.New(c, consumer.Group("lzl"), consumer.Topics("study"), consumer.AutoOffsetReset(consumer.Earliest),
			consumer.DisableAutoCommit(), consumer.SessionTimeout(10*time.Second),
			consumer.OnPartitionsAssigned(signal), consumer.OnPartitionsRevoked(signal), consumer.OnPartitionsLost(signal))
		require.NoError(t, err)
		return m
	}
	members := []*consumer.Consumer{member(), member()}
	settled := func() bool {
		a, b := members[0].Assignment(), members[1].Assignment()
		return len(a) > 0 && len(b) > 0 && len(a)+len(b) == 3
	}
	const total = 600
	got := newConsumed(total)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i, m := range members {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				case <-ctx.Done():
					return
				default:
				}
				fs, err := m.Poll(ctx, 50*time.Millisecond)
				if err != nil {
					got.mu.Lock()
					if got.err == nil && ctx.Err() == nil {
						got.err = fmt.Errorf("member %d: poll: %w", i, err)
						close(got.done)
					}
					got.mu.Unlock()
					return
				}
				fs.EachRecord(func(r *consumer.Record) { got.add(int32(i), r.Partition, r.Offset, string(r.Value)) })
				if err := m.Commit(ctx); err != nil && ctx.Err() == nil {
					t.Errorf("member %d: commit: %v", i, err)
				}
			}
		})
	}
	// The members rebalance by themselves; wait until both own partitions.
	for !settled() {
		select {
		case <-changed:
		case <-ctx.Done():
			t.Fatalf("members never settled: %v and %v", members[0].Assignment(), members[1].Assignment())
		}
	}

	p, err := producer.New(c)
	require.NoError(t, err)
	recs := make([]*producer.Record, total)
	for i := range recs {
		recs[i] = &producer.Record{Topic: "study", Key: fmt.Appendf(nil, "k%d", i%11), Value: fmt.Appendf(nil, "v%d", i)}
	}
	require.NoError(t, p.ProduceSync(ctx, recs...).FirstErr())
	require.NoError(t, p.Close())

	select {
	case <-got.done:
	case <-ctx.Done():
	}
	close(stop)
	wg.Wait()
	require.NoError(t, got.err)
	require.Equal(t, total, got.total)
	require.Len(t, got.owner, 3)
	for _, m := range members {
		require.NoError(t, m.Close())
	}

	// The producer was idempotent: it took producer id 0 over TCP, and its
	// batches carry it.
	pid, err := c.InitProducerID(ctx, &transport.InitProducerIDRequest{ProducerID: -1, ProducerEpoch: -1})
	require.NoError(t, err)
	require.Equal(t, &transport.InitProducerIDResponse{ProducerID: 1}, pid, "the producer had id 0")
	f, err := c.Fetch(ctx, &transport.FetchRequest{MaxBytes: 1 << 20, Topics: []transport.FetchTopic{{Topic: "study",
		Partitions: []transport.FetchPartition{{Partition: 0, MaxBytes: 1 << 20, CurrentLeaderEpoch: -1, LastFetchedEpoch: -1, LogStartOffset: -1}}}}})
	require.NoError(t, err)
	var batch kmsg.RecordBatch
	require.NoError(t, batch.ReadFrom(f.Topics[0].Partitions[0].Records))
	require.Equal(t, int64(0), batch.ProducerID)
	require.Equal(t, int32(0), batch.FirstSequence)
	require.NoError(t, c.Close())

	// A new connection sees the commits, and a new member goes on from
	// them.
	c2, err := transport.Dial(ctx, addr, transport.DialOptions{})
	require.NoError(t, err)
	defer c2.Close()
	committed := committedOffsets(t, c2, "lzl", "study")
	d, err := n.DescribeTopics("study")
	require.NoError(t, err)
	require.Equal(t, map[int32]int64{0: d[0].Partitions[0].LogEndOffset, 1: d[0].Partitions[1].LogEndOffset, 2: d[0].Partitions[2].LogEndOffset}, committed)
	require.Equal(t, got.next, committed)

	p2, err := producer.New(c2)
	require.NoError(t, err)
	const more = 30
	recs = recs[:0]
	for i := range more {
		recs = append(recs, &producer.Record{Topic: "study", Value: fmt.Appendf(nil, "more %d", i)})
	}
	require.NoError(t, p2.ProduceSync(ctx, recs...).FirstErr())
	require.NoError(t, p2.Close())
	m, err := consumer.New(c2, consumer.Group("lzl"), consumer.Topics("study"), consumer.AutoOffsetReset(consumer.Earliest))
	require.NoError(t, err)
	defer m.Close()
	seen := map[string]bool{}
	for rec, err := range m.Records(ctx) {
		require.NoError(t, err)
		require.GreaterOrEqual(t, rec.Offset, committed[rec.Partition], "nothing before the committed offset again")
		require.False(t, seen[string(rec.Value)])
		seen[string(rec.Value)] = true
		if len(seen) == more {
			break
		}
	}
	for i := range more {
		require.True(t, seen[fmt.Sprintf("more %d", i)])
	}
}

// TestTCPKafkaClientGroup has franz-go's kgo, with idempotent writes on as
// kgo has them by default, produce to a node over TCP, and two kgo clients
// in one consumer group share the topic's partitions: each record is
// consumed once, by the member that owns its partition, and the offsets
// they commit are the log end offsets.
func TestTCPKafkaClientGroup(t *testing.T) {
	n := openNode(t, vfs.NewMem(), partlog.OffsetsTopicPartitions(3))
	defer n.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const partitions = 4
	require.NoError(t, n.CreateTopic(ctx, partlog.NewTopic{Name: "study", Partitions: partitions}))
	// The server logs a request it cannot answer (an API or version it does
	// not serve) before closing the connection: there must be none.
	warnings := &warnLog{}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s := transport.NewServer(n.Client(), transport.ServerOptions{Logger: slog.New(warnings)})
	go s.Serve(ln)
	defer s.Close()
	addr := ln.Addr().String()

	// The members' assignments, as kgo tells them.
	var mu sync.Mutex
	owned := [2]map[int32]bool{{}, {}}
	changed := make(chan struct{}, 1)
	signal := func() {
		select {
		case changed <- struct{}{}:
		default:
		}
	}
	member := func(i int) *kgo.Client {
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ClientID(fmt.Sprintf("member-%d", i)),
			kgo.ConsumerGroup("kgroup"), kgo.ConsumeTopics("study"), kgo.DisableAutoCommit(), kgo.HeartbeatInterval(100*time.Millisecond), kgo.FetchMaxWait(time.Second),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
			kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
				mu.Lock()
				for _, p := range m["study"] {
					owned[i][p] = true
				}
				mu.Unlock()
				signal()
			}),
			kgo.OnPartitionsRevoked(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
				mu.Lock()
				for _, p := range m["study"] {
					delete(owned[i], p)
				}
				mu.Unlock()
				signal()
			}))
		require.NoError(t, err)
		return cl
	}
	members := []*kgo.Client{member(0), member(1)}
	defer members[0].Close()
	closeSecond := sync.OnceFunc(members[1].Close)
	defer closeSecond()
	settled := func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(owned[0]) > 0 && len(owned[1]) > 0 && len(owned[0])+len(owned[1]) == partitions
	}
	// kgo joins in the background, but hands over assignments in polls.
	polls := make(chan struct{})
	var wg sync.WaitGroup
	const total = 400
	got := newConsumed(total)
	var producerIDs sync.Map
	for i, m := range members {
		wg.Go(func() {
			for {
				select {
				case <-polls:
					return
				default:
				}
				pctx, pcancel := context.WithTimeout(ctx, 50*time.Millisecond)
				fs := m.PollFetches(pctx)
				pcancel()
				for _, e := range fs.Errors() {
					if !errors.Is(e.Err, context.DeadlineExceeded) && !errors.Is(e.Err, context.Canceled) {
						t.Errorf("member %d: fetch %s-%d: %v", i, e.Topic, e.Partition, e.Err)
					}
				}
				fs.EachRecord(func(r *kgo.Record) {
					producerIDs.Store(r.ProducerID, true)
					got.add(int32(i), r.Partition, r.Offset, string(r.Value))
				})
				if err := m.CommitUncommittedOffsets(ctx); err != nil && ctx.Err() == nil {
					t.Errorf("member %d: commit: %v", i, err)
				}
			}
		})
	}
	for !settled() {
		select {
		case <-changed:
		case <-ctx.Done():
			t.Fatalf("kgo members never settled: %v", owned)
		}
	}

	prod, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("study"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	require.NoError(t, err)
	defer prod.Close()
	var results sync.WaitGroup
	for i := range total {
		results.Add(1)
		prod.Produce(ctx, &kgo.Record{Partition: int32(i % partitions), Value: fmt.Appendf(nil, "hello %d", i)}, func(_ *kgo.Record, err error) {
			defer results.Done()
			if err != nil {
				t.Errorf("produce: %v", err)
			}
		})
	}
	results.Wait()

	select {
	case <-got.done:
	case <-ctx.Done():
	}
	close(polls)
	wg.Wait()
	require.NoError(t, got.err)
	require.Equal(t, total, got.total)
	require.Len(t, got.owner, partitions)
	ids := 0
	producerIDs.Range(func(k, _ any) bool {
		ids++
		require.GreaterOrEqual(t, k.(int64), int64(0), "kgo produced idempotently: its batches carry a producer id")
		return true
	})
	require.Equal(t, 1, ids)

	committed := committedOffsets(t, n.Client(), "kgroup", "study")
	require.Equal(t, got.next, committed, "the committed offsets are where each partition's reading ended")
	d, err := n.DescribeTopics("study")
	require.NoError(t, err)
	for p := range int32(partitions) {
		require.Equal(t, d[0].Partitions[p].LogEndOffset, committed[p])
	}
	desc, err := n.Client().DescribeGroups(ctx, &transport.DescribeGroupsRequest{Groups: []string{"kgroup"}})
	require.NoError(t, err)
	require.Equal(t, "Stable", desc.Groups[0].State)
	require.Len(t, desc.Groups[0].Members, 2)
	clientIDs := []string{desc.Groups[0].Members[0].ClientID, desc.Groups[0].Members[1].ClientID}
	require.ElementsMatch(t, []string{"member-0", "member-1"}, clientIDs, "the client id travels in the request header")

	// The second member leaves; the first takes its partitions over and
	// goes on from the offsets the second committed.
	closeSecond()
	const more = 100
	got2 := newConsumed(more)
	for p, o := range committed {
		got2.next[p] = o
	}
	for i := range more {
		results.Add(1)
		prod.Produce(ctx, &kgo.Record{Partition: int32(i % partitions), Value: fmt.Appendf(nil, "more %d", i)}, func(_ *kgo.Record, err error) {
			defer results.Done()
			if err != nil {
				t.Errorf("produce: %v", err)
			}
		})
	}
	results.Wait()
	for got2.total < more && got2.err == nil {
		fs := members[0].PollFetches(ctx)
		require.NoError(t, ctx.Err(), "took %d of %d records", got2.total, more)
		for _, e := range fs.Errors() {
			t.Errorf("fetch %s-%d: %v", e.Topic, e.Partition, e.Err)
		}
		fs.EachRecord(func(r *kgo.Record) { got2.add(0, r.Partition, r.Offset, string(r.Value)) })
		require.NoError(t, members[0].CommitUncommittedOffsets(ctx))
	}
	require.NoError(t, got2.err)
	require.Len(t, got2.owner, partitions, "the remaining member reads every partition")

	// A Kafka admin's view, through kgo's requests from a client outside
	// the group: the group and its offsets, then its deletion.
	members[0].Close()
	lg := kmsg.NewPtrListGroupsRequest()
	lgResp, err := lg.RequestWith(ctx, prod)
	require.NoError(t, err)
	require.Len(t, lgResp.Groups, 1)
	require.Equal(t, "kgroup", lgResp.Groups[0].Group)
	require.Equal(t, "Empty", lgResp.Groups[0].GroupState, "both members left")
	of := kmsg.NewPtrOffsetFetchRequest()
	ofg := kmsg.NewOffsetFetchRequestGroup()
	ofg.Group = "kgroup"
	of.Groups = append(of.Groups, ofg)
	ofResp, err := of.RequestWith(ctx, prod)
	require.NoError(t, err)
	require.Len(t, ofResp.Groups, 1)
	for _, tr := range ofResp.Groups[0].Topics {
		for _, pr := range tr.Partitions {
			require.Equal(t, got2.next[pr.Partition], pr.Offset, "partition %d", pr.Partition)
		}
	}
	dg := kmsg.NewPtrDeleteGroupsRequest()
	dg.Groups = []string{"kgroup"}
	dgResp, err := dg.RequestWith(ctx, prod)
	require.NoError(t, err)
	require.Equal(t, int16(0), dgResp.Groups[0].ErrorCode)
	desc, err = n.Client().DescribeGroups(ctx, &transport.DescribeGroupsRequest{Groups: []string{"kgroup"}})
	require.NoError(t, err)
	require.Equal(t, "Dead", desc.Groups[0].State)
	require.Empty(t, warnings.messages(), "kgo sent nothing the server does not serve")
}

// warnLog is a slog.Handler that keeps the messages of warnings and
// errors.
type warnLog struct {
	mu   sync.Mutex
	msgs []string
}

func (w *warnLog) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }
func (w *warnLog) WithAttrs([]slog.Attr) slog.Handler           { return w }
func (w *warnLog) WithGroup(string) slog.Handler                { return w }

func (w *warnLog) Handle(_ context.Context, r slog.Record) error {
	msg := r.Message
	r.Attrs(func(a slog.Attr) bool { msg += " " + a.String(); return true })
	w.mu.Lock()
	w.msgs = append(w.msgs, msg)
	w.mu.Unlock()
	return nil
}

func (w *warnLog) messages() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.msgs...)
}

// losingAnswers is a Node whose first produces are appended but not
// answered: the handler fails after the append, and the server closes the
// connection, as when a connection breaks between the append and the
// answer.
type losingAnswers struct {
	partlog.Client
	lose atomic.Int32
}

func (l *losingAnswers) Produce(ctx context.Context, req *transport.ProduceRequest) (*transport.ProduceResponse, error) {
	resp, err := l.Client.Produce(ctx, req)
	if err == nil && l.lose.Add(-1) >= 0 {
		return nil, errors.New("the answer is lost")
	}
	return resp, err
}

// TestTCPIdempotentProducerLostAnswers: partlog's producer sends over TCP,
// and the first answers are lost after the node appended the batches.
// Idempotent, it sends them again with their sequence numbers, the node
// answers the duplicates with their first offsets, and the log holds
// each record exactly once. Without idempotence the same faults leave
// duplicates, which shows the faults bite.
func TestTCPIdempotentProducerLostAnswers(t *testing.T) {
	for _, idempotent := range []bool{true, false} {
		t.Run(fmt.Sprintf("idempotent=%v", idempotent), func(t *testing.T) {
			n := openNode(t, vfs.NewMem())
			defer n.Close()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			require.NoError(t, n.CreateTopic(ctx, partlog.NewTopic{Name: "study", Partitions: 2}))
			l := &losingAnswers{Client: n.Client()}
			l.lose.Store(3)
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			require.NoError(t, err)
			s := transport.NewServer(l, transport.ServerOptions{})
			go s.Serve(ln)
			defer s.Close()
			c, err := transport.Dial(ctx, ln.Addr().String(), transport.DialOptions{ReconnectBackoff: time.Millisecond})
			require.NoError(t, err)
			defer c.Close()

			p, err := producer.New(c, producer.Idempotent(idempotent), producer.RetryBackoff(time.Millisecond))
			require.NoError(t, err)
			const total = 300
			recs := make([]*producer.Record, total)
			for i := range recs {
				recs[i] = &producer.Record{Topic: "study", Partition: int32(i % 2), Value: fmt.Appendf(nil, "v%d", i)}
			}
			// In rounds, so that several requests carry batches.
			for i := 0; i < total; i += 50 {
				require.NoError(t, p.ProduceSync(ctx, recs[i:i+50]...).FirstErr())
			}
			require.NoError(t, p.Close())
			require.Less(t, l.lose.Load(), int32(0), "every planned loss happened")

			d, err := n.DescribeTopics("study")
			require.NoError(t, err)
			leo := d[0].Partitions[0].LogEndOffset + d[0].Partitions[1].LogEndOffset
			if !idempotent {
				require.Greater(t, leo, int64(total), "lost answers made duplicates")
				return
			}
			require.Equal(t, int64(total), leo)
			cons, err := consumer.New(c, consumer.Topics("study"), consumer.AutoOffsetReset(consumer.Earliest))
			require.NoError(t, err)
			defer cons.Close()
			seen := map[string]bool{}
			for rec, err := range cons.Records(ctx) {
				require.NoError(t, err)
				require.False(t, seen[string(rec.Value)], "%s twice", rec.Value)
				seen[string(rec.Value)] = true
				if len(seen) == total {
					break
				}
			}
			for i, r := range recs {
				require.True(t, seen[string(r.Value)])
				require.Equal(t, int64(i/2), r.Offset, "acknowledged at the offset it has in the log")
			}
		})
	}
}

// TestTCPGroupMemberRidesOutBrokenConnections: the server in front of a
// node is closed, breaking every connection of a consumer.Group member
// over TCP, and a new one listens on the same address. The member keeps
// its membership (the outage is shorter than its session), reconnects, and
// consumes what was produced meanwhile: every record once, at contiguous
// offsets, with the commits at the log end afterwards.
func TestTCPGroupMemberRidesOutBrokenConnections(t *testing.T) {
	n := openNode(t, vfs.NewMem(), partlog.OffsetsTopicPartitions(1))
	defer n.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	require.NoError(t, n.CreateTopic(ctx, partlog.NewTopic{Name: "study", Partitions: 2}))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	s := transport.NewServer(n.Client(), transport.ServerOptions{})
	go s.Serve(ln)

	c, err := transport.Dial(ctx, addr, transport.DialOptions{ReconnectBackoff: time.Millisecond})
	require.NoError(t, err)
	defer c.Close()
	m, err := consumer.New(c, consumer.Group("lzl"), consumer.Topics("study"), consumer.AutoOffsetReset(consumer.Earliest),
		consumer.DisableAutoCommit(), consumer.SessionTimeout(30*time.Second))
	require.NoError(t, err)
	defer m.Close()
	p, err := producer.New(n.Client()) // in the node's process: only the member's connections break
	require.NoError(t, err)
	defer p.Close()

	const round = 100
	got := newConsumed(2 * round)
	produce := func(from int) {
		recs := make([]*producer.Record, round)
		for i := range recs {
			recs[i] = &producer.Record{Topic: "study", Partition: int32(i % 2), Value: fmt.Appendf(nil, "v%d", from+i)}
		}
		require.NoError(t, p.ProduceSync(ctx, recs...).FirstErr())
	}
	consume := func(until int) {
		for got.total < until && got.err == nil {
			fs, err := m.Poll(ctx, time.Second)
			require.NoError(t, err)
			fs.EachRecord(func(r *consumer.Record) { got.add(0, r.Partition, r.Offset, string(r.Value)) })
			if err := m.Commit(ctx); err != nil {
				require.True(t, kafka.IsRetriable(err), "a commit fails only for the broken connection: %v", err)
			}
		}
		require.NoError(t, got.err)
	}
	produce(0)
	consume(round)
	generation := m.GroupMetadata().Generation

	require.NoError(t, s.Close()) // every connection breaks
	ln, err = net.Listen("tcp", addr)
	require.NoError(t, err)
	s = transport.NewServer(n.Client(), transport.ServerOptions{})
	go s.Serve(ln)
	defer s.Close()

	produce(round)
	consume(2 * round)
	require.NoError(t, m.Commit(ctx))
	require.Equal(t, generation, m.GroupMetadata().Generation, "the member kept its membership: no rebalance")
	d, err := n.DescribeTopics("study")
	require.NoError(t, err)
	committed, err := m.Committed(ctx)
	require.NoError(t, err)
	for p := range int32(2) {
		require.Equal(t, d[0].Partitions[p].LogEndOffset, committed[kafka.TopicPartition{Topic: "study", Partition: p}].Offset)
	}
}
