package producer_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/partlog/partlog"
	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/partlogtest"
	"github.com/partlog/partlog/producer"
	"github.com/partlog/partlog/record"
	"github.com/partlog/partlog/transport"
	"github.com/partlog/partlog/vfs"
)

// hostedNode is the node a lossyClient talks to; dead is set when it is
// killed, after which nothing it says reaches the producer.
type hostedNode struct {
	node *partlog.Node
	dead atomic.Bool
}

// lossyClient passes requests to a node, which a restart can replace, and
// loses the answers to the produce calls that drop chooses: the node has
// appended the batches, but the producer hears only a timeout, and sends
// them again. Calls that hold chooses wait, before they reach the node,
// until another call has passed, so later batches overtake them. Answers
// from a node that was killed or closed meanwhile are lost too, as a
// network client's would be.
type lossyClient struct {
	// Client answers calls the tests do not use with the first node.
	transport.Client
	cur atomic.Pointer[hostedNode]

	mu      sync.Mutex
	calls   int
	dropped int
	held    int
	drop    func(call int) bool
	hold    func(call int) bool
	// afterDrop runs after a dropped call has been appended, before the
	// producer hears of it: a restart goes here.
	afterDrop func(call int)
	passed    chan struct{}
	// sent holds each batch first sent, by base sequence, to compare
	// its retries with; resent counts those, changed those that differ.
	sent            map[int32][]byte
	resent, changed int
	// stall, while set, makes each produce call append and then wait for
	// its context to end: the producer times out on a batch the node
	// wrote.
	stall atomic.Bool
}

var _ transport.ProducerIDClient = (*lossyClient)(nil)

func newLossyClient(n *partlog.Node) *lossyClient {
	c := &lossyClient{Client: n.Client(), passed: make(chan struct{}, 1), sent: map[int32][]byte{}}
	c.cur.Store(&hostedNode{node: n})
	return c
}

var errLost = errors.New("the answer was lost (injected)")

// lost is the error of a call whose answer did not come back.
func lost(err error) error {
	return fmt.Errorf("%w: %w: %w", kafka.ErrRequestTimedOut, errLost, err)
}

func (c *lossyClient) node() *partlog.Node { return c.cur.Load().node }

func (c *lossyClient) Produce(ctx context.Context, req *transport.ProduceRequest) (*transport.ProduceResponse, error) {
	c.mu.Lock()
	c.calls++
	call := c.calls
	drop := c.drop != nil && c.drop(call)
	hold := c.hold != nil && c.hold(call)
	if hold {
		c.held++
	}
	for _, tp := range req.Topics {
		for _, pp := range tp.Partitions {
			h, err := record.ParseHeader(pp.Records)
			if err != nil || h.ProducerID < 0 {
				continue
			}
			if first, ok := c.sent[h.BaseSequence]; !ok {
				c.sent[h.BaseSequence] = bytes.Clone(pp.Records)
			} else {
				c.resent++
				if !bytes.Equal(first, pp.Records) {
					c.changed++
				}
			}
		}
	}
	c.mu.Unlock()
	if hold {
		select {
		case <-c.passed:
		case <-ctx.Done():
		}
	}
	h := c.cur.Load()
	resp, err := h.node.Client().Produce(ctx, req)
	if c.stall.Load() {
		<-ctx.Done()
		return nil, lost(ctx.Err())
	}
	select {
	case c.passed <- struct{}{}:
	default:
	}
	switch {
	case h.dead.Load() || errors.Is(err, kafka.ErrClosed):
		return nil, lost(kafka.ErrClosed)
	case err != nil || !drop:
		return resp, err
	}
	c.mu.Lock()
	c.dropped++
	after := c.afterDrop
	c.mu.Unlock()
	if after != nil {
		after(call)
	}
	return nil, lost(errors.New("dropped"))
}

func (c *lossyClient) Metadata(ctx context.Context, req *transport.MetadataRequest) (*transport.MetadataResponse, error) {
	resp, err := c.node().Client().Metadata(ctx, req)
	if errors.Is(err, kafka.ErrClosed) {
		return nil, lost(err)
	}
	return resp, err
}

func (c *lossyClient) Fetch(ctx context.Context, req *transport.FetchRequest) (*transport.FetchResponse, error) {
	return c.node().Client().Fetch(ctx, req)
}

func (c *lossyClient) ListOffsets(ctx context.Context, req *transport.ListOffsetsRequest) (*transport.ListOffsetsResponse, error) {
	return c.node().Client().ListOffsets(ctx, req)
}

func (c *lossyClient) InitProducerID(ctx context.Context, req *transport.InitProducerIDRequest) (*transport.InitProducerIDResponse, error) {
	resp, err := c.node().Client().InitProducerID(ctx, req)
	if errors.Is(err, kafka.ErrClosed) {
		return nil, lost(err)
	}
	return resp, err
}

func (c *lossyClient) stats() (calls, dropped, held int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls, c.dropped, c.held
}

// produceNumbered produces n records "v00000", "v00001", ... to topic t,
// partition 0, from one goroutine, flushes, and checks that every promise
// succeeded at the offset of its place in the order of sending.
func produceNumbered(t *testing.T, p *producer.Producer, n int) []string {
	t.Helper()
	ctx := context.Background()
	ps := newPromises()
	want := make([]string, n)
	for i := range n {
		want[i] = fmt.Sprintf("v%05d", i)
		r := &producer.Record{Topic: "t", Value: []byte(want[i])}
		r.SetPartition(0)
		p.Produce(ctx, r, ps.promise)
	}
	require.NoError(t, p.Flush(ctx))
	results := ps.all()
	require.Len(t, results, n)
	for i, res := range results {
		require.NoError(t, res.err, "record %s", res.value)
		require.Equal(t, want[i], res.value, "promises run in the order of sending")
		require.EqualValues(t, i, res.offset, "record %s", res.value)
	}
	return want
}

// idempotentOpts are the options of the fault tests: small batches, so
// that there are many, and retries without a wait.
func idempotentOpts(inFlight int) []producer.Option {
	return []producer.Option{producer.Idempotent(true), producer.MaxInFlight(inFlight), producer.BatchSize(512),
		producer.Linger(0), producer.RetryBackoff(time.Millisecond), producer.RequestTimeout(5 * time.Second)}
}

// TestIdempotentLostAnswers is test 18's first fault: the answers to some
// produce calls are lost after the node appended their batches, and calls
// overtake each other, so the producer sends batches again, out of order.
// Every record is in the log exactly once, in the order it was sent, for
// 1, 2 and 5 batches in flight per partition.
func TestIdempotentLostAnswers(t *testing.T) {
	for _, inFlight := range []int{1, 2, 5} {
		t.Run(fmt.Sprintf("in-flight=%d", inFlight), func(t *testing.T) {
			node := openNode(t)
			createTopic(t, node, "t", 1, nil)
			c := newLossyClient(node)
			c.drop = func(call int) bool { return call%4 == 2 }
			if inFlight > 1 {
				c.hold = func(call int) bool { return call%7 == 3 }
			}
			p := newProducer(t, c, idempotentOpts(inFlight)...)
			want := produceNumbered(t, p, 2000)
			require.Equal(t, want, fetchValues(t, node, "t", 0), "exactly once, in order")
			calls, dropped, held := c.stats()
			require.Greater(t, dropped, 10, "answers were lost (%d calls)", calls)
			require.GreaterOrEqual(t, c.resent, dropped, "every lost batch was sent again")
			require.Zero(t, c.changed, "a retry is the same bytes, with the same sequence")
			if inFlight > 1 {
				require.Greater(t, held, 5)
			}
			// Every batch carries the producer's id and follows the one
			// before in sequence.
			next := int32(0)
			for _, b := range fetchBatches(t, node, "t", 0) {
				require.EqualValues(t, 0, b.ProducerEpoch)
				require.GreaterOrEqual(t, b.ProducerID, int64(0))
				require.Equal(t, next, b.BaseSequence)
				next += b.NumRecords
			}
		})
	}
}

// TestLostAnswersWithoutIdempotence is the control: the same lost answers
// write records twice when the producer is not idempotent — what the test
// above would see if the leader did not drop duplicates.
func TestLostAnswersWithoutIdempotence(t *testing.T) {
	node := openNode(t)
	createTopic(t, node, "t", 1, nil)
	c := newLossyClient(node)
	c.drop = func(call int) bool { return call%4 == 2 }
	p := newProducer(t, c, producer.Idempotent(false), producer.BatchSize(512), producer.Linger(0), producer.RetryBackoff(time.Millisecond))
	ctx := context.Background()
	for i := range 500 {
		r := &producer.Record{Topic: "t", Value: fmt.Appendf(nil, "v%05d", i)}
		r.SetPartition(0)
		p.Produce(ctx, r, nil)
	}
	require.NoError(t, p.Flush(ctx))
	got := fetchValues(t, node, "t", 0)
	require.Greater(t, len(got), 500, "retries after lost answers wrote records twice")
	for _, b := range fetchBatches(t, node, "t", 0) {
		require.EqualValues(t, record.NoProducerID, b.ProducerID)
	}
}

// TestIdempotentAcrossRestart: the node restarts between a write and the
// producer's retry of it — closed cleanly, or killed (a crash that keeps
// only what was synced, and the old node's later answers lost) — and the
// retry goes to the restarted node, which rebuilt its producer state from
// the log: still exactly once, in order.
func TestIdempotentAcrossRestart(t *testing.T) {
	for _, kill := range []bool{false, true} {
		for _, inFlight := range []int{1, 5} {
			t.Run(fmt.Sprintf("kill=%v/in-flight=%d", kill, inFlight), func(t *testing.T) {
				fsys := vfs.NewMem()
				open := func(fsys vfs.FS) *partlog.Node {
					n, err := partlog.Open("/data", partlog.Filesystem(fsys),
						partlog.TopicDefaults(map[string]string{"segment.index.bytes": "65536"}))
					require.NoError(t, err)
					t.Cleanup(func() { n.Close() })
					return n
				}
				node := open(fsys)
				createTopic(t, node, "t", 1, nil)
				c := newLossyClient(node)
				restarts := 0
				c.drop = func(call int) bool { return call%40 == 5 }
				c.afterDrop = func(int) {
					old := c.cur.Load()
					old.dead.Store(true)
					if kill {
						fsys = fsys.CrashClone(vfs.CrashOptions{KeepUnsynced: vfs.KeepNone})
					} else {
						require.NoError(t, old.node.Close())
					}
					c.cur.Store(&hostedNode{node: open(fsys)})
					restarts++
				}
				p := newProducer(t, c, idempotentOpts(inFlight)...)
				want := produceNumbered(t, p, 1500)
				require.GreaterOrEqual(t, restarts, 2)
				require.Equal(t, want, fetchValues(t, c.node(), "t", 0), "exactly once, in order, after %d restarts", restarts)
			})
		}
	}
}

// TestIdempotentOptions: idempotence is on by default, and conflicting
// options turn it off unless it was asked for, which makes them an error,
// as in Kafka.
func TestIdempotentOptions(t *testing.T) {
	node := openNode(t)
	createTopic(t, node, "t", 1, nil)
	for _, opts := range [][]producer.Option{
		{producer.Idempotent(true), producer.Acks(kafka.AcksLeader)},
		{producer.Idempotent(true), producer.Retries(0)},
		{producer.Idempotent(true), producer.MaxInFlight(6)},
	} {
		_, err := producer.New(node.Client(), opts...)
		require.ErrorContains(t, err, "Idempotent (enable.idempotence) conflicts with")
	}
	_, err := producer.New(&faultClient{Client: node.Client()}, producer.Idempotent(true))
	require.ErrorContains(t, err, "does not implement transport.ProducerIDClient")

	producerIDOf := func(opts ...producer.Option) int64 {
		t.Helper()
		p := newProducer(t, node.Client(), opts...)
		r := &producer.Record{Topic: "t", Value: []byte("x")}
		require.NoError(t, p.ProduceSync(context.Background(), r).FirstErr())
		bs := fetchBatches(t, node, "t", 0)
		return bs[len(bs)-1].ProducerID
	}
	require.GreaterOrEqual(t, producerIDOf(), int64(0), "on by default")
	require.EqualValues(t, -1, producerIDOf(producer.Acks(kafka.AcksLeader)), "acks=1 turns the default off")
	require.EqualValues(t, -1, producerIDOf(producer.Retries(0)))
	require.EqualValues(t, -1, producerIDOf(producer.Idempotent(false)))
	first, second := producerIDOf(), producerIDOf()
	require.NotEqual(t, first, second, "each producer has its own id")
}

// TestFencedProducerFailsForGood: when another writer fences the
// producer's epoch, the batch refused reports why, and the producer fails
// every later record with the same sticky error rather than writing out of
// order.
func TestFencedProducerFailsForGood(t *testing.T) {
	node := openNode(t)
	createTopic(t, node, "t", 1, nil)
	p := newProducer(t, node.Client(), producer.Linger(0))
	ctx := context.Background()
	r := &producer.Record{Topic: "t", Value: []byte("first")}
	require.NoError(t, p.ProduceSync(ctx, r).FirstErr())
	id := fetchBatches(t, node, "t", 0)[0].ProducerID

	// A newer instance with the same producer id and epoch 1 writes.
	opts := record.DefaultBatchOptions()
	opts.ProducerID, opts.ProducerEpoch, opts.BaseSequence = id, 1, 0
	b := record.NewBuilder(opts)
	b.Append(record.Record{Value: []byte("fencer")})
	resp, err := node.Client().Produce(ctx, &transport.ProduceRequest{Acks: kafka.AcksAll, Timeout: time.Second,
		Topics: []transport.ProduceTopic{{Topic: "t", Partitions: []transport.ProducePartition{{Partition: 0, Records: b.Build()}}}}})
	require.NoError(t, err)
	require.NoError(t, resp.Topics[0].Partitions[0].Err)

	err = p.ProduceSync(ctx, &producer.Record{Topic: "t", Value: []byte("second")}).FirstErr()
	require.ErrorIs(t, err, producer.ErrFatal)
	require.ErrorIs(t, err, kafka.ErrInvalidProducerEpoch, "the promise says why")
	err = p.ProduceSync(ctx, &producer.Record{Topic: "t", Value: []byte("third")}).FirstErr()
	require.ErrorIs(t, err, producer.ErrFatal, "sticky")
	require.ErrorIs(t, err, kafka.ErrInvalidProducerEpoch)
	require.Equal(t, []string{"first", "fencer"}, fetchValues(t, node, "t", 0))
}

// TestRecordTooLargeLeavesNoGap: a batch the topic refuses for good was not
// written, so the batches after it take its sequence numbers and the
// producer goes on.
func TestRecordTooLargeLeavesNoGap(t *testing.T) {
	node := openNode(t)
	createTopic(t, node, "t", 1, map[string]string{partlog.ConfigMaxMessageBytes: "300"})
	p := newProducer(t, node.Client(), producer.Linger(0))
	ctx := context.Background()
	results := p.ProduceSync(ctx,
		&producer.Record{Topic: "t", Value: []byte("a")},
		&producer.Record{Topic: "t", Value: make([]byte, 400)},
		&producer.Record{Topic: "t", Value: []byte("b")})
	require.NoError(t, results[0].Err)
	require.ErrorIs(t, results[1].Err, kafka.ErrMessageTooLarge)
	require.NotErrorIs(t, results[1].Err, producer.ErrFatal)
	require.NoError(t, results[2].Err)
	require.NoError(t, p.ProduceSync(ctx, &producer.Record{Topic: "t", Value: []byte("c")}).FirstErr())
	require.Equal(t, []string{"a", "b", "c"}, fetchValues(t, node, "t", 0))
	next := int32(0)
	for _, b := range fetchBatches(t, node, "t", 0) {
		require.Equal(t, next, b.BaseSequence)
		next += b.NumRecords
	}
}

// TestExpiredProducerStartsOver: a partition that forgot the producer
// (producer.id.expiration.ms) answers its next batch UNKNOWN_PRODUCER_ID;
// the producer starts that partition's sequence over and the record is
// written once.
func TestExpiredProducerStartsOver(t *testing.T) {
	var now atomic.Int64
	now.Store(time.Now().UnixMilli())
	n, err := partlog.Open("/data", partlog.Filesystem(vfs.NewMem()),
		partlog.TopicDefaults(map[string]string{"segment.index.bytes": "65536"}),
		partlog.Clock(func() time.Time { return time.UnixMilli(now.Load()) }),
		partlog.ProducerIDExpiration(time.Hour))
	require.NoError(t, err)
	t.Cleanup(func() { n.Close() })
	createTopic(t, n, "t", 1, nil)
	p := newProducer(t, n.Client(), producer.Linger(0))
	ctx := context.Background()
	require.NoError(t, p.ProduceSync(ctx, &producer.Record{Topic: "t", Value: []byte("a")}).FirstErr())
	require.NoError(t, p.ProduceSync(ctx, &producer.Record{Topic: "t", Value: []byte("b")}).FirstErr())
	now.Add(2 * time.Hour.Milliseconds())
	require.NoError(t, partlogtest.ExpireProducers(n))
	require.NoError(t, p.ProduceSync(ctx, &producer.Record{Topic: "t", Value: []byte("c")}).FirstErr())
	require.NoError(t, p.ProduceSync(ctx, &producer.Record{Topic: "t", Value: []byte("d")}).FirstErr())
	require.Equal(t, []string{"a", "b", "c", "d"}, fetchValues(t, n, "t", 0))
	var seqs []int32
	for _, b := range fetchBatches(t, n, "t", 0) {
		seqs = append(seqs, b.BaseSequence)
	}
	require.Equal(t, []int32{0, 1, 0, 1}, seqs)
}

// noIDClient refuses InitProducerId for good.
type noIDClient struct{ partlog.Client }

func (c noIDClient) InitProducerID(context.Context, *transport.InitProducerIDRequest) (*transport.InitProducerIDResponse, error) {
	return &transport.InitProducerIDResponse{Err: fmt.Errorf("%w: no ids today", kafka.ErrInvalidRequest), ProducerID: -1, ProducerEpoch: -1}, nil
}

// TestInitProducerIDRefused: a producer that cannot get an id fails its
// records with ErrFatal and the reason, and sends nothing.
func TestInitProducerIDRefused(t *testing.T) {
	node := openNode(t)
	createTopic(t, node, "t", 1, nil)
	p := newProducer(t, noIDClient{node.Client()})
	err := p.ProduceSync(context.Background(), &producer.Record{Topic: "t", Value: []byte("x")}).FirstErr()
	require.ErrorIs(t, err, producer.ErrFatal)
	require.ErrorIs(t, err, kafka.ErrInvalidRequest)
	require.Empty(t, fetchValues(t, node, "t", 0))
}

// TestDeliveryTimeoutBumpsEpoch: batches that timed out after the node may
// have written them fail — ErrDeliveryTimeout for the first, which starts
// a new epoch, and the timed-out ones behind it are given up with their
// last error, since resending them in the new epoch could write them
// twice — and the producer goes on in the new epoch (KIP-360) instead of
// failing: later records start at sequence 0 of epoch 1. The batches the
// node wrote are in the log once each.
func TestDeliveryTimeoutBumpsEpoch(t *testing.T) {
	for _, inFlight := range []int{1, 5} {
		t.Run(fmt.Sprintf("in-flight=%d", inFlight), func(t *testing.T) {
			node := openNode(t)
			createTopic(t, node, "t", 1, nil)
			c := newLossyClient(node)
			p := newProducer(t, c, producer.Linger(0), producer.BatchSize(0), producer.MaxInFlight(inFlight),
				producer.RequestTimeout(50*time.Millisecond), producer.DeliveryTimeout(300*time.Millisecond),
				producer.RetryBackoff(5*time.Millisecond))
			ctx := context.Background()
			require.NoError(t, p.ProduceSync(ctx, &producer.Record{Topic: "t", Value: []byte("a")}).FirstErr())

			c.stall.Store(true)
			stalled := []string{"b1", "b2", "b3", "b4", "b5"}[:inFlight]
			errs := make(chan error, len(stalled))
			var left atomic.Int32
			left.Store(int32(len(stalled)))
			for _, v := range stalled {
				p.Produce(ctx, &producer.Record{Topic: "t", Value: []byte(v)}, func(_ *producer.Record, err error) {
					if left.Add(-1) == 0 {
						c.stall.Store(false)
					}
					errs <- err
				})
			}
			for i := range stalled {
				err := <-errs
				require.Error(t, err)
				require.NotErrorIs(t, err, producer.ErrFatal)
				if i == 0 {
					require.ErrorIs(t, err, producer.ErrDeliveryTimeout)
				} else {
					require.True(t, errors.Is(err, producer.ErrDeliveryTimeout) || errors.Is(err, kafka.ErrRequestTimedOut), "%v", err)
				}
			}

			require.NoError(t, p.ProduceSync(ctx, &producer.Record{Topic: "t", Value: []byte("c")}).FirstErr())
			require.NoError(t, p.ProduceSync(ctx, &producer.Record{Topic: "t", Value: []byte("d")}).FirstErr())
			// What the node wrote of the stalled batches is a prefix of
			// them (a batch follows the one before, or is refused), each
			// once; the first was written by its first attempt.
			values := fetchValues(t, node, "t", 0)
			written := len(values) - 3
			require.GreaterOrEqual(t, written, 1)
			want := append(append([]string{"a"}, stalled[:written]...), "c", "d")
			require.Equal(t, want, values)
			var got, wantSeq [][2]int32
			for i := range want {
				switch {
				case i <= written:
					wantSeq = append(wantSeq, [2]int32{0, int32(i)})
				default:
					wantSeq = append(wantSeq, [2]int32{1, int32(i - written - 1)})
				}
			}
			for _, b := range fetchBatches(t, node, "t", 0) {
				got = append(got, [2]int32{int32(b.ProducerEpoch), b.BaseSequence})
			}
			require.Equal(t, wantSeq, got)
		})
	}
}
