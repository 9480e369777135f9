package segment

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"path"
	"sync"

	"github.com/partlog/partlog/vfs"
)

// AbortedTxn is one entry of a segment's .txnindex: a transaction whose
// ABORT marker lies in the segment, as Kafka's AbortedTxn describes it.
type AbortedTxn struct {
	// ProducerID is the producer whose transaction aborted.
	ProducerID int64
	// FirstOffset is the offset of the transaction's first record, in this
	// segment or an earlier one.
	FirstOffset int64
	// LastOffset is the offset of the ABORT marker, in this segment.
	LastOffset int64
	// LastStableOffset is the partition's first unstable offset once the
	// marker was written: the first offset of the oldest transaction of
	// another producer then open, or LastOffset+1 when none was. A
	// reader collecting the aborted transactions below an offset stops at
	// the first entry whose LastStableOffset reaches it: no later segment
	// holds one that began below it.
	LastStableOffset int64
}

// TxnIndexEntrySize is the size of a .txnindex entry: version int16, then
// producer id, first offset, last offset and last stable offset, int64
// each, big-endian.
const TxnIndexEntrySize = 2 + 8 + 8 + 8 + 8

// txnIndexVersion is the entry version Kafka writes and reads (0).
const txnIndexVersion = 0

// txnReadEntries is how many entries a read of the index fetches at once.
const txnReadEntries = 1024

// appendTxnEntry appends e encoded as a .txnindex entry to dst.
func appendTxnEntry(dst []byte, e AbortedTxn) []byte {
	dst = binary.BigEndian.AppendUint16(dst, txnIndexVersion)
	dst = binary.BigEndian.AppendUint64(dst, uint64(e.ProducerID))
	dst = binary.BigEndian.AppendUint64(dst, uint64(e.FirstOffset))
	dst = binary.BigEndian.AppendUint64(dst, uint64(e.LastOffset))
	return binary.BigEndian.AppendUint64(dst, uint64(e.LastStableOffset))
}

// parseTxnEntry decodes one entry and checks it against the entry before
// it (whose last offset is prev, -1 when none) and the segment's offsets
// [base, next): a known version, a producer id, first <= last, the marker
// inside the segment and after the previous one, and a last stable offset
// no further than the offset after the marker.
func parseTxnEntry(b []byte, prev, base, next int64) (AbortedTxn, error) {
	if v := int16(binary.BigEndian.Uint16(b)); v != txnIndexVersion {
		return AbortedTxn{}, fmt.Errorf("entry version %d, want %d", v, txnIndexVersion)
	}
	e := AbortedTxn{
		ProducerID:       int64(binary.BigEndian.Uint64(b[2:])),
		FirstOffset:      int64(binary.BigEndian.Uint64(b[10:])),
		LastOffset:       int64(binary.BigEndian.Uint64(b[18:])),
		LastStableOffset: int64(binary.BigEndian.Uint64(b[26:])),
	}
	switch {
	case e.ProducerID < 0:
		return e, fmt.Errorf("producer id %d", e.ProducerID)
	case e.FirstOffset < 0 || e.FirstOffset > e.LastOffset:
		return e, fmt.Errorf("first offset %d after last offset %d", e.FirstOffset, e.LastOffset)
	case e.LastOffset < base || e.LastOffset >= next:
		return e, fmt.Errorf("marker at %d outside the segment's offsets [%d, %d)", e.LastOffset, base, next)
	case e.LastOffset <= prev:
		return e, fmt.Errorf("marker at %d not after the previous entry's at %d", e.LastOffset, prev)
	case e.LastStableOffset < 0 || e.LastStableOffset > e.LastOffset+1:
		return e, fmt.Errorf("last stable offset %d for a marker at %d", e.LastStableOffset, e.LastOffset)
	}
	return e, nil
}

// DecodeTxnIndex decodes the contents of the .txnindex of the segment
// whose base offset is base, as a tool reads it: it returns the entries
// in order up to the first that is damaged — a version other than 0, a
// negative producer id, offsets out of order or below base — or a partial
// entry at the end, and an error naming that entry's position; nil when
// every byte decoded.
func DecodeTxnIndex(data []byte, base int64) ([]AbortedTxn, error) {
	var out []AbortedTxn
	prev := int64(-1)
	for pos := 0; pos < len(data); pos += TxnIndexEntrySize {
		if len(data)-pos < TxnIndexEntrySize {
			return out, fmt.Errorf("%w: a partial entry of %d bytes at position %d", ErrCorrupt, len(data)-pos, pos)
		}
		e, err := parseTxnEntry(data[pos:pos+TxnIndexEntrySize], prev, base, math.MaxInt64)
		if err != nil {
			return out, fmt.Errorf("%w: entry at position %d: %v", ErrCorrupt, pos, err)
		}
		out, prev = append(out, e), e.LastOffset
	}
	return out, nil
}

// txnIndex is a segment's .txnindex file: the aborted transactions whose
// markers the segment holds, in marker order, with no header. The file is
// created by the first entry. It has its own lock: reads (collect) run
// beside the writes of the one writer.
type txnIndex struct {
	fs vfs.FS

	mu   sync.Mutex
	path string
	f    vfs.File // nil while there is no file
	// fileSize is the file's size; size is where its valid entries end,
	// below fileSize when the check found damage.
	fileSize, size int64
	// last is the marker offset of the last valid entry, -1 when none.
	last int64
	// damage is what the last check found wrong, or nil.
	damage error
	// dirty says entries were written or removed since the last sync;
	// created that the file was created since.
	dirty, created bool
}

// openTxnIndex opens the index at p if the file exists. It is not read
// until check.
func openTxnIndex(fsys vfs.FS, p string) (*txnIndex, error) {
	x := &txnIndex{fs: fsys, path: p, last: -1}
	f, err := fsys.OpenReadWrite(p)
	if errors.Is(err, fs.ErrNotExist) {
		return x, nil
	}
	if err != nil {
		return nil, fmt.Errorf("segment: open %s: %w", p, err)
	}
	size, err := f.Size()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("segment: size of %s: %w", p, err)
	}
	x.f, x.fileSize, x.size = f, size, size
	return x, nil
}

// check reads every entry, checking each against the segment's offsets
// [base, next), and records where the valid entries end and what follows
// them, if anything: the damage Err reports. The file is not changed.
func (x *txnIndex) check(base, next int64) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.size, x.last, x.damage = 0, -1, nil
	if x.f == nil {
		return
	}
	end, last, bad, err := x.scanLocked(base, next, func(int64, AbortedTxn) bool { return true })
	x.size, x.last = end, last
	switch {
	case err != nil:
		x.damage = err // unreadable: as damaged as can be, and said so
	case bad != nil:
		x.damage = fmt.Errorf("%w: %s at position %d: %w", ErrCorruptTxnIndex, x.path, end, bad)
	}
}

// scanLocked calls visit with the position and value of each valid entry,
// in order, until visit returns false, an entry is not valid, or the file
// ends. It returns the position after the last entry visit accepted, that
// entry's marker offset (-1 when none), why the entry after it is not
// valid (bad; nil at the end of the file or when visit stopped), and an
// I/O error (err). The caller holds mu.
func (x *txnIndex) scanLocked(base, next int64, visit func(pos int64, e AbortedTxn) bool) (end, last int64, bad, err error) {
	last = -1
	buf := make([]byte, min(txnReadEntries*TxnIndexEntrySize, max(x.fileSize, 0)))
	pos := int64(0)
	for pos+TxnIndexEntrySize <= x.fileSize {
		n := min(int64(len(buf)), (x.fileSize-pos)/TxnIndexEntrySize*TxnIndexEntrySize)
		chunk := buf[:n]
		if got, rerr := x.f.ReadAt(chunk, pos); int64(got) < n {
			if rerr == nil || rerr == io.EOF {
				rerr = io.ErrUnexpectedEOF
			}
			return pos, last, nil, fmt.Errorf("segment: read %s at %d: %w", x.path, pos, rerr)
		}
		for ; len(chunk) > 0; chunk = chunk[TxnIndexEntrySize:] {
			e, perr := parseTxnEntry(chunk, last, base, next)
			if perr != nil {
				return pos, last, perr, nil
			}
			if !visit(pos, e) {
				return pos, last, nil, nil
			}
			pos += TxnIndexEntrySize
			last = e.LastOffset
		}
	}
	if pos < x.fileSize {
		return pos, last, fmt.Errorf("%d bytes after the last whole entry", x.fileSize-pos), nil
	}
	return pos, last, nil, nil
}

// Err returns the damage the last check found, or nil.
func (x *txnIndex) err() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.damage
}

// append adds e after the last valid entry, creating the file if need be.
// An entry whose marker is not after the last one's is taken as indexed
// already and skipped, so that indexing a marker twice writes one entry.
// Damage after the valid entries is cut first.
func (x *txnIndex) append(e AbortedTxn, base, next int64) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if e.LastOffset <= x.last {
		return nil
	}
	if _, err := parseTxnEntry(appendTxnEntry(nil, e), x.last, base, next); err != nil {
		return fmt.Errorf("segment: aborted transaction %+v does not belong in %s: %w", e, x.path, err)
	}
	if err := x.openLocked(); err != nil {
		return err
	}
	if x.fileSize != x.size {
		if err := x.truncateLocked(x.size); err != nil {
			return err
		}
	}
	if n, err := x.f.WriteAt(appendTxnEntry(make([]byte, 0, TxnIndexEntrySize), e), x.size); err != nil {
		if n > 0 {
			_ = x.f.Truncate(x.size) // leave no partial entry behind; a check finds one that stays
		}
		return fmt.Errorf("segment: append to %s at %d: %w", x.path, x.size, err)
	}
	x.size += TxnIndexEntrySize
	x.fileSize, x.last, x.dirty = x.size, e.LastOffset, true
	return nil
}

// openLocked creates the file if there is none. The caller holds mu.
func (x *txnIndex) openLocked() error {
	if x.f != nil {
		return nil
	}
	f, err := x.fs.Create(x.path)
	if err != nil {
		return fmt.Errorf("segment: create %s: %w", x.path, err)
	}
	x.f, x.size, x.fileSize, x.created, x.dirty = f, 0, 0, true, true
	return nil
}

// ensure creates the file, empty, if there is none.
func (x *txnIndex) ensure() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.openLocked()
}

// truncateLocked cuts the file at size. The caller holds mu.
func (x *txnIndex) truncateLocked(size int64) error {
	if err := x.f.Truncate(size); err != nil {
		return fmt.Errorf("segment: truncate %s to %d: %w", x.path, size, err)
	}
	x.fileSize, x.dirty = size, true
	return nil
}

// truncate removes the entries whose marker is at or above offset, and
// whatever follows the first of them, damage included. It reports whether
// the file changed.
func (x *txnIndex) truncate(offset, base, next int64) (bool, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.f == nil {
		return false, nil
	}
	cut, last, _, err := x.scanLocked(base, next, func(_ int64, e AbortedTxn) bool { return e.LastOffset < offset })
	if err != nil {
		return false, err
	}
	if cut == x.fileSize {
		return false, nil
	}
	if err := x.truncateLocked(cut); err != nil {
		return false, err
	}
	x.size, x.last, x.damage = cut, last, nil
	return true, nil
}

// collect appends to dst the entries whose transactions overlap
// [fetchOffset, upperBound) — marker at or after fetchOffset, first
// offset before upperBound — as Kafka's collectAbortedTxns does, and
// reports complete once an entry's last stable offset reaches upperBound:
// no later segment holds a transaction that began below it. Damage is an
// error.
func (x *txnIndex) collect(dst []AbortedTxn, fetchOffset, upperBound, base, next int64) ([]AbortedTxn, bool, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.f == nil {
		return dst, false, nil
	}
	complete := false
	end, _, bad, err := x.scanLocked(base, next, func(_ int64, e AbortedTxn) bool {
		if e.LastOffset >= fetchOffset && e.FirstOffset < upperBound {
			dst = append(dst, e)
		}
		complete = e.LastStableOffset >= upperBound
		return !complete
	})
	if err != nil {
		return dst, false, err
	}
	if bad != nil {
		return dst, false, fmt.Errorf("%w: %s at position %d: %w", ErrCorruptTxnIndex, x.path, end, bad)
	}
	return dst, complete, nil
}

// entries returns every valid entry; damage is an error.
func (x *txnIndex) entries(base, next int64) ([]AbortedTxn, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.f == nil {
		return nil, nil
	}
	var out []AbortedTxn
	end, _, bad, err := x.scanLocked(base, next, func(_ int64, e AbortedTxn) bool {
		out = append(out, e)
		return true
	})
	if err != nil {
		return out, err
	}
	if bad != nil {
		return out, fmt.Errorf("%w: %s at position %d: %w", ErrCorruptTxnIndex, x.path, end, bad)
	}
	return out, nil
}

// sync makes the entries durable, and the file's name when it is new.
func (x *txnIndex) sync() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.f == nil || !x.dirty && !x.created {
		return nil
	}
	if err := x.f.Sync(); err != nil {
		return fmt.Errorf("segment: sync %s: %w", x.path, err)
	}
	if x.created {
		if err := x.fs.SyncDir(path.Dir(x.path)); err != nil {
			return fmt.Errorf("segment: sync directory of %s: %w", x.path, err)
		}
	}
	x.dirty, x.created = false, false
	return nil
}

// rename moves the file, if there is one, to p; it stays open.
func (x *txnIndex) rename(p string) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.f != nil {
		if err := x.fs.Rename(x.path, p); err != nil {
			return fmt.Errorf("segment: rename %s to %s: %w", x.path, p, err)
		}
	}
	x.path = p
	return nil
}

// close closes the file.
func (x *txnIndex) close() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.f == nil {
		return nil
	}
	err := x.f.Close()
	x.f = nil
	return err
}

// remove closes and removes the file.
func (x *txnIndex) remove() error {
	cerr := x.close()
	x.mu.Lock()
	defer x.mu.Unlock()
	if err := x.fs.Remove(x.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("segment: delete %s: %w", x.path, err)
	}
	return cerr
}

// AppendAbortedTxn adds an aborted transaction whose ABORT marker, at
// e.LastOffset, the segment holds, creating the .txnindex if it has none.
// Markers are indexed in order: an entry whose marker is not after the
// last one's is taken as indexed already, and nothing is written, so that
// indexing a marker twice is harmless. The entry is not synced: Flush
// and SyncTxnIndex do that. An entry that cannot belong — a marker outside
// the segment, a first offset after it — is an error.
func (s *Segment) AppendAbortedTxn(e AbortedTxn) error {
	if s.closed {
		return ErrClosed
	}
	return s.txnIndex.append(e, s.base, s.nextOffset.Load())
}

// CollectAbortedTxns appends to dst the aborted transactions of the
// segment's .txnindex that overlap the offsets [fetchOffset, upperBound):
// whose ABORT marker is at or after fetchOffset and whose first offset is
// before upperBound. complete says an entry's last stable offset reached
// upperBound, so no later segment holds such a transaction: Kafka's
// collectAbortedTxns. A damaged index is an error matching
// ErrCorruptTxnIndex. It may run beside the segment's writer.
func (s *Segment) CollectAbortedTxns(dst []AbortedTxn, fetchOffset, upperBound int64) ([]AbortedTxn, bool, error) {
	if s.closed {
		return dst, false, ErrClosed
	}
	return s.txnIndex.collect(dst, fetchOffset, upperBound, s.base, s.nextOffset.Load())
}

// AbortedTxns returns every entry of the segment's .txnindex, in marker
// order; none when it has no .txnindex. A damaged index is an error
// matching ErrCorruptTxnIndex, with the entries before the damage.
func (s *Segment) AbortedTxns() ([]AbortedTxn, error) {
	if s.closed {
		return nil, ErrClosed
	}
	return s.txnIndex.entries(s.base, s.nextOffset.Load())
}

// TruncateAbortedTxns removes the entries of the .txnindex whose marker is
// at or above offset, and any damage after the entries it keeps, leaving
// the batches alone: what a rebuild of the entries from offset on starts
// with. It reports whether the file changed.
func (s *Segment) TruncateAbortedTxns(offset int64) (bool, error) {
	if s.closed {
		return false, ErrClosed
	}
	return s.txnIndex.truncate(offset, s.base, s.nextOffset.Load())
}

// TxnIndexErr returns the damage the .txnindex check found when the
// segment was opened or recovered, an error matching ErrCorruptTxnIndex,
// or nil. A damaged index must be rebuilt from the log before it is read.
func (s *Segment) TxnIndexErr() error { return s.txnIndex.err() }

// HasTxnIndex reports whether the segment has a .txnindex file.
func (s *Segment) HasTxnIndex() bool {
	s.txnIndex.mu.Lock()
	defer s.txnIndex.mu.Unlock()
	return s.txnIndex.f != nil
}

// EnsureTxnIndex creates the segment's .txnindex, empty, when it has none,
// so that the file exists whatever its entries: the log cleaner gives every
// cleaned segment one, which tells an interrupted swap's recovery whether
// the cleaned segment's index was already renamed.
func (s *Segment) EnsureTxnIndex() error {
	if s.closed {
		return ErrClosed
	}
	return s.txnIndex.ensure()
}

// SyncTxnIndex makes the .txnindex's entries durable, and its directory
// entry when the file is new; it does nothing when nothing changed since
// the last sync.
func (s *Segment) SyncTxnIndex() error {
	if s.closed {
		return ErrClosed
	}
	return s.txnIndex.sync()
}
