package partition

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/partlog/partlog/vfs"
)

// A producer state snapshot holds a partition's producer state as of an
// offset: every batch below it is in the state, none at or above. It is
// named after that offset, as Kafka names its snapshots:
// 00000000000000001234.snapshot. Recovery loads the newest snapshot at or
// below the log end offset and scans only the log above it.
//
// The layout is Kafka's idea — versioned, CRC'd — with every batch of an
// entry kept (Kafka keeps only the last, so its duplicate window shrinks
// to one batch across a restart). Big-endian:
//
//	+---------+-----------+---------------+
//	| version | crc       | producers     |   version 2 (1 is read too); crc
//	| int16   | uint32    | int32 count   |   is CRC-32C of everything after it
//	+---------+-----------+---------------+
//	then per producer, by producer id:
//	+-------------+-------+----------------+-------------------+-------------------+-------------+
//	| producer id | epoch | last timestamp | coordinator epoch | txn first offset  | batches     |
//	| int64       | int16 | int64          | int32 (v2)        | int64 (v2)        | int16 count |
//	+-------------+-------+----------------+-------------------+-------------------+-------------+
//	then per batch, oldest first (at most BatchesPerProducer):
//	+-----------+----------+--------------+-------------+-----------+
//	| first seq | last seq | first offset | last offset | timestamp |
//	| int32     | int32    | int64        | int64       | int64     |
//	+-----------+----------+--------------+-------------+-----------+
//
// Version 2 adds each producer's coordinator epoch (-1 before any marker)
// and the first offset of its open transaction (-1 when none), Kafka's
// coordinator_epoch and current_txn_first_offset; a version 1 entry reads
// with -1 for both.

// SnapshotSuffix ends the name of a producer state snapshot file.
const SnapshotSuffix = ".snapshot"

const (
	snapshotVersion    = 2
	snapshotHeaderSize = 2 + 4 + 4
	snapshotBatchSize  = 4 + 4 + 8 + 8 + 8
)

// snapshotEntrySize returns the size of a producer's fixed fields in a
// snapshot of version v.
func snapshotEntrySize(v uint16) int {
	if v == 1 {
		return 8 + 2 + 8 + 2
	}
	return 8 + 2 + 8 + 4 + 8 + 2
}

// ErrCorruptSnapshot means a producer state snapshot is malformed or fails
// its CRC. Recovery skips such a file and rebuilds from the log.
var ErrCorruptSnapshot = errors.New("partition: corrupt producer state snapshot")

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// SnapshotFileName returns the name of the snapshot as of offset.
func SnapshotFileName(offset int64) string { return fmt.Sprintf("%020d%s", offset, SnapshotSuffix) }

// parseSnapshotFileName returns the offset a snapshot file is named after.
func parseSnapshotFileName(name string) (int64, bool) {
	digits, ok := strings.CutSuffix(name, SnapshotSuffix)
	if !ok || len(digits) != 20 {
		return 0, false
	}
	off, err := strconv.ParseInt(digits, 10, 64)
	return off, err == nil && off >= 0
}

// encodeSnapshot encodes entries (sorted by producer id) in the current
// version.
func encodeSnapshot(entries []ProducerStateEntry) []byte {
	return encodeSnapshotVersion(entries, snapshotVersion)
}

// encodeSnapshotVersion encodes entries in version v, 1 or 2; version 1
// drops the transaction fields.
func encodeSnapshotVersion(entries []ProducerStateEntry, v uint16) []byte {
	size := snapshotHeaderSize
	for i := range entries {
		size += snapshotEntrySize(v) + len(entries[i].Batches)*snapshotBatchSize
	}
	b := make([]byte, snapshotHeaderSize, size)
	binary.BigEndian.PutUint16(b, v)
	binary.BigEndian.PutUint32(b[6:], uint32(len(entries)))
	for i := range entries {
		e := &entries[i]
		b = binary.BigEndian.AppendUint64(b, uint64(e.ProducerID))
		b = binary.BigEndian.AppendUint16(b, uint16(e.ProducerEpoch))
		b = binary.BigEndian.AppendUint64(b, uint64(e.LastTimestamp))
		if v >= 2 {
			b = binary.BigEndian.AppendUint32(b, uint32(e.CoordinatorEpoch))
			b = binary.BigEndian.AppendUint64(b, uint64(e.CurrentTxnFirstOffset))
		}
		b = binary.BigEndian.AppendUint16(b, uint16(len(e.Batches)))
		for _, m := range e.Batches {
			b = binary.BigEndian.AppendUint32(b, uint32(m.FirstSequence))
			b = binary.BigEndian.AppendUint32(b, uint32(m.LastSequence))
			b = binary.BigEndian.AppendUint64(b, uint64(m.FirstOffset))
			b = binary.BigEndian.AppendUint64(b, uint64(m.LastOffset))
			b = binary.BigEndian.AppendUint64(b, uint64(m.Timestamp))
		}
	}
	binary.BigEndian.PutUint32(b[2:], crc32.Checksum(b[6:], castagnoli))
	return b
}

// decodeSnapshot decodes a snapshot of version 1 or 2, checking its CRC and
// its structure: producer ids ascending and non-negative, at most
// BatchesPerProducer batches each, offsets ordered, a transaction's first
// offset -1 or above, nothing left over. It returns the version read.
// Errors match ErrCorruptSnapshot.
func decodeSnapshot(b []byte) ([]ProducerStateEntry, uint16, error) {
	if len(b) < snapshotHeaderSize {
		return nil, 0, fmt.Errorf("%w: %d bytes, shorter than its header", ErrCorruptSnapshot, len(b))
	}
	v := binary.BigEndian.Uint16(b)
	if v != 1 && v != snapshotVersion {
		return nil, v, fmt.Errorf("%w: version %d, this partlog reads 1 and %d", ErrCorruptSnapshot, v, snapshotVersion)
	}
	if want, got := binary.BigEndian.Uint32(b[2:]), crc32.Checksum(b[6:], castagnoli); want != got {
		return nil, v, fmt.Errorf("%w: crc %08x, computed %08x", ErrCorruptSnapshot, want, got)
	}
	entrySize := snapshotEntrySize(v)
	count := int64(int32(binary.BigEndian.Uint32(b[6:])))
	rest := b[snapshotHeaderSize:]
	if count < 0 || count > int64(len(rest)/entrySize) {
		return nil, v, fmt.Errorf("%w: %d producers in %d bytes", ErrCorruptSnapshot, count, len(rest))
	}
	entries := make([]ProducerStateEntry, 0, count)
	for i := int64(0); i < count; i++ {
		if len(rest) < entrySize {
			return nil, v, fmt.Errorf("%w: producer %d truncated", ErrCorruptSnapshot, i)
		}
		e := ProducerStateEntry{
			ProducerID:            int64(binary.BigEndian.Uint64(rest)),
			ProducerEpoch:         int16(binary.BigEndian.Uint16(rest[8:])),
			LastTimestamp:         int64(binary.BigEndian.Uint64(rest[10:])),
			CoordinatorEpoch:      -1,
			CurrentTxnFirstOffset: -1,
		}
		if v >= 2 {
			e.CoordinatorEpoch = int32(binary.BigEndian.Uint32(rest[18:]))
			e.CurrentTxnFirstOffset = int64(binary.BigEndian.Uint64(rest[22:]))
		}
		n := int(int16(binary.BigEndian.Uint16(rest[entrySize-2:])))
		rest = rest[entrySize:]
		switch {
		case e.ProducerID < 0:
			return nil, v, fmt.Errorf("%w: producer id %d", ErrCorruptSnapshot, e.ProducerID)
		case i > 0 && e.ProducerID <= entries[i-1].ProducerID:
			return nil, v, fmt.Errorf("%w: producer id %d after %d", ErrCorruptSnapshot, e.ProducerID, entries[i-1].ProducerID)
		case e.CurrentTxnFirstOffset < -1:
			return nil, v, fmt.Errorf("%w: producer %d transaction at offset %d", ErrCorruptSnapshot, e.ProducerID, e.CurrentTxnFirstOffset)
		case n < 0 || n > BatchesPerProducer:
			return nil, v, fmt.Errorf("%w: producer %d has %d batches", ErrCorruptSnapshot, e.ProducerID, n)
		case len(rest) < n*snapshotBatchSize:
			return nil, v, fmt.Errorf("%w: batches of producer %d truncated", ErrCorruptSnapshot, e.ProducerID)
		}
		if n > 0 {
			e.Batches = make([]BatchMetadata, n)
		}
		for j := range e.Batches {
			m := BatchMetadata{
				FirstSequence: int32(binary.BigEndian.Uint32(rest)),
				LastSequence:  int32(binary.BigEndian.Uint32(rest[4:])),
				FirstOffset:   int64(binary.BigEndian.Uint64(rest[8:])),
				LastOffset:    int64(binary.BigEndian.Uint64(rest[16:])),
				Timestamp:     int64(binary.BigEndian.Uint64(rest[24:])),
			}
			rest = rest[snapshotBatchSize:]
			if m.FirstOffset < 0 || m.LastOffset < m.FirstOffset || j > 0 && m.FirstOffset <= e.Batches[j-1].LastOffset {
				return nil, v, fmt.Errorf("%w: producer %d batch at offsets %d-%d", ErrCorruptSnapshot, e.ProducerID, m.FirstOffset, m.LastOffset)
			}
			e.Batches[j] = m
		}
		entries = append(entries, e)
	}
	if len(rest) != 0 {
		return nil, v, fmt.Errorf("%w: %d bytes after the last producer", ErrCorruptSnapshot, len(rest))
	}
	return entries, v, nil
}

// listSnapshots returns the offsets of the snapshots in dir, ascending.
func listSnapshots(fsys vfs.FS, dir string) ([]int64, error) {
	names, err := fsys.List(dir)
	if err != nil {
		return nil, fmt.Errorf("partition: list snapshots in %s: %w", dir, err)
	}
	var offsets []int64
	for _, name := range names {
		if off, ok := parseSnapshotFileName(name); ok {
			offsets = append(offsets, off)
		}
	}
	slices.Sort(offsets)
	return offsets, nil
}

// readSnapshot reads and decodes the snapshot as of offset.
func readSnapshot(fsys vfs.FS, dir string, offset int64) ([]ProducerStateEntry, error) {
	name := path.Join(dir, SnapshotFileName(offset))
	f, err := fsys.Open(name)
	if err != nil {
		return nil, fmt.Errorf("partition: open %s: %w", name, err)
	}
	defer f.Close()
	size, err := f.Size()
	if err != nil {
		return nil, fmt.Errorf("partition: read %s: %w", name, err)
	}
	if size > 1<<30 {
		return nil, fmt.Errorf("%w: %s is %d bytes", ErrCorruptSnapshot, name, size)
	}
	b := make([]byte, size)
	if n, err := f.ReadAt(b, 0); err != nil && !(errors.Is(err, io.EOF) && n == len(b)) {
		return nil, fmt.Errorf("partition: read %s: %w", name, err)
	}
	entries, _, err := decodeSnapshot(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return entries, nil
}

// writeSnapshot writes the snapshot as of offset durably, then deletes
// every older snapshot but the newest of them.
func writeSnapshot(fsys vfs.FS, dir string, offset int64, entries []ProducerStateEntry) error {
	name := path.Join(dir, SnapshotFileName(offset))
	if err := vfs.WriteFileAtomic(fsys, name, encodeSnapshot(entries)); err != nil {
		return fmt.Errorf("partition: write %s: %w", name, err)
	}
	offsets, err := listSnapshots(fsys, dir)
	if err != nil {
		return err
	}
	var older []int64
	for _, off := range offsets {
		if off < offset {
			older = append(older, off)
		}
	}
	if len(older) > 1 {
		return deleteSnapshots(fsys, dir, older[:len(older)-1])
	}
	return nil
}

// deleteSnapshotsAbove removes the snapshots as of offsets above offset,
// durably, and returns the offsets of the others, ascending.
func deleteSnapshotsAbove(fsys vfs.FS, dir string, offset int64) ([]int64, error) {
	offsets, err := listSnapshots(fsys, dir)
	if err != nil {
		return nil, err
	}
	i := len(offsets)
	for i > 0 && offsets[i-1] > offset {
		i--
	}
	return offsets[:i], deleteSnapshots(fsys, dir, offsets[i:])
}

// deleteSnapshots removes the snapshots as of the given offsets, durably.
func deleteSnapshots(fsys vfs.FS, dir string, offsets []int64) error {
	if len(offsets) == 0 {
		return nil
	}
	for _, off := range offsets {
		if err := fsys.Remove(path.Join(dir, SnapshotFileName(off))); err != nil {
			return fmt.Errorf("partition: delete snapshot: %w", err)
		}
	}
	if err := fsys.SyncDir(dir); err != nil {
		return fmt.Errorf("partition: sync %s: %w", dir, err)
	}
	return nil
}
