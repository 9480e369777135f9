package log_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

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

// BenchmarkAppendWhileCleaning appends 100-record batches of 100-byte values
// over 1,000 keys to a 16 MiB log on the OS filesystem, with cleans running
// back to back beside it and without, and reports the slowest append: the
// cleaner holds the append lock only to swap a segment in (renames and
// directory syncs).
func BenchmarkAppendWhileCleaning(b *testing.B) {
	for _, cleaning := range []bool{false, true} {
		b.Run(fmt.Sprint("cleaning=", cleaning), func(b *testing.B) {
			l := openBench(b, plog.Options{SegmentBytes: 1 << 20, CleanupPolicy: plog.CleanupCompact, MinCleanableDirtyRatio: -1})
			value := make([]byte, 100)
			batch := func(k int) []byte {
				bb := record.NewBuilder(record.DefaultBatchOptions())
				for i := range 100 {
					bb.Append(record.Record{Timestamp: 1, Key: fmt.Appendf(nil, "key-%04d", (k+i)%1000), Value: value})
				}
				return bb.Build()
			}
			for k := 0; l.Size() < 16<<20; k += 100 {
				if _, err := l.Append(batch(k)); err != nil {
					b.Fatal(err)
				}
			}
			stop := make(chan struct{})
			done := make(chan int, 1)
			go func() {
				cleans := 0
				defer func() { done <- cleans }()
				for cleaning {
					select {
					case <-stop:
						return
					default:
					}
					if st, err := l.Clean(context.Background(), l.LogEndOffset()); err == nil && st.Cleaned {
						cleans++
					}
				}
			}()
			batches := make([][]byte, 64)
			for i := range batches {
				batches[i] = batch(i * 100)
			}
			var slowest time.Duration
			b.SetBytes(int64(len(batches[0])))
			b.ResetTimer()
			for i := range b.N {
				start := time.Now()
				if _, err := l.Append(batches[i%len(batches)]); err != nil {
					b.Fatal(err)
				}
				slowest = max(slowest, time.Since(start))
			}
			b.StopTimer()
			close(stop)
			b.ReportMetric(float64(<-done), "cleans")
			b.ReportMetric(float64(slowest.Microseconds()), "max-append-µs")
		})
	}
}
