package consumer

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/transport"
)

// CommittedOffset is a group's committed position in a partition: the
// offset of the next record to consume, with the metadata string the
// committer attached.
type CommittedOffset struct {
	// Offset is the offset of the next record to consume (Kafka's
	// committed_offset), never negative.
	Offset int64
	// LeaderEpoch is the leader epoch of the last record consumed, or -1.
	LeaderEpoch int32
	// Metadata is a string of the committer's own kept with the offset
	// (Kafka's committed_metadata), at most offset.metadata.max.bytes
	// long.
	Metadata string
}

// Generation says on whose behalf a commit is made: a group member in a
// generation, or (ID transport.NoGeneration, no MemberID) a consumer
// outside group membership.
type Generation struct {
	// ID is the generation id, or transport.NoGeneration (-1) outside
	// group membership.
	ID int32
	// MemberID is the member's id, or empty outside group membership.
	MemberID string
	// InstanceID is the consumer's group.instance.id, or empty.
	InstanceID string
}

// OffsetStore keeps a group's committed offsets. The default, for a
// consumer with a Group, stores them through the group's coordinator in
// __consumer_offsets (CoordinatorOffsets); MemoryOffsets keeps them in
// memory for tests; a user's own may keep them with the results of
// processing, in one transaction.
type OffsetStore interface {
	// CommitOffsets stores offsets for group, on behalf of gen. A store
	// that fences generations refuses a stale one with an error matching
	// kafka.ErrIllegalGeneration (or ErrUnknownMemberID,
	// ErrRebalanceInProgress).
	CommitOffsets(ctx context.Context, group string, gen Generation, offsets map[kafka.TopicPartition]CommittedOffset) error
	// FetchOffsets returns group's committed offsets for tps; a partition
	// without one is left out of the map. A partition whose offset a
	// transaction holds, until its outcome is known, is an error
	// matching kafka.ErrUnstableOffsetCommit, which is retriable.
	FetchOffsets(ctx context.Context, group string, tps []kafka.TopicPartition) (map[kafka.TopicPartition]CommittedOffset, error)
}

// CoordinatorOffsets returns the OffsetStore that commits through a
// group's coordinator (OffsetCommit, OffsetFetch), which fences commits by
// generation and keeps them in __consumer_offsets.
func CoordinatorOffsets(gc transport.GroupClient) OffsetStore { return coordinatorStore{gc} }

type coordinatorStore struct{ gc transport.GroupClient }

func (s coordinatorStore) CommitOffsets(ctx context.Context, group string, gen Generation, offsets map[kafka.TopicPartition]CommittedOffset) error {
	req := &transport.OffsetCommitRequest{Group: group, GenerationID: gen.ID, MemberID: gen.MemberID, GroupInstanceID: gen.InstanceID}
	for _, tp := range slices.SortedFunc(maps.Keys(offsets), compareTP) {
		o := offsets[tp]
		if n := len(req.Topics); n == 0 || req.Topics[n-1].Topic != tp.Topic {
			req.Topics = append(req.Topics, transport.OffsetCommitTopic{Topic: tp.Topic})
		}
		t := &req.Topics[len(req.Topics)-1]
		t.Partitions = append(t.Partitions, transport.OffsetCommitPartition{Partition: tp.Partition, Offset: o.Offset, LeaderEpoch: o.LeaderEpoch, Metadata: o.Metadata})
	}
	resp, err := s.gc.OffsetCommit(ctx, req)
	if err != nil {
		return err
	}
	var errs []error
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if p.Err != nil {
				errs = append(errs, fmt.Errorf("%s-%d: %w", t.Topic, p.Partition, p.Err))
			}
		}
	}
	return errors.Join(errs...)
}

func (s coordinatorStore) FetchOffsets(ctx context.Context, group string, tps []kafka.TopicPartition) (map[kafka.TopicPartition]CommittedOffset, error) {
	// require_stable, as Kafka's consumer sends it: an offset a
	// transaction has committed but whose marker has not yet reached the
	// group's coordinator is UNSTABLE_OFFSET_COMMIT, not the previous one.
	req := &transport.OffsetFetchRequest{Group: group, RequireStable: true}
	if tps != nil {
		req.Topics = []transport.OffsetFetchTopic{}
	}
	for _, tp := range tps {
		if n := len(req.Topics); n == 0 || req.Topics[n-1].Topic != tp.Topic {
			req.Topics = append(req.Topics, transport.OffsetFetchTopic{Topic: tp.Topic})
		}
		t := &req.Topics[len(req.Topics)-1]
		t.Partitions = append(t.Partitions, tp.Partition)
	}
	resp, err := s.gc.OffsetFetch(ctx, req)
	if err != nil {
		return nil, err
	}
	if resp.Err != nil {
		return nil, resp.Err
	}
	out := map[kafka.TopicPartition]CommittedOffset{}
	var errs []error
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			switch {
			case p.Err != nil:
				errs = append(errs, fmt.Errorf("%s-%d: %w", t.Topic, p.Partition, p.Err))
			case p.Offset >= 0:
				out[kafka.TopicPartition{Topic: t.Topic, Partition: p.Partition}] = CommittedOffset{Offset: p.Offset, LeaderEpoch: p.LeaderEpoch, Metadata: p.Metadata}
			}
		}
	}
	return out, errors.Join(errs...)
}

// MemoryOffsets is an OffsetStore in memory, for tests. It does not fence
// generations. It is safe for concurrent use.
type MemoryOffsets struct {
	mu      sync.Mutex
	offsets map[string]map[kafka.TopicPartition]CommittedOffset
}

// NewMemoryOffsets returns an empty MemoryOffsets.
func NewMemoryOffsets() *MemoryOffsets {
	return &MemoryOffsets{offsets: map[string]map[kafka.TopicPartition]CommittedOffset{}}
}

// CommitOffsets stores offsets.
func (m *MemoryOffsets) CommitOffsets(_ context.Context, group string, _ Generation, offsets map[kafka.TopicPartition]CommittedOffset) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	g := m.offsets[group]
	if g == nil {
		g = map[kafka.TopicPartition]CommittedOffset{}
		m.offsets[group] = g
	}
	maps.Copy(g, offsets)
	return nil
}

// FetchOffsets returns the offsets stored for tps, or every offset of the
// group when tps is nil.
func (m *MemoryOffsets) FetchOffsets(_ context.Context, group string, tps []kafka.TopicPartition) (map[kafka.TopicPartition]CommittedOffset, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if tps == nil {
		return maps.Clone(m.offsets[group]), nil
	}
	out := map[kafka.TopicPartition]CommittedOffset{}
	for _, tp := range tps {
		if o, ok := m.offsets[group][tp]; ok {
			out[tp] = o
		}
	}
	return out, nil
}
