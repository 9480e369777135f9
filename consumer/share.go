package consumer

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/transport"
)

// The share consumer's errors.
var (
	// ErrNotDelivered means Acknowledge named a record that the last Poll
	// did not return, or whose acknowledgement was sent already (by
	// Commit).
	ErrNotDelivered = errors.New("consumer: record not delivered by the last Poll, or already acknowledged")
)

// AcknowledgeError says that the acknowledgements of some records of a
// partition were not applied, and why. Err matches a Kafka error
// (kafka.ErrInvalidRecordState, kafka.ErrShareSessionNotFound, ...) or the
// client's error for a request that got no answer, with errors.Is; in
// the second case the node may or may not have applied them.
type AcknowledgeError struct {
	// Topic is the partition's topic.
	Topic string
	// Partition is the partition's index in the topic.
	Partition int32
	// Offsets are the offsets of the records whose acknowledgements
	// failed, ascending.
	Offsets []int64
	// Err is the cause.
	Err error
}

// Error names the partition, how many records and the cause.
func (e *AcknowledgeError) Error() string {
	return fmt.Sprintf("consumer: acknowledging %d records of %s-%d: %v", len(e.Offsets), e.Topic, e.Partition, e.Err)
}

// Unwrap returns Err.
func (e *AcknowledgeError) Unwrap() error { return e.Err }

// ShareRecord is a record a share consumer acquired: one of the Records of
// the partition, with how many times it has been delivered.
//
// Key, Value and header values point into the bytes of the ShareFetch
// answer that brought the record, which the consumer never reuses: the
// record and its slices belong to the caller and stay valid for as long as
// the caller keeps them, acknowledged or not.
type ShareRecord struct {
	Record
	// DeliveryCount is how many times the record has been delivered to a
	// member of the group, counting this one: 1 the first time, more after
	// a release, a lock that expired or a member that left.
	DeliveryCount int16

	// node is the node whose share session delivered the record, which
	// its acknowledgement goes to.
	node int32
}

// shareKey names a record delivered, and the node that delivered it: a
// partition moving between leaders may have the same offset delivered
// by both, each to be acknowledged to its own node.
type shareKey struct {
	tp     kafka.TopicPartition
	offset int64
	node   int32
}

// ShareConsumer is a member of a share group (KIP-932, Kafka's
// KafkaShareConsumer): it receives records of the topics it subscribes
// to, each acquired for it for a while, and acknowledges each — accepted,
// released for redelivery or rejected. The members of a share group may
// read the same partitions at once; each record goes to one member at a
// time. See "Share groups" in the package documentation.
//
// Poll, Acknowledge and Commit are meant for one goroutine, as Kafka's
// share consumer is; Close may be called from any goroutine, also while
// a Poll waits, which it interrupts.
type ShareConsumer struct {
	client transport.Client
	// coord reaches the group's coordinator; router, when the client
	// reaches a cluster, the partitions' leaders, else share is the one
	// node that leads them all.
	coord    transport.ShareCoordinatorClient
	router   transport.NodeRouter
	share    transport.ShareGroupClient
	cfg      config
	scfg     shareConfig
	memberID string

	// mu guards the membership, which the heartbeat goroutine writes, and
	// closed.
	mu sync.Mutex
	// memberEpoch is the member's epoch: 0 while it joins.
	memberEpoch int32
	// fullHeartbeat says the next heartbeat names the subscription again,
	// after one that went unanswered.
	fullHeartbeat bool
	// target is the last assignment the coordinator gave, topics by id;
	// targetVersion counts the assignments given.
	target        []transport.TopicIDPartitions
	targetVersion int
	// fatal is the coordinator's refusal of the member, for Poll.
	fatal   error
	closed  bool
	leaving bool
	// changed is closed, and replaced, when the membership changes.
	changed chan struct{}

	// reqMu is held by Poll, Acknowledge, Commit and Close: it keeps the
	// share sessions' requests in order, and guards st.
	reqMu sync.Mutex
	st    shareState

	heartbeatNow chan struct{}
	hbStop       chan struct{}
	hbDone       chan struct{} // closed when the heartbeat goroutine has returned
	hbCtx        context.Context
	hbCancel     context.CancelFunc
	// ctx is cancelled by Close: it ends the requests of a Poll or a
	// Commit in flight.
	ctx    context.Context
	cancel context.CancelFunc
	// callCtx is the context of the ShareFetches sent in the background,
	// cancelled when Close has waited for them as long as it may, and
	// when it returns.
	callCtx    context.Context
	callCancel context.CancelFunc
}

// NewShare returns a member of the share group that ShareGroup names,
// subscribed to the topics Topics names, reading through client. It
// joins the group at once, in a goroutine that heartbeats until Close;
// records are fetched from the first Poll on. The consumer does not
// close client.
//
// A client that reaches a cluster — a transport.ClusterClient, which is a
// transport.NodeRouter — sends the heartbeats to the group's coordinator
// and keeps a share session with each node that leads a partition the
// member is assigned, following the leaders as they move. Any other
// client must implement transport.ShareGroupClient: it is one node, the
// coordinator and the leader of every partition (a TCPClient, or a node
// in the same process).
//
// Of Consumer's options these apply: Topics, ClientID, MaxPollRecords,
// FetchMaxBytes, FetchMinBytes, FetchMaxWait, CheckCRCs, RetryBackoff,
// RetryBackoffMax and RetryTimeout, plus OnShareAcknowledged. The others
// are refused, with an error naming them: the group's coordinator and the
// partitions' leaders decide what they decide for a Consumer.
func NewShare(client transport.Client, opts ...Option) (*ShareConsumer, error) {
	cfg := defaultConfig()
	var scfg shareConfig
	var refused []string
	for _, o := range opts {
		if so, ok := o.(shareOption); ok {
			so(&scfg)
			continue
		}
		for _, name := range refusedByShare(o) {
			if !slices.Contains(refused, name) {
				refused = append(refused, name)
			}
		}
		o.apply(&cfg)
	}
	switch {
	case len(refused) > 0:
		return nil, refusedError(refused)
	case scfg.group == "":
		return nil, errors.New("consumer: NewShare needs ShareGroup: the share group's id")
	case len(cfg.topics) == 0:
		return nil, errors.New("consumer: NewShare needs Topics: the topics to subscribe to")
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	router, _ := client.(transport.NodeRouter)
	sg, _ := client.(transport.ShareGroupClient)
	coord, ok := client.(transport.ShareCoordinatorClient)
	if !ok || (router == nil && sg == nil) {
		return nil, errors.New("consumer: NewShare needs a client that implements transport.ShareGroupClient, or a cluster's (a transport.ClusterClient)")
	}
	id := make([]byte, 16)
	rand.Read(id)
	c := &ShareConsumer{
		client: client, coord: coord, router: router, share: sg, cfg: cfg, scfg: scfg,
		memberID:     base64.RawURLEncoding.EncodeToString(id),
		changed:      make(chan struct{}),
		heartbeatNow: make(chan struct{}, 1),
		hbStop:       make(chan struct{}),
		hbDone:       make(chan struct{}),
		st:           newShareState(),
	}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	c.callCtx, c.callCancel = context.WithCancel(context.Background())
	c.hbCtx, c.hbCancel = context.WithCancel(context.Background())
	// At once when the member joins, else every interval the coordinator
	// asks for, or after a backoff, until Close.
	go runHeartbeats(c.hbStop, c.heartbeatNow, c.hbDone, c.heartbeat)
	return c, nil
}

// MemberID returns the member id the consumer chose: 16 random bytes in
// base64url, kept for the consumer's lifetime, rejoins included.
func (c *ShareConsumer) MemberID() string { return c.memberID }

// Assignment returns the partitions the consumer was last assigned and
// could name, sorted. The assignment comes in a heartbeat's answer; a Poll
// takes it up.
func (c *ShareConsumer) Assignment() []kafka.TopicPartition {
	c.reqMu.Lock()
	defer c.reqMu.Unlock()
	return slices.Clone(c.st.assigned)
}

// Poll returns records acquired for the consumer, at most MaxPollRecords,
// in offset order within a partition. When none are ready it fetches
// from every node that leads one of its partitions, waiting up to
// timeout, and returns no records and a nil error if none come; with a
// timeout of zero or less it sends one fetch to each that does not wait,
// and waits up to a second for their answers. A fetch still unanswered
// when Poll returns stays in flight; the next Poll takes up its records.
//
// Poll first acknowledges the records the previous Poll returned, as
// Kafka's implicit acknowledgement: each is accepted unless Acknowledge
// said otherwise. The acknowledgements ride on the next ShareFetch (this
// Poll's, or a later one's when this Poll returns records fetched
// before), unless Commit sends them first; OnShareAcknowledged learns how
// they fared. A ShareFetch brings more records than MaxPollRecords at
// times, to end on a batch's boundary; the rest wait for the next Poll,
// their acquisition locks running.
//
// Poll returns records or an error, never both:
//
//   - A *FetchError for a partition the node could not fetch from
//     (kafka.ErrTopicAuthorizationFailed, ...), or a batch that failed
//     its checks (record.ErrCorrupt), after the records fetched with it.
//     A corrupt batch's records are rejected.
//   - The coordinator's refusal of the member (kafka.ErrGroupAuthorizationFailed,
//     kafka.ErrGroupMaxSizeReached, ...), at every Poll from then on.
//   - An error of the ShareFetch as a whole: at once when it is not
//     retriable, once it has lasted RetryTimeout when it is (a network
//     error, kafka.ErrShareSessionLimitReached). A share session the node
//     lost or whose epoch it refuses (kafka.ErrShareSessionNotFound,
//     kafka.ErrInvalidShareSessionEpoch) is not reported: Poll opens a new
//     one, and the records acquired in the old one come back after their
//     locks expire.
//   - ctx's error when ctx ends, and ErrClosed once the consumer is closed.
func (c *ShareConsumer) Poll(ctx context.Context, timeout time.Duration) ([]*ShareRecord, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	ctx, cancel := c.bound(ctx)
	defer cancel()
	recs, err := c.poll(ctx, timeout)
	c.report()
	return recs, err
}

// pollAnswerGrace is how long past its timeout a Poll waits for the
// answers of the fetches it sent asking the nodes not to wait (a timeout
// of zero, or one that ran out), and bounds the requests Poll makes
// itself past its timeout: a node that does not answer holds a Poll up
// no longer.
const pollAnswerGrace = time.Second

// bound returns ctx, ended by Close too.
func (c *ShareConsumer) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(c.ctx, cancel)
	return ctx, func() { stop(); cancel() }
}

func (c *ShareConsumer) poll(ctx context.Context, timeout time.Duration) ([]*ShareRecord, error) {
	c.reqMu.Lock()
	defer c.reqMu.Unlock()
	st := &c.st
	if _, err := c.membership(); err != nil {
		return nil, err
	}
	st.settleLocked()
	deadline := time.Now().Add(timeout)
	// The requests Poll waits on itself (metadata, leaders, dialling, the
	// acknowledgements of partitions leaving a session) are bounded too.
	callerCtx := ctx
	ctx, cancel := context.WithDeadline(ctx, deadline.Add(pollAnswerGrace))
	defer cancel()
	// mine are the sessions whose ShareFetch this Poll sent, each asking
	// the node to wait no longer than the deadline; graceUntil is how
	// long Poll waits for the answers of those that asked it not to wait
	// at all. Answers that come later are taken up by the next Poll.
	mine := map[*shareSession]bool{}
	var graceUntil time.Time
	// tried are the sessions this Poll sent a ShareFetch: once the
	// deadline has passed, none is sent to them again.
	tried := map[*shareSession]bool{}
	for {
		changed, err := c.membership()
		if err != nil {
			return nil, err
		}
		for _, s := range c.collectLocked() {
			delete(tried, s) // a session the node lost opens again at once
		}
		if len(st.buffered) > 0 {
			return st.deliverLocked(c.cfg.maxPollRecords), nil
		}
		if err := st.failure; err != nil {
			st.failure = nil
			return nil, err
		}
		c.reconcileLocked(ctx)
		c.routeLocked(ctx)
		now := time.Now()
		var wait time.Duration
		if len(st.assigned) > 0 {
			wait = max(0, min(c.cfg.fetchMaxWait, deadline.Sub(now)))
		}
		for _, s := range st.sortedSessions() {
			if s.call != nil || !st.wantsFetch(s) || now.Before(s.requests.until) || (tried[s] && !now.Before(deadline)) {
				continue
			}
			tried[s] = true
			if err := c.sendFetchLocked(ctx, s, wait); err != nil {
				switch {
				case callerCtx.Err() != nil:
					return nil, c.ctxErr(callerCtx)
				case ctx.Err() != nil:
					return nil, nil // Poll's own bound
				case kafka.IsRetriable(err) || !errors.As(err, new(*kafka.Error)) || isSessionError(err):
					if s.requests.fail(&c.cfg, now, false) && st.failure == nil {
						st.failure = shareFetchError(s, err)
					}
				default:
					if st.failure == nil {
						st.failure = shareFetchError(s, err)
					}
				}
				continue
			}
			if s.call != nil {
				mine[s] = true
				if wait == 0 {
					graceUntil = now.Add(pollAnswerGrace)
				}
			}
		}
		if st.failure != nil {
			continue
		}
		waiting := false
		for s := range mine {
			if s.call != nil {
				waiting = true
			} else {
				delete(mine, s)
			}
		}
		now = time.Now()
		until := deadline
		if waiting && graceUntil.After(until) {
			until = graceUntil
		}
		if !now.Before(until) {
			return nil, nil
		}
		// Wait for an answer, for a backoff to end, for a partition's
		// leader to be asked about again, for the assignment to change or
		// for the timeout.
		at := until
		for _, s := range st.sessions {
			if s.call == nil && st.wantsFetch(s) && s.requests.until.After(now) && s.requests.until.Before(at) {
				at = s.requests.until
			}
		}
		if st.unresolved && st.resolveAt.Before(at) {
			at = st.resolveAt
		}
		if len(st.leaderless) > 0 && st.routeAt.Before(at) {
			at = st.routeAt
		}
		t := time.NewTimer(time.Until(at))
		select {
		case <-st.answered:
		case <-changed:
		case <-t.C:
		case <-ctx.Done():
		}
		t.Stop()
		switch {
		case callerCtx.Err() != nil:
			return nil, c.ctxErr(callerCtx)
		case ctx.Err() != nil:
			return nil, nil // Poll's own bound
		}
	}
}

// membership returns the channel closed at the next change of membership,
// or the error that ends the consumer: the coordinator's refusal, or
// ErrClosed.
func (c *ShareConsumer) membership() (<-chan struct{}, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.closed:
		return nil, ErrClosed
	case c.fatal != nil:
		return nil, c.fatal
	}
	return c.changed, nil
}

// ctxErr is the error for a call whose ctx ended: ErrClosed when Close
// ended it.
func (c *ShareConsumer) ctxErr(ctx context.Context) error {
	if c.ctx.Err() != nil {
		return ErrClosed
	}
	return ctx.Err()
}

// Acknowledge sets how r, one of the records the last Poll returned, is
// acknowledged, in place of AckAccept: AckRelease to have it delivered
// again, AckReject to have it never delivered again, or AckAccept. The
// acknowledgement is sent with the next Poll's ShareFetch, by Commit or by
// Close; until then Acknowledge may change it. It returns ErrNotDelivered
// for a record the last Poll did not return or whose acknowledgement was
// sent, ErrClosed once the consumer is closed.
func (c *ShareConsumer) Acknowledge(r *ShareRecord, t AckType) error {
	if t != AckAccept && t != AckRelease && t != AckReject {
		return fmt.Errorf("consumer: Acknowledge given %v, not AckAccept, AckRelease or AckReject", t)
	}
	c.reqMu.Lock()
	defer c.reqMu.Unlock()
	if _, err := c.membership(); errors.Is(err, ErrClosed) {
		return err
	}
	k := shareKey{r.TopicPartition(), r.Offset, r.node}
	if _, ok := c.st.delivered[k]; !ok {
		return fmt.Errorf("%w: %s-%d@%d", ErrNotDelivered, r.Topic, r.Partition, r.Offset)
	}
	c.st.delivered[k] = t
	return nil
}

// Commit sends the acknowledgements of the records Polls returned now,
// with a ShareAcknowledge, and waits for the answer, as Kafka's
// commitSync: each record of the last Poll is accepted unless Acknowledge
// said otherwise, and acknowledged once (the next Poll sends nothing for
// it). It returns nil when the node applied every one, else the
// *AcknowledgeError of each partition whose acknowledgements failed,
// joined, or the error of the request: acknowledgements refused with a
// retriable error stay pending, to go with the next request; the others
// are dropped, and their records come back when their locks expire.
// OnShareAcknowledged is told too.
func (c *ShareConsumer) Commit(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	ctx, cancel := c.bound(ctx)
	defer cancel()
	err := c.commit(ctx)
	c.report()
	return err
}

func (c *ShareConsumer) commit(ctx context.Context) error {
	c.reqMu.Lock()
	defer c.reqMu.Unlock()
	if _, err := c.membership(); errors.Is(err, ErrClosed) {
		return err
	}
	st := &c.st
	st.settleLocked()
	from := len(st.results)
	var errs []error
	for _, s := range st.sortedSessions() {
		if len(s.pending) == 0 {
			continue
		}
		// The session's ShareFetch in flight is answered first: the
		// acknowledgements go in the epoch after it.
		if err := c.awaitLocked(ctx, s); err != nil {
			return c.ctxErr(ctx)
		}
		if err := c.acknowledgeLocked(ctx, s, allPartitions, false); err != nil {
			if ctx.Err() != nil {
				return c.ctxErr(ctx)
			}
			errs = append(errs, fmt.Errorf("consumer: share acknowledge: %w", err))
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	return st.failedSince(from)
}

// Close ends the consumer's membership: it waits for the ShareFetches in
// flight, acknowledges the records the last Poll returned (accepted
// unless Acknowledge said otherwise) and releases those fetched and not
// returned, closing each node's share session with the same
// ShareAcknowledge (epoch -1) — but for a node that did not answer its
// last request and has nothing to acknowledge, which gives the records
// back when it evicts the session or their locks expire; then it leaves
// the group (a heartbeat with epoch -1) and waits for its goroutine. It
// waits at most 30 seconds for the nodes. It returns the acknowledgements that
// failed, as Commit does; the consumer is closed either way. A Poll
// waiting in another goroutine returns ErrClosed, and so do Poll,
// Acknowledge, Commit and Close from then on. Close does not close the
// client.
func (c *ShareConsumer) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return ErrClosed
	}
	c.closed = true
	c.notifyLocked()
	c.mu.Unlock()
	c.cancel()

	ctx, cancel := context.WithTimeout(context.Background(), c.cfg.grp.closeTimeout)
	defer cancel()
	c.reqMu.Lock()
	st := &c.st
	// The ShareFetches in flight are answered first — each asked its
	// node to wait at most FetchMaxWait — and what they acquired is
	// released with the rest. (Cancelling one would not withdraw it: a
	// node answers a connection's requests in order, and applies the
	// acknowledgements it carries all the same.) One still unanswered a
	// second past FetchMaxWait is cut short: its node releases what it
	// acquired when the session closes, and its acknowledgements go again
	// with the closing ones.
	wait, stopWaiting := context.WithTimeout(ctx, c.cfg.fetchMaxWait+pollAnswerGrace)
	for _, s := range st.sortedSessions() {
		if s.call == nil {
			continue
		}
		select {
		case a := <-s.call:
			c.answerLocked(s, a)
			continue
		case <-wait.Done():
		}
		c.callCancel()
		<-s.call
		for tp, runs := range s.sent.acks {
			s.pending[tp] = append(s.pending[tp], runs...)
		}
		s.call, s.sent, s.unanswered = nil, sentFetch{}, true
	}
	stopWaiting()
	st.settleLocked()
	st.releaseBufferedLocked(func(*ShareRecord) bool { return true })
	var errs []error
	from := len(st.results)
	for _, s := range st.sortedSessions() {
		if !s.opened || s.unanswered && len(s.pending) == 0 {
			continue
		}
		if err := c.acknowledgeLocked(ctx, s, allPartitions, true); err != nil && !errors.Is(err, kafka.ErrShareSessionNotFound) {
			errs = append(errs, err) // ErrShareSessionNotFound: closed already
		}
	}
	err := errors.Join(append(errs, st.failedSince(from))...)
	c.reqMu.Unlock()
	c.callCancel()
	c.report()

	c.mu.Lock()
	c.leaving = true
	epoch := c.memberEpoch
	c.mu.Unlock()
	close(c.hbStop)
	c.hbCancel()
	<-c.hbDone
	if epoch > 0 {
		c.coord.ShareGroupHeartbeat(ctx, &transport.ShareGroupHeartbeatRequest{
			Group: c.scfg.group, MemberID: c.memberID, MemberEpoch: -1, ClientID: c.cfg.grp.clientID,
		})
	}
	return err
}

// report tells OnShareAcknowledged the results of the acknowledgements
// answered since the last report, outside reqMu.
func (c *ShareConsumer) report() {
	c.reqMu.Lock()
	results := c.st.results
	c.st.results = nil
	c.reqMu.Unlock()
	if c.scfg.onAck == nil {
		return
	}
	for _, r := range results {
		c.scfg.onAck(r.Topic, r.Partition, r.Offsets, r.Err)
	}
}
