package replica

import (
	"fmt"
	"slices"
)

// Ready is what a Replica needs done: truncate and append to its log (and
// sync), send messages, publish a new high watermark, propose an ISR change,
// and answer producers. The driver does it in the order of the fields, then
// calls Advance. See the package documentation for the duties.
type Ready struct {
	// Truncate, when not nil, is a truncation to do before Append.
	Truncate *Truncation
	// Append holds batches, with offsets and leader epochs assigned, to
	// add to the log in order with AppendAsFollower. They are the bytes
	// the replica was given — a proposer's batch (Propose), a fetched
	// message's records (Step) — not copies: valid until Advance, and
	// the driver keeps no reference to them after it.
	Append [][]byte
	// MustSync says Truncate and Append must be durable before Advance:
	// the replica reports the log end offset after Advance to its leader
	// (or counts it toward the high watermark as leader), and what it
	// reports must survive a crash, or an acknowledged write could be lost.
	MustSync bool
	// Messages are to be sent after the log writes above; the transport
	// may lose, delay, duplicate or reorder them.
	Messages []Message
	// HighWatermark is the new high watermark, or -1 when it did not
	// move. Readers may now read below it; the driver checkpoints it
	// (replication-offset-checkpoint) when it likes.
	HighWatermark int64
	// AlterPartition, when not nil, is an ISR change this leader asks the
	// controller for (Kafka's AlterPartition). The controller answers by
	// calling Apply with the partition's new state, or the driver calls
	// RejectISRChange with the change when it is refused; a change left
	// unanswered for FetchTimeout is asked for again, so the controller
	// must ignore one whose PartitionEpoch is no longer current.
	AlterPartition *ISRChange
	// Completed are the appends whose fate is now known: acks=1 ones once
	// written to the log, acks=all ones once the high watermark passed
	// them or the replica stopped leading.
	Completed []Completion
	// LogStartOffset, when not -1, is the leader's log start offset, which
	// passed this follower's: the driver raises its log's start to it
	// after the appends (Kafka's follower does the same on each fetch, so
	// that records deleted with DeleteRecords stay deleted on every
	// replica and after a failover).
	LogStartOffset int64
}

// Truncation removes the end of the log, or with Fully every record, the
// log then starting empty at Offset.
type Truncation struct {
	// Offset is where the log ends after the truncation (or, with Fully,
	// where it starts).
	Offset int64
	// Fully says remove every record, not only those at and above Offset.
	Fully bool
}

// ISRChange is a leader's request to a controller to set the ISR, valid
// only in LeaderEpoch and PartitionEpoch (the controller refuses it when
// the partition moved on; see Replica.RejectISRChange).
type ISRChange struct {
	// LeaderEpoch and PartitionEpoch are the partition's epochs the
	// change is made in.
	LeaderEpoch    int32
	PartitionEpoch int32
	// ISR is the proposed in-sync replica set.
	ISR []int32
	// BrokerEpochs holds, for each member of ISR, the broker epoch of the
	// fetches by which the leader judged it in sync (its own for the
	// leader; -1 when unknown). A controller refuses the change when a
	// member joining the ISR has since restarted with another broker epoch
	// (KIP-903): its log may no longer hold what the leader saw.
	BrokerEpochs []int64
}

// clone returns a copy of c that shares no slices with it.
func (c *ISRChange) clone() *ISRChange {
	d := *c
	d.ISR = slices.Clone(c.ISR)
	d.BrokerEpochs = slices.Clone(c.BrokerEpochs)
	return &d
}

// Completion says what became of an append Propose accepted.
type Completion struct {
	// ID is the Proposal's ID.
	ID uint64
	// BaseOffset and LastOffset are the offsets of its first and last
	// records.
	BaseOffset, LastOffset int64
	// Err is nil when the append is acknowledged; otherwise it matches
	// kafka.ErrNotLeaderOrFollower (leadership moved before it was
	// committed) and the producer should retry with the new leader.
	Err error
}

// IsEmpty reports whether rd asks for nothing.
func (rd Ready) IsEmpty() bool {
	return rd.Truncate == nil && len(rd.Append) == 0 && len(rd.Messages) == 0 &&
		rd.HighWatermark < 0 && rd.AlterPartition == nil && len(rd.Completed) == 0 && rd.LogStartOffset < 0
}

// Persist does rd's log writes on w: the truncation, the appends, and, when
// MustSync, a flush. It is the driver's first duty; a driver with its own
// write path may do the same itself.
func (rd Ready) Persist(w LogWriter) error {
	if t := rd.Truncate; t != nil {
		var err error
		if t.Fully {
			err = w.TruncateFullyAndStartAt(t.Offset)
		} else {
			err = w.TruncateTo(t.Offset)
		}
		if err != nil {
			return fmt.Errorf("replica: truncate to %d: %w", t.Offset, err)
		}
	}
	for _, b := range rd.Append {
		if _, err := w.AppendAsFollower(b); err != nil {
			return fmt.Errorf("replica: append: %w", err)
		}
	}
	if rd.MustSync {
		if err := w.Flush(); err != nil {
			return fmt.Errorf("replica: sync: %w", err)
		}
	}
	if rd.LogStartOffset >= 0 {
		if err := w.DeleteRecordsBefore(rd.LogStartOffset); err != nil {
			return fmt.Errorf("replica: raise the log start offset to %d: %w", rd.LogStartOffset, err)
		}
	}
	return nil
}
