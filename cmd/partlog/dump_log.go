package main

// dump-log prints what segment files hold, in the format of Kafka's
// kafka-dump-log.sh (DumpLogSegments), so that output and habits carry over
// from Kafka: a line per batch, optionally a line per record, and the
// entries of the offset and time indexes, which it can also check against
// the log.
//
// Files are read, never written, and streamed: a batch at a time for a
// .log, an entry at a time for an index, so segments of any size work in
// constant memory (plus the largest batch).

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strings"

	"github.com/partlog/partlog/record"
	"github.com/partlog/partlog/segment"
	"github.com/partlog/partlog/vfs"
)

const dumpLogHelp = `Usage: partlog dump-log [flags] FILE...

Dump-log prints segment files in the format of Kafka's kafka-dump-log.sh, to
debug a log that seems corrupt. Files are named as Kafka names them, by their
base offset: 00000000000000000000.log and its .index and .timeindex.

For a .log file it prints a line per record batch: offsets, producer,
flags, position, largest timestamp, size, codec, CRC, and whether the CRC
holds (isvalid). A batch whose CRC fails is printed and the dump goes on; at
bytes that do not frame a batch (a torn write, garbage) it prints how many
bytes are left and stops. --deep-iteration adds a line per record, and
--print-data-log adds each record's key and value, read as UTF-8.

--offsets-decoder reads the records as those of __consumer_offsets (a
segment of one of its partitions) and prints their keys and values decoded,
as Kafka's --offsets-decoder does: a committed offset as

  key: offset_commit::group=g,partition=t-0 payload: offset=5

(",metadata=M" when the commit has some), a group's metadata as

  key: group_metadata::group=g payload: {"protocolType":"consumer","protocol":"range","generationId":1,"assignment":"{member-1=[t-0, t-1]}"}

and a deletion (a tombstone) with the payload <DELETE>.

For a .index file it prints "offset: N position: P" per entry, and for a
.timeindex file "timestamp: T offset: N". With --verify-index-only it prints
no entries but checks each against the .log beside the index instead, as
Kafka does: an offset index entry must give the position of the batch whose
last offset is the entry's offset, and a time index entry must name the last
offset of a batch whose largest timestamp is the entry's, with timestamps
increasing. It prints the mismatches, or "No mismatches in FILE", and fails
when there are any.

Files may also be given with --files, comma-separated, as Kafka takes them.
A file that cannot be dumped is reported and the others are still dumped.
`

// dumpLogOptions are dump-log's flags.
type dumpLogOptions struct {
	printDataLog    bool
	deepIteration   bool
	verifyIndexOnly bool
	// offsetsDecoder prints records' keys and values decoded as records
	// of __consumer_offsets.
	offsetsDecoder bool
}

// runDumpLog runs "partlog dump-log".
func runDumpLog(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("dump-log")
	var files listFlag
	var opts dumpLogOptions
	fs.Var(&files, "files", "comma-separated `list` of files to dump, besides those given as arguments")
	fs.BoolVar(&opts.printDataLog, "print-data-log", false, "print each record's key and value (implies --deep-iteration)")
	fs.BoolVar(&opts.deepIteration, "deep-iteration", false, "print a line for every record, not only for every batch")
	fs.BoolVar(&opts.verifyIndexOnly, "verify-index-only", false, "check index entries against the log instead of printing them")
	fs.BoolVar(&opts.offsetsDecoder, "offsets-decoder", false, "decode records as __consumer_offsets records: committed offsets and group metadata (implies --print-data-log)")
	operands, err := parseFlags(fs, args, dumpLogHelp, stdout)
	if err != nil {
		return err
	}
	if opts.offsetsDecoder {
		opts.printDataLog = true // as in Kafka
	}
	paths := append([]string(files), operands...)
	if len(paths) == 0 {
		return usageErrorf("dump-log", "no files to dump")
	}

	out := bufio.NewWriterSize(stdout, 64<<10)
	var errs []error
	for _, path := range paths {
		if err := dumpFile(out, path, opts); err != nil {
			errs = append(errs, fmt.Errorf("dump-log: %w", err))
		}
		if err := out.Flush(); err != nil {
			return fmt.Errorf("dump-log: write output: %w", err)
		}
	}
	return errors.Join(errs...)
}

// dumpFile dumps one file according to its suffix.
func dumpFile(out *bufio.Writer, path string, opts dumpLogOptions) error {
	fmt.Fprintf(out, "Dumping %s\n", path)
	suffix := filepath.Ext(path)
	switch suffix {
	case segment.LogSuffix, segment.IndexSuffix, segment.TimeIndexSuffix, segment.TxnIndexSuffix:
	default:
		return fmt.Errorf("%s: unsupported file type %q; dump-log reads %s, %s, %s and %s files",
			path, suffix, segment.LogSuffix, segment.IndexSuffix, segment.TimeIndexSuffix, segment.TxnIndexSuffix)
	}
	base, _, ok := segment.ParseFileName(filepath.Base(path))
	if !ok {
		return fmt.Errorf("%s: not a segment file name: want the base offset in 20 digits, as in %s",
			path, segment.FileName(0, suffix))
	}
	switch suffix {
	case segment.LogSuffix:
		return dumpLog(out, path, base, opts)
	case segment.IndexSuffix:
		return dumpOffsetIndex(out, path, base, opts.verifyIndexOnly)
	case segment.TxnIndexSuffix:
		return dumpTxnIndex(out, path, base)
	default:
		return dumpTimeIndex(out, path, base, opts.verifyIndexOnly)
	}
}

// dumpLog prints the batches of the log file at path, and their records when
// opts ask for them.
func dumpLog(out *bufio.Writer, path string, base int64, opts dumpLogOptions) error {
	f, err := vfs.Default.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	size, err := f.Size()
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "Log starting offset: %d\n", base)

	deep := opts.deepIteration || opts.printDataLog
	// ScanBatches rather than ScanVerified: a batch whose CRC fails is
	// printed with isvalid: false and the scan goes on. The scan stops only
	// where the bytes do not frame a batch.
	sc := segment.NewScanner(f, 0, size, segment.ScanBatches)
	for sc.Next() {
		h, b := sc.Header(), sc.Batch()
		valid := crcValid(h, b)
		writeBatch(out, h, sc.Pos(), valid)
		if deep {
			writeRecords(out, h, b, valid, opts.printDataLog, opts.offsetsDecoder)
		}
	}
	err = sc.Err()
	if err == nil {
		return nil
	}
	ce, ok := errors.AsType[*segment.CorruptionError](err)
	if !ok {
		return err // the file could not be read
	}
	fmt.Fprintf(out, "Found %d invalid bytes at the end of %s\n", size-ce.Pos, filepath.Base(path))
	fmt.Fprintf(out, "Invalid bytes start at position %d: %v\n", ce.Pos, ce.Err)
	return nil
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// crcValid reports whether batch b's CRC holds: Kafka's isvalid. Unlike
// record.Validate it looks at nothing else (a batch naming an unknown codec
// is still valid here, as in Kafka's output).
func crcValid(h record.Header, b []byte) bool {
	return crc32.Checksum(b[record.AttributesOffset:], castagnoli) == h.CRC
}

// writeBatch prints a batch's line in DumpLogSegments' format (its
// printBatchLevel for magic 2).
func writeBatch(out *bufio.Writer, h record.Header, pos int64, valid bool) {
	deleteHorizon := "OptionalLong.empty"
	if h.Attributes.HasDeleteHorizon() {
		deleteHorizon = fmt.Sprintf("OptionalLong[%d]", h.BaseTimestamp)
	}
	fmt.Fprintf(out, "baseOffset: %d lastOffset: %d count: %d baseSequence: %d lastSequence: %d"+
		" producerId: %d producerEpoch: %d partitionLeaderEpoch: %d isTransactional: %t isControl: %t"+
		" deleteHorizonMs: %s position: %d %s: %d size: %d magic: %d compresscodec: %s crc: %d isvalid: %t\n",
		h.BaseOffset, h.LastOffset(), h.NumRecords, h.BaseSequence, sequence(h.BaseSequence, h.LastOffsetDelta),
		h.ProducerID, h.ProducerEpoch, h.PartitionLeaderEpoch, h.Attributes.IsTransactional(), h.Attributes.IsControl(),
		deleteHorizon, pos, h.Attributes.TimestampType(), h.MaxTimestamp, h.Size(), h.Magic,
		h.Attributes.Compression(), h.CRC, valid)
}

// sequence returns the sequence number offsetDelta records after
// baseSequence, wrapping past math.MaxInt32 to 0 as producers do, or
// NoSequence when the batch has none (Kafka's DefaultRecordBatch).
func sequence(baseSequence, offsetDelta int32) int32 {
	if baseSequence == record.NoSequence {
		return record.NoSequence
	}
	if baseSequence > math.MaxInt32-offsetDelta {
		return offsetDelta - (math.MaxInt32 - baseSequence) - 1
	}
	return baseSequence + offsetDelta
}

// writeRecords prints a line per record of batch b (DumpLogSegments'
// dumpBatchRecords). The records of a batch whose CRC fails are printed too,
// as Kafka prints them, for whatever they are worth.
func writeRecords(out *bufio.Writer, h record.Header, b []byte, valid bool, printData, offsets bool) {
	if !valid {
		// Decode insists on a valid CRC; give it a copy that has one.
		b = slices.Clone(b)
		binary.BigEndian.PutUint32(b[record.CRCOffset:], crc32.Checksum(b[record.AttributesOffset:], castagnoli))
	}
	batch, err := record.Decode(b)
	if err != nil {
		fmt.Fprintf(out, "| records not readable: %v\n", err)
		return
	}
	for _, r := range batch.Records {
		writeRecord(out, h, r, printData, offsets)
	}
}

// writeRecord prints one record's line (DumpLogSegments' printRecordMetadata
// and printRecordContents).
func writeRecord(out *bufio.Writer, h record.Header, r record.Record, printData, offsets bool) {
	fmt.Fprintf(out, "| offset: %d %s: %d keySize: %d valueSize: %d sequence: %d headerKeys: [",
		r.Offset, h.Attributes.TimestampType(), r.Timestamp, nullableLen(r.Key), nullableLen(r.Value),
		sequence(h.BaseSequence, int32(r.Offset-h.BaseOffset)))
	for i, hd := range r.Headers {
		if i > 0 {
			out.WriteByte(',')
		}
		out.WriteString(hd.Key)
	}
	out.WriteByte(']')
	switch {
	case h.Attributes.IsControl():
		writeControlRecord(out, r)
	case printData && offsets:
		writeOffsetsRecord(out, r)
	case printData:
		if r.Key != nil {
			out.WriteString(" key: ")
			out.WriteString(utf8String(r.Key))
		}
		if r.Value != nil {
			out.WriteString(" payload: ")
			out.WriteString(utf8String(r.Value))
		}
	}
	out.WriteByte('\n')
}

// writeOffsetsRecord prints a record of __consumer_offsets as
// kafka-dump-log.sh --offsets-decoder does: " key: K payload: P" in the
// words of offsetsRecord.dumpKeyValue, or why it does not decode.
func writeOffsetsRecord(out *bufio.Writer, r record.Record) {
	if r.Key == nil {
		out.WriteString(" error: cannot decode a record of __consumer_offsets without a key")
		return
	}
	rec, err := decodeOffsetsRecord(r.Key, r.Value)
	if err != nil {
		fmt.Fprintf(out, " error: cannot decode as a record of __consumer_offsets: %v", err)
		return
	}
	key, payload := rec.dumpKeyValue()
	out.WriteString(" key: ")
	out.WriteString(key)
	out.WriteString(" payload: ")
	out.WriteString(payload)
}

// nullableLen returns the length of b, or -1 when b is null, as Kafka's
// keySize and valueSize do.
func nullableLen(b []byte) int {
	if b == nil {
		return -1
	}
	return len(b)
}

// utf8String returns b as a string with invalid UTF-8 replaced by U+FFFD, as
// Java's new String(b, UTF_8) does for Kafka's StringDecoder.
func utf8String(b []byte) string {
	return strings.ToValidUTF8(string(b), "\uFFFD")
}

// controlTypeNames are Kafka's names for the control record types
// (ControlRecordType) beyond ABORT and COMMIT.
var controlTypeNames = map[record.ControlType]string{
	2: "LEADER_CHANGE",
	3: "SNAPSHOT_HEADER",
	4: "SNAPSHOT_FOOTER",
	5: "KRAFT_VERSION",
	6: "KRAFT_VOTERS",
}

// writeControlRecord prints what a control record holds (DumpLogSegments'
// printControlRecord). Kafka prints the Raft control records as JSON; here
// they get only their type.
func writeControlRecord(out *bufio.Writer, r record.Record) {
	cr, err := record.ParseControlRecord(r)
	switch {
	case err != nil:
		fmt.Fprintf(out, " controlRecord: invalid (%v)", err)
	case cr.Type == record.ControlAbort || cr.Type == record.ControlCommit:
		fmt.Fprintf(out, " endTxnMarker: %s coordinatorEpoch: %d", cr.Type, cr.CoordinatorEpoch)
	default:
		name, ok := controlTypeNames[cr.Type]
		if !ok {
			name = "UNKNOWN"
		}
		fmt.Fprintf(out, " controlType: %s(%d)", name, int16(cr.Type))
	}
}
