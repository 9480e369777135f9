package log

import (
	"fmt"
	"path"
	"strconv"

	"github.com/partlog/partlog/vfs"
)

// EpochFileName is the leader epoch checkpoint in a partition directory.
const EpochFileName = "leader-epoch-checkpoint"

// UndefinedEpoch is the epoch of a batch written by no leader (Kafka's -1).
const UndefinedEpoch int32 = -1

// EpochEntry says that leader epoch Epoch wrote its first batch at
// StartOffset.
type EpochEntry struct {
	// Epoch is the leader epoch.
	Epoch int32
	// StartOffset is the offset of the epoch's first batch in the log.
	StartOffset int64
}

// epochCache is Kafka's leader epoch cache: for each epoch that wrote to the
// log, the offset where it started, epochs and offsets both increasing. It is
// kept in leader-epoch-checkpoint, rewritten on every change, and rebuilt
// from batch headers by recovery.
type epochCache struct {
	fs      vfs.FS
	path    string
	entries []EpochEntry
}

func newEpochCache(fsys vfs.FS, dir string) *epochCache {
	return &epochCache{fs: fsys, path: path.Join(dir, EpochFileName)}
}

// load reads the checkpoint. It reports false when the file was malformed
// or not increasing, in which case the cache is empty and must be rebuilt
// from every batch of the log.
func (c *epochCache) load() (ok bool, err error) {
	c.entries = nil
	lines, err := readCheckpoint(c.fs, c.path, 2)
	if err != nil {
		return false, nil
	}
	for _, l := range lines {
		epoch, err1 := strconv.ParseInt(l[0], 10, 32)
		start, err2 := parseInt64(l[1])
		if err1 != nil || err2 != nil || epoch < 0 || start < 0 {
			c.entries = nil
			return false, nil
		}
		if n := len(c.entries); n > 0 && (int32(epoch) <= c.entries[n-1].Epoch || start < c.entries[n-1].StartOffset) {
			c.entries = nil
			return false, nil
		}
		c.entries = append(c.entries, EpochEntry{Epoch: int32(epoch), StartOffset: start})
	}
	return true, nil
}

// latest returns the newest entry.
func (c *epochCache) latest() (EpochEntry, bool) {
	if len(c.entries) == 0 {
		return EpochEntry{Epoch: UndefinedEpoch, StartOffset: -1}, false
	}
	return c.entries[len(c.entries)-1], true
}

// assign records that epoch wrote a batch at offset and reports whether the
// cache changed. An entry that conflicts — an epoch at or above epoch, or a
// start offset at or above offset — is removed first, as in Kafka.
func (c *epochCache) assign(epoch int32, offset int64) bool {
	if epoch < 0 {
		return false
	}
	if last, ok := c.latest(); ok && last.Epoch == epoch && last.StartOffset <= offset {
		return false
	}
	keep := len(c.entries)
	for keep > 0 && (c.entries[keep-1].Epoch >= epoch || c.entries[keep-1].StartOffset >= offset) {
		keep--
	}
	c.entries = append(c.entries[:keep], EpochEntry{Epoch: epoch, StartOffset: offset})
	return true
}

// truncateFromEnd removes the entries that start at or after endOffset.
func (c *epochCache) truncateFromEnd(endOffset int64) bool {
	keep := len(c.entries)
	for keep > 0 && c.entries[keep-1].StartOffset >= endOffset {
		keep--
	}
	changed := keep != len(c.entries)
	c.entries = c.entries[:keep]
	return changed
}

// truncateFromStart drops the entries wholly below startOffset; the last
// of them, still covering startOffset, moves up to start there.
func (c *epochCache) truncateFromStart(startOffset int64) bool {
	i := 0
	for i < len(c.entries) && c.entries[i].StartOffset < startOffset {
		i++
	}
	if i == 0 {
		return false
	}
	covering := c.entries[i-1]
	covering.StartOffset = startOffset
	c.entries = append([]EpochEntry{covering}, c.entries[i:]...)
	return true
}

// clear removes every entry.
func (c *epochCache) clear() bool {
	changed := len(c.entries) > 0
	c.entries = nil
	return changed
}

// endOffsetFor answers OffsetsForLeaderEpoch as Kafka does (KIP-101 and
// KIP-279): the largest epoch at or below epoch that this log knows, and the
// offset where it ended — the start of the next epoch, or leo for the
// latest. An epoch below the first known answers epoch itself with the first
// entry's start offset; one above the latest, or an empty cache, answers
// UndefinedEpoch and -1.
func (c *epochCache) endOffsetFor(epoch int32, leo int64) (int32, int64) {
	last, ok := c.latest()
	switch {
	case epoch == UndefinedEpoch || !ok:
		return UndefinedEpoch, -1
	case epoch == last.Epoch:
		return epoch, leo
	case epoch > last.Epoch:
		return UndefinedEpoch, -1
	}
	// The first entry above epoch ends it; the one before it (if any) is
	// the epoch answered.
	i := 0
	for c.entries[i].Epoch <= epoch {
		i++
	}
	if i == 0 {
		return epoch, c.entries[0].StartOffset
	}
	return c.entries[i-1].Epoch, c.entries[i].StartOffset
}

// flush rewrites the checkpoint atomically.
func (c *epochCache) flush() error {
	lines := make([][]string, len(c.entries))
	for i, e := range c.entries {
		lines[i] = []string{strconv.FormatInt(int64(e.Epoch), 10), strconv.FormatInt(e.StartOffset, 10)}
	}
	if err := writeFileAtomic(c.fs, c.path, formatCheckpoint(lines)); err != nil {
		return fmt.Errorf("log: write leader epoch checkpoint: %w", err)
	}
	return nil
}

func (c *epochCache) snapshot() []EpochEntry {
	return append([]EpochEntry(nil), c.entries...)
}
