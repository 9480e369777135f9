package log_test

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"golang.org/x/sys/unix"

	plog "github.com/partlog/partlog/log"
	"github.com/partlog/partlog/record"
)

// benchBatch builds a batch of n records with values of size bytes, with
// no keys, as a producer would send them.
func benchBatch(n, size int) []byte {
	b := record.NewBuilder(record.DefaultBatchOptions())
	v := make([]byte, size)
	for i := range v {
		v[i] = byte('a' + i%26)
	}
	for i := range n {
		b.Append(record.Record{Timestamp: 1700000000000 + int64(i), Value: v})
	}
	return b.Build()
}

// openBench opens a log on the OS filesystem in a fresh directory.
func openBench(b *testing.B, opts plog.Options) *plog.Log {
	b.Helper()
	l, err := plog.Open(filepath.Join(b.TempDir(), "bench-0"), opts)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { l.Close() })
	return l
}

// appendVolume is what one operation of a page-cache append benchmark
// writes: 2 GiB into a fresh log, as the dd it is compared with writes into
// a fresh file (scripts/bench-storage.sh). Batches of one record write
// 64 MiB, which is plenty to time them.
func appendVolume(recordsPerBatch int) int64 {
	if recordsPerBatch == 1 {
		return 64 << 20
	}
	return 2 << 30
}

// BenchmarkAppend appends pre-built batches to a log on the OS filesystem:
// records of 100 B and 1 KiB in batches of 1, 100 and 1000, with no flushing
// (the page cache) and with an fsync after every batch (SyncBeforeAck with
// one appender).
//
// With flush=off one operation fills a fresh log with appendVolume bytes
// and the log is deleted off the clock, so MB/s compares with dd writing a
// file of that size. With fsync-per-batch an operation is one append.
func BenchmarkAppend(b *testing.B) {
	for _, size := range []int{100, 1024} {
		for _, n := range []int{1, 100, 1000} {
			b.Run(fmt.Sprintf("flush=off/record=%dB/batch=%d", size, n), func(b *testing.B) {
				batch := benchBatch(n, size)
				count := appendVolume(n) / int64(len(batch))
				b.SetBytes(count * int64(len(batch)))
				b.ResetTimer()
				for range b.N {
					b.StopTimer()
					l := openBench(b, plog.Options{RetentionMs: -1})
					b.StartTimer()
					for range count {
						if _, err := l.Append(batch); err != nil {
							b.Fatal(err)
						}
					}
					b.StopTimer()
					if err := l.TruncateFullyAndStartAt(0); err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
				}
				b.StopTimer()
				b.ReportMetric(float64(int64(b.N)*count*int64(n))/b.Elapsed().Seconds(), "records/s")
			})
		}
	}
	for _, size := range []int{100, 1024} {
		for _, n := range []int{1, 100, 1000} {
			b.Run(fmt.Sprintf("flush=fsync-per-batch/record=%dB/batch=%d", size, n), func(b *testing.B) {
				batch := benchBatch(n, size)
				l := openBench(b, plog.Options{SyncBeforeAck: true, RetentionMs: -1})
				b.SetBytes(int64(len(batch)))
				b.ResetTimer()
				for range b.N {
					if _, err := l.Append(batch); err != nil {
						b.Fatal(err)
					}
					if l.Size() >= 1<<30 {
						b.StopTimer()
						if err := l.TruncateFullyAndStartAt(l.LogEndOffset()); err != nil {
							b.Fatal(err)
						}
						b.StartTimer()
					}
				}
				b.StopTimer()
				b.ReportMetric(float64(b.N*n)/b.Elapsed().Seconds(), "records/s")
			})
		}
	}
}

// BenchmarkSyncBeforeAck has 1, 8 and 64 goroutines append one-record
// batches of 100 B with SyncBeforeAck: group commit lets the appenders that
// wait together share an fdatasync, so appends/s grow with the appenders.
func BenchmarkSyncBeforeAck(b *testing.B) {
	for _, appenders := range []int{1, 8, 64} {
		b.Run(fmt.Sprintf("appenders=%d", appenders), func(b *testing.B) {
			l := openBench(b, plog.Options{SyncBeforeAck: true, RetentionMs: -1})
			batches := make([][]byte, appenders)
			for i := range batches {
				batches[i] = benchBatch(1, 100)
			}
			b.SetBytes(int64(len(batches[0])))
			b.ResetTimer()
			var wg sync.WaitGroup
			per := b.N / appenders
			for a := range appenders {
				count := per
				if a == 0 {
					count += b.N % appenders
				}
				wg.Go(func() {
					for range count {
						if _, err := l.Append(batches[a]); err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			b.StopTimer()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "appends/s")
		})
	}
}

// BenchmarkRead reads a log written beforehand from start to end, 1 MiB at a
// time, from the page cache.
func BenchmarkRead(b *testing.B) {
	for _, size := range []int{100, 1024} {
		b.Run(fmt.Sprintf("record=%dB/batch=1000", size), func(b *testing.B) {
			batch := benchBatch(1000, size)
			l := openBench(b, plog.Options{RetentionMs: -1})
			const total = 256 << 20
			for written := 0; written < total; written += len(batch) {
				if _, err := l.Append(batch); err != nil {
					b.Fatal(err)
				}
			}
			buf := make([]byte, 0, 2<<20)
			b.SetBytes(l.Size())
			b.ResetTimer()
			var records int64
			for range b.N {
				for off := int64(0); off < l.LogEndOffset(); {
					data, err := l.Read(buf[:0], off, l.LogEndOffset(), 1<<20)
					if err != nil {
						b.Fatal(err)
					}
					for len(data) > 0 {
						h, err := record.ParseHeader(data)
						if err != nil {
							b.Fatal(err)
						}
						records += int64(h.NumRecords)
						off = h.NextOffset()
						data = data[h.Size():]
					}
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(records)/b.Elapsed().Seconds(), "records/s")
		})
	}
}

// BenchmarkBaselineFile is the ceiling the log's appends are measured
// against in the same run: a bare *os.File written 1 MiB at a time with
// WriteAt — no CRC, no index, no log — into a fresh 2 GiB file, and the
// same with an fdatasync after every write.
func BenchmarkBaselineFile(b *testing.B) {
	buf := make([]byte, 1<<20)
	for i := range buf {
		buf[i] = byte('a' + i%26)
	}
	for _, flush := range []string{"off", "fsync-per-write"} {
		b.Run("flush="+flush, func(b *testing.B) {
			volume := int64(2 << 30)
			if flush != "off" {
				volume = 256 << 20
			}
			b.SetBytes(volume)
			for range b.N {
				b.StopTimer()
				f, err := os.Create(filepath.Join(b.TempDir(), "baseline"))
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				for pos := int64(0); pos < volume; pos += int64(len(buf)) {
					if _, err := f.WriteAt(buf, pos); err != nil {
						b.Fatal(err)
					}
					if flush != "off" {
						if err := unix.Fdatasync(int(f.Fd())); err != nil {
							b.Fatal(err)
						}
					}
				}
				b.StopTimer()
				f.Close()
				os.Remove(f.Name())
				b.StartTimer()
			}
		})
	}
}
