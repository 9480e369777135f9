package segment_test

import (
	"bytes"
	"testing"

	"github.com/partlog/partlog/segment"
)

// FuzzRecover writes valid batches, then appends fuzzed bytes or splices
// them over the log, and recovers (test 30 of the reliability plan):
// recovery never panics, keeps every batch before the first damaged byte
// exactly, and is idempotent; the next append lands after what was kept.
func FuzzRecover(f *testing.F) {
	f.Add([]byte("garbage"), uint16(0), false)
	f.Add(make([]byte, 100), uint16(0), false)
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 9, 0, 0, 0, 60, 0, 0, 0, 0, 2}, uint16(0), false)
	f.Add([]byte{0xff}, uint16(300), true)
	f.Add([]byte{0, 0, 0, 0}, uint16(8), true)
	f.Fuzz(func(t *testing.T, junk []byte, at uint16, splice bool) {
		fsys := newFS(t)
		batches := written(t, fsys, 4)
		end := batches[3].pos + int64(len(batches[3].bytes))
		damage := end
		if splice && len(junk) > 0 {
			damage = int64(at) % end
			writeAt(t, fsys, logPath, junk, damage)
		} else {
			writeAt(t, fsys, logPath, junk, end)
		}
		// Batches wholly before the first changed byte must survive.
		intact := 0
		for _, b := range batches {
			if b.pos+int64(len(b.bytes)) <= damage {
				intact++
			}
		}
		s, r := recovered(t, fsys)
		defer s.Close()
		if r.Batches < intact {
			t.Fatalf("kept %d batches, %d were intact", r.Batches, intact)
		}
		got, err := s.Read(nil, 0, 1<<60, 1<<30)
		if err != nil {
			t.Fatal(err)
		}
		if want := concat(batches[:intact]); !bytes.HasPrefix(got, want) {
			t.Fatalf("recovered log does not start with the intact batches")
		}
		if r.ValidBytes != int64(len(got)) {
			t.Fatalf("valid bytes %d, read %d", r.ValidBytes, len(got))
		}
		next := s.NextOffset()
		if err := s.Activate(); err != nil {
			t.Fatal(err)
		}
		more := appendBatches(t, s, 1, 1, 5, 9999)
		if more[0].h.BaseOffset != next {
			t.Fatalf("append at %d after recovery to %d", more[0].h.BaseOffset, next)
		}
		s.Close()
		again, r2 := recovered(t, fsys)
		defer again.Close()
		if r2.Truncated != 0 || r2.Batches != r.Batches+1 {
			t.Fatalf("second recovery: %+v after %+v", r2, r)
		}
		_ = segment.ErrCorrupt
	})
}
