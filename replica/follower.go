package replica

import (
	"errors"
	"fmt"

	"github.com/partlog/partlog/record"
	"github.com/partlog/partlog/transport"
)

// followerState is what a follower keeps: its one fetch in flight.
type followerState struct {
	seq       uint64 // Seq of the last fetch sent
	fetching  bool   // a fetch is in flight
	deadline  int64  // tick at which the fetch in flight is given up
	nextFetch int64  // tick before which no fetch is sent (backoff)
}

// becomeFollower starts following r.state.Leader in r.state's epoch.
func (r *Replica) becomeFollower() {
	r.role = RoleFollower
	r.leader = leaderState{nextID: r.leader.nextID}
	r.follower = followerState{seq: r.follower.seq, nextFetch: r.now}
	if r.opts.truncateToHighWatermark {
		// Before KIP-101 a follower cut its log at its own high
		// watermark before fetching from a new leader.
		r.truncateTo(r.hw)
	}
	r.maybeFetch()
}

// maybeFetch sends the next fetch when the follower has none in flight and
// its log is written: the fetch offset tells the leader what this replica
// holds, so it must not run ahead of the log on disk.
func (r *Replica) maybeFetch() {
	f := &r.follower
	if r.role != RoleFollower || f.fetching || !r.clean() || r.now < f.nextFetch {
		return
	}
	f.seq++
	f.fetching = true
	f.deadline = r.now + r.timeoutTicks
	lastEpoch := r.storage.LatestEpoch()
	if r.opts.truncateToHighWatermark {
		lastEpoch = transport.UndefinedEpoch
	}
	r.send(Message{Type: MsgFetch, From: r.id, To: r.state.Leader, Seq: f.seq, Fetch: &transport.ReplicaFetchPartition{
		Topic: r.tp.Topic, Partition: r.tp.Partition,
		CurrentLeaderEpoch: r.state.LeaderEpoch,
		FetchOffset:        r.logEnd,
		LastFetchedEpoch:   lastEpoch,
		LogStartOffset:     r.storage.LogStartOffset(),
		MaxBytes:           int32(min(r.opts.FetchMaxBytes, 1<<31-1)),
		ReplicaEpoch:       int64(r.opts.BrokerEpoch),
	}})
}

// fetchAfterBackoff sends the next fetch once FetchBackoff has passed.
func (r *Replica) fetchAfterBackoff() {
	r.follower.nextFetch = r.now + r.backoffTicks
	r.maybeFetch()
}

// stepFetchResponse takes the leader's answer to the fetch in flight:
// truncates on a diverging epoch, appends the batches, and takes the high
// watermark.
func (r *Replica) stepFetchResponse(m Message) {
	f := &r.follower
	resp := m.FetchResponse
	if r.role != RoleFollower || !f.fetching || m.Seq != f.seq || m.From != r.state.Leader {
		return // an answer to a fetch given up, duplicated or from before
	}
	f.fetching = false
	switch {
	case resp.Err == nil:
	case errors.Is(resp.Err, transport.ErrOffsetOutOfRange) && resp.LogEndOffset >= 0:
		switch {
		case r.logEnd > resp.LogEndOffset:
			r.truncateTo(resp.LogEndOffset)
		case r.logEnd < resp.LogStartOffset:
			r.truncateFully(resp.LogStartOffset)
		default:
			r.fetchAfterBackoff()
		}
		return
	default:
		r.fetchAfterBackoff()
		return
	}
	if d := resp.DivergingEpoch; d != nil {
		to := followerTruncationOffset(r.storage, *d, r.logEnd, r.hw)
		r.opts.Logger.Debug("truncate on diverging epoch", "partition", r.tp.String(), "replica", r.id,
			"diverging-epoch", d.LeaderEpoch, "end", d.EndOffset, "leo", r.logEnd, "to", to)
		if to < r.logEnd {
			r.truncateTo(to) // fetches again once the cut is written
		} else {
			r.fetchAfterBackoff()
		}
		return
	}
	if err := r.appendFetched(resp.Records); err != nil {
		r.opts.Logger.Warn("bad fetch answer", "partition", r.tp.String(), "replica", r.id, "err", err)
		r.fetchAfterBackoff()
		return
	}
	if resp.HighWatermark >= 0 {
		r.setHighWatermark(min(resp.HighWatermark, r.logEnd))
	}
	if start := min(resp.LogStartOffset, r.logEnd); start > r.storage.LogStartOffset() {
		r.logStart = start
	}
	r.maybeFetch()
}

// appendFetched checks fetched batches and queues them to be appended.
// Batches wholly below the log end are skipped; one that straddles it
// replaces the local batch it overlaps, so that the follower's batches are
// always the leader's, whole (offsets never go backwards).
func (r *Replica) appendFetched(records []byte) error {
	type batch struct {
		base, last int64
		data       []byte
	}
	var list []batch
	for rest := records; len(rest) > 0; {
		if len(rest) < record.LogOverhead {
			break // a partial batch at the end of a size-limited answer
		}
		h, err := record.ParseHeader(rest)
		if err != nil {
			return err
		}
		if h.Size() > len(rest) {
			break
		}
		if _, err := record.Validate(rest[:h.Size()]); err != nil {
			return err
		}
		if h.BaseOffset < 0 || h.LastOffset() < h.BaseOffset {
			return fmt.Errorf("replica: fetched batch with offsets %d to %d", h.BaseOffset, h.LastOffset())
		}
		if n := len(list); n > 0 && h.BaseOffset <= list[n-1].last {
			return fmt.Errorf("replica: fetched batch at %d after one ending at %d", h.BaseOffset, list[n-1].last)
		}
		list = append(list, batch{h.BaseOffset, h.LastOffset(), rest[:h.Size()]})
		rest = rest[h.Size():]
	}
	for _, b := range list {
		if b.last < r.logEnd {
			continue
		}
		if b.base < r.logEnd && !r.opts.truncateToHighWatermark {
			r.truncateTo(b.base)
		}
		r.appends = append(r.appends, unstableBatch{base: b.base, last: b.last, data: b.data})
		r.logEnd = b.last + 1
	}
	return nil
}
