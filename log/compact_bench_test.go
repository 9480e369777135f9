package log_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	plog "github.com/partlog/partlog/log"
	"github.com/partlog/partlog/record"
	"github.com/partlog/partlog/vfs"
)

// BenchmarkClean compacts a 64 MiB log on the OS filesystem: 1 MiB segments
// of batches of 100 records with 100-byte values, over 1,000 keys (most
// records superseded: a write-heavy offsets topic) and over a million
// (nearly none superseded: the cleaner's worst case, every batch copied).
// MB/s is of the log read; building it is off the clock. On the OS
// filesystem a clean is bound by its syncs (each cleaned segment: its three
// files and four directory syncs); on the in-memory one it shows the CPU
// cost.
func BenchmarkClean(b *testing.B) {
	const logBytes = 64 << 20
	for _, fsName := range []string{"os", "mem"} {
		for _, keys := range []int{1_000, 1_000_000} {
			b.Run(fmt.Sprintf("fs=%s/keys=%d", fsName, keys), func(b *testing.B) {
				value := make([]byte, 100)
				for i := range value {
					value[i] = byte('a' + i%26)
				}
				var st plog.CleanStats
				for i := range b.N {
					b.StopTimer()
					opts := plog.Options{SegmentBytes: 1 << 20, CleanupPolicy: plog.CleanupCompact, MinCleanableDirtyRatio: -1}
					dir := filepath.Join(b.TempDir(), fmt.Sprint("bench-", i))
					if fsName == "mem" {
						opts.FS, dir = vfs.NewMem(), "/bench-0"
					}
					l, err := plog.Open(dir, opts)
					if err != nil {
						b.Fatal(err)
					}
					k := 0
					for l.Size() < logBytes {
						bb := record.NewBuilder(record.DefaultBatchOptions())
						for range 100 {
							bb.Append(record.Record{Timestamp: 1, Key: fmt.Appendf(nil, "key-%08d", k%keys), Value: value})
							k++
						}
						if _, err := l.Append(bb.Build()); err != nil {
							b.Fatal(err)
						}
					}
					size := l.Size()
					b.SetBytes(size)
					b.StartTimer()
					st, err = l.Clean(context.Background(), l.LogEndOffset())
					if err != nil || !st.Cleaned {
						b.Fatal(err, st)
					}
					b.StopTimer()
					l.Close()
					b.StartTimer()
				}
				if st.BytesRead > 0 {
					b.ReportMetric(float64(st.BytesWritten)/float64(st.BytesRead), "written/read")
				}
			})
		}
	}
}
