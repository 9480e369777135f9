package log_test

import (
	"fmt"
	"testing"

	"pgregory.net/rapid"

	"github.com/partlog/partlog/internal/batchtest"
	plog "github.com/partlog/partlog/log"
	"github.com/partlog/partlog/record"
	"github.com/partlog/partlog/vfs"
)

// modelBatch is a batch as the model sees it: its offsets and values.
type modelBatch struct {
	base   int64
	values []string
}

func (b modelBatch) next() int64 { return b.base + int64(len(b.values)) }

// logModel is the simple truth the log is checked against: the batches
// present, the log start offset, and the offset up to which everything is
// known durable.
type logModel struct {
	batches []modelBatch
	start   int64
	durable int64
	leo     int64
}

func (m *logModel) truncate(offset int64) {
	keep := 0
	for keep < len(m.batches) && m.batches[keep].next() <= offset {
		keep++
	}
	m.batches = m.batches[:keep]
	m.leo = m.start
	if keep > 0 {
		m.leo = m.batches[keep-1].next()
	}
	m.leo = max(m.leo, m.start)
	m.durable = min(m.durable, m.leo)
}

func (m *logModel) dropBelow(start int64) {
	m.start = start
	for len(m.batches) > 0 && m.batches[0].next() <= start {
		m.batches = m.batches[1:]
	}
}

// records returns the model's records from offset on.
func (m *logModel) records(from int64) []string {
	var out []string
	for _, b := range m.batches {
		for i, v := range b.values {
			if b.base+int64(i) >= from {
				out = append(out, v)
			}
		}
	}
	return out
}

// logMachine drives a Log on an in-memory filesystem and the model side by
// side.
type logMachine struct {
	mem   *vfs.MemFS
	opts  plog.Options
	log   *plog.Log
	model logModel
	tags  int
}

func (s *logMachine) reopen(t *rapid.T, fsys *vfs.MemFS) {
	s.mem = fsys
	s.opts.FS = fsys
	s.opts.LogStartOffset = s.model.start
	l, err := plog.Open(dir, s.opts)
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	s.log = l
}

func (s *logMachine) Append(t *rapid.T) {
	n := rapid.IntRange(1, 8).Draw(t, "records")
	size := rapid.IntRange(0, 300).Draw(t, "value size")
	s.tags++
	tag := fmt.Sprint("t", s.tags)
	b := batchtest.Build(batchtest.Spec{Records: n, ValueSize: size, Tag: tag, Epoch: -1})
	info, err := s.log.Append(b)
	if err != nil {
		t.Fatalf("append: %v", err)
	}
	if info.FirstOffset != s.model.leo {
		t.Fatalf("append at %d, model expects %d", info.FirstOffset, s.model.leo)
	}
	mb := modelBatch{base: s.model.leo}
	for i := range n {
		mb.values = append(mb.values, string(batchtest.Value(tag, i, size)))
	}
	s.model.batches = append(s.model.batches, mb)
	s.model.leo = mb.next()
	if s.opts.SyncBeforeAck {
		s.model.durable = s.model.leo
	}
}

func (s *logMachine) Read(t *rapid.T) {
	off := rapid.Int64Range(s.model.start-1, s.model.leo+1).Draw(t, "offset")
	maxBytes := rapid.IntRange(1, 5000).Draw(t, "max bytes")
	got, err := s.log.Read(nil, off, 1<<62, maxBytes)
	if off < s.model.start || off > s.model.leo {
		if err == nil {
			t.Fatalf("read at %d outside [%d, %d] succeeded", off, s.model.start, s.model.leo)
		}
		return
	}
	if err != nil {
		t.Fatalf("read at %d: %v", off, err)
	}
	var values []string
	for len(got) > 0 {
		b, err := record.Decode(got[:mustHeader(t, got).Size()])
		if err != nil {
			t.Fatalf("decode: %v", err)
		}
		for _, r := range b.Records {
			if r.Offset >= off {
				values = append(values, string(r.Value))
			}
		}
		got = got[b.Size():]
	}
	want := s.model.records(off)
	if off < s.model.leo && len(values) == 0 {
		t.Fatalf("read at %d returned nothing, %d records there", off, len(want))
	}
	if len(values) > len(want) || fmt.Sprint(values) != fmt.Sprint(want[:len(values)]) {
		t.Fatalf("read at %d: got %q, want a prefix of %q", off, values, want)
	}
}

func mustHeader(t *rapid.T, b []byte) record.Header {
	h, err := record.ParseHeader(b)
	if err != nil {
		t.Fatalf("header: %v", err)
	}
	return h
}

func (s *logMachine) Truncate(t *rapid.T) {
	off := rapid.Int64Range(max(s.model.start-2, 0), s.model.leo).Draw(t, "offset")
	if err := s.log.TruncateTo(off); err != nil {
		t.Fatalf("truncate to %d: %v", off, err)
	}
	if off < s.model.start {
		s.model = logModel{start: off, leo: off, durable: off}
		return
	}
	s.model.truncate(off)
}

func (s *logMachine) DeleteRecords(t *rapid.T) {
	off := rapid.Int64Range(s.model.start, s.model.leo).Draw(t, "offset")
	if err := s.log.DeleteRecordsBefore(off); err != nil {
		t.Fatalf("delete records before %d: %v", off, err)
	}
	s.model.dropBelow(off)
}

func (s *logMachine) Retain(t *rapid.T) {
	if _, err := s.log.DeleteRetained(); err != nil {
		t.Fatalf("retention: %v", err)
	}
	start := s.log.LogStartOffset()
	if start < s.model.start || start > s.model.leo {
		t.Fatalf("retention moved the start to %d, outside [%d, %d]", start, s.model.start, s.model.leo)
	}
	// Kafka's rule: the oldest segment stays only if deleting it would
	// take the log below retention.bytes (or it is the active one).
	if segs := s.log.Segments(); len(segs) > 1 && s.log.Size()-segs[0].Size >= s.opts.RetentionBytes {
		t.Fatalf("log of %d bytes kept its oldest segment of %d bytes, retention.bytes %d", s.log.Size(), segs[0].Size, s.opts.RetentionBytes)
	}
	s.model.dropBelow(start)
}

func (s *logMachine) Flush(t *rapid.T) {
	if err := s.log.Flush(); err != nil {
		t.Fatalf("flush: %v", err)
	}
	s.model.durable = s.model.leo
}

func (s *logMachine) Reopen(t *rapid.T) {
	if err := s.log.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	s.model.durable = s.model.leo
	s.reopen(t, s.mem)
}

func (s *logMachine) Kill(t *rapid.T) {
	crashed := s.mem.CrashClone(vfs.CrashOptions{KeepUnsynced: vfs.KeepAll})
	s.log.Close()
	s.reopen(t, crashed)
	if got := s.log.LogEndOffset(); got != s.model.leo {
		t.Fatalf("after kill -9 the log ends at %d, model at %d", got, s.model.leo)
	}
	s.model.durable = s.model.leo
}

func (s *logMachine) PowerLoss(t *rapid.T) {
	seed := rapid.Int64().Draw(t, "seed")
	crashed := s.mem.CrashClone(vfs.CrashOptions{Seed: seed, KeepUnsynced: vfs.KeepRandomPrefix, Tear: vfs.TearGarbage})
	s.log.Close()
	s.reopen(t, crashed)
	leo := s.log.LogEndOffset()
	if leo < s.model.durable || leo > s.model.leo {
		t.Fatalf("after power loss the log ends at %d; durable %d, written %d", leo, s.model.durable, s.model.leo)
	}
	s.model.truncate(leo)
	s.model.durable = leo
}

// Check compares everything observable with the model after each step.
func (s *logMachine) Check(t *rapid.T) {
	if s.log.LogStartOffset() != s.model.start || s.log.LogEndOffset() != s.model.leo {
		t.Fatalf("log [%d, %d), model [%d, %d)", s.log.LogStartOffset(), s.log.LogEndOffset(), s.model.start, s.model.leo)
	}
	if s.log.RecoveryPoint() < s.model.durable {
		t.Fatalf("recovery point %d below what was flushed, %d", s.log.RecoveryPoint(), s.model.durable)
	}
	var values []string
	for off := s.model.start; off < s.model.leo; {
		got, err := s.log.Read(nil, off, 1<<62, 1<<20)
		if err != nil {
			t.Fatalf("read all at %d: %v", off, err)
		}
		if len(got) == 0 {
			t.Fatalf("read at %d returned nothing below the log end offset %d", off, s.model.leo)
		}
		for len(got) > 0 {
			h := mustHeader(t, got)
			b, err := record.Decode(got[:h.Size()])
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			for _, r := range b.Records {
				if r.Offset >= off {
					values = append(values, string(r.Value))
				}
			}
			off = h.NextOffset()
			got = got[h.Size():]
		}
	}
	if want := s.model.records(s.model.start); fmt.Sprint(values) != fmt.Sprint(want) {
		t.Fatalf("log holds %q, model %q", values, want)
	}
}

func logModelProperty(t *rapid.T) {
	mem := vfs.NewMem()
	if err := mem.MkdirAll("/data", 0o755); err != nil {
		t.Fatal(err)
	}
	mem.SyncDir("/")
	s := &logMachine{opts: plog.Options{
		SegmentBytes: 2048, IndexIntervalBytes: 200, MaxIndexBytes: 256,
		RetentionBytes: 4000, RetentionMs: -1,
		SyncBeforeAck: rapid.Bool().Draw(t, "sync before ack"),
	}}
	s.reopen(t, mem)
	defer func() { s.log.Close() }()
	t.Repeat(rapid.StateMachineActions(s))
}

// TestLogModel runs random sequences of appends, reads, truncations,
// retention, flushes, clean restarts, kills and power losses against the
// model (the storage issue's property test; test 33 of the plan).
func TestLogModel(t *testing.T) {
	rapid.Check(t, logModelProperty)
}

// FuzzLogModel drives the same property from the fuzzer's bytes.
func FuzzLogModel(f *testing.F) {
	f.Fuzz(rapid.MakeFuzz(logModelProperty))
}
