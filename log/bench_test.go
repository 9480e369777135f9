package log_test

import (
	"fmt"
	"path/filepath"
	"sync"
	"testing"

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

// benchLogBytes bounds the log a benchmark writes before it starts over, so
// that it measures appends to the page cache as dd of the same size does,
// not the disk's writeback once the kernel's dirty limits are reached.
const benchLogBytes = 1 << 30

// restart empties the log, off the clock.
func restart(b *testing.B, l *plog.Log) {
	b.StopTimer()
	if err := l.TruncateFullyAndStartAt(l.LogEndOffset()); err != nil {
		b.Fatal(err)
	}
	b.StartTimer()
}

// BenchmarkAppend appends pre-built batches to a log on the OS filesystem:
// records of 100 B and 1 KiB in batches of 1, 100 and 1000, with no flushing
// (the page cache) and with an fsync after every batch.
func BenchmarkAppend(b *testing.B) {
	for _, flush := range []string{"off", "fsync-per-batch"} {
		for _, size := range []int{100, 1024} {
			for _, n := range []int{1, 100, 1000} {
				b.Run(fmt.Sprintf("flush=%s/record=%dB/batch=%d", flush, size, n), func(b *testing.B) {
					batch := benchBatch(n, size)
					l := openBench(b, plog.Options{SyncBeforeAck: flush != "off", RetentionMs: -1})
					b.SetBytes(int64(len(batch)))
					b.ResetTimer()
					for range b.N {
						if _, err := l.Append(batch); err != nil {
							b.Fatal(err)
						}
						if l.Size() >= benchLogBytes {
							restart(b, l)
						}
					}
					b.StopTimer()
					b.ReportMetric(float64(b.N*n)/b.Elapsed().Seconds(), "records/s")
				})
			}
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
