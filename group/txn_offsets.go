package group

import (
	"fmt"
	"maps"
	"slices"

	"github.com/partlog/partlog/kafka"
)

// Offsets committed inside a transaction (TxnOffsetCommit, KIP-98 and
// KIP-447) are written to the group's partition of __consumer_offsets in
// the producer's transaction — a transactional batch of its producer id
// and epoch — and stay pending until the transaction's marker reaches
// that partition: a COMMIT marker makes them the group's committed
// offsets, an ABORT drops them. Load replays the same: offsets of a
// transactional batch are pending until the marker after them.

// Marker says whether a Record is a transaction marker, and which.
type Marker uint8

const (
	// NoMarker: the record is a key and value.
	NoMarker Marker = iota
	// CommitMarker ends the record's producer's transaction committed.
	CommitMarker
	// AbortMarker ends it aborted.
	AbortMarker
)

// TxnOffset is one offset a transaction commits.
type TxnOffset struct {
	// TopicPartition is the partition the offset is of.
	TopicPartition kafka.TopicPartition
	// Offset is the next offset to consume.
	Offset int64
	// LeaderEpoch is the leader epoch of the last record consumed, or -1.
	LeaderEpoch int32
	// Metadata is the client's string.
	Metadata string
}

// TxnCommit is a TxnOffsetCommit: offsets a producer commits for a group
// inside its transaction.
type TxnCommit struct {
	// Group is the group the offsets are committed for.
	Group string
	// ProducerID and ProducerEpoch are the transaction's producer.
	ProducerID int64
	// ProducerEpoch is the producer's epoch.
	ProducerEpoch int16
	// GenerationID, MemberID and GroupInstanceID are the consumer's place
	// in the group (KIP-447), which fences a zombie member's commit; a
	// producer outside group membership sends transport.NoGeneration and
	// no member id.
	GenerationID int32
	// MemberID is the consumer's member id, or "".
	MemberID string
	// GroupInstanceID is the consumer's static instance id, or "".
	GroupInstanceID string
	// Offsets are the offsets to commit.
	Offsets []TxnOffset
}

// pendingTxn is one producer's offsets waiting for its transaction's
// marker: by group, then partition.
type pendingTxn map[string]map[kafka.TopicPartition]OffsetValue

// TxnCommit writes the offsets of a transaction to the group's partition,
// as a transactional batch of the producer's, and keeps them pending
// until CompleteTxn. It returns nil, or one error for the whole request
// (a fenced generation or member, as Commit checks them; a write
// failure). It checks generations as Kafka's handleTxnCommitOffsets does:
// a member commits in its generation, a producer outside the group with
// no generation.
func (c *Coordinator) TxnCommit(req TxnCommit) error {
	c.mu.Lock()
	err := c.checkTxnCommitLocked(req)
	if err != nil {
		c.mu.Unlock()
		return err
	}
	now := c.opts.Now()
	partition := c.PartitionFor(req.Group)
	recs := make([]Record, 0, len(req.Offsets))
	values := make([]OffsetValue, 0, len(req.Offsets))
	for _, o := range req.Offsets {
		if len(o.Metadata) > c.opts.MaxMetadataBytes {
			c.mu.Unlock()
			return fmt.Errorf("%w: %d bytes, the most is %d", kafka.ErrOffsetMetadataTooLarge, len(o.Metadata), c.opts.MaxMetadataBytes)
		}
		v := OffsetValue{Offset: o.Offset, LeaderEpoch: o.LeaderEpoch, Metadata: o.Metadata, CommitTimestamp: now.UnixMilli(), ExpireTimestamp: -1}
		recs = append(recs, Record{Key: OffsetKey(req.Group, o.TopicPartition.Topic, o.TopicPartition.Partition).Encode(), Value: v.Encode(),
			Transactional: true, ProducerID: req.ProducerID})
		values = append(values, v)
	}
	c.mu.Unlock()
	if err := c.log.AppendTransactional(partition, req.ProducerID, req.ProducerEpoch, recs); err != nil {
		return fmt.Errorf("%w: writing transactional offsets failed: %v", kafka.ErrCoordinatorNotAvailable, err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, o := range req.Offsets {
		c.addPendingLocked(partition, req.ProducerID, req.Group, o.TopicPartition, values[i])
	}
	return nil
}

// checkTxnCommitLocked says whether a transactional commit may go ahead.
func (c *Coordinator) checkTxnCommitLocked(req TxnCommit) error {
	if c.closed {
		return errClosed
	}
	if req.Group == "" {
		return fmt.Errorf("%w: empty group id", kafka.ErrInvalidGroupID)
	}
	g := c.groups[req.Group]
	if req.GenerationID < 0 && req.MemberID == "" {
		return nil // a producer outside group membership (before KIP-447)
	}
	switch {
	case g == nil:
		return fmt.Errorf("%w: group %q has no generation %d", kafka.ErrIllegalGeneration, req.Group, req.GenerationID)
	case g.consumer != nil:
		// A consumer-protocol member commits in its member epoch (KIP-848
		// with KIP-447), as its plain commits do.
		return g.checkConsumerCommit(req.MemberID, req.GenerationID)
	case g.share != nil:
		return fmt.Errorf("%w: %q is a share group", kafka.ErrGroupIDNotFound, g.id)
	}
	return g.checkMember(req.MemberID, req.GroupInstanceID, req.GenerationID)
}

// addPendingLocked keeps an offset of producerID's open transaction.
func (c *Coordinator) addPendingLocked(partition int32, producerID int64, group string, tp kafka.TopicPartition, v OffsetValue) {
	byPID := c.pending[partition]
	if byPID == nil {
		byPID = map[int64]pendingTxn{}
		c.pending[partition] = byPID
	}
	txn := byPID[producerID]
	if txn == nil {
		txn = pendingTxn{}
		byPID[producerID] = txn
	}
	if txn[group] == nil {
		txn[group] = map[kafka.TopicPartition]OffsetValue{}
	}
	txn[group][tp] = v
}

// CompleteTxn ends producerID's transaction in partition of
// __consumer_offsets, once its marker is written there: with commit, its
// pending offsets become the groups' committed offsets; without, they
// are dropped.
func (c *Coordinator) CompleteTxn(partition int32, producerID int64, commit bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.completeTxnLocked(partition, producerID, commit)
}

func (c *Coordinator) completeTxnLocked(partition int32, producerID int64, commit bool) {
	txn := c.pending[partition][producerID]
	delete(c.pending[partition], producerID)
	if !commit {
		return
	}
	now := c.opts.Now()
	for _, id := range slices.Sorted(maps.Keys(txn)) {
		g := c.groups[id]
		if g == nil {
			g = newGroup(id, partition, now)
			c.groups[id] = g
		}
		maps.Copy(g.offsets, txn[id])
	}
}

// Unstable reports whether an open transaction has offsets pending for
// the group's partition tp: OffsetFetch with require_stable answers
// kafka.ErrUnstableOffsetCommit for it until the transaction ends.
func (c *Coordinator) Unstable(group string, tp kafka.TopicPartition) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.unstableLocked(group, tp)
}

func (c *Coordinator) unstableLocked(group string, tp kafka.TopicPartition) bool {
	for _, txn := range c.pending[c.PartitionFor(group)] {
		if _, ok := txn[group][tp]; ok {
			return true
		}
	}
	return false
}
