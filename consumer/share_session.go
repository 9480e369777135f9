package consumer

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/record"
	"github.com/partlog/partlog/transport"
)

// A share consumer's share sessions, as KIP-932 runs them: one per node
// that leads a partition the member fetches, as Kafka's share consumer
// keeps one per node. The first ShareFetch to a node (epoch 0) opens its
// session with the partitions that node leads; each request answered
// moves the epoch on by one, and names only what changed: partitions
// added (Topics), partitions gone (ForgottenTopics), and the partitions
// whose acknowledgements it carries. A ShareAcknowledge sends
// acknowledgements alone, in the same sequence of epochs; one with epoch
// -1 closes the session. A node that lost the session, or refuses its
// epoch, gets a new one: the acknowledgements sent with the refused
// request are dropped, and the records acquired in the old session come
// back to the group when their acquisition locks expire.
//
// A session has at most one request in flight. Poll sends a ShareFetch
// to every node that has something to do and none in flight, and returns
// as soon as one brings records; the others stay in flight, and their
// answers are taken up by the next Poll (Commit waits for that of a
// session it acknowledges in, Close for all of them). The answers are
// applied with reqMu held, in the goroutine of the call that takes them
// up; only the network call runs apart.
//
// A record is acknowledged to the node that delivered it, in that node's
// session. Every offset of a range a node says the member acquired is
// acknowledged once: a record the consumer returned as Acknowledge says
// (accepted by default) after the next Poll; an offset inside the
// batches fetched with no record there (compacted away, a transaction
// marker) as a Gap at once; an offset past the batches that came whole
// (the answer's byte limit cut them short) as released, since its record
// never came. Records that Poll did not return yet are released when
// their partition is unassigned, and at Close.
//
// Which node leads a partition comes from the client when it is a
// transport.NodeRouter (a ClusterClient); a partition a node says it does
// not lead makes the router learn the leaders again, and moves to its
// new leader's session. Any other client is one node, which leads every
// partition: its session has the node id thisNode.

// shareCallTimeout bounds a ShareFetch sent in the background beyond the
// time it asks the node to wait, as Kafka's request.timeout.ms (30 s)
// bounds a request: a node that never answers fails it, and its session
// is opened again.
const shareCallTimeout = 30 * time.Second

// thisNode is the node id of the one session of a consumer whose client
// reaches one node.
const thisNode int32 = -1

// shareState is what a share consumer fetched and has to acknowledge, and
// its sessions, guarded by ShareConsumer.reqMu.
type shareState struct {
	// sessions are the share sessions, by node id.
	sessions map[int32]*shareSession
	// leaders are the nodes the assigned partitions are fetched from, as
	// the router last named them; leaderless are those it could not
	// name, asked about again from routeAt on.
	leaders    map[kafka.TopicPartition]int32
	leaderless map[kafka.TopicPartition]bool
	routeAt    time.Time

	// assigned are the partitions assigned, named and sorted, of
	// ShareConsumer.targetVersion assignedVersion; unresolved says some
	// topic ids were not named, to be looked up again at resolveAt.
	assigned        []kafka.TopicPartition
	assignedVersion int
	unresolved      bool
	resolveAt       time.Time
	topicIDs        map[string][16]byte
	topicNames      map[[16]byte]string

	// buffered are the records fetched and not returned yet, in the order
	// Poll returns them.
	buffered []*ShareRecord
	// delivered are the records the last Poll returned, each with how
	// it is to be acknowledged.
	delivered map[shareKey]AckType
	// failure is an error for Poll to report, after the records that
	// came with it.
	failure error
	// results are the answers to acknowledgements, for
	// OnShareAcknowledged and Commit.
	results []AcknowledgeError
	// answered has a value when a request in flight was answered.
	answered chan struct{}
}

// shareSession is the member's share session on one node.
type shareSession struct {
	node int32
	// epoch is the next request's ShareSessionEpoch: 0 opens a session.
	epoch int32
	// opened says a session may be open on the node: an epoch 0
	// ShareFetch was sent, and no -1 closed it since.
	opened bool
	// inSession are the partitions the session holds.
	inSession map[kafka.TopicPartition]bool
	// pending are the acknowledgements to send, by partition.
	pending  map[kafka.TopicPartition][]ackRun
	requests retry
	// unanswered says the node did not answer the last request sent to
	// it (a network error, a timeout): Close does not wait for it.
	unanswered bool

	// call has the answer of the ShareFetch in flight, sent, once it
	// comes; nil when none is in flight.
	call chan fetchAnswer
	sent sentFetch
}

// sentFetch is what a ShareFetch in flight asked: the partitions it adds
// or carries acknowledgements for, the partitions it forgets, and the
// acknowledgements.
type sentFetch struct {
	fetch, forget []kafka.TopicPartition
	acks          map[kafka.TopicPartition][]ackRun
}

// fetchAnswer is the answer of a ShareFetch: a response or an error.
type fetchAnswer struct {
	resp *transport.ShareFetchResponse
	err  error
}

func newShareState() shareState {
	return shareState{
		sessions:   map[int32]*shareSession{},
		leaders:    map[kafka.TopicPartition]int32{},
		leaderless: map[kafka.TopicPartition]bool{},
		delivered:  map[shareKey]AckType{},
		topicIDs:   map[string][16]byte{},
		topicNames: map[[16]byte]string{},
		answered:   make(chan struct{}, 1),
	}
}

// ackRun acknowledges the offsets first to last the same way.
type ackRun struct {
	first, last int64
	typ         transport.AcknowledgeType
}

// isAssigned reports whether tp is assigned.
func (st *shareState) isAssigned(tp kafka.TopicPartition) bool {
	_, ok := slices.BinarySearchFunc(st.assigned, tp, compareTPs)
	return ok
}

func compareTPs(a, b kafka.TopicPartition) int {
	return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
}

// session returns the session on node, made when there is none.
func (st *shareState) session(node int32) *shareSession {
	s, ok := st.sessions[node]
	if !ok {
		s = &shareSession{node: node, inSession: map[kafka.TopicPartition]bool{}, pending: map[kafka.TopicPartition][]ackRun{}}
		st.sessions[node] = s
	}
	return s
}

// sortedSessions returns the sessions by node id.
func (st *shareState) sortedSessions() []*shareSession {
	out := make([]*shareSession, 0, len(st.sessions))
	for _, s := range st.sessions {
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b *shareSession) int { return cmp.Compare(a.node, b.node) })
	return out
}

// owns reports whether s is the session tp is fetched in.
func (st *shareState) owns(s *shareSession, tp kafka.TopicPartition) bool {
	node, ok := st.leaders[tp]
	return ok && node == s.node && st.isAssigned(tp)
}

// owned returns the partitions fetched in s, sorted.
func (st *shareState) owned(s *shareSession) []kafka.TopicPartition {
	var out []kafka.TopicPartition
	for _, tp := range st.assigned {
		if st.owns(s, tp) {
			out = append(out, tp)
		}
	}
	return out
}

// wantsFetch reports whether a ShareFetch to s has something to do:
// partitions to fetch from or to forget, or acknowledgements to send.
func (st *shareState) wantsFetch(s *shareSession) bool {
	return len(s.inSession) > 0 || len(s.pending) > 0 || len(st.owned(s)) > 0
}

// inFlight reports whether any session has a ShareFetch in flight.
func (st *shareState) inFlight() bool {
	for _, s := range st.sessions {
		if s.call != nil {
			return true
		}
	}
	return false
}

// ackLocked adds an acknowledgement to send to node.
func (st *shareState) ackLocked(node int32, tp kafka.TopicPartition, r ackRun) {
	s := st.session(node)
	s.pending[tp] = append(s.pending[tp], r)
}

// settleLocked turns the records the last Poll returned into
// acknowledgements to send.
func (st *shareState) settleLocked() {
	for k, t := range st.delivered {
		st.ackLocked(k.node, k.tp, ackRun{k.offset, k.offset, transport.AcknowledgeType(t)})
	}
	clear(st.delivered)
}

// deliverLocked returns up to max buffered records, delivered now.
func (st *shareState) deliverLocked(max int) []*ShareRecord {
	n := min(len(st.buffered), max)
	out := st.buffered[:n:n]
	st.buffered = st.buffered[n:]
	for _, r := range out {
		st.delivered[shareKey{r.TopicPartition(), r.Offset, r.node}] = AckAccept
	}
	return out
}

// releaseBufferedLocked releases the buffered records which selects,
// and drops them.
func (st *shareState) releaseBufferedLocked(which func(*ShareRecord) bool) {
	st.buffered = slices.DeleteFunc(st.buffered, func(r *ShareRecord) bool {
		if !which(r) {
			return false
		}
		st.ackLocked(r.node, r.TopicPartition(), ackRun{r.Offset, r.Offset, transport.AcknowledgeRelease})
		return true
	})
}

// allPartitions selects every partition's acknowledgements.
func allPartitions(kafka.TopicPartition) bool { return true }

// takeAcksLocked removes the pending acknowledgements of the partitions
// which selects and returns them.
func (s *shareSession) takeAcksLocked(which func(kafka.TopicPartition) bool) map[kafka.TopicPartition][]ackRun {
	var out map[kafka.TopicPartition][]ackRun
	for tp, runs := range s.pending {
		if which(tp) {
			if out == nil {
				out = map[kafka.TopicPartition][]ackRun{}
			}
			out[tp] = runs
			delete(s.pending, tp)
		}
	}
	return out
}

// answeredLocked records the answer for the acknowledgements runs of tp:
// err nil when they were applied.
func (st *shareState) answeredLocked(tp kafka.TopicPartition, runs []ackRun, err error) {
	var offsets []int64
	for _, r := range runs {
		if r.typ == transport.AcknowledgeGap {
			continue
		}
		for off := r.first; off <= r.last; off++ {
			offsets = append(offsets, off)
		}
	}
	if len(offsets) == 0 {
		return
	}
	slices.Sort(offsets)
	st.results = append(st.results, AcknowledgeError{Topic: tp.Topic, Partition: tp.Partition, Offsets: offsets, Err: err})
}

// failedSince returns the failures among the results from index from on,
// joined.
func (st *shareState) failedSince(from int) error {
	var errs []error
	for i := from; i < len(st.results); i++ {
		if st.results[i].Err != nil {
			errs = append(errs, &st.results[i])
		}
	}
	return errors.Join(errs...)
}

// noAnswer reports whether err says the node did not answer: the
// connection failed or the request timed out.
func noAnswer(err error) bool {
	return !errors.As(err, new(*kafka.Error)) || errors.Is(err, kafka.ErrNetwork) || errors.Is(err, kafka.ErrRequestTimedOut)
}

// isSessionError reports whether err says the node has no such share
// session, or not at that epoch.
func isSessionError(err error) bool {
	return errors.Is(err, kafka.ErrShareSessionNotFound) || errors.Is(err, kafka.ErrInvalidShareSessionEpoch)
}

// nextEpoch returns the epoch after e, as Kafka's ShareRequestMetadata
// counts: 1 after the largest.
func nextEpoch(e int32) int32 {
	if e == math.MaxInt32 {
		return 1
	}
	return e + 1
}

// requestFailedLocked handles a request to s that failed as a whole with
// err, carrying acks. A request that got no answer, or a session the node
// lost or whose epoch it refused, ends the session: its acknowledgements
// are dropped, and so is everything acquired in it. Acknowledgements
// refused with another retriable error go with the next request; the
// others are dropped.
func (st *shareState) requestFailedLocked(s *shareSession, acks map[kafka.TopicPartition][]ackRun, err error) {
	s.unanswered = noAnswer(err)
	if s.unanswered {
		st.unroute(s) // it may be down: learn where its partitions are
	}
	switch {
	case isSessionError(err) || !errors.As(err, new(*kafka.Error)):
		for tp, runs := range acks {
			st.answeredLocked(tp, runs, err)
		}
		st.resetLocked(s, err)
		if errors.Is(err, kafka.ErrShareSessionNotFound) {
			s.opened = false
		}
	case kafka.IsRetriable(err):
		for tp, runs := range acks {
			s.pending[tp] = append(s.pending[tp], runs...)
		}
	default:
		for tp, runs := range acks {
			st.answeredLocked(tp, runs, err)
		}
	}
}

// resetLocked forgets the session s, for the next ShareFetch to open a
// new one: the acknowledgements not sent yet are dropped, with err, and
// so are the records it delivered that were not returned yet or that the
// last Poll returned.
func (st *shareState) resetLocked(s *shareSession, err error) {
	s.epoch = 0
	clear(s.inSession)
	for k, t := range st.delivered {
		if k.node == s.node {
			st.ackLocked(k.node, k.tp, ackRun{k.offset, k.offset, transport.AcknowledgeType(t)})
			delete(st.delivered, k)
		}
	}
	for _, tp := range sortedKeys(s.pending) {
		st.answeredLocked(tp, s.pending[tp], err)
	}
	clear(s.pending)
	st.buffered = slices.DeleteFunc(st.buffered, func(r *ShareRecord) bool { return r.node == s.node })
}

// idPartitions groups tps, sorted, by topic id.
func (st *shareState) idPartitions(tps []kafka.TopicPartition) []transport.TopicIDPartitions {
	var out []transport.TopicIDPartitions
	for _, tp := range tps {
		id := st.topicIDs[tp.Topic]
		if n := len(out); n > 0 && out[n-1].TopicID == id {
			out[n-1].Partitions = append(out[n-1].Partitions, tp.Partition)
			continue
		}
		out = append(out, transport.TopicIDPartitions{TopicID: id, Partitions: []int32{tp.Partition}})
	}
	return out
}

// sortedKeys returns the partitions of acks, sorted.
func sortedKeys(acks map[kafka.TopicPartition][]ackRun) []kafka.TopicPartition {
	tps := make([]kafka.TopicPartition, 0, len(acks))
	for tp := range acks {
		tps = append(tps, tp)
	}
	slices.SortFunc(tps, compareTPs)
	return tps
}

// ackBatches turns runs into acknowledgement batches, ascending, one per
// run of adjacent offsets acknowledged the same way.
func ackBatches(runs []ackRun) []transport.AcknowledgementBatch {
	runs = slices.Clone(runs)
	slices.SortFunc(runs, func(a, b ackRun) int { return cmp.Compare(a.first, b.first) })
	var out []transport.AcknowledgementBatch
	for _, r := range runs {
		if n := len(out); n > 0 && out[n-1].LastOffset+1 == r.first && out[n-1].AcknowledgeTypes[0] == r.typ {
			out[n-1].LastOffset = r.last
			continue
		}
		out = append(out, transport.AcknowledgementBatch{FirstOffset: r.first, LastOffset: r.last, AcknowledgeTypes: []transport.AcknowledgeType{r.typ}})
	}
	return out
}

// routeLocked names the node each assigned partition is fetched from:
// the one node client reaches, or the leader the router names. The
// router is asked only about partitions whose leader is not known: newly
// assigned ones, and those a node said it no longer leads or whose node
// did not answer (their entries are dropped then). One it cannot name is
// left out, and asked about again after RetryBackoff.
func (c *ShareConsumer) routeLocked(ctx context.Context) {
	st := &c.st
	for tp := range st.leaders {
		if !st.isAssigned(tp) {
			delete(st.leaders, tp)
		}
	}
	for tp := range st.leaderless {
		if !st.isAssigned(tp) {
			delete(st.leaderless, tp)
		}
	}
	if c.router == nil {
		for _, tp := range st.assigned {
			st.leaders[tp] = thisNode
		}
		st.session(thisNode)
		return
	}
	now := time.Now()
	retry := !now.Before(st.routeAt)
	for _, tp := range st.assigned {
		if _, ok := st.leaders[tp]; ok || st.leaderless[tp] && !retry {
			continue
		}
		node, ok := c.router.Leader(ctx, tp)
		if !ok {
			st.leaderless[tp] = true
			continue
		}
		delete(st.leaderless, tp)
		st.leaders[tp] = node
		st.session(node)
	}
	if retry && len(st.leaderless) > 0 {
		st.routeAt = now.Add(c.cfg.retryBackoff)
	}
}

// unroute forgets where s's partitions are, for routeLocked to ask.
func (st *shareState) unroute(s *shareSession) {
	for tp, node := range st.leaders {
		if node == s.node && node != thisNode {
			delete(st.leaders, tp)
		}
	}
}

// nodeClient returns the client that reaches s's node.
func (c *ShareConsumer) nodeClient(ctx context.Context, s *shareSession) (transport.ShareGroupClient, error) {
	if c.router == nil {
		return c.share, nil
	}
	n, err := c.router.Node(ctx, s.node)
	if err != nil {
		return nil, err
	}
	sg, ok := n.(transport.ShareGroupClient)
	if !ok {
		return nil, errors.New("consumer: the client of a node does not implement transport.ShareGroupClient")
	}
	return sg, nil
}

// sendFetchLocked sends a ShareFetch to s in the background, opening its
// session when it is not open, asking the node to wait up to wait for
// records; the answer comes on s.call, for answerLocked. The
// acknowledgements of partitions s no longer fetches go first, in a
// ShareAcknowledge, since the ShareFetch forgets them; when that is all
// s had to do, no ShareFetch is sent.
func (c *ShareConsumer) sendFetchLocked(ctx context.Context, s *shareSession, wait time.Duration) error {
	st := &c.st
	client, err := c.nodeClient(ctx, s)
	if err != nil {
		// The node cannot be reached: learn where its partitions are.
		if c.router != nil {
			c.router.NoteError(s.node, err)
		}
		st.unroute(s)
		return err
	}
	if s.epoch > 0 {
		if err := c.acknowledgeLocked(ctx, s, func(tp kafka.TopicPartition) bool { return !st.owns(s, tp) }, false); err != nil {
			return err
		}
	}
	owned := st.owned(s)
	if len(owned) == 0 && len(s.inSession) == 0 {
		return nil
	}
	req := &transport.ShareFetchRequest{
		Group: c.scfg.group, MemberID: c.memberID, ShareSessionEpoch: s.epoch,
		MaxWait: wait, MinBytes: c.cfg.fetchMinBytes, MaxBytes: c.cfg.fetchMaxBytes,
		MaxRecords: int32(min(c.cfg.maxPollRecords, math.MaxInt32)), BatchSize: int32(min(c.cfg.maxPollRecords, math.MaxInt32)),
	}
	var sent sentFetch
	if s.epoch == 0 {
		// A new session: acknowledgements of the old one cannot go in it.
		sent.fetch = owned
		s.opened = true
	} else {
		sent.acks = s.takeAcksLocked(func(tp kafka.TopicPartition) bool { return st.owns(s, tp) })
		for _, tp := range owned {
			if _, ok := sent.acks[tp]; ok || !s.inSession[tp] {
				sent.fetch = append(sent.fetch, tp)
			}
		}
		for tp := range s.inSession {
			if !st.owns(s, tp) {
				sent.forget = append(sent.forget, tp)
			}
		}
		slices.SortFunc(sent.forget, compareTPs)
	}
	for _, t := range st.idPartitions(sent.fetch) {
		ft := transport.ShareFetchTopic{TopicID: t.TopicID}
		for _, p := range t.Partitions {
			tp := kafka.TopicPartition{Topic: st.topicNames[t.TopicID], Partition: p}
			ft.Partitions = append(ft.Partitions, transport.ShareFetchPartition{Partition: p, AcknowledgementBatches: ackBatches(sent.acks[tp])})
		}
		req.Topics = append(req.Topics, ft)
	}
	req.ForgottenTopics = st.idPartitions(sent.forget)

	call := make(chan fetchAnswer, 1)
	s.call, s.sent = call, sent
	go func() {
		ctx, cancel := context.WithTimeout(c.callCtx, wait+shareCallTimeout)
		defer cancel()
		resp, err := client.ShareFetch(ctx, req)
		call <- fetchAnswer{resp, err}
		select {
		case st.answered <- struct{}{}:
		default:
		}
	}()
	return nil
}

// collectLocked takes up the answers of the ShareFetches that came, and
// returns the sessions that the nodes lost, to be opened again at once.
func (c *ShareConsumer) collectLocked() []*shareSession {
	var lost []*shareSession
	for _, s := range c.st.sortedSessions() {
		if s.call == nil {
			continue
		}
		select {
		case a := <-s.call:
			if c.answerLocked(s, a) {
				lost = append(lost, s)
			}
		default:
		}
	}
	return lost
}

// awaitLocked waits for the answer of s's ShareFetch in flight, if there
// is one, and takes it up; it gives up when ctx ends.
func (c *ShareConsumer) awaitLocked(ctx context.Context, s *shareSession) error {
	if s.call == nil {
		return nil
	}
	select {
	case a := <-s.call:
		c.answerLocked(s, a)
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// answerLocked takes up the answer of s's ShareFetch: it buffers the
// records acquired, notes the acknowledgements' results, and decides
// what Poll hears of a failure: a session the node lost is opened again
// at once (answerLocked reports true), a retriable error backs off and
// is reported once it has lasted RetryTimeout, another is reported at
// once.
func (c *ShareConsumer) answerLocked(s *shareSession, a fetchAnswer) (lost bool) {
	st := &c.st
	sent := s.sent
	s.call, s.sent = nil, sentFetch{}
	err := a.err
	if err == nil {
		err = a.resp.Err
	}
	if c.router != nil {
		c.router.NoteError(s.node, err)
	}
	if err != nil {
		epoch := s.epoch
		st.requestFailedLocked(s, sent.acks, err)
		switch {
		case isSessionError(err) && epoch != 0:
			return true
		case kafka.IsRetriable(err) || !errors.As(err, new(*kafka.Error)) || isSessionError(err):
			if s.requests.fail(&c.cfg, time.Now(), false) && st.failure == nil {
				st.failure = shareFetchError(s, err)
			}
		default:
			if st.failure == nil {
				st.failure = shareFetchError(s, err)
			}
		}
		return false
	}
	s.requests.failures, s.unanswered = 0, false
	s.epoch = nextEpoch(s.epoch)
	for _, tp := range sent.fetch {
		s.inSession[tp] = true
	}
	for _, tp := range sent.forget {
		delete(s.inSession, tp)
	}
	acks := sent.acks
	moved := false
	for _, t := range a.resp.Topics {
		name, ok := st.topicNames[t.TopicID]
		if !ok {
			continue // not asked for
		}
		for _, p := range t.Partitions {
			tp := kafka.TopicPartition{Topic: name, Partition: p.Partition}
			if runs, ok := acks[tp]; ok {
				st.answeredLocked(tp, runs, p.AcknowledgeErr)
				delete(acks, tp)
			}
			if p.Err != nil {
				switch {
				case kafka.IsRetriable(p.Err):
					// The node no longer leads it, or cannot serve it
					// yet: learn its leader again, and fetch from this
					// node after a backoff.
					if c.router != nil {
						c.router.NoteError(s.node, p.Err)
						delete(st.leaders, tp)
					}
					moved = true
				case st.failure == nil:
					st.failure = &FetchError{Topic: tp.Topic, Partition: tp.Partition, Offset: -1, Err: p.Err}
				}
				continue
			}
			if len(p.AcquiredRecords) > 0 {
				if err := c.acquireLocked(s.node, tp, p.Records, p.AcquiredRecords); err != nil && st.failure == nil {
					st.failure = err
				}
			}
		}
	}
	for _, tp := range sortedKeys(acks) {
		st.answeredLocked(tp, acks[tp], nil) // not named in the answer: applied
	}
	if moved {
		s.requests.until = time.Now().Add(c.cfg.retryBackoff)
	}
	return false
}

// shareFetchError is the error Poll reports for a ShareFetch to s that
// failed with err.
func shareFetchError(s *shareSession, err error) error {
	if s.node == thisNode {
		return fmt.Errorf("consumer: share fetch: %w", err)
	}
	return fmt.Errorf("consumer: share fetch from node %d: %w", s.node, err)
}

// acknowledgeLocked sends the pending acknowledgements of s's partitions
// which selects in a ShareAcknowledge, if there are any or final is set;
// final closes the session (epoch -1). No ShareFetch may be in flight.
func (c *ShareConsumer) acknowledgeLocked(ctx context.Context, s *shareSession, which func(kafka.TopicPartition) bool, final bool) error {
	st := &c.st
	acks := s.takeAcksLocked(which)
	if len(acks) == 0 && !final {
		return nil
	}
	req := &transport.ShareAcknowledgeRequest{Group: c.scfg.group, MemberID: c.memberID, ShareSessionEpoch: s.epoch}
	if final {
		req.ShareSessionEpoch = -1
	}
	for _, tp := range sortedKeys(acks) {
		id := st.topicIDs[tp.Topic]
		if n := len(req.Topics); n == 0 || req.Topics[n-1].TopicID != id {
			req.Topics = append(req.Topics, transport.ShareAcknowledgeTopic{TopicID: id})
		}
		t := &req.Topics[len(req.Topics)-1]
		t.Partitions = append(t.Partitions, transport.ShareAcknowledgePartition{Partition: tp.Partition, AcknowledgementBatches: ackBatches(acks[tp])})
	}
	client, err := c.nodeClient(ctx, s)
	var resp *transport.ShareAcknowledgeResponse
	if err == nil {
		resp, err = client.ShareAcknowledge(ctx, req)
	}
	if err == nil {
		err = resp.Err
	}
	if c.router != nil {
		c.router.NoteError(s.node, err)
	}
	if err != nil {
		st.requestFailedLocked(s, acks, err)
		return err
	}
	s.unanswered = false
	if final {
		s.epoch, s.opened = 0, false
		clear(s.inSession)
	} else {
		s.epoch = nextEpoch(s.epoch)
	}
	for _, t := range resp.Topics {
		name, ok := st.topicNames[t.TopicID]
		if !ok {
			continue
		}
		for _, p := range t.Partitions {
			tp := kafka.TopicPartition{Topic: name, Partition: p.Partition}
			if runs, ok := acks[tp]; ok {
				st.answeredLocked(tp, runs, p.Err)
				delete(acks, tp)
			}
		}
	}
	for _, tp := range sortedKeys(acks) {
		st.answeredLocked(tp, acks[tp], nil)
	}
	return nil
}

// acquireLocked buffers the records of one partition's answer from node
// that fall in the ranges acquired, each with its delivery count, and
// acknowledges the acquired offsets that have no record: as gaps inside
// the batches that came whole, as released past them. A batch that fails
// its checks has its acquired offsets rejected, and is reported, as a
// *FetchError, after the records before it.
func (c *ShareConsumer) acquireLocked(node int32, tp kafka.TopicPartition, data []byte, acquired []transport.AcquiredRecords) error {
	st := &c.st
	acq := slices.Clone(acquired)
	slices.SortFunc(acq, func(a, b transport.AcquiredRecords) int { return cmp.Compare(a.FirstOffset, b.FirstOffset) })
	// taken are the acquired offsets accounted for, ascending: records
	// buffered and rejected batches.
	var taken []ackRun
	covered := int64(-1) // the last offset of the batches that came whole
	var failure error
	for len(data) > 0 {
		h, err := record.ParseHeader(data)
		if err == nil && h.Size() > len(data) {
			break // cut short: its records did not come
		}
		if err != nil {
			if !errors.Is(err, record.ErrTruncated) {
				failure = &FetchError{Topic: tp.Topic, Partition: tp.Partition, Offset: covered + 1, Err: err}
			}
			break
		}
		batch := data[:h.Size()]
		data = data[h.Size():]
		covered = max(covered, h.LastOffset())
		if h.Attributes.IsControl() || !overlapsAcquired(acq, h.BaseOffset, h.LastOffset()) {
			continue
		}
		b, err := record.DecodeInto(nil, batch, c.cfg.checkCRCs)
		if err != nil {
			for _, a := range acq {
				if first, last := max(a.FirstOffset, h.BaseOffset), min(a.LastOffset, h.LastOffset()); first <= last {
					taken = append(taken, ackRun{first, last, transport.AcknowledgeReject})
					st.ackLocked(node, tp, ackRun{first, last, transport.AcknowledgeReject})
				}
			}
			if failure == nil {
				failure = &FetchError{Topic: tp.Topic, Partition: tp.Partition, Offset: h.BaseOffset, Err: err}
			}
			continue
		}
		recs := make([]ShareRecord, 0, len(b.Records))
		for i := range b.Records {
			src := &b.Records[i]
			count, ok := deliveryCount(acq, src.Offset)
			if !ok {
				continue // not acquired: another member's, or nobody's
			}
			recs = append(recs, ShareRecord{
				Record: Record{
					Topic: tp.Topic, Partition: tp.Partition, LeaderEpoch: h.PartitionLeaderEpoch,
					Offset: src.Offset, Timestamp: timeOf(src.Timestamp), TimestampType: h.Attributes.TimestampType(),
					Key: src.Key, Value: src.Value, Headers: src.Headers,
				},
				DeliveryCount: count,
				node:          node,
			})
			taken = append(taken, ackRun{src.Offset, src.Offset, transport.AcknowledgeAccept})
		}
		for i := range recs {
			st.buffered = append(st.buffered, &recs[i])
		}
	}
	// The acquired offsets not accounted for.
	i := 0
	for _, a := range acq {
		next := a.FirstOffset
		for ; i < len(taken) && taken[i].first <= a.LastOffset; i++ {
			if taken[i].last < next {
				continue
			}
			st.missingLocked(node, tp, next, taken[i].first-1, covered)
			next = taken[i].last + 1
		}
		st.missingLocked(node, tp, next, a.LastOffset, covered)
	}
	return failure
}

// missingLocked acknowledges to node the acquired offsets first to last,
// which have no record: as gaps up to covered, the end of the batches
// that came whole, as released past it.
func (st *shareState) missingLocked(node int32, tp kafka.TopicPartition, first, last, covered int64) {
	if first > last {
		return
	}
	if first <= covered {
		st.ackLocked(node, tp, ackRun{first, min(last, covered), transport.AcknowledgeGap})
	}
	if last > covered {
		st.ackLocked(node, tp, ackRun{max(first, covered+1), last, transport.AcknowledgeRelease})
	}
}

// overlapsAcquired reports whether any offset from first to last was
// acquired.
func overlapsAcquired(acq []transport.AcquiredRecords, first, last int64) bool {
	for _, a := range acq {
		if a.FirstOffset <= last && first <= a.LastOffset {
			return true
		}
	}
	return false
}

// deliveryCount returns the delivery count of the acquired range holding
// offset, if one does.
func deliveryCount(acq []transport.AcquiredRecords, offset int64) (int16, bool) {
	i, _ := slices.BinarySearchFunc(acq, offset, func(a transport.AcquiredRecords, off int64) int {
		return cmp.Compare(a.LastOffset, off)
	})
	if i < len(acq) && acq[i].FirstOffset <= offset {
		return acq[i].DeliveryCount, true
	}
	return 0, false
}
