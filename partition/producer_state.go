package partition

import (
	"fmt"
	"maps"
	"math"
	"slices"

	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/record"
)

// BatchesPerProducer is how many of a producer's last batches the leader
// remembers: a retry of any of them is answered as a duplicate. Kafka keeps
// five, which is why an idempotent producer may have at most five batches
// in flight per partition.
const BatchesPerProducer = 5

// BatchMetadata is what the leader remembers of one batch of an idempotent
// producer.
type BatchMetadata struct {
	// FirstSequence and LastSequence are the sequence numbers of the
	// batch's first and last records (LastSequence wraps past
	// math.MaxInt32 to 0).
	FirstSequence int32
	LastSequence  int32
	// FirstOffset and LastOffset are the offsets the batch got.
	FirstOffset int64
	LastOffset  int64
	// Timestamp is the batch's max timestamp (ms).
	Timestamp int64
}

// ProducerStateEntry is the leader's state for one producer id: its epoch
// and its last batches. It is rebuilt from the log's batch headers, which
// carry all of it.
type ProducerStateEntry struct {
	// ProducerID is the producer's id.
	ProducerID int64
	// ProducerEpoch is the producer's current epoch.
	ProducerEpoch int16
	// Batches are the producer's last batches in this epoch, oldest
	// first, at most BatchesPerProducer.
	Batches []BatchMetadata
	// LastTimestamp is the max timestamp of the producer's last batch
	// (ms); producer.id.expiration.ms counts from it.
	LastTimestamp int64
}

// lastSequence returns the sequence of the producer's last record in its
// epoch, or -1 (none yet).
func (e *ProducerStateEntry) lastSequence() int32 {
	if len(e.Batches) == 0 {
		return -1
	}
	return e.Batches[len(e.Batches)-1].LastSequence
}

// LastSequence returns the sequence of the producer's last record in its
// epoch, or -1 (none yet).
func (e *ProducerStateEntry) LastSequence() int32 { return e.lastSequence() }

// clone returns a deep copy.
func (e *ProducerStateEntry) clone() ProducerStateEntry {
	c := *e
	c.Batches = slices.Clone(e.Batches)
	return c
}

// producerState is the idempotence state of a partition: the entries of the
// producers it knows, and the offset below which it has seen every batch.
// It does no I/O and takes no lock.
type producerState struct {
	producers map[int64]*ProducerStateEntry
	// nextOffset is the offset after the last batch applied: the state
	// reflects exactly the log below it.
	nextOffset int64
}

func newProducerState(nextOffset int64) *producerState {
	return &producerState{producers: map[int64]*ProducerStateEntry{}, nextOffset: nextOffset}
}

// hasProducer reports whether a batch header belongs to an idempotent or
// transactional producer's data batch, which the state tracks.
func hasProducer(h *record.Header) bool {
	return h.ProducerID >= 0 && !h.Attributes.IsControl()
}

// incrementSequence returns seq advanced by n, wrapping past
// math.MaxInt32 to 0 as Kafka's sequences do.
func incrementSequence(seq, n int32) int32 {
	if seq > math.MaxInt32-n {
		return n - (math.MaxInt32 - seq) - 1
	}
	return seq + n
}

// lastSequenceOf returns the sequence of a batch's last record.
func lastSequenceOf(h *record.Header) int32 {
	return incrementSequence(h.BaseSequence, h.LastOffsetDelta)
}

// inSequence reports whether next follows last.
func inSequence(last, next int32) bool {
	return int64(next) == int64(last)+1 || next == 0 && last == math.MaxInt32
}

// duplicateError refuses a batch the log already holds: the answer is the
// original batch's offsets, as Kafka answers a duplicate.
type duplicateError struct{ batch BatchMetadata }

func (e *duplicateError) Error() string {
	return fmt.Sprintf("partition: duplicate of the batch at offsets %d-%d", e.batch.FirstOffset, e.batch.LastOffset)
}

// check validates an idempotent producer's batch against the state, as
// Kafka's leader does: a retry of one of the producer's last batches in
// the same epoch is a *duplicateError; an older epoch is
// kafka.ErrInvalidProducerEpoch; a newer epoch must start at sequence
// 0; in the same epoch the batch must follow the last one's sequence, or
// it is kafka.ErrOutOfOrderSequence. A producer the partition does
// not know — new, or forgotten after producer.id.expiration.ms — must
// start at sequence 0, or it is kafka.ErrUnknownProducerID, as in
// Kafka before 2.5: the producer then starts its sequence over. (Kafka
// 2.5+ accepts any sequence there, which relies on requests arriving in
// order on one connection; a Client here promises no order between
// concurrent calls, and a batch that overtook the producer's first one
// would be accepted out of order.)
func (s *producerState) check(h *record.Header) error {
	e := s.producers[h.ProducerID]
	if e == nil {
		if h.BaseSequence != 0 {
			return fmt.Errorf("%w: producer %d is unknown here (new, or expired) and starts at sequence %d, not 0",
				kafka.ErrUnknownProducerID, h.ProducerID, h.BaseSequence)
		}
		return nil
	}
	first, last := h.BaseSequence, lastSequenceOf(h)
	if h.ProducerEpoch == e.ProducerEpoch {
		for _, b := range e.Batches {
			if b.FirstSequence == first && b.LastSequence == last {
				return &duplicateError{b}
			}
		}
	}
	switch {
	case h.ProducerEpoch < e.ProducerEpoch:
		return fmt.Errorf("%w: producer %d epoch %d is older than the partition's %d",
			kafka.ErrInvalidProducerEpoch, h.ProducerID, h.ProducerEpoch, e.ProducerEpoch)
	case h.ProducerEpoch > e.ProducerEpoch:
		if first != 0 {
			return fmt.Errorf("%w: producer %d: new epoch %d must start at sequence 0, not %d",
				kafka.ErrOutOfOrderSequence, h.ProducerID, h.ProducerEpoch, first)
		}
	case len(e.Batches) > 0 && !inSequence(e.lastSequence(), first):
		return fmt.Errorf("%w: producer %d epoch %d: sequence %d does not follow %d",
			kafka.ErrOutOfOrderSequence, h.ProducerID, h.ProducerEpoch, first, e.lastSequence())
	}
	return nil
}

// apply records a batch that went into the log at baseOffset, without
// checking it: the leader after check, recovery for each batch it scans.
func (s *producerState) apply(h *record.Header, baseOffset int64) {
	next := baseOffset + int64(h.LastOffsetDelta) + 1
	if next <= s.nextOffset {
		return // applied already: a leader records its batches when it checks them
	}
	s.nextOffset = next
	if !hasProducer(h) {
		return
	}
	e := s.producers[h.ProducerID]
	if e == nil {
		e = &ProducerStateEntry{ProducerID: h.ProducerID, ProducerEpoch: h.ProducerEpoch}
		s.producers[h.ProducerID] = e
	}
	if h.ProducerEpoch != e.ProducerEpoch {
		e.ProducerEpoch = h.ProducerEpoch
		e.Batches = e.Batches[:0]
	}
	if len(e.Batches) == BatchesPerProducer {
		copy(e.Batches, e.Batches[1:])
		e.Batches = e.Batches[:BatchesPerProducer-1]
	}
	e.Batches = append(e.Batches, BatchMetadata{
		FirstSequence: h.BaseSequence, LastSequence: lastSequenceOf(h),
		FirstOffset: baseOffset, LastOffset: next - 1, Timestamp: h.MaxTimestamp,
	})
	e.LastTimestamp = h.MaxTimestamp
}

// removeExpired forgets the producers whose last batch is expiration or
// more older than nowMs, as Kafka's producer.id.expiration.ms does, and
// returns how many it forgot.
func (s *producerState) removeExpired(nowMs, expirationMs int64) int {
	n := 0
	for id, e := range s.producers {
		if nowMs-e.LastTimestamp >= expirationMs {
			delete(s.producers, id)
			n++
		}
	}
	return n
}

// entries returns copies of the entries, by producer id.
func (s *producerState) entries() []ProducerStateEntry {
	ids := slices.Sorted(maps.Keys(s.producers))
	out := make([]ProducerStateEntry, len(ids))
	for i, id := range ids {
		out[i] = s.producers[id].clone()
	}
	return out
}
