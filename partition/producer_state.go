package partition

import (
	"fmt"
	"maps"
	"math"
	"slices"

	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/record"
	"github.com/partlog/partlog/segment"
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

// ProducerStateEntry is the leader's state for one producer id: its epoch,
// its last batches, and its transaction. It is rebuilt from the log's
// batches, which carry all of it (a marker's coordinator epoch is in its
// record).
type ProducerStateEntry struct {
	// ProducerID is the producer's id.
	ProducerID int64
	// ProducerEpoch is the producer's current epoch.
	ProducerEpoch int16
	// Batches are the producer's last batches in this epoch, oldest
	// first, at most BatchesPerProducer.
	Batches []BatchMetadata
	// LastTimestamp is the max timestamp of the producer's last batch or
	// marker (ms); producer.id.expiration.ms counts from it.
	LastTimestamp int64
	// CoordinatorEpoch is the epoch of the transaction coordinator that
	// wrote the producer's last COMMIT or ABORT marker, -1 before any: a
	// marker from an older coordinator is fenced.
	CoordinatorEpoch int32
	// CurrentTxnFirstOffset is the offset of the first record of the
	// producer's open transaction, -1 when none is open.
	CurrentTxnFirstOffset int64
}

// newEntry returns the state of a producer the partition has not seen.
func newEntry(id int64, epoch int16) *ProducerStateEntry {
	return &ProducerStateEntry{ProducerID: id, ProducerEpoch: epoch, CoordinatorEpoch: -1, CurrentTxnFirstOffset: -1}
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

// clone returns a deep copy; no batches are nil, as a snapshot reads them.
func (e *ProducerStateEntry) clone() ProducerStateEntry {
	c := *e
	c.Batches = nil
	if len(e.Batches) > 0 {
		c.Batches = slices.Clone(e.Batches)
	}
	return c
}

// producerState is the idempotence and transaction state of a partition:
// the entries of the producers it knows, the offset below which it has
// seen every batch, and the transactions that make offsets unstable. It
// does no I/O and takes no lock.
type producerState struct {
	producers map[int64]*ProducerStateEntry
	// nextOffset is the offset after the last batch applied: the state
	// reflects exactly the log below it.
	nextOffset int64
	// ongoing maps each producer with an open transaction to its first
	// offset: the entries' CurrentTxnFirstOffset, indexed.
	ongoing map[int64]int64
	// unreplicated are transactions whose marker was applied but may not
	// be below the high watermark yet, in marker order: their offsets stay
	// unstable until it passes the marker (Kafka's unreplicatedTxns).
	unreplicated []completedTxn
	// pending holds the aborted transactions of ABORT markers a leader
	// checked whose write has not yet indexed them, by marker offset
	// (see producers.AbortedTxn).
	pending map[int64]segment.AbortedTxn
	// guards are the verification guards handed out for producers not
	// yet in a transaction here (see Partition.StartVerification); a
	// marker of the producer withdraws its guard. They live in memory
	// only: a state loaded anew has none, and verification starts over.
	guards map[int64]VerificationGuard
}

// completedTxn is a transaction whose marker was applied.
type completedTxn struct {
	producerID              int64
	firstOffset, lastOffset int64 // lastOffset is the marker's
}

func newProducerState(nextOffset int64) *producerState {
	return &producerState{producers: map[int64]*ProducerStateEntry{}, nextOffset: nextOffset,
		ongoing: map[int64]int64{}, pending: map[int64]segment.AbortedTxn{}, guards: map[int64]VerificationGuard{}}
}

// add installs e, a loaded entry, with its open transaction.
func (s *producerState) add(e ProducerStateEntry) {
	s.producers[e.ProducerID] = &e
	if e.CurrentTxnFirstOffset >= 0 {
		s.ongoing[e.ProducerID] = e.CurrentTxnFirstOffset
	}
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

// check validates a batch against the state before a leader appends it:
// a data batch as checkData does, a transaction marker as checkMarker.
// Batches of no producer, and control batches that are not markers, pass.
// marker is the marker of a control batch, nil when it holds none.
func (s *producerState) check(h *record.Header, marker *record.ControlRecord, v *verification) error {
	switch {
	case h.ProducerID < 0:
		return nil
	case h.Attributes.IsControl():
		if marker == nil {
			return nil
		}
		return s.checkMarker(h, marker)
	}
	if v != nil {
		v.guard = s.guards[h.ProducerID]
	}
	return s.checkData(h, v)
}

// checkData validates an idempotent or transactional producer's batch, as
// Kafka's leader does: a retry of one of the producer's last batches in
// the same epoch is a *duplicateError; an older epoch is
// kafka.ErrInvalidProducerEpoch; a newer epoch must start at sequence 0; in
// the same epoch the batch must follow the last one's sequence (or start at
// 0 when a marker began the epoch), or it is kafka.ErrOutOfOrderSequence.
// A producer the partition does not know — new, or forgotten after
// producer.id.expiration.ms — must start at sequence 0, or it is
// kafka.ErrUnknownProducerID, as in Kafka before 2.5: the producer then
// starts its sequence over. (Kafka 2.5+ accepts any sequence there, which
// relies on requests arriving in order on one connection; a Client here
// promises no order between concurrent calls, and a batch that overtook the
// producer's first one would be accepted out of order.)
//
// Then the transaction: a batch outside a transaction while the producer
// has one open is kafka.ErrInvalidTxnState; a transactional batch that
// would open one, or that comes at a newer epoch than the open one's,
// asks v, when there is one (KIP-890 part 1).
func (s *producerState) checkData(h *record.Header, v *verification) error {
	e := s.producers[h.ProducerID]
	if coordinatorWrite(h) {
		// A coordinator's write in the producer's transaction (Kafka's
		// AppendOrigin.COORDINATOR): no sequence to check, only the epoch.
		if e != nil && h.ProducerEpoch < e.ProducerEpoch {
			return fmt.Errorf("%w: producer %d epoch %d is older than the partition's %d",
				kafka.ErrInvalidProducerEpoch, h.ProducerID, h.ProducerEpoch, e.ProducerEpoch)
		}
		return nil
	}
	if e == nil {
		if h.BaseSequence != 0 {
			return fmt.Errorf("%w: producer %d is unknown here (new, or expired) and starts at sequence %d, not 0",
				kafka.ErrUnknownProducerID, h.ProducerID, h.BaseSequence)
		}
		return v.verify(h)
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
	case len(e.Batches) == 0 && first != 0:
		// A marker started the epoch (transaction version 2): as after
		// a bump, the producer's sequence starts over.
		return fmt.Errorf("%w: producer %d epoch %d begins at sequence 0, not %d",
			kafka.ErrOutOfOrderSequence, h.ProducerID, h.ProducerEpoch, first)
	}
	switch open := e.CurrentTxnFirstOffset >= 0; {
	case open && !h.Attributes.IsTransactional():
		return fmt.Errorf("%w: producer %d wrote outside a transaction while its transaction from offset %d is open",
			kafka.ErrInvalidTxnState, h.ProducerID, e.CurrentTxnFirstOffset)
	case !open, h.ProducerEpoch != e.ProducerEpoch:
		// A transaction of an older epoch still open here means its
		// marker has not come yet: the coordinator is ending it, and this
		// batch belongs to the next one. Taken unasked, it would join the
		// old transaction and go with its marker (an ABORT would discard
		// an acknowledged write); asked, the coordinator answers that it
		// is busy until the marker is written. Kafka's leader compares
		// the epochs the same way (hasOngoingTransaction).
		return v.verify(h)
	}
	return nil
}

// checkMarker validates a COMMIT or ABORT marker as Kafka's leader does: an
// epoch older than the producer's is kafka.ErrInvalidProducerEpoch (a
// newer one, as transaction version 2 writes, is taken and becomes the
// producer's), and a coordinator epoch older than the last marker's is
// kafka.ErrTransactionCoordinatorFenced.
func (s *producerState) checkMarker(h *record.Header, marker *record.ControlRecord) error {
	e := s.producers[h.ProducerID]
	switch {
	case e == nil:
		return nil
	case h.ProducerEpoch < e.ProducerEpoch:
		return fmt.Errorf("%w: %s marker of producer %d at epoch %d, older than the partition's %d",
			kafka.ErrInvalidProducerEpoch, marker.Type, h.ProducerID, h.ProducerEpoch, e.ProducerEpoch)
	case marker.CoordinatorEpoch < e.CoordinatorEpoch:
		return fmt.Errorf("%w: %s marker of producer %d from coordinator epoch %d, older than the last marker's %d",
			kafka.ErrTransactionCoordinatorFenced, marker.Type, h.ProducerID, marker.CoordinatorEpoch, e.CoordinatorEpoch)
	}
	return nil
}

// verification is KIP-890 part 1's question, as a leader asks it of the
// batches that would open a transaction: nil asks nothing.
type verification struct {
	verifier TxnVerifier
	tp       kafka.TopicPartition
	// guard is the producer's guard while a check runs, set by check.
	guard VerificationGuard
}

// verify asks the verifier, if there is one, about a transactional batch
// that would open a transaction; other batches pass.
func (v *verification) verify(h *record.Header) error {
	if v == nil || v.verifier == nil || !h.Attributes.IsTransactional() {
		return nil
	}
	return v.verifier.VerifyTransaction(v.tp, h.ProducerID, h.ProducerEpoch, v.guard)
}

// apply records a batch that went into the log at baseOffset, without
// checking it: the leader after check, a follower and recovery for each
// batch they write or scan. marker is the marker of a control batch (nil
// when it holds none). When the batch is an ABORT marker closing a
// transaction it returns the transaction's .txnindex entry, whose last
// stable offset is the first offset of the oldest transaction still open,
// or the offset after the marker: Kafka's lastStableOffset(completedTxn).
func (s *producerState) apply(h *record.Header, marker *record.ControlRecord, baseOffset int64) (segment.AbortedTxn, bool) {
	next := baseOffset + int64(h.LastOffsetDelta) + 1
	if next <= s.nextOffset {
		return segment.AbortedTxn{}, false // applied already: a leader records its batches when it checks them
	}
	s.nextOffset = next
	switch {
	case h.ProducerID < 0:
		return segment.AbortedTxn{}, false
	case h.Attributes.IsControl():
		if marker == nil || marker.Type != record.ControlAbort && marker.Type != record.ControlCommit {
			return segment.AbortedTxn{}, false
		}
		return s.applyMarker(h, marker, baseOffset)
	}
	e := s.producers[h.ProducerID]
	if e == nil {
		e = newEntry(h.ProducerID, h.ProducerEpoch)
		s.producers[h.ProducerID] = e
	}
	if h.ProducerEpoch != e.ProducerEpoch {
		e.ProducerEpoch = h.ProducerEpoch
		e.Batches = e.Batches[:0]
	}
	if coordinatorWrite(h) {
		// No sequence to remember: the transaction is all it opens.
		e.LastTimestamp = h.MaxTimestamp
		if e.CurrentTxnFirstOffset < 0 {
			e.CurrentTxnFirstOffset = baseOffset
			s.ongoing[h.ProducerID] = baseOffset
		}
		return segment.AbortedTxn{}, false
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
	if h.Attributes.IsTransactional() && e.CurrentTxnFirstOffset < 0 {
		e.CurrentTxnFirstOffset = baseOffset
		s.ongoing[h.ProducerID] = baseOffset
	}
	return segment.AbortedTxn{}, false
}

// applyMarker records a COMMIT or ABORT marker at offset: it closes the
// producer's open transaction, if any, and its epoch and coordinator epoch
// become the producer's (Kafka's appendEndTxnMarker).
func (s *producerState) applyMarker(h *record.Header, marker *record.ControlRecord, offset int64) (segment.AbortedTxn, bool) {
	e := s.producers[h.ProducerID]
	if e == nil {
		e = newEntry(h.ProducerID, h.ProducerEpoch)
		s.producers[h.ProducerID] = e
	}
	first := e.CurrentTxnFirstOffset
	if h.ProducerEpoch != e.ProducerEpoch {
		e.ProducerEpoch = h.ProducerEpoch
		e.Batches = e.Batches[:0]
	}
	e.CurrentTxnFirstOffset, e.CoordinatorEpoch, e.LastTimestamp = -1, marker.CoordinatorEpoch, h.MaxTimestamp
	// A coordinator's answer given before the transaction ended must not
	// admit a batch after it.
	delete(s.guards, h.ProducerID)
	if first < 0 {
		return segment.AbortedTxn{}, false // an empty transaction changes no offset's stability
	}
	delete(s.ongoing, h.ProducerID)
	s.unreplicated = append(s.unreplicated, completedTxn{producerID: h.ProducerID, firstOffset: first, lastOffset: offset})
	if marker.Type != record.ControlAbort {
		return segment.AbortedTxn{}, false
	}
	lso := offset + 1
	for _, f := range s.ongoing {
		lso = min(lso, f)
	}
	return segment.AbortedTxn{ProducerID: h.ProducerID, FirstOffset: first, LastOffset: offset, LastStableOffset: lso}, true
}

// firstUnstableOffset returns the smallest first offset of a transaction
// that is open, or whose marker is not below hw, or -1 when there is none.
// Transactions whose marker is below hw are forgotten (see replicated).
func (s *producerState) firstUnstableOffset(hw int64) int64 {
	s.replicated(hw)
	first := int64(-1)
	for _, f := range s.ongoing {
		if first < 0 || f < first {
			first = f
		}
	}
	for _, t := range s.unreplicated {
		if first < 0 || t.firstOffset < first {
			first = t.firstOffset
		}
	}
	return first
}

// replicated forgets the completed transactions whose marker is below hw,
// as Kafka's onHighWatermarkUpdated: the high watermark passes a marker
// only once, until a truncation, which reloads the state.
func (s *producerState) replicated(hw int64) {
	i := 0
	for i < len(s.unreplicated) && s.unreplicated[i].lastOffset < hw {
		i++
	}
	if i > 0 {
		s.unreplicated = slices.Delete(s.unreplicated, 0, i)
	}
}

// removeExpired forgets the producers whose last batch is expiration or
// more older than nowMs, as Kafka's producer.id.expiration.ms does, and
// returns how many it forgot. A producer with an open transaction stays.
func (s *producerState) removeExpired(nowMs, expirationMs int64) int {
	n := 0
	for id, e := range s.producers {
		if e.CurrentTxnFirstOffset < 0 && nowMs-e.LastTimestamp >= expirationMs {
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

// coordinatorWrite reports whether h is a coordinator's write in a
// producer's transaction — transactional offsets the group coordinator
// writes to __consumer_offsets — which carries the producer's id and epoch
// but no sequence (record.NoSequence), as Kafka's coordinators write them.
// A client's batch always has a sequence; the broker refuses client
// batches without one.
func coordinatorWrite(h *record.Header) bool {
	return h.Attributes.IsTransactional() && !h.Attributes.IsControl() && h.BaseSequence == record.NoSequence
}
