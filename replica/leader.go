package replica

import (
	"errors"
	"fmt"
	"slices"

	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/log"
	"github.com/partlog/partlog/record"
)

// leaderState is what a leader keeps: its view of each follower and the
// appends waiting for the high watermark.
type leaderState struct {
	followers map[int32]*peer
	// epochStart is the log end offset when this leader epoch began: the
	// first offset of the epoch, whether or not it wrote there yet.
	epochStart int64
	waiting    []waitingAppend // acks=all, in offset order
	nextID     uint64
}

// peer is the leader's view of one follower (Kafka's Replica state).
type peer struct {
	leo                int64 // fetch offset of its last fetch in this epoch, or -1
	lastCaughtUp       int64 // tick
	lastFetchLeaderLEO int64
	lastFetch          int64 // tick
	sentHW             int64 // high watermark of the last answer
	brokerEpoch        int64 // of its last fetch, or -1
	parked             *parkedFetch
	// refusedAfter is the tick of its last fetch when the controller
	// refused to add it to the ISR (fenced, or in another broker epoch),
	// or -1: it is proposed again only after a later fetch, so that a
	// crashed follower's last fetch does not keep others out.
	refusedAfter int64
}

// parkedFetch is a fetch that found nothing new, held until there is
// something to say or FetchWaitMax passes.
type parkedFetch struct {
	seq      uint64
	req      kafka.ReplicaFetchPartition
	deadline int64
}

type waitingAppend struct {
	id         uint64
	base, last int64
}

// Proposal is an append Propose accepted: its offsets, and the ID its
// Completion will carry (zero for acks=0, which completes at once).
type Proposal struct {
	// ID names the proposal in its Completion.
	ID uint64
	// BaseOffset and LastOffset are the offsets the batch was given.
	BaseOffset, LastOffset int64
}

// Propose appends batch as the leader: it gives the batch its offsets and
// stamps the leader epoch on it in place, and hands it to the next Ready
// to write. The replica holds batch, without copying it, until the driver
// calls Advance after the Ready that carries it (or a truncation drops
// it): the caller must not change it before then (Node.Propose waits so). With acks=1 the append completes
// once written; with acks=all once the high watermark passes it. acks=all
// fails at once with kafka.ErrNotEnoughReplicas while the ISR is below
// MinInsyncReplicas; a replica that does not lead fails with
// kafka.ErrNotLeaderOrFollower; a malformed batch with
// kafka.ErrCorruptMessage.
func (r *Replica) Propose(batch []byte, acks kafka.Acks) (Proposal, error) {
	if r.role != RoleLeader {
		return Proposal{}, fmt.Errorf("%w: replica %d of %s is %s (leader %d, epoch %d)",
			kafka.ErrNotLeaderOrFollower, r.id, r.tp, r.role, r.state.Leader, r.state.LeaderEpoch)
	}
	if err := acks.Check(); err != nil {
		return Proposal{}, err
	}
	h, err := record.Validate(batch)
	if err != nil || h.Size() != len(batch) {
		return Proposal{}, fmt.Errorf("%w: %s: one whole batch expected: %v", kafka.ErrCorruptMessage, r.tp, err)
	}
	if err := kafka.CheckInSync(r.tp, acks, r.state.ISR, r.opts.MinInsyncReplicas); err != nil {
		return Proposal{}, err
	}
	base := r.logEnd
	if r.opts.CheckAppend != nil {
		if err := r.opts.CheckAppend(batch, base); err != nil {
			return Proposal{}, err
		}
	}
	record.SetBaseOffset(batch, base)
	record.SetPartitionLeaderEpoch(batch, r.state.LeaderEpoch)
	p := Proposal{BaseOffset: base, LastOffset: base + int64(h.LastOffsetDelta)}
	b := unstableBatch{base: p.BaseOffset, last: p.LastOffset, data: batch}
	if acks != kafka.AcksNone {
		r.leader.nextID++
		p.ID = r.leader.nextID
	}
	switch acks {
	case kafka.AcksLeader:
		b.proposal = p.ID
	case kafka.AcksAll:
		r.leader.waiting = append(r.leader.waiting, waitingAppend{id: p.ID, base: p.BaseOffset, last: p.LastOffset})
	}
	r.appends = append(r.appends, b)
	r.logEnd = p.LastOffset + 1
	return p, nil
}

// becomeLeader starts leading in r.state's epoch.
func (r *Replica) becomeLeader() {
	r.role = RoleLeader
	r.follower = followerState{seq: r.follower.seq}
	r.leader = leaderState{followers: map[int32]*peer{}, epochStart: r.logEnd, nextID: r.leader.nextID}
	r.syncFollowers()
	for id, p := range r.leader.followers {
		if slices.Contains(r.state.ISR, id) {
			p.lastCaughtUp = r.now
		}
	}
	r.maybeAdvanceHighWatermark()
}

// syncFollowers makes the leader track the replicas of a new assignment
// in the same leader epoch — a reassignment adding or removing replicas:
// an added one starts as a follower the leader has not heard from, a
// removed one is forgotten.
func (r *Replica) syncFollowers() {
	for id := range r.leader.followers {
		if !slices.Contains(r.state.Replicas, id) {
			delete(r.leader.followers, id)
		}
	}
	for id := range r.followerIDs() {
		if _, ok := r.leader.followers[id]; !ok {
			r.leader.followers[id] = &peer{leo: -1, lastFetchLeaderLEO: -1, sentHW: -1, brokerEpoch: -1, refusedAfter: -1}
		}
	}
}

// stepFetch answers a follower's fetch, or holds it when there is nothing
// new to send.
func (r *Replica) stepFetch(m Message) {
	req := *m.Fetch
	resp := &kafka.ReplicaFetchPartitionResponse{Topic: r.tp.Topic, Partition: r.tp.Partition,
		LeaderEpoch: r.state.LeaderEpoch, HighWatermark: -1, LogStartOffset: -1, LogEndOffset: -1}
	answer := func() {
		r.send(Message{Type: MsgFetchResponse, From: r.id, To: m.From, Seq: m.Seq, FetchResponse: resp})
	}
	if err := r.checkLeaderEpoch(req.CurrentLeaderEpoch); err != nil {
		resp.Err = err
		answer()
		return
	}
	p, ok := r.leader.followers[m.From]
	if !ok {
		resp.Err = fmt.Errorf("%w: node %d is not a replica of %s", kafka.ErrNotLeaderOrFollower, m.From, r.tp)
		answer()
		return
	}
	if seen, ok := r.brokerEpochs[m.From]; ok && req.ReplicaEpoch < seen {
		// A fetch from before the follower restarted, perhaps with its
		// disk wiped: its offset says nothing about the log it has now.
		resp.Err = fmt.Errorf("%w: node %d fetched in broker epoch %d, already seen %d",
			kafka.ErrStaleBrokerEpoch, m.From, req.ReplicaEpoch, seen)
		answer()
		return
	}
	r.brokerEpochs[m.From] = req.ReplicaEpoch
	resp.HighWatermark, resp.LogStartOffset, resp.LogEndOffset = r.hw, r.storage.LogStartOffset(), r.stableEnd
	if !r.opts.truncateToHighWatermark && req.LastFetchedEpoch != kafka.UndefinedEpoch {
		epoch, end := r.endOffsetForEpoch(req.LastFetchedEpoch)
		if epoch < req.LastFetchedEpoch || end < req.FetchOffset {
			resp.DivergingEpoch = &kafka.EpochEndOffset{LeaderEpoch: epoch, EndOffset: end}
			answer()
			return
		}
	}
	if req.FetchOffset < resp.LogStartOffset || req.FetchOffset > r.stableEnd {
		resp.Err = fmt.Errorf("%w: fetch offset %d, %s holds [%d, %d)", kafka.ErrOffsetOutOfRange,
			req.FetchOffset, r.tp, resp.LogStartOffset, r.stableEnd)
		answer()
		return
	}
	p.parked = nil // superseded: the follower waits only for this fetch
	p.brokerEpoch = req.ReplicaEpoch
	r.updateFollower(p, req.FetchOffset)
	if req.FetchOffset == r.stableEnd && p.sentHW == r.hw {
		p.parked = &parkedFetch{seq: m.Seq, req: req, deadline: r.now + r.waitTicks}
		return
	}
	r.answerFetch(m.From, p, m.Seq, req)
}

// maxAnswerBuffer bounds the buffer a leader takes from
// Options.AnswerBuffers for one fetch answer: 8 MiB, eight times
// replica.fetch.max.bytes' default.
const maxAnswerBuffer = 8 << 20

// answerFetch sends a follower the batches from its fetch offset.
func (r *Replica) answerFetch(to int32, p *peer, seq uint64, req kafka.ReplicaFetchPartition) {
	resp := &kafka.ReplicaFetchPartitionResponse{Topic: r.tp.Topic, Partition: r.tp.Partition,
		LeaderEpoch: r.state.LeaderEpoch, HighWatermark: r.hw, LogStartOffset: r.storage.LogStartOffset(), LogEndOffset: r.stableEnd}
	maxBytes := r.opts.FetchMaxBytes
	if req.MaxBytes > 0 {
		maxBytes = int(req.MaxBytes)
	}
	var dst []byte // new memory, unless the transport gives buffers back
	if r.opts.AnswerBuffers != nil {
		// A follower may ask for much more than there is: a larger
		// answer grows into new memory, as without a pool.
		dst = r.opts.AnswerBuffers.Get(min(maxBytes, maxAnswerBuffer))[:0]
	}
	records, err := r.storage.Read(dst, req.FetchOffset, r.stableEnd, maxBytes)
	switch {
	case errors.Is(err, log.ErrOffsetOutOfRange):
		resp.Err = fmt.Errorf("%w: %v", kafka.ErrOffsetOutOfRange, err)
	case err != nil:
		resp.Err = fmt.Errorf("%w: %v", kafka.ErrKafkaStorage, err)
	default:
		resp.Records = records
	}
	p.sentHW = r.hw
	r.send(Message{Type: MsgFetchResponse, From: r.id, To: to, Seq: seq, FetchResponse: resp})
}

// answerParked answers the held fetches that now have something to say:
// new batches, a new high watermark, or FetchWaitMax passed.
func (r *Replica) answerParked() {
	for id := range r.followerIDs() {
		p := r.leader.followers[id]
		if p == nil || p.parked == nil {
			continue
		}
		if pf := p.parked; r.stableEnd > pf.req.FetchOffset || r.hw != p.sentHW || r.now >= pf.deadline {
			p.parked = nil
			r.answerFetch(id, p, pf.seq, pf.req)
		}
	}
}

// checkLeaderEpoch checks the leader epoch a peer's request names against
// this leader's (-1 skips the check).
func (r *Replica) checkLeaderEpoch(epoch int32) error {
	switch {
	case r.role != RoleLeader:
		return fmt.Errorf("%w: replica %d of %s is %s", kafka.ErrNotLeaderOrFollower, r.id, r.tp, r.role)
	case epoch == kafka.UndefinedEpoch:
		return nil
	case epoch < r.state.LeaderEpoch:
		return fmt.Errorf("%w: request in epoch %d, leader in %d", kafka.ErrFencedLeaderEpoch, epoch, r.state.LeaderEpoch)
	case epoch > r.state.LeaderEpoch:
		return fmt.Errorf("%w: request in epoch %d, leader in %d", kafka.ErrUnknownLeaderEpoch, epoch, r.state.LeaderEpoch)
	}
	return nil
}

// updateFollower records a fetch at offset, as Kafka's
// Replica.updateFetchState does, then reconsiders the ISR and the high
// watermark.
func (r *Replica) updateFollower(p *peer, offset int64) {
	p.lastCaughtUp = caughtUpTime(p.lastCaughtUp, offset, r.stableEnd, p.lastFetchLeaderLEO, p.lastFetch, r.now)
	p.leo = offset
	p.lastFetchLeaderLEO = r.stableEnd
	p.lastFetch = r.now
	r.maybeExpandISR()
	r.maybeAdvanceHighWatermark()
}

// maximalISR is the ISR counting a pending expansion (Kafka's maximalIsr):
// the high watermark waits for a replica being added, and for one being
// removed until the controller says it is gone.
func (r *Replica) maximalISR() []int32 {
	isr := r.state.ISR
	if r.alter != nil {
		for _, id := range r.alter.ISR {
			if !slices.Contains(isr, id) {
				isr = append(slices.Clone(isr), id)
			}
		}
	}
	return isr
}

// maybeAdvanceHighWatermark moves the high watermark to the smallest log
// end offset in the ISR, unless the ISR is below MinInsyncReplicas, and
// completes the acks=all appends it passed.
func (r *Replica) maybeAdvanceHighWatermark() {
	// Called on every follower fetch: read the log end offsets in place
	// rather than gather them into a map.
	leo := func(id int32) (int64, bool) {
		if id == r.id {
			return r.stableEnd, true
		}
		p, ok := r.leader.followers[id]
		if !ok {
			return 0, false
		}
		return p.leo, true
	}
	hw, ok := highWatermark(r.maximalISR(), len(r.state.ISR), r.opts.MinInsyncReplicas, leo)
	if !ok || !r.setHighWatermark(hw) {
		return
	}
	done := 0
	for done < len(r.leader.waiting) && r.leader.waiting[done].last < r.hw {
		w := r.leader.waiting[done]
		r.completed = append(r.completed, Completion{ID: w.id, BaseOffset: w.base, LastOffset: w.last})
		done++
	}
	r.leader.waiting = r.leader.waiting[done:]
	r.answerParked()
}

// maybeShrinkISR proposes removing the followers that have not been caught
// up for ReplicaLagTimeMax.
func (r *Replica) maybeShrinkISR() {
	if r.alter != nil {
		return
	}
	var keep []int32
	shrink := false
	for _, id := range r.state.ISR {
		p := r.leader.followers[id]
		if id != r.id && p != nil && !isCaughtUp(p.leo, r.stableEnd, p.lastCaughtUp, r.now, r.lagTicks) {
			shrink = true
			continue
		}
		keep = append(keep, id)
	}
	if shrink {
		r.proposeISR(keep)
	}
}

// maybeExpandISR proposes adding the first follower outside the ISR that
// reached the high watermark and this epoch's start (Kafka's
// isFollowerInSync), and that has fetched since the controller last
// refused it.
func (r *Replica) maybeExpandISR() {
	if r.alter != nil {
		return
	}
	for id := range r.followerIDs() {
		p := r.leader.followers[id]
		if slices.Contains(r.state.ISR, id) || p.leo < r.hw || p.leo < r.leader.epochStart ||
			p.refusedAfter >= 0 && p.lastFetch <= p.refusedAfter {
			continue
		}
		var isr []int32
		for _, m := range r.state.Replicas {
			if m == id || slices.Contains(r.state.ISR, m) {
				isr = append(isr, m)
			}
		}
		r.proposeISR(isr)
		return
	}
}

func (r *Replica) proposeISR(isr []int32) {
	epochs := make([]int64, len(isr))
	for i, id := range isr {
		switch p := r.leader.followers[id]; {
		case id == r.id:
			epochs[i] = int64(r.opts.BrokerEpoch)
		case p != nil:
			epochs[i] = p.brokerEpoch
		default:
			epochs[i] = -1
		}
	}
	r.alter = &ISRChange{LeaderEpoch: r.state.LeaderEpoch, PartitionEpoch: r.state.PartitionEpoch, ISR: isr, BrokerEpochs: epochs}
	r.alterSent = false
	r.opts.Logger.Debug("propose ISR", "partition", r.tp.String(), "leader", r.id, "isr", isr, "was", r.state.ISR)
}

// stepEpochRequest answers OffsetsForLeaderEpoch.
func (r *Replica) stepEpochRequest(m Message) {
	req := m.EpochRequest
	resp := &kafka.OffsetForLeaderEpochPartitionResponse{Topic: r.tp.Topic, Partition: r.tp.Partition,
		EpochEndOffset: kafka.EpochEndOffset{LeaderEpoch: kafka.UndefinedEpoch, EndOffset: -1}}
	if err := r.checkLeaderEpoch(req.CurrentLeaderEpoch); err != nil {
		resp.Err = err
	} else {
		resp.LeaderEpoch, resp.EndOffset = r.endOffsetForEpoch(req.LeaderEpoch)
	}
	r.send(Message{Type: MsgOffsetsForLeaderEpochResponse, From: r.id, To: m.From, Seq: m.Seq, EpochResponse: resp})
}

// endOffsetForEpoch answers for the leader's log, counting this leader's
// epoch as begun at epochStart even before it writes there, as Kafka's new
// leader records its epoch in its cache at once (KIP-279).
func (r *Replica) endOffsetForEpoch(epoch int32) (int32, int64) {
	return leaderEpochEndOffset(r.storage, epoch, r.state.LeaderEpoch, r.leader.epochStart, r.stableEnd)
}
