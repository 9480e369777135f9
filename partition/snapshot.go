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
//	| version | crc       | producers     |   version 1; crc is CRC-32C
//	| int16   | uint32    | int32 count   |   of everything after it
//	+---------+-----------+---------------+
//	then per producer, by producer id:
//	+-------------+-------+----------------+-------------+
//	| producer id | epoch | last timestamp | batches     |
//	| int64       | int16 | int64          | int16 count |
//	+-------------+-------+----------------+-------------+
//	then per batch, oldest first (at most BatchesPerProducer):
//	+-----------+----------+--------------+-------------+-----------+
//	| first seq | last seq | first offset | last offset | timestamp |
//	| int32     | int32    | int64        | int64       | int64     |
//	+-----------+----------+--------------+-------------+-----------+

// SnapshotSuffix ends the name of a producer state snapshot file.
const SnapshotSuffix = ".snapshot"

const (
	snapshotVersion    = 1
	snapshotHeaderSize = 2 + 4 + 4
	snapshotEntrySize  = 8 + 2 + 8 + 2
	snapshotBatchSize  = 4 + 4 + 8 + 8 + 8
)

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

// encodeSnapshot encodes entries (sorted by producer id).
func encodeSnapshot(entries []ProducerStateEntry) []byte {
	size := snapshotHeaderSize
	for i := range entries {
		size += snapshotEntrySize + len(entries[i].Batches)*snapshotBatchSize
	}
	b := make([]byte, snapshotHeaderSize, size)
	binary.BigEndian.PutUint16(b, snapshotVersion)
	binary.BigEndian.PutUint32(b[6:], uint32(len(entries)))
	for i := range entries {
		e := &entries[i]
		b = binary.BigEndian.AppendUint64(b, uint64(e.ProducerID))
		b = binary.BigEndian.AppendUint16(b, uint16(e.ProducerEpoch))
		b = binary.BigEndian.AppendUint64(b, uint64(e.LastTimestamp))
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

// decodeSnapshot decodes a snapshot, checking its CRC and its structure:
// producer ids ascending and non-negative, at most BatchesPerProducer
// batches each, offsets ordered, nothing left over. Errors match
// ErrCorruptSnapshot.
func decodeSnapshot(b []byte) ([]ProducerStateEntry, error) {
	if len(b) < snapshotHeaderSize {
		return nil, fmt.Errorf("%w: %d bytes, shorter than its header", ErrCorruptSnapshot, len(b))
	}
	if v := binary.BigEndian.Uint16(b); v != snapshotVersion {
		return nil, fmt.Errorf("%w: version %d, this partlog reads %d", ErrCorruptSnapshot, v, snapshotVersion)
	}
	if want, got := binary.BigEndian.Uint32(b[2:]), crc32.Checksum(b[6:], castagnoli); want != got {
		return nil, fmt.Errorf("%w: crc %08x, computed %08x", ErrCorruptSnapshot, want, got)
	}
	count := int64(int32(binary.BigEndian.Uint32(b[6:])))
	rest := b[snapshotHeaderSize:]
	if count < 0 || count > int64(len(rest)/snapshotEntrySize) {
		return nil, fmt.Errorf("%w: %d producers in %d bytes", ErrCorruptSnapshot, count, len(rest))
	}
	entries := make([]ProducerStateEntry, 0, count)
	for i := int64(0); i < count; i++ {
		if len(rest) < snapshotEntrySize {
			return nil, fmt.Errorf("%w: producer %d truncated", ErrCorruptSnapshot, i)
		}
		e := ProducerStateEntry{
			ProducerID:    int64(binary.BigEndian.Uint64(rest)),
			ProducerEpoch: int16(binary.BigEndian.Uint16(rest[8:])),
			LastTimestamp: int64(binary.BigEndian.Uint64(rest[10:])),
		}
		n := int(int16(binary.BigEndian.Uint16(rest[18:])))
		rest = rest[snapshotEntrySize:]
		switch {
		case e.ProducerID < 0:
			return nil, fmt.Errorf("%w: producer id %d", ErrCorruptSnapshot, e.ProducerID)
		case i > 0 && e.ProducerID <= entries[i-1].ProducerID:
			return nil, fmt.Errorf("%w: producer id %d after %d", ErrCorruptSnapshot, e.ProducerID, entries[i-1].ProducerID)
		case n < 0 || n > BatchesPerProducer:
			return nil, fmt.Errorf("%w: producer %d has %d batches", ErrCorruptSnapshot, e.ProducerID, n)
		case len(rest) < n*snapshotBatchSize:
			return nil, fmt.Errorf("%w: batches of producer %d truncated", ErrCorruptSnapshot, e.ProducerID)
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
				return nil, fmt.Errorf("%w: producer %d batch at offsets %d-%d", ErrCorruptSnapshot, e.ProducerID, m.FirstOffset, m.LastOffset)
			}
			e.Batches[j] = m
		}
		entries = append(entries, e)
	}
	if len(rest) != 0 {
		return nil, fmt.Errorf("%w: %d bytes after the last producer", ErrCorruptSnapshot, len(rest))
	}
	return entries, nil
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
	entries, err := decodeSnapshot(b)
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
