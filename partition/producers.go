package partition

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/log"
	"github.com/partlog/partlog/record"
	"github.com/partlog/partlog/segment"
	"github.com/partlog/partlog/vfs"
)

// producers keeps a partition's producer state in step with its log. It is
// the log's AppendCheck for every append of the partition, so a batch's
// sequence check and its append are one step under the log's append lock,
// and its TxnIndexer for every write, leader's and follower's, so that an
// ABORT marker's .txnindex entry goes in with the marker.
//
// The state is loaded lazily, by the first check (or a caller that asks
// for it): from the newest snapshot at or below the log end offset, then
// the log's batches above it. A write that fails after its check marks
// the state stale, and the next check reloads it from the log.
//
// The .txnindex entries follow one rule: a snapshot as of offset X is
// written only once every entry of a marker below X is durable, and every
// load rewrites the entries from the snapshot it starts at. So entries
// below the newest snapshot never need rebuilding, and those above it are
// rebuilt by the next load, whatever a crash, a failed write or a
// truncation left in the files. The first load after the log opened starts
// at or below the first segment Open recovered or found damaged (see
// log.LoadReport.TxnIndexRebuildFrom), deleting the snapshots above it
// first, as Kafka's log loader rebuilds those segments' indexes.
//
// Lock order: the log's append lock, then snapMu, then mu.
type producers struct {
	log        *log.Log
	fs         vfs.FS
	expiration time.Duration
	now        func() time.Time
	// verify is asked about the batches that would open a transaction;
	// its verifier may be nil.
	verify verification

	// snapMu serialises snapshot writes and deletions, and loads.
	snapMu sync.Mutex

	mu    sync.Mutex
	state *producerState // nil until loaded, and when stale
	// lastGuard is the last verification guard handed out, kept here so
	// that a state loaded anew never hands out an old one again.
	lastGuard VerificationGuard
	// rebuilt says a load has rebuilt the .txnindex entries Open left in
	// doubt.
	rebuilt bool
}

// ready reports whether the state may be used. The caller holds mu.
func (m *producers) readyLocked() bool { return m.state != nil }

// ensureLoadedLocked loads the state if needed. The caller holds mu; it is
// released and taken again, with snapMu, when a load is needed.
func (m *producers) ensureLoadedLocked() error {
	if m.readyLocked() {
		return nil
	}
	m.mu.Unlock()
	m.snapMu.Lock()
	m.mu.Lock()
	defer m.snapMu.Unlock()
	if m.readyLocked() {
		return nil
	}
	s, err := m.load()
	if err != nil {
		return fmt.Errorf("%w: load producer state of %s: %w", kafka.ErrKafkaStorage, m.log.Dir(), err)
	}
	m.state = s
	return nil
}

// load rebuilds the state: snapshots above the log end offset are deleted
// (a crash took the log they describe), and so, the first time, are those
// above the first segment whose .txnindex Open left in doubt; the newest
// readable one left is loaded; the batches above it are applied, and the
// .txnindex entries of their ABORT markers rewritten. Producers already
// expired are left out. The caller holds snapMu and mu; appends may run,
// but none that this state must see is between its check and its write
// (a check needs mu, and a state in use is not reloaded).
func (m *producers) load() (*producerState, error) {
	dir := m.log.Dir()
	leo, start := m.log.LogEndOffset(), m.log.LogStartOffset()
	limit := leo
	if !m.rebuilt {
		if from, ok := m.log.LoadReport().TxnIndexRebuildFrom(); ok {
			limit = min(limit, from)
		}
	}
	offsets, err := deleteSnapshotsAbove(m.fs, dir, limit)
	if err != nil {
		return nil, err
	}
	s := newProducerState(start)
	for i := len(offsets) - 1; i >= 0; i-- {
		entries, err := readSnapshot(m.fs, dir, offsets[i])
		if errors.Is(err, ErrCorruptSnapshot) {
			continue // an older snapshot, or the log, will do
		}
		if err != nil {
			return nil, err
		}
		for _, e := range entries {
			s.add(e)
		}
		s.nextOffset = offsets[i]
		break
	}
	from := max(s.nextOffset, start)
	var aborted []segment.AbortedTxn
	err = scanBatches(m.log, from, leo, func(h *record.Header, batch []byte) error {
		if h.LastOffset() < from {
			return nil
		}
		marker, err := markerOf(h, batch)
		if err != nil {
			return err
		}
		if e, ok := s.apply(h, marker, h.BaseOffset); ok {
			aborted = append(aborted, e)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if err := m.log.RewriteAbortedTxns(from, aborted); err != nil {
		return nil, err
	}
	m.rebuilt = true
	s.nextOffset = leo
	s.removeExpired(m.now().UnixMilli(), m.expiration.Milliseconds())
	return s, nil
}

// markerOf returns the marker a control batch holds, nil for other batches
// and for a control batch without one. The batch is in the log, whose CRC
// check it passed.
func markerOf(h *record.Header, batch []byte) (*record.ControlRecord, error) {
	if !h.Attributes.IsControl() || h.ProducerID < 0 {
		return nil, nil
	}
	c, ok, err := record.ParseControlBatch(batch, record.SkipCRC)
	if err != nil {
		return nil, fmt.Errorf("control batch at %d: %w", h.BaseOffset, err)
	}
	if !ok {
		return nil, nil
	}
	return &c, nil
}

// scanBatches calls visit with the header and bytes of every batch of l
// from the one holding from up to end; the bytes are valid until visit
// returns.
func scanBatches(l *log.Log, from, end int64, visit func(*record.Header, []byte) error) error {
	var buf []byte
	for off := from; off < end; {
		data, err := l.Read(buf[:0], off, end, 1<<20)
		if err != nil {
			return fmt.Errorf("read log at %d: %w", off, err)
		}
		if len(data) == 0 {
			return nil
		}
		buf = data
		if err := walkBatches(data, func(h *record.Header, b []byte) error {
			off = max(off, h.NextOffset())
			return visit(h, b)
		}); err != nil {
			return err
		}
	}
	return nil
}

// walkBatches calls visit with the header and bytes of each batch in data,
// which holds whole batches one after another.
func walkBatches(data []byte, visit func(*record.Header, []byte) error) error {
	for len(data) > 0 {
		h, err := record.ParseHeader(data)
		if err != nil {
			return fmt.Errorf("batch header in the log: %w", err)
		}
		if h.Size() > len(data) {
			return fmt.Errorf("batch at %d: %w", h.BaseOffset, record.ErrTruncated)
		}
		if err := visit(&h, data[:h.Size()]); err != nil {
			return err
		}
		data = data[h.Size():]
	}
	return nil
}

// CheckAppend is the log's check of each data batch the partition
// appends (see log.AppendCheck): an idempotent or transactional producer's
// batch is checked against the state and recorded in it; other batches
// only move the state's offset. Control batches go through a markerCheck,
// which knows their marker.
func (m *producers) CheckAppend(h record.Header, baseOffset int64) error {
	return m.checkAndApply(&h, nil, baseOffset)
}

// checkAndApply checks a batch at baseOffset against the state and
// records it; an ABORT marker's entry waits in pending for the write.
func (m *producers) checkAndApply(h *record.Header, marker *record.ControlRecord, baseOffset int64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.ensureLoadedLocked(); err != nil {
		return err
	}
	if err := m.state.check(h, marker, &m.verify); err != nil {
		return err
	}
	if e, ok := m.state.apply(h, marker, baseOffset); ok {
		m.state.pending[baseOffset] = e
	}
	return nil
}

// AbortedTxn tells the log, as it writes a batch, the aborted transaction
// the batch completes (see log.TxnIndexer): a batch the state checked
// comes with the entry its check left in pending; one it has not seen —
// a follower's — is applied now. A state not loaded says nothing: the
// load that loads it rewrites the entries.
func (m *producers) AbortedTxn(h record.Header, batch []byte) (segment.AbortedTxn, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.state == nil {
		return segment.AbortedTxn{}, false
	}
	if h.BaseOffset < m.state.nextOffset {
		e, ok := m.state.pending[h.BaseOffset]
		delete(m.state.pending, h.BaseOffset)
		return e, ok
	}
	marker, err := markerOf(&h, batch)
	if err != nil {
		m.state = nil // the log took it: reload to be sure
		return segment.AbortedTxn{}, false
	}
	return m.state.apply(&h, marker, h.BaseOffset)
}

// markerCheck is the log's check of a control batch: the producers' check
// with the batch's marker, which the log's header-only calls lack.
type markerCheck struct {
	m      *producers
	marker *record.ControlRecord
}

func (c markerCheck) CheckAppend(h record.Header, baseOffset int64) error {
	return c.m.checkAndApply(&h, c.marker, baseOffset)
}

func (c markerCheck) AppendFailed(h record.Header, err error) { c.m.AppendFailed(h, err) }

func (c markerCheck) AbortedTxn(h record.Header, batch []byte) (segment.AbortedTxn, bool) {
	return c.m.AbortedTxn(h, batch)
}

// checkFor returns the log check for a batch: the producers themselves, or
// a markerCheck for a control batch.
func (m *producers) checkFor(h *record.Header, batch []byte) (log.AppendCheck, error) {
	if !h.Attributes.IsControl() {
		return m, nil
	}
	marker, err := markerOf(h, batch)
	if err != nil {
		return nil, err
	}
	return markerCheck{m: m, marker: marker}, nil
}

// highWatermark tells a loaded state the high watermark moved to hw, so
// that it forgets the transactions whose markers it passed.
func (m *producers) highWatermark(hw int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.state != nil {
		m.state.replicated(hw)
	}
}

// firstUnstableOffset returns the state's first unstable offset given the
// high watermark hw (-1 when every offset is stable), loading the state
// if need be.
func (m *producers) firstUnstableOffset(hw int64) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.ensureLoadedLocked(); err != nil {
		return 0, err
	}
	return m.state.firstUnstableOffset(hw), nil
}

// AppendFailed marks the state stale: it recorded a batch the log does not
// hold, and is reloaded from the log before the next check.
func (m *producers) AppendFailed(record.Header, error) {
	m.mu.Lock()
	m.state = nil
	m.mu.Unlock()
}

// snapshot writes the state to a snapshot file as of its offset, if it is
// loaded and the log holds what it describes: not while a batch it checked
// is still to be written (its write could fail, or its .txnindex entry
// be missing), nor once the log failed. The .txnindex entries below the
// offset are made durable first (see producers). It reports whether it
// wrote one.
func (m *producers) snapshot() (bool, error) {
	m.snapMu.Lock()
	defer m.snapMu.Unlock()
	m.mu.Lock()
	if !m.readyLocked() {
		m.mu.Unlock()
		return false, nil
	}
	offset, entries := m.state.nextOffset, m.state.entries()
	m.mu.Unlock()
	if offset > m.log.LogEndOffset() || m.log.Err() != nil {
		return false, nil
	}
	if err := m.log.SyncTxnIndexes(); err != nil {
		return false, err
	}
	return true, writeSnapshot(m.fs, m.log.Dir(), offset, entries)
}

// truncated forgets the state after the log was cut at offset, deleting
// the snapshots above it; the next check reloads the state.
func (m *producers) truncated(offset int64) error {
	m.snapMu.Lock()
	defer m.snapMu.Unlock()
	m.mu.Lock()
	m.state = nil
	m.mu.Unlock()
	_, err := deleteSnapshotsAbove(m.fs, m.log.Dir(), offset)
	return err
}

// ProducerStates returns the partition's producer state, by producer id,
// loading it from its snapshot and log first if no append has yet. The
// entries are copies; errors are Kafka's (KAFKA_STORAGE_ERROR for a log
// that cannot be read).
func (p *Partition) ProducerStates() ([]ProducerStateEntry, error) {
	m := p.producers
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.ensureLoadedLocked(); err != nil {
		return nil, kafkaError(err)
	}
	return m.state.entries(), nil
}

// RemoveExpiredProducers forgets the producers whose last batch's
// timestamp is ProducerIDExpiration or more before now, as Kafka does every
// producer.id.expiration.check.interval.ms, and returns how many it
// forgot. A forgotten producer's next batch is accepted at any sequence.
func (p *Partition) RemoveExpiredProducers(now time.Time) int {
	m := p.producers
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.readyLocked() {
		return 0 // loading leaves expired producers out
	}
	return m.state.removeExpired(now.UnixMilli(), m.expiration.Milliseconds())
}

// SnapshotProducerState writes the producer state to a snapshot file named
// after the offset it covers, so that recovery scans only the log above
// it. The partition does this itself when its log rolls a segment and when
// it closes.
func (p *Partition) SnapshotProducerState() error {
	_, err := p.producers.snapshot()
	return err
}

// TruncateTo cuts the log at offset (see log.Log.TruncateTo), as a
// follower does, and with it the producer state: snapshots above the cut
// are deleted and the state is rebuilt from the log before the next
// append.
func (p *Partition) TruncateTo(offset int64) error {
	if err := p.log.TruncateTo(offset); err != nil {
		return kafkaError(err)
	}
	if err := p.producers.truncated(offset); err != nil {
		return fmt.Errorf("%w: %w", kafka.ErrKafkaStorage, err)
	}
	return nil
}

// maybeSnapshotOnRoll writes a snapshot when the log has rolled since the
// last one, as Kafka snapshots producer state at each new segment. One the
// state cannot be written at yet (a replicated leader's checks run ahead
// of its writes) is tried again after the next append.
func (p *Partition) maybeSnapshotOnRoll() {
	base := p.log.ActiveSegmentBaseOffset()
	last := p.rollBase.Load()
	if base == last || !p.rollBase.CompareAndSwap(last, base) {
		return
	}
	// A failed snapshot costs a longer scan, not data.
	if written, err := p.producers.snapshot(); !written && err == nil {
		p.rollBase.CompareAndSwap(base, last)
	}
}

// AppendAsFollower appends batches whose offsets a leader gave (see
// log.Log.AppendAsFollower), as a follower does, and records their
// producers and transactions in the producer state without checking them,
// as Kafka's followers do: a follower that becomes leader recognises the
// retries first sent to the old leader, and keeps the same last stable
// offset and .txnindex as its leader. batches is read until it returns.
func (p *Partition) AppendAsFollower(batches []byte) (log.AppendInfo, error) {
	m := p.producers
	m.mu.Lock()
	err := m.ensureLoadedLocked()
	m.mu.Unlock()
	if err != nil {
		return log.AppendInfo{}, err
	}
	info, err := p.log.AppendAsFollowerIndexed(batches, m)
	if err != nil {
		return info, kafkaError(err)
	}
	p.maybeSnapshotOnRoll()
	if hasControl(batches) {
		p.notifyWaiters() // the last stable offset may have moved
	}
	return info, nil
}

// hasControl reports whether data, whole batches back to back, holds a
// control batch.
func hasControl(data []byte) bool {
	found := false
	_ = walkBatches(data, func(h *record.Header, _ []byte) error {
		found = found || h.Attributes.IsControl()
		return nil
	})
	return found
}

// confirmDuplicate returns once the original of a duplicate batch is as an
// acknowledged append would be — durable when the log syncs before it
// acknowledges — and is in the log: a duplicate may come while its original
// is still in a write group, whose write can fail. An original the log
// start offset has passed (retention) is taken as there. An original that
// is not in the log is kafka.ErrKafkaStorage, which the producer
// retries.
func (p *Partition) confirmDuplicate(h *record.Header, m BatchMetadata) error {
	if p.options().DurableHighWatermark {
		if err := p.log.WaitDurable(m.LastOffset + 1); err != nil {
			return kafkaError(err)
		}
	}
	data, err := p.log.Read(nil, m.FirstOffset, m.LastOffset+1, 1)
	if err != nil {
		if m.FirstOffset < p.log.LogStartOffset() {
			return nil
		}
		return kafkaError(err)
	}
	got, err := record.ParseHeader(data)
	if err != nil || got.BaseOffset != m.FirstOffset || got.ProducerID != h.ProducerID ||
		got.ProducerEpoch != h.ProducerEpoch || got.BaseSequence != h.BaseSequence {
		return fmt.Errorf("%w: %s-%d: the original of a duplicate batch at offset %d is not in the log", kafka.ErrKafkaStorage, p.topic, p.partition, m.FirstOffset)
	}
	return nil
}
