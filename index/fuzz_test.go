package index_test

import (
	"encoding/binary"
	"testing"

	"github.com/partlog/partlog/index"
	"github.com/partlog/partlog/vfs"
)

// FuzzOpenIndex feeds arbitrary bytes as index files: opening and checking
// them never panics, and an index that passes its sanity check never sends
// a lookup outside the log or backwards.
func FuzzOpenIndex(f *testing.F) {
	var good []byte
	for i := range 8 {
		good = binary.BigEndian.AppendUint32(good, uint32(i*4+3))
		good = binary.BigEndian.AppendUint32(good, uint32(i*4096))
	}
	f.Add(good, int64(1<<16), int64(20))
	f.Add(good[:13], int64(1<<16), int64(7))
	f.Add(make([]byte, 96), int64(100), int64(0))
	f.Add([]byte{}, int64(0), int64(5))
	f.Fuzz(func(t *testing.T, data []byte, logSize, target int64) {
		if logSize < 0 {
			logSize = -logSize
		}
		fsys := vfs.NewMem()
		if err := fsys.MkdirAll("/d", 0o755); err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"/d/a.index", "/d/a.timeindex"} {
			file, err := fsys.Create(name)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := file.Write(data); err != nil {
				t.Fatal(err)
			}
			file.Close()
		}

		if oi, err := index.OpenOffsetIndex(fsys, "/d/a.index", 10, 4096); err == nil {
			if oi.SanityCheck(logSize) == nil {
				e := oi.Lookup(target)
				if e.Pos < 0 || (oi.Len() > 0 && e.Pos >= logSize) || e.Offset > max(target, 10) {
					t.Fatalf("lookup %d gave %+v over a log of %d bytes", target, e, logSize)
				}
			}
			oi.Close()
		}
		if ti, err := index.OpenTimeIndex(fsys, "/d/a.timeindex", 10, 4096); err == nil {
			if ti.SanityCheck(10+target) == nil {
				prev := int64(-1 << 63)
				for i := range ti.Len() {
					e := ti.Entry(i)
					if e.Timestamp <= prev || e.Offset >= 10+target {
						t.Fatalf("entry %d %+v passed the sanity check", i, e)
					}
					prev = e.Timestamp
				}
				_ = ti.Lookup(target)
			}
			ti.Close()
		}
	})
}
