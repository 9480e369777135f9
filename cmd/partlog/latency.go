package main

import (
	"fmt"
	"io"
	"math/bits"
	"sync"
	"sync/atomic"
	"time"
)

// latencyStats gathers perf produce's per-record latencies: a histogram
// for the percentiles, a sum for the average, and each window's maximum.
// It records every record, as Kafka's tool does for its averages and
// maxima, and more cheaply than Kafka's sample for its percentiles: two
// atomic adds and a load per record, on a shard of the record's own
// partition.
//
// The promises of one partition run one at a time, but those of different
// partitions may run at once: each partition updates the shard of its
// number modulo the shard count, so that partitions running at once touch
// different cache lines.
type latencyStats struct {
	shards []latencyShard
	mask   int32 // len(shards)-1, a power of two less one

	// failed is set by the first failure.
	failed   atomic.Bool
	mu       sync.Mutex
	failures int64
	firstErr error
}

// latencyShard is the statistics of some partitions' records.
type latencyShard struct {
	// sum is the latencies' sum, in microseconds.
	sum atomic.Int64
	// windowMax is the largest latency since the last report, in
	// microseconds.
	windowMax atomic.Int64
	// hist counts the latencies in each bucket; its sum is the count.
	hist [histBuckets]atomic.Int64
	// bytes is the records' bytes, counted by addBytes only (records of
	// varying sizes).
	bytes atomic.Int64
	_     [64]byte // so that the next shard's first fields start a cache line of their own
}

// newLatencyStats returns statistics for a topic of partitions partitions.
func newLatencyStats(partitions int) *latencyStats {
	n := 1
	for n < min(partitions, 16) {
		n *= 2
	}
	return &latencyStats{shards: make([]latencyShard, n), mask: int32(n - 1)}
}

// record records the latency of a record of partition p.
func (st *latencyStats) record(p int32, d time.Duration) {
	us := d.Microseconds()
	s := &st.shards[p&st.mask]
	s.sum.Add(us)
	s.hist[histIndex(us)].Add(1)
	for m := s.windowMax.Load(); us > m; m = s.windowMax.Load() {
		if s.windowMax.CompareAndSwap(m, us) {
			break
		}
	}
}

// addBytes counts n bytes of a record of partition p, for runs whose
// records' sizes vary.
func (st *latencyStats) addBytes(p int32, n int) {
	st.shards[p&st.mask].bytes.Add(int64(n))
}

// totalBytes returns the bytes addBytes counted.
func (st *latencyStats) totalBytes() int64 {
	var n int64
	for i := range st.shards {
		n += st.shards[i].bytes.Load()
	}
	return n
}

// moveTo adds what st counted to dst and zeroes st: the records of a
// transaction, counted by perf produce once it committed. Nothing may
// record into st meanwhile; dst may be read and recorded into.
func (st *latencyStats) moveTo(dst *latencyStats) {
	for i := range st.shards {
		s, d := &st.shards[i], &dst.shards[i&int(dst.mask)]
		for j := range s.hist {
			if n := s.hist[j].Load(); n != 0 {
				s.hist[j].Store(0)
				d.hist[j].Add(n)
			}
		}
		d.sum.Add(s.sum.Swap(0))
		d.bytes.Add(s.bytes.Swap(0))
		for us, m := s.windowMax.Swap(0), d.windowMax.Load(); us > m; m = d.windowMax.Load() {
			if d.windowMax.CompareAndSwap(m, us) {
				break
			}
		}
	}
}

// reset zeroes st's counts: the records of a transaction that did not
// commit. Nothing may record into st meanwhile.
func (st *latencyStats) reset() {
	for i := range st.shards {
		s := &st.shards[i]
		for j := range s.hist {
			s.hist[j].Store(0)
		}
		s.sum.Store(0)
		s.bytes.Store(0)
		s.windowMax.Store(0)
	}
}

// fail records a record that failed.
func (st *latencyStats) fail(err error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.failures == 0 {
		st.firstErr = err
	}
	st.failures++
	st.failed.Store(true)
}

// err describes the failures, or returns nil when there were none.
func (st *latencyStats) err() error {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.failures == 0 {
		return nil
	}
	return fmt.Errorf("%d records failed; the first: %w", st.failures, st.firstErr)
}

// snapshot returns the records counted so far, the sum of their
// latencies, and the largest latency since the last snapshot, which it
// resets.
func (st *latencyStats) snapshot() (count int64, sum, windowMax time.Duration) {
	var sumUs, maxUs int64
	for i := range st.shards {
		s := &st.shards[i]
		sumUs += s.sum.Load()
		maxUs = max(maxUs, s.windowMax.Swap(0))
		for j := range s.hist {
			count += s.hist[j].Load()
		}
	}
	return count, time.Duration(sumUs) * time.Microsecond, time.Duration(maxUs) * time.Microsecond
}

// percentiles returns the latencies below which fractions ps of the
// records fall, as Kafka's tool picks them: the latency of the record at
// index ⌊p·count⌋ in order of latency. Each is the middle of its bucket.
func (st *latencyStats) percentiles(ps ...float64) []time.Duration {
	var hist [histBuckets]int64
	var count int64
	for i := range st.shards {
		for j := range hist {
			v := st.shards[i].hist[j].Load()
			hist[j] += v
			count += v
		}
	}
	out := make([]time.Duration, len(ps))
	for k, p := range ps {
		rank := int64(p * float64(count)) // records before the one wanted
		var seen int64
		for i, n := range hist {
			if seen += n; seen > rank {
				lo, hi := histBounds(i)
				out[k] = time.Duration((lo+hi)/2) * time.Microsecond
				break
			}
		}
	}
	return out
}

// The histogram's buckets are log-linear over microseconds, as
// HdrHistogram's: exact below 256µs, then each power of two split into 128
// buckets, so that a bucket is less than 1% wide, up to 2^34µs (4.8 hours),
// where longer latencies are counted.
const (
	histSubBits = 7
	histExact   = 2 << histSubBits // 256: values below are their own bucket
	histMaxBits = 34
	histBuckets = histExact + (histMaxBits-histSubBits-1)*(1<<histSubBits) // 3584
)

// histIndex returns the bucket of a latency of us microseconds.
func histIndex(us int64) int {
	if us < histExact {
		return int(max(us, 0))
	}
	us = min(us, 1<<histMaxBits-1)
	shift := bits.Len64(uint64(us)) - histSubBits - 1 // at least 1
	return histExact + (shift-1)<<histSubBits + int(us>>shift) - 1<<histSubBits
}

// histBounds returns the smallest and largest latencies of bucket i.
func histBounds(i int) (lo, hi int64) {
	if i < histExact {
		return int64(i), int64(i)
	}
	shift := (i-histExact)>>histSubBits + 1
	m := int64((i-histExact)&(1<<histSubBits-1) + 1<<histSubBits)
	return m << shift, (m+1)<<shift - 1
}

// perfWindow reports perf produce's progress: what each window of
// progressInterval saw, in the format of Kafka's ProducerPerformance.
type perfWindow struct {
	w io.Writer
	// recordSize is every record's size, or 0 when sizes vary and the
	// stats count the bytes.
	recordSize int
	stats      *latencyStats
	bytes      int64 // the bytes counted at the last window's end
	// start, count and sum are the last window's end and the totals then.
	start time.Time
	count int64
	sum   time.Duration
	// max is the largest latency of the windows reported.
	max time.Duration
}

// report prints the window that ends at now and starts the next.
func (pw *perfWindow) report(now time.Time) {
	count, sum, windowMax := pw.stats.snapshot()
	pw.max = max(pw.max, windowMax)
	n, elapsed := count-pw.count, now.Sub(pw.start)
	var avg time.Duration
	if n > 0 {
		avg = (sum - pw.sum) / time.Duration(n)
	}
	bytes := int64(pw.recordSize) * n
	if pw.recordSize == 0 {
		total := pw.stats.totalBytes()
		bytes, pw.bytes = total-pw.bytes, total
	}
	writeWindowLine(pw.w, n, elapsed, bytes, avg, windowMax)
	pw.start, pw.count, pw.sum = now, count, sum
}

// writeWindowLine writes Kafka's ProducerPerformance progress line:
//
//	N records sent, X records/sec (Y MB/sec), A ms avg latency, M ms max latency.
func writeWindowLine(w io.Writer, n int64, elapsed time.Duration, bytes int64, avg, maxLatency time.Duration) {
	secs := elapsed.Seconds()
	fmt.Fprintf(w, "%d records sent, %.1f records/sec (%.2f MB/sec), %.1f ms avg latency, %.1f ms max latency.\n",
		n, float64(n)/secs, float64(bytes)/secs/(1<<20), ms(avg), ms(maxLatency))
}

// writeTotalLine writes Kafka's ProducerPerformance summary line:
//
//	N records sent, X records/sec (Y MB/sec), A ms avg latency, M ms max latency, P50 ms 50th, P95 ms 95th, P99 ms 99th, P999 ms 99.9th.
//
// The percentiles are whole milliseconds, rounded down, as Kafka measures
// them.
func writeTotalLine(w io.Writer, n int64, elapsed time.Duration, bytes int64, avg, maxLatency time.Duration, p50, p95, p99, p999 time.Duration) {
	secs := elapsed.Seconds()
	fmt.Fprintf(w, "%d records sent, %f records/sec (%.2f MB/sec), %.2f ms avg latency, %.2f ms max latency, %d ms 50th, %d ms 95th, %d ms 99th, %d ms 99.9th.\n",
		n, float64(n)/secs, float64(bytes)/secs/(1<<20), ms(avg), ms(maxLatency),
		p50.Milliseconds(), p95.Milliseconds(), p99.Milliseconds(), p999.Milliseconds())
}

// ms returns d in milliseconds.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
