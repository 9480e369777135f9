package main

// The index half of dump-log: printing the entries of .index and .timeindex
// files, and checking them against their log with --verify-index-only.
//
// Index files are decoded here rather than opened with package index, whose
// Open functions map a file read-write and create it when it is missing: a
// dump must work on a read-only copy and must not leave files behind.

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/partlog/partlog/index"
	"github.com/partlog/partlog/record"
	"github.com/partlog/partlog/segment"
	"github.com/partlog/partlog/vfs"
)

// indexFile is an open index file of fixed-size entries.
type indexFile struct {
	f         vfs.File
	path      string
	entrySize int
	relOffset int   // where an entry's relative offset (uint32) is
	entries   int64 // whole entries in the file
	extra     int64 // bytes after the last whole entry
}

// Where each index's entries hold their relative offset.
const (
	offsetIndexRelOffset = 0
	timeIndexRelOffset   = 8
)

func openIndexFile(path string, entrySize, relOffset int) (*indexFile, error) {
	f, err := vfs.Default.Open(path)
	if err != nil {
		return nil, err
	}
	size, err := f.Size()
	if err != nil {
		f.Close()
		return nil, err
	}
	es := int64(entrySize)
	return &indexFile{f: f, path: path, entrySize: entrySize, relOffset: relOffset, entries: size / es, extra: size % es}, nil
}

// each calls fn with every whole entry in order until fn returns false. The
// entry's bytes are valid only during the call. Entries after the first that
// hold the base offset (relative offset 0) are the zeros of a preallocated
// file that was never trimmed, as a crash of the active segment leaves it;
// each stops at them, as Kafka's tool does.
func (x *indexFile) each(fn func(e []byte) bool) error {
	r := bufio.NewReaderSize(io.NewSectionReader(x.f, 0, x.entries*int64(x.entrySize)), 64<<10)
	e := make([]byte, x.entrySize)
	for i := range x.entries {
		if _, err := io.ReadFull(r, e); err != nil {
			return fmt.Errorf("read %s: %w", x.path, err)
		}
		if i > 0 && binary.BigEndian.Uint32(e[x.relOffset:]) == 0 {
			return nil
		}
		if !fn(e) {
			return nil
		}
	}
	return nil
}

// sizeErr reports a file that does not hold a whole number of entries.
func (x *indexFile) sizeErr() error {
	if x.extra == 0 {
		return nil
	}
	return fmt.Errorf("%s: corrupt index: its size, %d bytes, is not a multiple of the entry size %d; the last %d bytes were ignored",
		x.path, x.entries*int64(x.entrySize)+x.extra, x.entrySize, x.extra)
}

// offsetEntry decodes an offset index entry of a segment based at base.
func offsetEntry(e []byte, base int64) index.OffsetPosition {
	return index.OffsetPosition{
		Offset: base + int64(binary.BigEndian.Uint32(e[offsetIndexRelOffset:])),
		Pos:    int64(binary.BigEndian.Uint32(e[4:8])),
	}
}

// timeEntry decodes a time index entry of a segment based at base.
func timeEntry(e []byte, base int64) index.TimestampOffset {
	return index.TimestampOffset{
		Timestamp: int64(binary.BigEndian.Uint64(e[0:8])),
		Offset:    base + int64(binary.BigEndian.Uint32(e[timeIndexRelOffset:])),
	}
}

// dumpOffsetIndex prints the entries of the offset index at path, or with
// verify checks each against the log: the entry's position must hold a batch
// whose last offset is the entry's offset.
func dumpOffsetIndex(out *bufio.Writer, path string, base int64, verify bool) error {
	x, err := openIndexFile(path, index.OffsetEntrySize, offsetIndexRelOffset)
	if err != nil {
		return err
	}
	defer x.f.Close()
	if x.entries == 0 {
		fmt.Fprintf(out, "%s is empty.\n", path)
		return x.sizeErr()
	}
	if !verify {
		err := x.each(func(e []byte) bool {
			ent := offsetEntry(e, base)
			fmt.Fprintf(out, "offset: %d position: %d\n", ent.Offset, ent.Pos)
			return true
		})
		return errors.Join(err, x.sizeErr())
	}

	lg, err := openLogBeside(path, base)
	if err != nil {
		return err
	}
	defer lg.f.Close()
	type mismatch struct{ indexOffset, logOffset int64 }
	var mismatches []mismatch
	var readErr error
	err = x.each(func(e []byte) bool {
		ent := offsetEntry(e, base)
		last, err := lg.lastOffsetAt(ent.Pos)
		if err != nil {
			readErr = err
			return false
		}
		if last != ent.Offset {
			mismatches = append(mismatches, mismatch{ent.Offset, last})
		}
		return true
	})
	if err := errors.Join(err, readErr); err != nil {
		return err
	}
	if len(mismatches) == 0 {
		fmt.Fprintf(out, "No mismatches in %s\n", path)
		return x.sizeErr()
	}
	fmt.Fprintf(out, "Mismatches in :%s\n", path)
	for _, m := range mismatches {
		fmt.Fprintf(out, "  Index offset: %d, log offset: %d\n", m.indexOffset, m.logOffset)
	}
	return errors.Join(fmt.Errorf("%s: %d %s not match %s", path, len(mismatches), entriesDo(len(mismatches)), lg.path), x.sizeErr())
}

// dumpTimeIndex prints the entries of the time index at path, or with verify
// checks each against the log, as Kafka does: the entry's offset must be the
// last offset of a batch, that batch's largest timestamp must be the entry's
// timestamp, and timestamps must increase from entry to entry.
func dumpTimeIndex(out *bufio.Writer, path string, base int64, verify bool) error {
	x, err := openIndexFile(path, index.TimeEntrySize, timeIndexRelOffset)
	if err != nil {
		return err
	}
	defer x.f.Close()
	if x.entries == 0 {
		fmt.Fprintf(out, "%s is empty.\n", path)
		return x.sizeErr()
	}
	if !verify {
		err := x.each(func(e []byte) bool {
			ent := timeEntry(e, base)
			fmt.Fprintf(out, "timestamp: %d offset: %d\n", ent.Timestamp, ent.Offset)
			return true
		})
		return errors.Join(err, x.sizeErr())
	}

	lg, err := openLogBeside(path, base)
	if err != nil {
		return err
	}
	defer lg.f.Close()
	type pair struct{ a, b int64 }
	var (
		wrongTimestamp []pair // index timestamp, log timestamp
		outOfOrder     []pair // index timestamp, previous index timestamp
		notFound       []pair // index offset, last offset of the batch found, or -1
		badEntries     int
		readErr        error
	)
	prevTimestamp := int64(record.NoTimestamp)
	err = x.each(func(e []byte) bool {
		ent := timeEntry(e, base)
		h, found, err := lg.find(ent.Offset)
		if err != nil {
			readErr = err
			return false
		}
		bad := false
		switch {
		case !found:
			notFound = append(notFound, pair{ent.Offset, -1})
			bad = true
		case h.LastOffset() != ent.Offset:
			notFound = append(notFound, pair{ent.Offset, h.LastOffset()})
			bad = true
		default:
			if h.MaxTimestamp != ent.Timestamp {
				wrongTimestamp = append(wrongTimestamp, pair{ent.Timestamp, h.MaxTimestamp})
				bad = true
			}
			if prevTimestamp >= ent.Timestamp {
				outOfOrder = append(outOfOrder, pair{ent.Timestamp, prevTimestamp})
				bad = true
			}
		}
		if bad {
			badEntries++
		}
		prevTimestamp = ent.Timestamp
		return true
	})
	if err := errors.Join(err, readErr); err != nil {
		return err
	}
	if badEntries == 0 {
		fmt.Fprintf(out, "No mismatches in %s\n", path)
		return x.sizeErr()
	}
	if len(wrongTimestamp) > 0 {
		fmt.Fprintf(out, "Found timestamp mismatch in :%s\n", path)
		for _, p := range wrongTimestamp {
			fmt.Fprintf(out, "  Index timestamp: %d, log timestamp: %d\n", p.a, p.b)
		}
	}
	if len(outOfOrder) > 0 {
		fmt.Fprintf(out, "Found out of order timestamp in :%s\n", path)
		for _, p := range outOfOrder {
			fmt.Fprintf(out, "  Index timestamp: %d, Previously indexed timestamp: %d\n", p.a, p.b)
		}
	}
	if len(notFound) > 0 {
		fmt.Fprintln(out, "The following indexed offsets are not found in the log.")
		for _, p := range notFound {
			fmt.Fprintf(out, "Indexed offset: %d, found log offset: %d\n", p.a, p.b)
		}
	}
	return errors.Join(fmt.Errorf("%s: %d %s not match %s", path, badEntries, entriesDo(badEntries), lg.path), x.sizeErr())
}

func entriesDo(n int) string {
	if n == 1 {
		return "entry does"
	}
	return "entries do"
}

// logFile is the log an index is checked against.
type logFile struct {
	f    vfs.File
	path string
	size int64

	// The time index check walks the log with sc, keeping the batch it
	// stopped at and the offset it looked for.
	sc     *segment.Scanner
	cur    record.Header
	hasCur bool
	sought int64
}

// openLogBeside opens the log file of the segment whose index is at
// indexPath.
func openLogBeside(indexPath string, base int64) (*logFile, error) {
	path := filepath.Join(filepath.Dir(indexPath), segment.FileName(base, segment.LogSuffix))
	f, err := vfs.Default.Open(path)
	if err != nil {
		return nil, fmt.Errorf("verify %s: %w", indexPath, err)
	}
	size, err := f.Size()
	if err != nil {
		f.Close()
		return nil, err
	}
	return &logFile{f: f, path: path, size: size}, nil
}

// lastOffsetAt returns the last offset of the batch at pos, or -1 when the
// bytes there are not a whole batch.
func (l *logFile) lastOffsetAt(pos int64) (int64, error) {
	if pos+record.HeaderSize > l.size {
		return -1, nil
	}
	var b [record.HeaderSize]byte
	if _, err := l.f.ReadAt(b[:], pos); err != nil {
		if errors.Is(err, io.EOF) {
			return -1, nil // the file shrank
		}
		return 0, err
	}
	h, err := record.ParseHeader(b[:])
	if err != nil || pos+int64(h.Size()) > l.size {
		return -1, nil
	}
	return h.LastOffset(), nil
}

// find returns the header of the first batch whose last offset is at or
// above offset; found is false when the log has none (before bytes that do
// not frame a batch). Looking for increasing offsets reads the log once;
// looking for a smaller offset than last time starts over.
func (l *logFile) find(offset int64) (h record.Header, found bool, err error) {
	if l.sc == nil || offset < l.sought {
		l.sc = segment.NewScanner(l.f, 0, l.size, segment.ScanHeaders)
		l.hasCur = false
	}
	l.sought = offset
	for !l.hasCur || l.cur.LastOffset() < offset {
		if !l.sc.Next() {
			l.hasCur = false
			if err := l.sc.Err(); err != nil && !errors.Is(err, segment.ErrCorrupt) {
				return record.Header{}, false, err
			}
			return record.Header{}, false, nil
		}
		l.cur, l.hasCur = l.sc.Header(), true
	}
	return l.cur, true, nil
}

// dumpTxnIndex prints the aborted transactions of the .txnindex at path,
// a line each as Kafka's DumpLogSegments prints them, up to the first
// damaged entry, which is reported.
func dumpTxnIndex(out *bufio.Writer, path string, base int64) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if len(data) == 0 {
		fmt.Fprintf(out, "%s is empty.\n", path)
		return nil
	}
	txns, err := segment.DecodeTxnIndex(data, base)
	for _, e := range txns {
		fmt.Fprintf(out, "version: 0 producerId: %d firstOffset: %d lastOffset: %d lastStableOffset: %d\n",
			e.ProducerID, e.FirstOffset, e.LastOffset, e.LastStableOffset)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}
