package broker

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/partlog/partlog/controller"
	"github.com/partlog/partlog/internal/xsync"
	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/partition"
	"github.com/partlog/partlog/record"
	"github.com/partlog/partlog/share"
	"github.com/partlog/partlog/sharecoord"
	"github.com/partlog/partlog/transport"
)

// Share groups (KIP-932) on the node: the leader of a topic partition
// keeps, for each share group that consumes it, the partition's in-flight
// records (share.Partition: who holds which record until when, how often
// each was delivered), loaded from the share partition's durable state
// the first time a member fetches, and written back through the
// sharePersister before every answer that changed it — as Kafka's
// SharePartitionManager does. Members reach it through share sessions
// (share_sessions.go) with ShareFetch and ShareAcknowledge
// (share_handlers.go); their membership and assignments are the group
// coordinator's (group.Coordinator.ShareHeartbeat).

// shareTickInterval is how often the node expires the acquisition locks
// of the share partitions it keeps.
const shareTickInterval = 100 * time.Millisecond

// shareHost is the node's share partitions and share sessions.
type shareHost struct {
	n      *Broker
	config share.Config

	mu       sync.Mutex
	parts    map[sharePartitionKey]*sharePartition
	sessions map[shareSessionKey]*shareSession
	// freed is closed, and replaced, when records become available again
	// (released, given back by a closing session, their locks expired):
	// long-polling fetches wait on it as on new records.
	freed chan struct{}
}

// freedSignal returns the channel closed the next time records become
// available again.
func (h *shareHost) freedSignal() <-chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.freed
}

// signalFreed wakes the fetches waiting for records.
func (h *shareHost) signalFreed() {
	h.mu.Lock()
	defer h.mu.Unlock()
	close(h.freed)
	h.freed = make(chan struct{})
}

// sharePartitionKey names a share partition: a group's view of a topic
// partition.
type sharePartitionKey struct {
	group string
	tp    kafka.TopicPartition
}

// sharePartition is one share partition the node keeps.
type sharePartition struct {
	key     sharePartitionKey
	topicID [16]byte

	// mu orders the share partition's changes and their writes: it is
	// held across the persister's write, an xsync.Mutex so that a
	// bubble's clock moves on meanwhile.
	mu xsync.Mutex
	// state is nil until loaded, and again after a write failed: the
	// next use loads what the share coordinator has.
	state       *share.Partition
	leaderEpoch int32
	// unwritten says a write of state failed: the next one sends the
	// whole state.
	unwritten bool
}

// startShares starts the node's share partitions and their lock
// expiries.
func (n *Broker) startShares() {
	n.shares = &shareHost{n: n, config: n.opts.Shares,
		parts: map[sharePartitionKey]*sharePartition{}, sessions: map[shareSessionKey]*shareSession{}, freed: make(chan struct{})}
	n.runEvery(shareTickInterval, n.shares.tick)
}

// get returns the share partition of group on tp, made if need be.
func (h *shareHost) get(group string, tp kafka.TopicPartition, topicID [16]byte) *sharePartition {
	h.mu.Lock()
	defer h.mu.Unlock()
	k := sharePartitionKey{group, tp}
	sp := h.parts[k]
	if sp == nil || sp.topicID != topicID {
		sp = &sharePartition{key: k, topicID: topicID}
		h.parts[k] = sp
	}
	return sp
}

// coordinatorKey is sp's key at the share coordinator.
func (sp *sharePartition) coordinatorKey() sharecoord.SharePartition {
	return sharecoord.SharePartition{Group: sp.key.group, TopicID: sp.topicID, Partition: sp.key.tp.Partition}
}

// loadLocked makes sure sp's state is loaded for p's current leadership:
// read from the share coordinator (initialized first if it never was, as
// a leader of Kafka's does for a partition its group coordinator has not
// initialized yet), its start offset picked by share.auto.offset.reset
// when it has none yet (latest: the high watermark), and moved past the
// log start offset.
func (h *shareHost) loadLocked(ctx context.Context, sp *sharePartition, p *partition.Partition, now time.Time) error {
	epoch := p.LeaderEpoch()
	if sp.state != nil && sp.leaderEpoch == epoch {
		return h.advanceLocked(ctx, sp, p, now)
	}
	sp.state, sp.unwritten = nil, false
	pers := h.n.sharePersister()
	key := sp.coordinatorKey()
	st, err := pers.read(ctx, key, epoch)
	if errors.Is(err, kafka.ErrInvalidRequest) {
		if err = pers.initialize(ctx, key, 0, -1); err == nil {
			st, err = pers.read(ctx, key, epoch)
		}
	}
	if err != nil {
		return fmt.Errorf("reading the state of share partition %s of group %q: %w", sp.key.tp, sp.key.group, err)
	}
	start := st.StartOffset
	if start < 0 {
		start = h.resetOffset(sp.key.group, p, now)
	}
	state := share.State{StateEpoch: st.StateEpoch, LeaderEpoch: epoch, StartOffset: start}
	for _, b := range st.Batches {
		if b.LastOffset < start {
			continue
		}
		state.StateBatches = append(state.StateBatches, share.StateBatch{FirstOffset: max(b.FirstOffset, start), LastOffset: b.LastOffset,
			DeliveryState: share.RecordState(b.DeliveryState), DeliveryCount: b.DeliveryCount})
	}
	sp.state, err = share.New(h.configOf(sp.key.group), state)
	if err != nil {
		return fmt.Errorf("%w: the state of share partition %s of group %q: %v", kafka.ErrUnknownServerError, sp.key.tp, sp.key.group, err)
	}
	sp.leaderEpoch = epoch
	if st.StartOffset != start {
		// The start offset picked here is the share partition's from
		// now on, whoever leads it next.
		w := sharecoord.Write{StateEpoch: st.StateEpoch, LeaderEpoch: epoch, StartOffset: start}
		if err := pers.write(ctx, key, w); err != nil {
			sp.state = nil
			return err
		}
	}
	return h.advanceLocked(ctx, sp, p, now)
}

// configOf returns the share partition config of group: the node's, with
// the lock duration the group sets (share.record.lock.duration.ms), if it
// does.
func (h *shareHost) configOf(group string) share.Config {
	c := h.config
	if c.RecordLockDuration <= 0 {
		c.RecordLockDuration = 30 * time.Second // share.Config's default, said in answers
	}
	if v, ok := h.n.groupConfigs(group)[controller.GroupShareRecordLockDurationMs]; ok {
		if ms, err := strconv.ParseInt(v, 10, 64); err == nil && ms > 0 {
			c.RecordLockDuration = time.Duration(ms) * time.Millisecond
		}
	}
	return c
}

// isolationOf returns the isolation level group's share partitions read
// at: its share.isolation.level, read_uncommitted by default.
func (h *shareHost) isolationOf(group string) kafka.IsolationLevel {
	if h.n.groupConfigs(group)[controller.GroupShareIsolationLevel] == "read_committed" {
		return kafka.ReadCommitted
	}
	return kafka.ReadUncommitted
}

// abortedSkipper tells, batch by batch in offset order, which batches a
// share group does not deliver: control batches, and the batches of the
// aborted transactions a read_committed read names, from each one's first
// offset to its producer's ABORT marker — as Kafka's consumer skips them.
type abortedSkipper struct {
	pending []partition.AbortedTransaction // by first offset, not yet begun
	open    map[int64]bool                 // producers inside an aborted transaction
}

// newAbortedSkipper returns a skipper for a read whose aborted
// transactions are aborted (nil for read_uncommitted: only control
// batches are skipped).
func newAbortedSkipper(aborted []partition.AbortedTransaction) *abortedSkipper {
	pending := slices.Clone(aborted)
	slices.SortFunc(pending, func(a, b partition.AbortedTransaction) int { return cmp.Compare(a.FirstOffset, b.FirstOffset) })
	return &abortedSkipper{pending: pending, open: map[int64]bool{}}
}

// skip reports whether the batch of header h is not delivered.
func (a *abortedSkipper) skip(h *record.Header) bool {
	for len(a.pending) > 0 && a.pending[0].FirstOffset <= h.LastOffset() {
		a.open[a.pending[0].ProducerID] = true
		a.pending = a.pending[1:]
	}
	if h.Attributes.IsControl() {
		delete(a.open, h.ProducerID) // the transaction's marker ends it
		return true
	}
	return h.Attributes.IsTransactional() && a.open[h.ProducerID]
}

// resetOffset returns where a share partition of group on p starts when
// it has no start offset yet, as the group's share.auto.offset.reset
// says: the high watermark (latest, the default), the log start offset
// (earliest), or the first record at most the duration old
// (by_duration), the high watermark when there is none.
func (h *shareHost) resetOffset(group string, p *partition.Partition, now time.Time) int64 {
	reset, err := controller.ParseShareAutoOffsetReset(h.n.groupConfigs(group)[controller.GroupShareAutoOffsetReset])
	if err != nil {
		return p.HighWatermark()
	}
	switch reset.Strategy {
	case controller.ShareResetEarliest:
		return p.LogStartOffset()
	case controller.ShareResetByDuration:
		if off, _, err := p.ListOffset(now.Add(-reset.Duration).UnixMilli()); err == nil && off >= 0 {
			return off
		}
	}
	return p.HighWatermark()
}

// advanceLocked moves sp's start offset past records the log no longer
// has (retention, DeleteRecords).
func (h *shareHost) advanceLocked(ctx context.Context, sp *sharePartition, p *partition.Partition, now time.Time) error {
	if ls := p.LogStartOffset(); ls > sp.state.StartOffset() {
		return h.persistLocked(ctx, sp, sp.state.AdvanceStartOffset(ls, now))
	}
	return nil
}

// persistLocked writes a change of sp's state to its share coordinator,
// before the change is answered. The write runs to its end even when the
// request that made the change is given up (its client hung up): what
// the coordinator has must not depend on a client. A write fenced by a
// newer state or leader epoch drops sp's state (another leader, or an
// administrator's AlterShareGroupOffsets, owns it now: the next use
// reads it again). Any other failure keeps the state — the members'
// locks with it, which a reload would free for others while they are
// held — and the next write sends the whole state, which the
// coordinator's combining (the further-along state wins) makes safe to
// repeat; the call that failed is answered with its error, so nothing
// answered rests on a change that was not written.
func (h *shareHost) persistLocked(ctx context.Context, sp *sharePartition, u share.Update) error {
	if u.Empty() && !sp.unwritten {
		return nil
	}
	w := sharecoord.Write{StateEpoch: u.StateEpoch, LeaderEpoch: u.LeaderEpoch, StartOffset: u.StartOffset}
	batches := u.StateBatches
	if sp.unwritten {
		full := sp.state.State()
		w.StartOffset, batches = full.StartOffset, full.StateBatches
	}
	for _, b := range batches {
		w.Batches = append(w.Batches, sharecoord.StateBatch{FirstOffset: b.FirstOffset, LastOffset: b.LastOffset,
			DeliveryState: sharecoord.DeliveryState(b.DeliveryState), DeliveryCount: b.DeliveryCount})
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), offsetsCommitTimeout)
	defer cancel()
	if err := h.n.sharePersister().write(ctx, sp.coordinatorKey(), w); err != nil {
		if errors.Is(err, kafka.ErrFencedStateEpoch) || errors.Is(err, kafka.ErrFencedLeaderEpoch) {
			sp.state, sp.unwritten = nil, false
		} else {
			sp.unwritten = true
		}
		return fmt.Errorf("writing the state of share partition %s of group %q: %w", sp.key.tp, sp.key.group, err)
	}
	sp.unwritten = false
	return nil
}

// acquire reads sp's partition p from where the share partition has
// records to deliver and acquires up to maxRecords of them (as mode
// counts them: at most maxRecords, or whole batches) and at most about
// maxBytes of batches for member. It returns the batches holding
// what was acquired (whole batches, new memory the caller owns) and the
// acquired ranges, once the change is written.
func (h *shareHost) acquire(ctx context.Context, sp *sharePartition, p *partition.Partition, member string, maxRecords, maxBytes int, mode share.AcquireMode, now time.Time) ([]byte, []transport.AcquiredRecords, error) {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if err := h.loadLocked(ctx, sp, p, now); err != nil {
		return nil, nil, err
	}
	// Locks that ran out make records available before the read starts
	// where they are.
	if err := h.persistLocked(ctx, sp, sp.state.Expire(now)); err != nil {
		return nil, nil, err
	}
	if maxRecords <= 0 || !sp.state.CanAcquire() {
		return nil, nil, nil
	}
	from := sp.state.FetchOffset()
	isolation := h.isolationOf(sp.key.group)
	bound := p.HighWatermark()
	if isolation == kafka.ReadCommitted {
		lso, err := p.LastStableOffset()
		if err != nil {
			return nil, nil, err
		}
		bound = lso
	}
	if from >= bound {
		return nil, nil, nil
	}
	res, err := p.FetchIsolated(nil, from, max(maxBytes, 1), isolation)
	if err != nil {
		return nil, nil, err
	}
	// The data batches; control batches, and under read_committed the
	// batches of aborted transactions, are left out, so that their
	// offsets are archived as absent from the log.
	type span struct {
		first, last int64
		bytes       []byte
	}
	var spans []span
	var batches []share.Batch
	aborted := newAbortedSkipper(res.AbortedTransactions)
	for data := res.Records; len(data) > 0; {
		hd, err := record.ParseHeader(data)
		if err != nil || hd.Size() > len(data) {
			break
		}
		if !aborted.skip(&hd) {
			spans = append(spans, span{hd.BaseOffset, hd.LastOffset(), data[:hd.Size()]})
			batches = append(batches, share.Batch{FirstOffset: hd.BaseOffset, LastOffset: hd.LastOffset()})
		}
		data = data[hd.Size():]
	}
	acquired, u, err := sp.state.AcquireWith(member, from, batches, maxRecords, mode, now)
	if err != nil {
		return nil, nil, err
	}
	if err := h.persistLocked(ctx, sp, u); err != nil {
		return nil, nil, err
	}
	var out []byte
	var ranges []transport.AcquiredRecords
	for _, s := range spans {
		if slices.ContainsFunc(acquired, func(a share.AcquiredRecords) bool { return a.FirstOffset <= s.last && a.LastOffset >= s.first }) {
			out = append(out, s.bytes...)
		}
	}
	for _, a := range acquired {
		ranges = append(ranges, transport.AcquiredRecords{FirstOffset: a.FirstOffset, LastOffset: a.LastOffset, DeliveryCount: a.DeliveryCount})
	}
	return out, ranges, nil
}

// acknowledge applies member's acknowledgements of records of sp, once
// written.
func (h *shareHost) acknowledge(ctx context.Context, sp *sharePartition, p *partition.Partition, member string, batches []transport.AcknowledgementBatch, now time.Time) error {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if err := h.loadLocked(ctx, sp, p, now); err != nil {
		return err
	}
	acks := make([]share.AckBatch, 0, len(batches))
	for _, b := range batches {
		ab := share.AckBatch{FirstOffset: b.FirstOffset, LastOffset: b.LastOffset}
		for _, t := range b.AcknowledgeTypes {
			ab.AcknowledgeTypes = append(ab.AcknowledgeTypes, share.AckType(t))
		}
		acks = append(acks, ab)
	}
	u, err := sp.state.Acknowledge(member, acks, now)
	if err != nil {
		return err
	}
	if err := h.persistLocked(ctx, sp, u); err != nil {
		return err
	}
	h.signalFreed() // a release makes records available
	return nil
}

// release gives back what member holds of sp, as when its share session
// closes.
func (h *shareHost) release(ctx context.Context, sp *sharePartition, member string, now time.Time) error {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if sp.state == nil {
		return nil // nothing loaded, nothing held
	}
	if err := h.persistLocked(ctx, sp, sp.state.ReleaseMember(member, now)); err != nil {
		return err
	}
	h.signalFreed()
	return nil
}

// refreshIfIdle drops sp's state when it holds no acquired record, so
// that its next use reads the share coordinator's again. A member opening
// a share session calls it: an administrator may have moved the start
// offset (AlterShareGroupOffsets, allowed only while the group has no
// members) on another node, and a share partition with nothing in flight
// writes nothing that the new state epoch would fence.
func (h *shareHost) refreshIfIdle(sp *sharePartition) {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if sp.state != nil && sp.state.Describe().Acquired == 0 {
		sp.state = nil
	}
}

// nextDeadline returns the earliest acquisition lock deadline of sps.
func (h *shareHost) nextDeadline(sps []*sharePartition) (time.Time, bool) {
	var next time.Time
	found := false
	for _, sp := range sps {
		sp.mu.Lock()
		if sp.state != nil {
			if d, ok := sp.state.NextDeadline(); ok && (!found || d.Before(next)) {
				next, found = d, true
			}
		}
		sp.mu.Unlock()
	}
	return next, found
}

// tick expires the acquisition locks due, in every share partition the
// node keeps, forgets those of partitions it no longer leads, and evicts
// the share sessions unused for too long.
func (h *shareHost) tick() {
	now := h.n.opts.Now()
	h.evictIdle(now)
	h.mu.Lock()
	parts := make([]*sharePartition, 0, len(h.parts))
	for k, sp := range h.parts {
		if _, err := h.n.readablePartition(k.tp.Topic, k.tp.Partition); err != nil {
			delete(h.parts, k) // a new leader has it, or the topic is gone
			continue
		}
		parts = append(parts, sp)
	}
	h.mu.Unlock()
	for _, sp := range parts {
		sp.mu.Lock()
		if sp.state != nil {
			if d, ok := sp.state.NextDeadline(); ok && !now.Before(d) {
				ctx, cancel := context.WithTimeout(context.Background(), offsetsCommitTimeout)
				if err := h.persistLocked(ctx, sp, sp.state.Expire(now)); err != nil {
					h.n.logger.Warn("expiring acquisition locks failed", "group", sp.key.group, "partition", sp.key.tp.String(), "err", err)
				} else {
					h.signalFreed()
				}
				cancel()
			}
		}
		sp.mu.Unlock()
	}
}
