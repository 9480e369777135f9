package log

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/partlog/partlog/segment"
)

// CleanupPolicy is a topic's cleanup.policy: what happens to old records.
type CleanupPolicy uint8

// The cleanup policies, with Kafka's names.
const (
	// CleanupDelete ("delete") removes whole segments once retention.ms
	// or retention.bytes let them go. It is the default.
	CleanupDelete CleanupPolicy = iota
	// CleanupCompact ("compact") keeps the latest record of each key and
	// removes the older ones (Clean); retention.ms and retention.bytes do
	// not apply.
	CleanupCompact
	// CleanupCompactDelete ("compact,delete") does both.
	CleanupCompactDelete
)

// ParseCleanupPolicy parses cleanup.policy: "delete", "compact", or both,
// comma-separated in either order.
func ParseCleanupPolicy(s string) (CleanupPolicy, error) {
	var compact, del bool
	for _, p := range strings.Split(s, ",") {
		switch strings.TrimSpace(p) {
		case "compact":
			compact = true
		case "delete":
			del = true
		default:
			return 0, fmt.Errorf("log: cleanup.policy %q is not delete, compact or both", s)
		}
	}
	switch {
	case compact && del:
		return CleanupCompactDelete, nil
	case compact:
		return CleanupCompact, nil
	}
	return CleanupDelete, nil
}

// Compacts reports whether the policy includes compact.
func (p CleanupPolicy) Compacts() bool { return p == CleanupCompact || p == CleanupCompactDelete }

// Deletes reports whether the policy includes delete.
func (p CleanupPolicy) Deletes() bool { return p == CleanupDelete || p == CleanupCompactDelete }

// String returns the policy as cleanup.policy spells it.
func (p CleanupPolicy) String() string {
	switch p {
	case CleanupDelete:
		return "delete"
	case CleanupCompact:
		return "compact"
	case CleanupCompactDelete:
		return "compact,delete"
	}
	return fmt.Sprintf("CleanupPolicy(%d)", uint8(p))
}

// cleanerDefaults fills in and checks the compaction options.
func (o *Options) cleanerDefaults() error {
	if o.CleanupPolicy > CleanupCompactDelete {
		return fmt.Errorf("log: CleanupPolicy %d is not a policy", o.CleanupPolicy)
	}
	if o.DeleteRetentionMs == 0 {
		o.DeleteRetentionMs = defaultDeleteRetention
	}
	if o.MinCleanableDirtyRatio == 0 {
		o.MinCleanableDirtyRatio = defaultDirtyRatio
	}
	if math.IsNaN(o.MinCleanableDirtyRatio) || o.MinCleanableDirtyRatio > 1 {
		return fmt.Errorf("log: MinCleanableDirtyRatio %v is above 1", o.MinCleanableDirtyRatio)
	}
	if o.MinCompactionLagMs < 0 {
		return fmt.Errorf("log: MinCompactionLagMs %v is negative", o.MinCompactionLagMs)
	}
	if o.FirstDirtyOffset < 0 {
		return fmt.Errorf("log: FirstDirtyOffset %d is negative", o.FirstDirtyOffset)
	}
	return nil
}

// ErrCleanAborted means a clean stopped because the log changed under it:
// retention or truncation removed segments it was rewriting. What it had
// swapped in stays; the next clean starts over from the same first dirty
// offset.
var ErrCleanAborted = errors.New("log: clean aborted: the log changed under the cleaner")

// CleanStats says what a Clean did.
type CleanStats struct {
	// Cleaned is set when the log was dirty enough and a clean ran.
	Cleaned bool
	// FirstDirtyOffset is where the dirty section began: records below it
	// had been compacted before.
	FirstDirtyOffset int64
	// FirstUncleanableOffset is where the cleanable section ended: the
	// active segment, the segment holding the UpTo offset, or the first
	// dirty segment younger than MinCompactionLagMs. After a clean it is
	// the new first dirty offset.
	FirstUncleanableOffset int64
	// DirtyRatio is the dirty bytes' share of the cleanable bytes.
	DirtyRatio float64
	// SegmentsRead and SegmentsWritten count the segments replaced and
	// the cleaned segments that replaced them.
	SegmentsRead, SegmentsWritten int
	// BytesRead and BytesWritten are their sizes.
	BytesRead, BytesWritten int64
	// RecordsRead and RecordsKept count the records of the segments
	// replaced and those kept; TombstonesRemoved counts the tombstones
	// removed because their delete horizon had passed.
	RecordsRead, RecordsKept, TombstonesRemoved int64
	// AbortedRecordsRemoved counts the records of aborted transactions
	// removed, and MarkersRemoved the transaction markers removed once
	// their transactions were empty and their delete horizons had passed.
	AbortedRecordsRemoved, MarkersRemoved int64
}

// CleanBounds are the offsets a clean stays below that only the log's
// owner knows: the partition, which keeps the transactions and the
// producer state.
type CleanBounds struct {
	// UpTo ends the cleanable section: only whole sealed segments ending
	// at or below it are cleaned. A partition passes its last stable
	// offset, as Kafka's cleaner stops at it: nothing of a transaction
	// not yet decided, nor anything after its first offset, is cleaned.
	UpTo int64
	// KeepMarkersFrom keeps every transaction marker at or above it, even
	// once its transaction is empty and its delete horizon has passed. A
	// partition passes the offset of its oldest producer state snapshot:
	// a load from a snapshot taken inside a transaction finds the
	// transaction open, and needs its marker to close it.
	KeepMarkersFrom int64
}

// FirstDirtyOffset returns the offset below which the log has been
// compacted: the log's entry in Kafka's cleaner-offset-checkpoint.
func (l *Log) FirstDirtyOffset() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.firstDirtyLocked()
}

// firstDirtyLocked is FirstDirtyOffset for a caller that holds mu: the
// cleaner's offset, kept within the log's offsets.
func (l *Log) firstDirtyLocked() int64 {
	return min(max(l.cleaning.firstDirty, l.logStartOffset), l.leo.Load())
}

// Clean compacts the log when its policy includes compact, as Kafka's log
// cleaner does, and does nothing otherwise: it is CleanWithin up to upTo
// (pass the last stable offset, or the log end offset when no transaction
// is open), without a bound on the removal of markers, for a log no
// producer state snapshot is loaded with. A partition's log is cleaned by
// the partition (see partition.Partition.Clean), which knows both bounds.
func (l *Log) Clean(ctx context.Context, upTo int64) (CleanStats, error) {
	return l.CleanWithin(ctx, CleanBounds{UpTo: upTo, KeepMarkersFrom: math.MaxInt64})
}

// CleanWithin compacts the log when its policy includes compact, as
// Kafka's log cleaner does, and does nothing otherwise.
//
// Only whole sealed segments ending at or below b.UpTo are cleaned;
// neither the active segment nor a segment from the first dirty one whose
// newest record is younger than MinCompactionLagMs is. The dirty section
// runs from FirstDirtyOffset to there. A clean does nothing unless the
// dirty bytes are at least MinCleanableDirtyRatio of the cleanable bytes.
//
// A clean maps each key of the dirty section to its latest offset, then
// rewrites the cleanable segments, merging neighbours up to SegmentBytes,
// keeping of each key only its latest record. Offsets do not change: a
// cleaned log has gaps. Records without a key go. A tombstone (null value)
// that is the latest of its key stays, and its batch is stamped with a
// delete horizon DeleteRetentionMs ahead (KIP-534); the first clean after
// the horizon removes it. A batch whose records all went stays, empty,
// when it holds its producer's state — its last data batch, whose producer
// ID, epoch and sequence range survive, or its last marker when that
// began a newer epoch — and, as an empty batch of no producer, when it is
// the last batch of a rewritten segment (so that the segment keeps its end
// offset).
//
// Transactions are cleaned as Kafka cleans them: an aborted transaction's
// batches go whatever their keys, and its records never supersede
// another; a committed transaction's records are compacted as any; a
// transaction with no marker in the log stays whole and supersedes
// nothing. A marker stays while a batch of its transaction is in the log;
// once none is, it is stamped with a delete horizon as a tombstone is, and
// the first clean after the horizon removes it, unless it lies at or
// above b.KeepMarkersFrom or holds its producer's epoch. A cleaned segment
// carries the .txnindex entries of the segments it replaces, but those of
// transactions whose batches were all gone when the clean began.
//
// Each cleaned segment is written aside (".cleaned"), made durable, then
// swapped in crash-safely (see Open): appends and reads go on meanwhile,
// blocked only while the segment list changes. A clean returns ctx's
// error when ctx ends first, ErrClosed when the log is closed meanwhile (Close
// stops the clean and waits for it), and ErrCleanAborted when retention or
// truncation changed the segments under it. Before a swap commits, an
// error leaves the log as it was, its .cleaned files removed; a failure
// while swapping fails the log (ErrStorage), and Open completes the swap.
func (l *Log) CleanWithin(ctx context.Context, b CleanBounds) (CleanStats, error) {
	if !l.options().CleanupPolicy.Compacts() {
		return CleanStats{}, nil
	}
	l.cleaning.mu.Lock()
	defer l.cleaning.mu.Unlock()
	if err := l.writable(); err != nil {
		return CleanStats{}, err
	}
	now := l.nowMs()
	p := l.planClean(b.UpTo, now)
	st := CleanStats{FirstDirtyOffset: p.firstDirty, FirstUncleanableOffset: p.firstUncleanable}
	if p.dirtyBytes == 0 {
		return st, nil
	}
	st.DirtyRatio = float64(p.dirtyBytes) / float64(p.cleanBytes+p.dirtyBytes)
	if st.DirtyRatio < max(l.options().MinCleanableDirtyRatio, 0) {
		return st, nil
	}
	st.Cleaned = true
	c := newCleaner(l, now, b, &st)
	if err := c.scanTransactions(ctx, p.all); err != nil {
		return st, l.cleanFailed(p, err)
	}
	if err := c.buildOffsetMap(ctx, p.cleanable[p.dirty:]); err != nil {
		return st, l.cleanFailed(p, err)
	}
	for _, group := range groupSegments(p.cleanable, l.options().SegmentBytes) {
		if err := l.cleanCheck(ctx); err != nil {
			return st, err
		}
		cleaned, err := c.cleanGroup(ctx, group)
		if err != nil {
			return st, l.cleanFailed(p, err)
		}
		if cleaned == nil {
			continue // nothing to remove: the segment stays as it is
		}
		if err := l.swapIn(cleaned, group, p.generation); err != nil {
			return st, err
		}
		st.SegmentsRead += len(group)
		st.SegmentsWritten++
		for _, s := range group {
			st.BytesRead += s.Size()
		}
		st.BytesWritten += cleaned.Size()
	}
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	if l.cleaning.generation != p.generation {
		return st, ErrCleanAborted
	}
	l.mu.Lock()
	l.cleaning.firstDirty = p.firstUncleanable
	l.mu.Unlock()
	l.logger.Info("cleaned log", "first_dirty", p.firstDirty, "first_uncleanable", p.firstUncleanable,
		"dirty_ratio", st.DirtyRatio, "segments_read", st.SegmentsRead, "segments_written", st.SegmentsWritten,
		"bytes_read", st.BytesRead, "bytes_written", st.BytesWritten,
		"aborted_records_removed", st.AbortedRecordsRemoved, "markers_removed", st.MarkersRemoved)
	return st, nil
}

// cleaning is the cleaner's state in a Log.
type cleaning struct {
	// mu serialises cleans.
	mu sync.Mutex
	// firstDirty is the offset below which the log is compacted. Changed
	// under appendMu and Log.mu.
	firstDirty int64
	// generation counts truncations, which invalidate a clean in progress
	// (a segment it rewrites may have been cut). Changed under appendMu.
	generation uint64
	// closing tells a clean in progress to stop: Close waits for it.
	closing atomic.Bool
	// off switches transaction rules off, for tests that show each one
	// matters. Set before the log is used; the zero value is the
	// cleaner as documented.
	off cleanerRules
}

// stopCleaning makes a clean in progress stop at its next segment and waits
// for it, leaving cleaning.mu held. Close calls it.
func (l *Log) stopCleaning() {
	l.cleaning.closing.Store(true)
	l.cleaning.mu.Lock()
}

// cleanCheck says whether a clean may go on.
func (l *Log) cleanCheck(ctx context.Context) error {
	if l.cleaning.closing.Load() {
		return ErrClosed
	}
	return ctx.Err()
}

// noteTruncation records that the log was cut at offset: nothing at or
// above it is compacted any more, and cleans in progress must not swap in.
// The caller holds appendMu.
func (l *Log) noteTruncation(offset int64) {
	l.mu.Lock()
	l.cleaning.generation++
	l.cleaning.firstDirty = min(l.cleaning.firstDirty, offset)
	l.mu.Unlock()
}

// cleanFailed explains an error that stopped a clean: when retention or
// truncation changed the segments under it (closing the ones it read), the
// clean was aborted.
func (l *Log) cleanFailed(p cleanPlan, err error) error {
	if errors.Is(err, ErrClosed) || l.cleanCheck(context.Background()) != nil {
		return err
	}
	l.mu.RLock()
	defer l.mu.RUnlock()
	changed := l.cleaning.generation != p.generation
	for _, s := range p.cleanable {
		changed = changed || !slices.Contains(l.segments, s)
	}
	if changed {
		return fmt.Errorf("%w (%v)", ErrCleanAborted, err)
	}
	return err
}

// cleanPlan is what a clean works on.
type cleanPlan struct {
	all        []*segment.Segment // every segment when the clean started
	cleanable  []*segment.Segment // all[:n]: the segments cleaned
	dirty      int                // cleanable[dirty:] is the dirty section
	generation uint64

	firstDirty, firstUncleanable int64
	cleanBytes, dirtyBytes       int64
}

// planClean finds the clean and dirty sections as Clean describes them.
func (l *Log) planClean(upTo, now int64) cleanPlan {
	l.appendMu.Lock()
	l.mu.RLock()
	p := cleanPlan{all: slices.Clone(l.segments), generation: l.cleaning.generation}
	firstDirty := l.firstDirtyLocked()
	l.mu.RUnlock()
	l.appendMu.Unlock()

	lag := l.options().MinCompactionLagMs.Milliseconds()
	n := 0
	for ; n < len(p.all)-1; n++ {
		s := p.all[n]
		if s.NextOffset() > upTo {
			break
		}
		if dirty := s.NextOffset() > firstDirty; dirty && lag > 0 && s.MaxTimestamp() > now-lag {
			break
		}
	}
	p.cleanable = p.all[:n]
	p.firstUncleanable = p.all[n].BaseOffset()
	p.dirty = n
	for i, s := range p.cleanable {
		if s.NextOffset() > firstDirty {
			p.dirty = i
			break
		}
	}
	p.firstDirty = p.firstUncleanable
	if p.dirty < n {
		p.firstDirty = p.cleanable[p.dirty].BaseOffset()
	}
	for i, s := range p.cleanable {
		if i < p.dirty {
			p.cleanBytes += s.Size()
		} else {
			p.dirtyBytes += s.Size()
		}
	}
	return p
}

// groupSegments splits the segments to clean into runs that each become one
// cleaned segment, as Kafka groups them: neighbours whose sizes add up to
// at most maxBytes and whose offsets stay within the index's 32-bit
// relative range. Empty segments are left out.
func groupSegments(segs []*segment.Segment, maxBytes int64) [][]*segment.Segment {
	var groups [][]*segment.Segment
	for i := 0; i < len(segs); {
		if segs[i].Size() == 0 {
			i++
			continue
		}
		g := []*segment.Segment{segs[i]}
		size := segs[i].Size()
		for i++; i < len(segs); i++ {
			s := segs[i]
			if s.Size() == 0 || size+s.Size() > maxBytes || s.NextOffset()-1-g[0].BaseOffset() > math.MaxInt32 {
				break
			}
			g = append(g, s)
			size += s.Size()
		}
		groups = append(groups, g)
	}
	return groups
}
