package consumer

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/transport"
)

// ErrNoGroup means a call needs a consumer group and the consumer has
// none (no Group option).
var ErrNoGroup = errors.New("consumer: no group: the consumer was made without Group")

// Commit commits the position of every assigned partition that has one —
// the offset after the last record Poll returned for it — and waits for
// the answer (Kafka's commitSync). A commit the group refuses because it
// rebalanced matches ErrCommitFailed; the consumer then rejoins at its
// next Poll.
func (c *Consumer) Commit(ctx context.Context) error {
	return c.commitPositions(ctx, nil)
}

// commitPositions commits the positions of tps, or of every assigned
// partition when tps is nil.
func (c *Consumer) commitPositions(ctx context.Context, tps []kafka.TopicPartition) error {
	offsets := c.positionOffsets(tps)
	if len(offsets) == 0 {
		return nil
	}
	return c.CommitOffsets(ctx, offsets)
}

// positionOffsets returns the positions of tps, or of every assigned
// partition when tps is nil, that have one, as offsets to commit.
func (c *Consumer) positionOffsets(tps []kafka.TopicPartition) map[kafka.TopicPartition]CommittedOffset {
	c.mu.Lock()
	defer c.mu.Unlock()
	offsets := map[kafka.TopicPartition]CommittedOffset{}
	for _, p := range c.order {
		if p.state == posReady && (tps == nil || slices.Contains(tps, p.tp)) {
			offsets[p.tp] = CommittedOffset{Offset: p.position, LeaderEpoch: -1}
		}
	}
	return offsets
}

// CommitOffsets commits offsets for the group — each the offset of the
// next record to consume — and waits for the answer. A member commits in
// its generation; see Commit for a refused commit. A retriable error (the
// group's coordinator moved, is loading or cannot be reached) is retried
// after the retry backoff until ctx ends or it has lasted RetryTimeout.
func (c *Consumer) CommitOffsets(ctx context.Context, offsets map[kafka.TopicPartition]CommittedOffset) error {
	g := c.grp
	if g == nil {
		return ErrNoGroup
	}
	for tp, o := range offsets {
		if o.Offset < 0 {
			return fmt.Errorf("consumer: commit %v: negative offset %d", tp, o.Offset)
		}
	}
	g.mu.Lock()
	gen := Generation{ID: transport.NoGeneration, InstanceID: g.cfg.instanceID}
	if g.member {
		if g.generation < 0 {
			g.mu.Unlock()
			return fmt.Errorf("%w: not a member of a generation", ErrCommitFailed)
		}
		gen.ID, gen.MemberID = g.generation, g.memberID
	}
	g.mu.Unlock()
	err := c.commitRetrying(ctx, gen, offsets)
	if err == nil {
		return nil
	}
	switch {
	case errors.Is(err, kafka.ErrUnknownMemberID), errors.Is(err, kafka.ErrIllegalGeneration), errors.Is(err, kafka.ErrFencedInstanceID),
		errors.Is(err, kafka.ErrFencedMemberEpoch):
		if g.member {
			g.mu.Lock()
			if g.generation == gen.ID && g.memberID == gen.MemberID {
				g.resetLocked("commit refused: " + err.Error())
			}
			g.mu.Unlock()
			g.wake()
		}
	case errors.Is(err, kafka.ErrStaleMemberEpoch):
		// Still behind after the retries: the member's epoch did not
		// move on to the coordinator's.
	case errors.Is(err, kafka.ErrRebalanceInProgress):
		if g.member {
			g.setRejoin("the group is rebalancing")
			g.wake()
		}
	default:
		return fmt.Errorf("consumer: commit: %w", err)
	}
	return fmt.Errorf("%w: %w", ErrCommitFailed, err)
}

// commitRetrying commits offsets through the group's store, retrying a
// retriable error — the coordinator moved, is loading or cannot be
// reached, as while a cluster elects a new leader of the group's
// partition of __consumer_offsets — after the retry backoff, until ctx
// ends or the failures have lasted RetryTimeout, as Kafka's commitSync
// retries until default.api.timeout.ms. Commits are idempotent: sending
// one again is harmless.
func (c *Consumer) commitRetrying(ctx context.Context, gen Generation, offsets map[kafka.TopicPartition]CommittedOffset) error {
	g := c.grp
	var r retry
	for {
		err := g.store.CommitOffsets(ctx, g.cfg.group, gen, offsets)
		if err == nil || !kafka.IsRetriable(err) || ctx.Err() != nil {
			return err
		}
		if errors.Is(err, kafka.ErrStaleMemberEpoch) {
			// A heartbeat moved the member's epoch on since the commit
			// was made (KIP-848): commit again in the epoch it has now.
			g.mu.Lock()
			if g.memberID == gen.MemberID && g.generation > 0 {
				gen.ID = g.generation
			}
			g.mu.Unlock()
		}
		if r.fail(&c.cfg, time.Now(), false) {
			return err
		}
		select {
		case <-time.After(time.Until(r.until)):
		case <-ctx.Done():
			return err
		}
	}
}

// CommitAsync commits the positions of every assigned partition, as
// Commit does, without waiting; done, if not nil, is called with the
// offsets and the outcome, from another goroutine. Close waits for the
// commits in flight.
func (c *Consumer) CommitAsync(ctx context.Context, done func(map[kafka.TopicPartition]CommittedOffset, error)) {
	g := c.grp
	offsets := c.positionOffsets(nil)
	if g == nil {
		if done != nil {
			done(offsets, ErrNoGroup)
		}
		return
	}
	g.async.Go(func() {
		err := c.CommitOffsets(ctx, offsets)
		if done != nil {
			done(offsets, err)
		}
	})
}

// Committed returns the group's committed offsets for tps, or for every
// assigned partition when none is named; a partition without one is left
// out. While a transaction that commits offsets for one of them is
// undecided (UNSTABLE_OFFSET_COMMIT), and while the group's coordinator
// cannot answer (it moves, loads, or is unreachable: any retriable
// error), it asks again with the consumer's backoff until ctx is done, as
// Kafka's committed() does until default.api.timeout.ms. A caller that
// rewinds to these offsets after an aborted transaction must not go on
// from its position when they cannot be had: it would skip the aborted
// records.
func (c *Consumer) Committed(ctx context.Context, tps ...kafka.TopicPartition) (map[kafka.TopicPartition]CommittedOffset, error) {
	g := c.grp
	if g == nil {
		return nil, ErrNoGroup
	}
	if len(tps) == 0 {
		tps = c.Assignment()
		if len(tps) == 0 {
			return map[kafka.TopicPartition]CommittedOffset{}, nil
		}
	}
	for failures := 0; ; failures++ {
		offsets, err := g.store.FetchOffsets(ctx, g.cfg.group, tps)
		if err == nil || !kafka.IsRetriable(err) && !errors.Is(err, kafka.ErrUnstableOffsetCommit) {
			return offsets, err
		}
		r := retry{failures: failures}
		r.fail(&c.cfg, time.Now(), false)
		select {
		case <-time.After(time.Until(r.until)):
		case <-ctx.Done():
			return nil, fmt.Errorf("consumer: %w (%w)", ctx.Err(), err)
		}
	}
}

// Lag returns, for each assigned partition with a position and a high
// watermark known from a fetch, how many records are left to consume: the
// high watermark minus the position.
func (c *Consumer) Lag() map[kafka.TopicPartition]int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[kafka.TopicPartition]int64{}
	for _, p := range c.order {
		if p.state == posReady && p.highWatermark >= 0 {
			out[p.tp] = max(p.highWatermark-p.position, 0)
		}
	}
	return out
}

// GroupMetadata is a consumer's place in its group.
type GroupMetadata struct {
	// Group is the consumer's group.id.
	Group string
	// MemberID is the id the coordinator gave the consumer, or empty while
	// it is not a member.
	MemberID string
	// Generation is the generation the consumer last joined — under
	// ConsumerProtocol its member epoch — or transport.NoGeneration (-1)
	// while it is in none.
	Generation int32
	// GroupInstanceID is the consumer's group.instance.id, or empty for
	// a dynamic member.
	GroupInstanceID string
	// Rebalances counts the rebalances the consumer completed.
	Rebalances int
}

// GroupMetadata returns the consumer's member id, generation and
// instance id; the zero value without a group. A transactional producer's
// SendOffsetsToTransaction takes it (see producer.GroupMetadata), so that
// the group's coordinator fences the offsets of a member that has been
// replaced (KIP-447).
func (c *Consumer) GroupMetadata() GroupMetadata {
	g := c.grp
	if g == nil {
		return GroupMetadata{}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return GroupMetadata{Group: g.cfg.group, MemberID: g.memberID, Generation: g.generation,
		GroupInstanceID: g.cfg.instanceID, Rebalances: g.rebalances}
}
