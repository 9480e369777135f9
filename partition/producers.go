package partition

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/log"
	"github.com/partlog/partlog/record"
	"github.com/partlog/partlog/vfs"
)

// producers keeps a partition's producer state in step with its log. It is
// the log's AppendCheck for every append of the partition, so a batch's
// sequence check and its append are one step under the log's append lock.
//
// The state is loaded lazily, by the first check (or a caller that asks
// for it): from the newest snapshot at or below the log end offset, then
// the log's batch headers above it. A write that fails after its check
// marks the state stale, and the next check reloads it from the log.
//
// Lock order: the log's append lock, then snapMu, then mu.
type producers struct {
	log        *log.Log
	fs         vfs.FS
	expiration time.Duration
	now        func() time.Time

	// snapMu serialises snapshot writes and deletions.
	snapMu sync.Mutex

	mu    sync.Mutex
	state *producerState // nil until loaded, and when stale
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
// (a crash took the log they describe), the newest readable one at or
// below it is loaded, and the batches above it are applied. Producers
// already expired are left out. The caller holds snapMu and mu, and no
// append may run.
func (m *producers) load() (*producerState, error) {
	dir := m.log.Dir()
	leo, start := m.log.LogEndOffset(), m.log.LogStartOffset()
	offsets, err := deleteSnapshotsAbove(m.fs, dir, leo)
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
		for j := range entries {
			e := entries[j]
			s.producers[e.ProducerID] = &e
		}
		s.nextOffset = offsets[i]
		break
	}
	from := max(s.nextOffset, start)
	if err := scanHeaders(m.log, from, leo, func(h *record.Header) {
		if h.LastOffset() >= from {
			s.apply(h, h.BaseOffset)
		}
	}); err != nil {
		return nil, err
	}
	s.nextOffset = leo
	s.removeExpired(m.now().UnixMilli(), m.expiration.Milliseconds())
	return s, nil
}

// scanHeaders calls visit with the header of every batch of l from the one
// holding from up to end.
func scanHeaders(l *log.Log, from, end int64, visit func(*record.Header)) error {
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
		if err := walkHeaders(data, func(h *record.Header) {
			visit(h)
			off = max(off, h.NextOffset())
		}); err != nil {
			return err
		}
	}
	return nil
}

// walkHeaders calls visit with the header of each batch in data, which
// holds whole batches one after another.
func walkHeaders(data []byte, visit func(*record.Header)) error {
	for len(data) > 0 {
		h, err := record.ParseHeader(data)
		if err != nil {
			return fmt.Errorf("batch header in the log: %w", err)
		}
		if h.Size() > len(data) {
			return fmt.Errorf("batch at %d: %w", h.BaseOffset, record.ErrTruncated)
		}
		visit(&h)
		data = data[h.Size():]
	}
	return nil
}

// CheckAppend is the log's check of each batch the partition appends (see
// log.AppendCheck): an idempotent producer's batch is checked against the
// state and recorded in it; other batches only move the state's offset.
func (m *producers) CheckAppend(h record.Header, baseOffset int64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.ensureLoadedLocked(); err != nil {
		return err
	}
	if hasProducer(&h) {
		if err := m.state.check(&h); err != nil {
			return err
		}
	}
	m.state.apply(&h, baseOffset)
	return nil
}

// AppendFailed marks the state stale: it recorded a batch the log does not
// hold, and is reloaded from the log before the next check.
func (m *producers) AppendFailed(record.Header, error) {
	m.mu.Lock()
	m.state = nil
	m.mu.Unlock()
}

// snapshot writes the state to a snapshot file as of its offset, if it is
// loaded.
func (m *producers) snapshot() error {
	m.snapMu.Lock()
	defer m.snapMu.Unlock()
	m.mu.Lock()
	if !m.readyLocked() {
		m.mu.Unlock()
		return nil
	}
	offset, entries := m.state.nextOffset, m.state.entries()
	m.mu.Unlock()
	return writeSnapshot(m.fs, m.log.Dir(), offset, entries)
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
func (p *Partition) SnapshotProducerState() error { return p.producers.snapshot() }

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
// last one, as Kafka snapshots producer state at each new segment.
func (p *Partition) maybeSnapshotOnRoll() {
	base := p.log.ActiveSegmentBaseOffset()
	last := p.rollBase.Load()
	if base == last || !p.rollBase.CompareAndSwap(last, base) {
		return
	}
	_ = p.producers.snapshot() // a failed snapshot costs a longer scan, not data
}

// AppendAsFollower appends batches whose offsets a leader gave (see
// log.Log.AppendAsFollower), as a follower does, and records their
// producers in the producer state without checking them, as Kafka's
// followers do: a follower that becomes leader recognises the retries
// first sent to the old leader.
func (p *Partition) AppendAsFollower(batches []byte) (log.AppendInfo, error) {
	info, err := p.log.AppendAsFollower(batches)
	if err != nil {
		return info, kafkaError(err)
	}
	m := p.producers
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.state == nil {
		return info, nil // a load scans them from the log
	}
	if err := walkHeaders(batches, func(h *record.Header) { m.state.apply(h, h.BaseOffset) }); err != nil {
		m.state = nil // cannot be: the log took them; reload to be sure
	}
	return info, nil
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
