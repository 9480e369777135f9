package group

import (
	"fmt"
	"maps"
	"slices"

	"github.com/partlog/partlog/kafka"
)

// The share group offsets APIs (KIP-932), the group coordinator's part:
// which share partitions of a group have state (DescribeShareGroupOffsets
// of all topics), AlterShareGroupOffsets and DeleteShareGroupOffsets. As
// in Kafka's GroupCoordinatorService, the coordinator only decides and
// records; the broker initializes or deletes the share state at the
// share coordinators (InitializeShareGroupState, DeleteShareGroupState)
// between the two steps of an alter or a delete.

// ShareOffsetsTopic names partitions of a topic and the start offset
// each is to have, as an AlterShareGroupOffsets names them.
type ShareOffsetsTopic struct {
	// Topic is the topic's name.
	Topic string
	// Partitions are the partitions and their start offsets.
	Partitions []ShareStartOffset
}

// ShareStartOffset is one partition's share-partition start offset.
type ShareStartOffset struct {
	// Partition is the partition's index.
	Partition int32
	// StartOffset is the share-partition start offset it is to have.
	StartOffset int64
}

// ShareOffsetsAlter is what AlterShareOffsets decided: the partitions
// whose share state the broker is to initialize, at StateEpoch, and the
// request's partitions that cannot be altered.
type ShareOffsetsAlter struct {
	// StateEpoch is the group epoch: the least state epoch the share
	// state is initialized at.
	StateEpoch int32
	// Topics answer the request's topics, in its order: a topic the
	// coordinator does not know has a zero TopicID and each of its
	// partitions kafka.ErrUnknownTopicOrPartition, as has a partition
	// past the topic's count; the others have no error and are to be
	// initialized.
	Topics []ShareOffsetsTopicResult
}

// ShareOffsetsTopicResult answers a topic of an alter.
type ShareOffsetsTopicResult struct {
	// Topic is the topic's name.
	Topic string
	// TopicID is its id; zero for a topic the coordinator does not know.
	TopicID [16]byte
	// Partitions answer its partitions.
	Partitions []ShareOffsetsPartitionResult
}

// ShareOffsetsPartitionResult answers one partition of an alter.
type ShareOffsetsPartitionResult struct {
	// Partition is the partition's index.
	Partition int32
	// StartOffset is the start offset asked for.
	StartOffset int64
	// Err is nil, or why the partition is not altered.
	Err error
}

// ShareOffsetsDelete is what BeginDeleteShareOffsets decided: the share
// partitions whose state the broker is to delete, by topic, and the
// topics that have none to delete.
type ShareOffsetsDelete struct {
	// Delete are the topics whose share state is to be deleted, with
	// all their partitions that have some.
	Delete []ShareTopicPartitions
	// Errors answer the topics that are not: kafka.ErrUnknownTopicOrPartition
	// for a topic that does not exist or whose state the group has not.
	Errors []ShareOffsetsTopicError
}

// ShareOffsetsTopicError is a topic of a delete answered with an error.
type ShareOffsetsTopicError struct {
	// Topic is the topic's name.
	Topic string
	// TopicID is its id; zero when it does not exist.
	TopicID [16]byte
	// Err is why the topic's offsets are not deleted.
	Err error
}

// shareGroupForOffsetsLocked returns group id's share group for an alter
// or a delete, as Kafka's GroupCoordinatorShard finds it: the group id
// may not be empty (INVALID_GROUP_ID); a group of another kind is
// GROUP_ID_NOT_FOUND, and so is a missing one unless create is set, when
// an empty share group is made (and its ShareGroupMetadata record
// returned with it); a share group with members is NON_EMPTY_GROUP.
func (c *Coordinator) shareGroupForOffsetsLocked(id string, create bool) (*group, []shareRecord, error) {
	switch {
	case c.closed:
		return nil, nil, errClosed
	case id == "":
		return nil, nil, fmt.Errorf("%w: group id can't be empty", kafka.ErrInvalidGroupID)
	}
	g := c.groups[id]
	switch {
	case g != nil && g.share == nil:
		return nil, nil, errNotShareGroup(id)
	case g == nil && !create:
		return nil, nil, fmt.Errorf("%w: share group %q not found", kafka.ErrGroupIDNotFound, id)
	case g != nil && len(g.share.members) > 0:
		return nil, nil, fmt.Errorf("%w: share group %q has %d members", kafka.ErrNonEmptyGroup, id, len(g.share.members))
	}
	if g != nil {
		return g, nil, nil
	}
	g = newGroup(id, c.PartitionFor(id), c.opts.Now())
	g.share = newShareGroup(id, c.shareConfig())
	var recs []shareRecord
	g.share.write(&recs, shareGroupMetadata{GroupID: id})
	return g, recs, nil
}

// AlterShareOffsets begins an AlterShareGroupOffsets, as Kafka's
// alterShareGroupOffsets does at the coordinator: the share group must
// be empty, and is created, empty, when there is none; the partitions of
// the request that exist are written as initializing (a
// ShareGroupStatePartitionMetadata record) and returned for the broker to
// initialize at their start offsets. The broker then calls
// ShareStateInitialized with those it initialized (and
// ShareStateInitializeFailed with the others). The error is the whole
// request's: kafka.ErrInvalidGroupID, ErrGroupIDNotFound (a group of
// another kind), ErrNonEmptyGroup, ErrCoordinatorNotAvailable (the write
// failed), ErrNotCoordinator (closed).
func (c *Coordinator) AlterShareOffsets(id string, topics []ShareOffsetsTopic) (*ShareOffsetsAlter, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	g, recs, err := c.shareGroupForOffsetsLocked(id, true)
	if err != nil {
		return nil, err
	}
	fresh := c.groups[id] == nil
	before := g.share.clone()
	ix := c.topicsLocked()
	recs = append(recs, g.share.setTopics(ix.byName)...)
	out := &ShareOffsetsAlter{StateEpoch: g.share.groupEpoch}
	var alter map[string][]int32
	for _, t := range topics {
		info, known := ix.byName[t.Topic]
		tr := ShareOffsetsTopicResult{Topic: t.Topic, TopicID: info.ID}
		for _, p := range t.Partitions {
			pr := ShareOffsetsPartitionResult{Partition: p.Partition, StartOffset: p.StartOffset}
			if !known || p.Partition < 0 || p.Partition >= info.Partitions {
				pr.Err = fmt.Errorf("%w: %s-%d", kafka.ErrUnknownTopicOrPartition, t.Topic, p.Partition)
			} else {
				alter = unionPartitions(alter, map[string][]int32{t.Topic: {p.Partition}})
			}
			tr.Partitions = append(tr.Partitions, pr)
		}
		out.Topics = append(out.Topics, tr)
	}
	if len(alter) > 0 {
		for t := range alter {
			g.share.stateTopicIDs[t] = ix.byName[t].ID
		}
		g.share.write(&recs, g.share.stateRecord(unionPartitions(g.share.initializing, alter), g.share.initialized))
	}
	if err := c.storeShareLocked(g, recs, ix); err != nil {
		g.share = before
		return nil, fmt.Errorf("%w: writing the group failed: %v", kafka.ErrCoordinatorNotAvailable, err)
	}
	if fresh {
		c.groups[id] = g
	}
	return out, nil
}

// ShareInitializedPartitions returns the partitions of group id whose
// share state is initialized, by topic (sorted by name, topics that no
// longer exist left out), as Kafka's initializedShareGroupPartitions
// does for a DescribeShareGroupOffsets of all topics: none for a group
// that does not exist or is not a share group.
func (c *Coordinator) ShareInitializedPartitions(id string) ([]ShareTopicPartitions, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, errClosed
	}
	g := c.groups[id]
	if g == nil || g.share == nil {
		return nil, nil
	}
	ix := c.topicsLocked()
	var out []ShareTopicPartitions
	for _, t := range slices.Sorted(maps.Keys(g.share.initialized)) {
		info, ok := ix.byName[t]
		if !ok || g.share.stateTopicIDs[t] != info.ID {
			continue
		}
		if ps := partitionsWhere(g.share.initialized, func(tt string, p int32) bool { return tt == t && p < info.Partitions })[t]; len(ps) > 0 {
			out = append(out, ShareTopicPartitions{TopicID: info.ID, TopicName: t, Partitions: ps})
		}
	}
	return out, nil
}

// BeginDeleteShareOffsets begins a DeleteShareGroupOffsets, as Kafka's
// initiateDeleteShareGroupOffsets does: the share group must exist and
// be empty; each topic named whose share state the group has initialized
// leaves the initialized partitions and is written as deleting (a
// ShareGroupStatePartitionMetadata record), and a topic already deleting
// is deleted again, all its partitions. The broker deletes the share
// state of what it returns, then calls CompleteDeleteShareOffsets with
// the topics it deleted. The error is the whole request's:
// kafka.ErrInvalidGroupID, ErrGroupIDNotFound, ErrNonEmptyGroup,
// ErrCoordinatorNotAvailable (the write failed).
func (c *Coordinator) BeginDeleteShareOffsets(id string, topics []string) (*ShareOffsetsDelete, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	g, _, err := c.shareGroupForOffsetsLocked(id, false)
	if err != nil {
		return nil, err
	}
	sg := g.share
	before := sg.clone()
	ix := c.topicsLocked()
	recs := sg.setTopics(ix.byName)
	out := &ShareOffsetsDelete{}
	initialized, deleting := clonePartitions(sg.initialized), slices.Clone(sg.deleting)
	for _, t := range topics {
		info, ok := ix.byName[t]
		switch {
		case !ok:
			out.Errors = append(out.Errors, ShareOffsetsTopicError{Topic: t,
				Err: fmt.Errorf("%w: no topic %q", kafka.ErrUnknownTopicOrPartition, t)})
		case len(initialized[t]) > 0 && sg.stateTopicIDs[t] == info.ID:
			out.Delete = append(out.Delete, ShareTopicPartitions{TopicID: info.ID, TopicName: t, Partitions: slices.Clone(initialized[t])})
			delete(initialized, t)
			if !slices.Contains(deleting, t) {
				deleting = append(deleting, t)
			}
		case slices.Contains(deleting, t):
			all := make([]int32, info.Partitions)
			for p := range all {
				all[p] = int32(p)
			}
			out.Delete = append(out.Delete, ShareTopicPartitions{TopicID: info.ID, TopicName: t, Partitions: all})
		default:
			out.Errors = append(out.Errors, ShareOffsetsTopicError{Topic: t, TopicID: info.ID,
				Err: fmt.Errorf("%w: there is no offset information to delete", kafka.ErrUnknownTopicOrPartition)})
		}
	}
	if len(out.Delete) > 0 {
		slices.Sort(deleting)
		sg.write(&recs, shareGroupStatePartitionMetadata{GroupID: id, InitializingTopics: clonePartitions(sg.initializing),
			InitializedTopics: initialized, DeletingTopics: deleting})
	}
	if err := c.storeShareLocked(g, recs, ix); err != nil {
		g.share = before
		return nil, fmt.Errorf("%w: writing the group failed: %v", kafka.ErrCoordinatorNotAvailable, err)
	}
	return out, nil
}

// CompleteDeleteShareOffsets ends a DeleteShareGroupOffsets, as Kafka's
// completeDeleteShareGroupOffsets does: the topics whose share state was
// deleted leave the deleting topics of group id.
func (c *Coordinator) CompleteDeleteShareOffsets(id string, topics []string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return errClosed
	}
	g := c.groups[id]
	if g == nil || g.share == nil {
		return errNotShareGroup(id)
	}
	sg := g.share
	left := slices.DeleteFunc(slices.Clone(sg.deleting), func(t string) bool { return slices.Contains(topics, t) })
	if len(left) == len(sg.deleting) {
		return nil
	}
	before := sg.clone()
	ix := c.topicsLocked()
	recs := sg.setTopics(ix.byName)
	sg.write(&recs, shareGroupStatePartitionMetadata{GroupID: id, InitializingTopics: clonePartitions(sg.initializing),
		InitializedTopics: clonePartitions(sg.initialized), DeletingTopics: left})
	if err := c.storeShareLocked(g, recs, ix); err != nil {
		g.share = before
		return fmt.Errorf("%w: writing the group failed: %v", kafka.ErrCoordinatorNotAvailable, err)
	}
	return nil
}
