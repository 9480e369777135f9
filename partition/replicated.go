package partition

import (
	"errors"
	"fmt"

	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/log"
	"github.com/partlog/partlog/record"
)

// A replicated partition is driven by package replica: its leader's
// appends go through replica.Replica.Propose, which calls CheckAppend
// before giving a batch its offsets, and every replica writes its log with
// AppendAsFollower and TruncateTo; the replica, not the log, decides the
// high watermark, which the driver passes on with SetHighWatermark. The
// methods in this file are that driver's.

// CheckAppend vets a batch a replicated leader is about to append at
// baseOffset, as Append does before its write: its size against
// max.message.bytes (kafka.ErrMessageTooLarge), keys in a compacted topic,
// the LogAppendTime stamp (in place), and the producer state — the
// idempotent producer's sequence, the transaction it opens (asking the
// TxnVerifier), or, for a control batch, the COMMIT or ABORT marker's
// producer and coordinator epochs — which it records. (The replica stamps
// the leader epoch.) A transaction coordinator's marker is proposed as
// record.ControlBatch(typ, producerID, producerEpoch, coordinatorEpoch,
// nowMs) and passes here as a client's batch would: refusing control
// batches from clients, as Kafka does, is the request handler's job. The
// batch is one whole batch whose CRC the caller checked
// (replica.Replica.Propose does), so the CRC is not checked again. A retry
// of one of a producer's last batches fails with a *DuplicateError naming
// the original's offsets. It must be called in the order the batches go
// into the log, by the one driver of the partition; the ABORT marker's
// .txnindex entry is written when the batch is (AppendAsFollower).
func (p *Partition) CheckAppend(batch []byte, baseOffset int64) error {
	if max := p.log.MaxMessageBytes(); len(batch) > max {
		// Refused here, not by the log write after the replica took it,
		// which would stop the replica.
		return fmt.Errorf("%w: %w: %d bytes, max.message.bytes is %d", kafka.ErrMessageTooLarge, log.ErrRecordTooLarge, len(batch), max)
	}
	var h record.Header
	var err error
	o := p.options() // one set of settings for the whole check
	if o.Compacted {
		h, err = p.checkKeys(batch, record.SkipCRC)
	} else if h, err = record.ParseHeader(batch); err != nil {
		err = kafkaError(err)
	}
	if err != nil {
		return err
	}
	if o.LogAppendTime {
		h.MaxTimestamp = o.Now().UnixMilli() // one clock reading for the batch and the state
		record.SetMaxTimestamp(batch, record.LogAppendTime, h.MaxTimestamp)
	}
	h.BaseOffset = baseOffset
	marker, err := markerOf(&h, batch)
	if err != nil {
		return kafkaError(err)
	}
	err = p.producers.checkAndApply(&h, marker, baseOffset)
	var dup *duplicateError
	if errors.As(err, &dup) {
		return &DuplicateError{Batch: dup.batch}
	}
	return err
}

// DuplicateError refuses a batch that retries one of its idempotent
// producer's last batches, already in the log: Batch is the original,
// whose offsets answer the retry once the high watermark passes them.
type DuplicateError struct {
	// Batch is the original batch the retry duplicates.
	Batch BatchMetadata
}

func (e *DuplicateError) Error() string {
	return fmt.Sprintf("partition: duplicate of the batch at offsets %d-%d", e.Batch.FirstOffset, e.Batch.LastOffset)
}

// SetHighWatermark sets the high watermark a replicated partition's
// replica decided — lower too, after a follower truncates — and wakes the
// readers waiting for it to move.
func (p *Partition) SetHighWatermark(hw int64) {
	p.mu.Lock()
	if hw == p.hw {
		p.mu.Unlock()
		return
	}
	p.hw = hw
	p.notifyLocked()
	p.mu.Unlock()
	p.producers.highWatermark(hw)
}

// SetLeadership records the leader epoch and ISR the controller gave the
// partition, for LeaderEpoch and ISR to report.
func (p *Partition) SetLeadership(leaderEpoch int32, isr []int32) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.leaderEpoch = leaderEpoch
	p.isr = append([]int32(nil), isr...)
}

// TruncateFullyAndStartAt empties the log to restart it at offset (see
// log.Log.TruncateFullyAndStartAt), as a follower whose leader no longer
// holds its offsets does, and forgets the producer state with it.
func (p *Partition) TruncateFullyAndStartAt(offset int64) error {
	if err := p.log.TruncateFullyAndStartAt(offset); err != nil {
		return kafkaError(err)
	}
	if err := p.producers.truncated(offset); err != nil {
		return fmt.Errorf("%w: %w", kafka.ErrKafkaStorage, err)
	}
	return nil
}

// ResetProducerState forgets the producer state, to rebuild it from the
// snapshots and the log before the next check: a replica does so when its
// leadership changes, as batches it checked as leader may never have been
// written.
func (p *Partition) ResetProducerState() {
	m := p.producers
	m.snapMu.Lock()
	defer m.snapMu.Unlock()
	m.mu.Lock()
	m.state = nil
	m.mu.Unlock()
}

// ReplicaLog is a partition as package replica's driver writes it: its
// log, with appends, truncations and flushes that keep the producer
// state in step. It satisfies replica.LogWriter.
type ReplicaLog struct {
	*log.Log
	p *Partition
	// sync says Flush syncs: with false, a replica's acknowledgement
	// means "in the page cache", as with Kafka's default flush settings.
	sync bool
}

// ReplicaLog returns the partition's log for a replica driver; with
// syncOnFlush, the driver's flushes (Ready.MustSync) reach the disk.
func (p *Partition) ReplicaLog(syncOnFlush bool) *ReplicaLog {
	return &ReplicaLog{Log: p.log, p: p, sync: syncOnFlush}
}

// AppendAsFollower appends batches with their offsets, updating the
// producer state (see Partition.AppendAsFollower).
func (l *ReplicaLog) AppendAsFollower(batches []byte) (log.AppendInfo, error) {
	return l.p.AppendAsFollower(batches)
}

// TruncateTo cuts the log and the producer state at offset.
func (l *ReplicaLog) TruncateTo(offset int64) error { return l.p.TruncateTo(offset) }

// DeleteRecordsBefore raises the log start offset, as the leader's did:
// see log.Log.DeleteRecordsBefore.
func (l *ReplicaLog) DeleteRecordsBefore(offset int64) error {
	return l.p.log.DeleteRecordsBefore(offset)
}

// TruncateFullyAndStartAt empties the log and the producer state.
func (l *ReplicaLog) TruncateFullyAndStartAt(offset int64) error {
	return l.p.TruncateFullyAndStartAt(offset)
}

// Flush syncs the log when the ReplicaLog was made to, and otherwise
// leaves the writes to the page cache.
func (l *ReplicaLog) Flush() error {
	if !l.sync {
		return nil
	}
	return l.Log.Flush()
}
