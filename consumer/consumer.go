package consumer

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/record"
	"github.com/partlog/partlog/transport"
)

// Consumer reads records from the partitions it is assigned, or from every
// partition of the topics it subscribes to, through a transport.Client.
// See the package documentation for positions, polling and what is
// guaranteed.
//
// Poll and Records are meant for one goroutine, as Kafka's consumer is;
// the other methods, Close included, may be called from any goroutine,
// also while a Poll waits.
type Consumer struct {
	client transport.Client
	cfg    config

	mu sync.Mutex
	// parts holds the assigned partitions; order the same, sorted, in
	// the order Poll serves them, starting at next.
	parts    map[kafka.TopicPartition]*partState
	order    []*partState
	next     int
	buffered int // bytes of the chunks in the partitions' queues
	// pending is a failed request's error for Poll to report.
	pending error
	started bool
	closed  bool
	// ready is closed, and replaced, when something a waiting Poll or
	// Position may want has happened: records or an error arrived, a
	// position was found, the consumer closed.
	ready chan struct{}
	// cancelFetch cancels the fetch in flight, nil when there is none.
	cancelFetch context.CancelFunc
	// requests backs off requests that failed as a whole.
	requests retry
	// idleUntil holds the next fetch back after an answer without
	// records, so that a FetchMaxWait of zero cannot make a busy loop.
	idleUntil time.Time
	// metadataDue is when a subscribing consumer next reads metadata;
	// metadataFailures counts reads in a row that left a topic missing.
	metadataDue      time.Time
	metadataFailures int

	// seeks counts the Seeks of every partition, for Records to notice
	// that its loop body moved one.
	seeks atomic.Uint64

	kick    chan struct{} // wakes the fetcher; buffered, never blocks
	closing chan struct{} // closed by Close
	ctx     context.Context
	cancel  context.CancelFunc
	donec   chan struct{} // closed when the fetcher has returned

	// grp is the consumer's part in its group; nil without Group.
	grp *groupMember

	// pollMu keeps Polls from running at once: pollScratch, Poll's buffer
	// for decoding batches, is theirs.
	pollMu      sync.Mutex
	pollScratch []record.Record

	// bufs are the fetch buffers kept for reuse (FetchBuffers), guarded
	// by mu.
	bufs buffers
}

// posState says whether a partition knows where it is.
type posState int8

const (
	// posReset: no position; the fetcher looks one up as reset says.
	posReset posState = iota
	// posReady: position is the next offset to return.
	posReady
	// posStopped: an error stopped the partition; it waits for a Seek.
	posStopped
)

// partState is one assigned partition. Its fields are guarded by
// Consumer.mu.
type partState struct {
	tp kafka.TopicPartition
	// epoch changes whenever the position is set other than by reading
	// on, and on Pause: answers to requests sent before are dropped.
	epoch uint64
	// moves counts the times the position was set other than by reading
	// on; seeks those of them the user asked for.
	moves, seeks uint64
	state        posState
	reset        OffsetReset // how to find the position in posReset
	position     int64       // the next offset Poll returns, in posReady
	// fetchOffset is the next offset to fetch: position, or past it by
	// the chunks queued.
	fetchOffset int64
	chunks      []*chunk
	paused      bool
	inflight    bool // part of the fetch in flight
	removed     bool // no longer assigned

	retry retry
	// resets counts the resets in a row after an offset out of range,
	// with no records fetched between: from the second on, they back off.
	resets int
	// highWatermark is the last one a fetch reported, or -1.
	highWatermark int64
	// err is the error that stopped the partition; pending an error for
	// Poll to report.
	err     error
	pending error
}

// retry tracks failures in a row, for backoff and for reporting errors
// that last.
type retry struct {
	failures int
	until    time.Time // no new attempt before
	since    time.Time // failing since, or since last reported
}

// fail records a failure at now and reports whether it is to be reported:
// when report is set, or when failures have lasted the retry timeout.
func (r *retry) fail(cfg *config, now time.Time, report bool) bool {
	if r.failures == 0 {
		r.since = now
	}
	r.failures++
	backoff := cfg.retryBackoff
	for i := 1; i < r.failures && backoff < cfg.retryBackoffMax; i++ {
		backoff *= 2
	}
	r.until = now.Add(min(backoff, cfg.retryBackoffMax))
	if report || now.Sub(r.since) >= cfg.retryTimeout {
		r.since = now
		return true
	}
	return false
}

// New returns a consumer that reads through client, configured by opts,
// which must say what to consume: Topics, or Partitions or PartitionsAt.
// Nothing is sent until the first Poll, Records or Position: positions
// are looked up then, and records are fetched from then on. The consumer
// does not close client.
func New(client transport.Client, opts ...Option) (*Consumer, error) {
	cfg := defaultConfig()
	for _, o := range opts {
		o.apply(&cfg)
	}
	if cfg.shareOnly {
		return nil, errors.New("consumer: ShareGroup and OnShareAcknowledged are options of NewShare: a share group's members are ShareConsumers")
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	c := &Consumer{
		client:  client,
		cfg:     cfg,
		parts:   map[kafka.TopicPartition]*partState{},
		ready:   make(chan struct{}),
		kick:    make(chan struct{}, 1),
		closing: make(chan struct{}),
		ctx:     ctx,
		cancel:  cancel,
		donec:   make(chan struct{}),
	}
	for _, tp := range cfg.assign {
		p := c.addLocked(tp)
		if off, ok := cfg.startAt[tp]; ok {
			p.state, p.position, p.fetchOffset = posReady, off, off
		}
	}
	if cfg.grp.group != "" {
		g, err := newGroupMember(c)
		if err != nil {
			cancel()
			return nil, err
		}
		c.grp = g
	}
	go c.run()
	return c, nil
}

// addLocked assigns tp, if it is not, with no position yet.
func (c *Consumer) addLocked(tp kafka.TopicPartition) *partState {
	if p := c.parts[tp]; p != nil {
		return p
	}
	p := &partState{tp: tp, state: posReset, reset: c.cfg.reset, highWatermark: -1}
	c.parts[tp] = p
	c.order = append(c.order, p)
	slices.SortFunc(c.order, func(a, b *partState) int {
		return cmp.Or(cmp.Compare(a.tp.Topic, b.tp.Topic), cmp.Compare(a.tp.Partition, b.tp.Partition))
	})
	return p
}

// removeLocked unassigns p, dropping what it has buffered.
func (c *Consumer) removeLocked(p *partState) {
	c.dropChunksLocked(p)
	p.removed = true
	delete(c.parts, p.tp)
	i := slices.Index(c.order, p)
	c.order = slices.Delete(c.order, i, i+1)
	if c.next > i {
		c.next--
	}
}

// dropChunksLocked empties p's queue.
func (c *Consumer) dropChunksLocked(p *partState) {
	for _, ch := range p.chunks {
		c.releaseLocked(ch.bytes)
		c.unrefLocked(ch)
	}
	clear(p.chunks)
	p.chunks = p.chunks[:0]
}

// repositionLocked forgets what p fetched and was going to report, before
// its position is set from outside the fetch stream. byUser says the
// consumer's user moved it (Seek and the like), rather than a reset after
// an offset out of range.
func (c *Consumer) repositionLocked(p *partState, byUser bool) {
	c.dropChunksLocked(p)
	p.epoch++
	p.moves++
	p.err, p.pending, p.retry = nil, nil, retry{}
	if byUser {
		p.seeks++
		p.resets = 0
		c.seeks.Add(1)
	}
	c.idleUntil = time.Time{}
}

// wakeFetcherLocked tells the fetcher to plan again. When p is now to be
// fetched and the fetch in flight cannot bring it, that fetch is
// cancelled: it may be waiting out FetchMaxWait for other partitions.
// stale says p's part of the fetch in flight, if any, is no longer wanted.
func (c *Consumer) wakeFetcherLocked(p *partState, stale bool) {
	select {
	case c.kick <- struct{}{}:
	default:
	}
	if c.cancelFetch == nil || p == nil {
		return
	}
	if p.inflight && stale || !p.inflight && c.fetchableLocked(p) && !time.Now().Before(p.retry.until) {
		c.cancelFetch()
		c.cancelFetch = nil
	}
}

// broadcastLocked wakes every Poll and Position waiting on ready.
func (c *Consumer) broadcastLocked() {
	close(c.ready)
	c.ready = make(chan struct{})
}

// startLocked lets the fetcher begin, on the first call that needs it.
func (c *Consumer) startLocked() {
	if !c.started {
		c.started = true
		c.wakeFetcherLocked(nil, false)
	}
}

// Close stops the consumer: it cancels the requests in flight, waits for
// its goroutine to return, and makes Poll and the other calls return
// ErrClosed. A Poll waiting in another goroutine returns ErrClosed. Close
// does not close the client. Closing again returns ErrClosed.
//
// A member of a group first commits its positions (unless
// DisableAutoCommit), calls OnPartitionsRevoked with its partitions and
// leaves the group, so that the others take them over at once; a static
// member (GroupInstanceID) does not leave.
func (c *Consumer) Close() error {
	if c.grp != nil {
		c.grp.leave()
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return ErrClosed
	}
	c.closed = true
	close(c.closing)
	c.cancel()
	c.broadcastLocked()
	c.mu.Unlock()
	<-c.donec
	return nil
}

// Assignment returns the partitions the consumer is assigned, sorted. A
// subscribing consumer learns its partitions from the first metadata it
// reads, after the first Poll.
func (c *Consumer) Assignment() []kafka.TopicPartition {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]kafka.TopicPartition, len(c.order))
	for i, p := range c.order {
		out[i] = p.tp
	}
	return out
}
