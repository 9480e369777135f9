package main

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// noFlush is the topic config that leaves flushing to the OS.
const noFlush = "flush.messages=9223372036854775807"

var (
	// perfWindowLine and perfTotalLine are Kafka's ProducerPerformance
	// lines.
	perfWindowLine = regexp.MustCompile(`^\d+ records sent, \d+\.\d records/sec \(\d+\.\d\d MB/sec\), \d+\.\d ms avg latency, \d+\.\d ms max latency\.$`)
	perfTotalLine  = regexp.MustCompile(`^(\d+) records sent, \d+\.\d{6} records/sec \(\d+\.\d\d MB/sec\), \d+\.\d\d ms avg latency, \d+\.\d\d ms max latency, \d+ ms 50th, \d+ ms 95th, \d+ ms 99th, \d+ ms 99\.9th\.$`)
	// kafkaDateRE is Kafka's perf tools' date format.
	kafkaDateRE = `\d{4}-\d\d-\d\d \d\d:\d\d:\d\d:\d{3}`
)

func TestPerfProduceAndConsume(t *testing.T) {
	dir := t.TempDir()
	stdout, stderr, code := cli(t, "perf", "produce", "--dir", dir, "--topic", "t", "--num-records", "3000", "--record-size", "100",
		"--acks", "1", "--partitions", "2", "--config", noFlush)
	require.Equal(t, exitOK, code, stderr)
	require.Empty(t, stderr)
	out := lines(stdout)
	require.NotEmpty(t, out)
	for _, line := range out[:len(out)-1] { // progress, on a slow machine
		require.Regexp(t, perfWindowLine, line)
	}
	m := perfTotalLine.FindStringSubmatch(out[len(out)-1])
	require.NotNil(t, m, out[len(out)-1])
	require.Equal(t, "3000", m[1])
	ends := topicEnds(t, dir)
	require.Len(t, ends, 2)
	require.Equal(t, int64(3000), ends[0]+ends[1])

	// The topic exists now: --partitions and --config are ignored, and said so.
	stdout, stderr, code = cli(t, "perf", "produce", "--dir", dir, "--topic", "t", "--num-records", "1000", "--record-size", "100",
		"--partitions", "3", "--throughput", "100000")
	require.Equal(t, exitOK, code, stderr)
	require.Equal(t, "perf produce: topic t exists; --partitions and --config apply only to a topic perf produce creates\n", stderr)
	require.Regexp(t, `(?m)^1000 records sent, `, stdout)

	stdout, stderr, code = cli(t, "perf", "consume", "--dir", dir, "--topic", "t", "--messages", "4000", "--fetch-size", "65536")
	require.Equal(t, exitOK, code, stderr)
	require.Empty(t, stderr)
	out = lines(stdout)
	require.Len(t, out, 2)
	require.Equal(t, "start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec", out[0])
	// 4000 records of 100 bytes are 0.3815 MB.
	require.Regexp(t, `^`+kafkaDateRE+`, `+kafkaDateRE+`, 0\.3815, \d+\.\d{4}, 4000, \d+\.\d{4}, 0, \d+, \d+\.\d{4}, \d+\.\d{4}$`, out[1])
}

func TestPerfProduceProgress(t *testing.T) {
	old := progressInterval
	progressInterval = time.Millisecond
	defer func() { progressInterval = old }()
	stdout, stderr, code := cli(t, "perf", "produce", "--dir", t.TempDir(), "--topic", "t", "--num-records", "20000", "--record-size", "10",
		"--acks", "0", "--config", noFlush)
	require.Equal(t, exitOK, code, stderr)
	out := lines(stdout)
	for _, line := range out[:len(out)-1] {
		require.Regexp(t, perfWindowLine, line)
	}
	require.Regexp(t, perfTotalLine, out[len(out)-1])
}

func TestPerfConsumeTimeout(t *testing.T) {
	dir := newTopic(t, 1)
	produceLines(t, dir, "a\nbb\n")
	stdout, stderr, code := cli(t, "perf", "consume", "--dir", dir, "--topic", "t", "--messages", "3", "--timeout", "200ms")
	require.Equal(t, exitFailure, code)
	out := lines(stdout)
	require.Len(t, out, 2)
	require.Regexp(t, `^`+kafkaDateRE+`, `+kafkaDateRE+`, 0\.0000, \d+\.\d{4}, 2, \d+\.\d{4}, 0, \d+, \d+\.\d{4}, \d+\.\d{4}$`, out[1])
	require.Equal(t, "partlog: perf consume: 2 of the 3 records came within --timeout 200ms\n", stderr)
}

func TestPerfUsage(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args    []string
		want    string
		command string
	}{
		{nil, "perf: say produce or consume", "perf"},
		{[]string{"--dir", dir, "produce"}, "perf: say produce or consume before the flags, not --dir", "perf"},
		{[]string{"send"}, `perf: unknown subcommand "send"; say produce or consume`, "perf"},
		{[]string{"produce", "--dir", dir, "--num-records", "1", "--record-size", "1"}, "perf produce: --topic is required", "perf produce"},
		{[]string{"produce", "--dir", dir, "--topic", "t", "--record-size", "1"}, "perf produce: --num-records must be positive", "perf produce"},
		{[]string{"produce", "--dir", dir, "--topic", "t", "--num-records", "1"}, "perf produce: --record-size must be positive (or give --payload-file)", "perf produce"},
		{[]string{"produce", "--dir", dir, "--topic", "t", "--num-records", "1", "--record-size", "1", "--throughput", "0"}, "perf produce: --throughput must be positive, or -1 for no limit", "perf produce"},
		{[]string{"produce", "--dir", dir, "--topic", "t", "--num-records", "1", "--record-size", "1", "--partitions", "0"}, "perf produce: --partitions must be positive", "perf produce"},
		{[]string{"produce", "--dir", dir, "--topic", "t", "--num-records", "1", "--record-size", "1", "--config", "x"}, `perf produce: invalid value "x" for --config: "x" is not key=value`, "perf produce"},
		{[]string{"consume", "--dir", dir, "--topic", "t"}, "perf consume: --messages must be positive", "perf consume"},
		{[]string{"consume", "--dir", dir, "--messages", "1"}, "perf consume: --topic is required", "perf consume"},
		{[]string{"consume", "--dir", dir, "--topic", "t", "--messages", "1", "--fetch-size", "0"}, "perf consume: --fetch-size must be positive and below 2 GiB", "perf consume"},
		{[]string{"consume", "--dir", dir, "--topic", "t", "--messages", "1", "--fetch-max-bytes", "-1"}, "perf consume: --fetch-max-bytes must not be negative and must be below 2 GiB", "perf consume"},
		{[]string{"consume", "--dir", dir, "--topic", "t", "--messages", "1", "--timeout", "0s"}, "perf consume: --timeout must be positive", "perf consume"},
	} {
		stdout, stderr, code := cli(t, append([]string{"perf"}, tc.args...)...)
		require.Equal(t, exitUsage, code, tc.args)
		require.Empty(t, stdout, tc.args)
		require.Equal(t, []string{"partlog: " + tc.want, "Run 'partlog help " + tc.command + "' for usage."}, lines(stderr), tc.args)
	}
}

func TestPerfProduceRecordFails(t *testing.T) {
	// Records larger than the topic takes fail, and stop the run.
	dir := newTopic(t, 1, "max.message.bytes=1000")
	stdout, stderr, code := cli(t, "perf", "produce", "--dir", dir, "--topic", "t", "--num-records", "100", "--record-size", "2000")
	require.Equal(t, exitFailure, code)
	require.Regexp(t, `^0 records sent, `, stdout)
	require.True(t, strings.HasPrefix(stderr, "partlog: perf produce: "), stderr)
	require.Regexp(t, `records failed; the first: .*MESSAGE_TOO_LARGE`, stderr)
	require.Equal(t, []int64{0}, topicEnds(t, dir))
}

func TestWriteWindowLine(t *testing.T) {
	var b strings.Builder
	writeWindowLine(&b, 1543210, 5*time.Second, 154321000, 6340*time.Microsecond, 21*time.Millisecond)
	writeWindowLine(&b, 0, 5*time.Second, 0, 0, 0)
	require.Equal(t, "1543210 records sent, 308642.0 records/sec (29.43 MB/sec), 6.3 ms avg latency, 21.0 ms max latency.\n"+
		"0 records sent, 0.0 records/sec (0.00 MB/sec), 0.0 ms avg latency, 0.0 ms max latency.\n", b.String())
}

func TestWriteTotalLine(t *testing.T) {
	var b strings.Builder
	writeTotalLine(&b, 5000000, 2*time.Second, 500000000, 5910*time.Microsecond, 23*time.Millisecond,
		5400*time.Microsecond, 9999*time.Microsecond, 14*time.Millisecond, 21*time.Millisecond)
	require.Equal(t, "5000000 records sent, 2500000.000000 records/sec (238.42 MB/sec), 5.91 ms avg latency, 23.00 ms max latency, 5 ms 50th, 9 ms 95th, 14 ms 99th, 21 ms 99.9th.\n", b.String())
}

func TestWritePerfConsumeLine(t *testing.T) {
	start := time.Date(2026, 11, 30, 21, 0, 0, 7e6, time.Local)
	var b strings.Builder
	writePerfConsumeLine(&b, start, start.Add(500*time.Millisecond), 5000000, 500000000)
	require.Equal(t, "2026-11-30 21:00:00:007, 2026-11-30 21:00:00:507, 476.8372, 953.6743, 5000000, 10000000.0000, 0, 500, 953.6743, 10000000.0000\n", b.String())
}

func TestHistogramBuckets(t *testing.T) {
	prev := -1
	for us := int64(0); us < 1<<22; us += 1 + us/1000 {
		i := histIndex(us)
		require.GreaterOrEqual(t, i, prev, us) // monotonic
		lo, hi := histBounds(i)
		require.True(t, lo <= us && us <= hi, "%d not in bucket %d [%d, %d]", us, i, lo, hi)
		require.Less(t, float64(hi-lo), float64(lo)/128+1, us) // under 1% wide
		prev = i
	}
	require.Equal(t, histBuckets-1, histIndex(1<<histMaxBits-1))
	require.Equal(t, histBuckets-1, histIndex(1<<62))
	require.Equal(t, 0, histIndex(-5))
	for i := range histBuckets {
		lo, hi := histBounds(i)
		require.Equal(t, i, histIndex(lo))
		require.Equal(t, i, histIndex(hi))
	}
}

func TestLatencyStats(t *testing.T) {
	st := newLatencyStats(3)
	require.Len(t, st.shards, 4)
	// 1000 latencies: 1ms, 2ms, ..., 1000ms, over three partitions.
	for i := 1; i <= 1000; i++ {
		st.record(int32(i%3), time.Duration(i)*time.Millisecond)
	}
	count, sum, windowMax := st.snapshot()
	require.Equal(t, int64(1000), count)
	require.Equal(t, 500500*time.Millisecond, sum)
	require.Equal(t, 1000*time.Millisecond, windowMax)
	_, _, windowMax = st.snapshot()
	require.Zero(t, windowMax) // reset by the snapshot
	// Kafka's rule: the latency at index ⌊p·count⌋ in order, here p·1000+1 ms.
	ps := st.percentiles(0.5, 0.95, 0.99, 0.999)
	for i, want := range []time.Duration{501, 951, 991, 1000} {
		require.InDelta(t, float64(want*time.Millisecond), float64(ps[i]), float64(want*time.Millisecond)/100, i)
	}
	require.NoError(t, st.err())
}

// BenchmarkLatencyRecord measures what perf produce's promise adds per
// record: reading the clock and recording the latency.
func BenchmarkLatencyRecord(b *testing.B) {
	st := newLatencyStats(1)
	sent := time.Now()
	for b.Loop() {
		st.record(0, time.Since(sent))
	}
}

// BenchmarkPerfProduce runs "perf produce" in-process with the settings of
// the producer package's BenchmarkProduce (acks=1, no fsync, default
// linger), for comparison: the difference is the CLI's cost.
func BenchmarkPerfProduce(b *testing.B) {
	for _, bc := range []struct{ size, batchSize int }{{100, 16384}, {1024, 1 << 20}} {
		b.Run(fmt.Sprintf("size=%d/batch.size=%d", bc.size, bc.batchSize), func(b *testing.B) {
			for b.Loop() {
				var out, errOut strings.Builder
				code := run([]string{"perf", "produce", "--dir", b.TempDir(), "--topic", "t", "--num-records", "1000000",
					"--record-size", fmt.Sprint(bc.size), "--batch-size", fmt.Sprint(bc.batchSize), "--acks", "1", "--config", noFlush}, &out, &errOut)
				if code != exitOK {
					b.Fatal(errOut.String())
				}
				b.Log(strings.TrimSpace(out.String()))
			}
		})
	}
}

// BenchmarkPerfConsume runs "perf consume" in-process over a partition of
// 3,000,000 records of 100 bytes, as the consumer package's
// BenchmarkConsume reads.
func BenchmarkPerfConsume(b *testing.B) {
	dir := b.TempDir()
	var out, errOut strings.Builder
	if code := run([]string{"perf", "produce", "--dir", dir, "--topic", "t", "--num-records", "3000000", "--record-size", "100",
		"--batch-size", "110000", "--acks", "1", "--config", noFlush}, &out, &errOut); code != exitOK {
		b.Fatal(errOut.String())
	}
	for b.Loop() {
		out.Reset()
		if code := run([]string{"perf", "consume", "--dir", dir, "--topic", "t", "--messages", "3000000"}, &out, &errOut); code != exitOK {
			b.Fatal(errOut.String())
		}
		b.Log(lines(out.String())[1])
	}
}

// TestPerfProducePayloadFileAndProps: --payload-file's payloads are the
// values produced, and --producer-props' Kafka configs reach the producer
// (compression.type shows in the batches).
func TestPerfProducePayloadFileAndProps(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(t.TempDir(), "payloads.txt")
	require.NoError(t, os.WriteFile(file, []byte("alpha\nbe\n\ngamma\n\n"), 0o644))
	stdout, stderr, code := cli(t, "perf", "produce", "--dir", dir, "--topic", "t", "--num-records", "300", "--payload-file", file,
		"--producer-props", "acks=1", "linger.ms=0", "compression.type=gzip", "batch.size=2048", "enable.idempotence=false",
		"--config", noFlush)
	require.Equal(t, exitOK, code, stderr)
	out := lines(stdout)
	require.Equal(t, []string{"Reading payloads from: " + file, "Number of messages read: 4"}, out[:2])
	m := perfTotalLine.FindStringSubmatch(out[len(out)-1])
	require.NotNil(t, m, out[len(out)-1])
	require.Equal(t, "300", m[1])
	seen := map[string]int{}
	for _, v := range strings.Split(strings.TrimSuffix(consumeAll(t, dir), "\n"), "\n") {
		seen[v]++
	}
	require.Subset(t, []string{"alpha", "be", "", "gamma"}, slices.Collect(maps.Keys(seen)))
	require.Len(t, seen, 4, "300 picks at random take each of 4 payloads")

	logs, err := filepath.Glob(filepath.Join(dir, "t-0", "*.log"))
	require.NoError(t, err)
	stdout, stderr, code = cli(t, append([]string{"dump-log"}, logs...)...)
	require.Equal(t, exitOK, code, stderr)
	batches := 0
	for _, l := range lines(stdout) {
		if strings.HasPrefix(l, "baseOffset: ") {
			batches++
			require.Contains(t, l, " producerId: -1 ", "enable.idempotence=false")
			require.Contains(t, l, " compresscodec: gzip ", "compression.type=gzip")
		}
	}
	require.Positive(t, batches)

	// A delimiter of its own.
	require.NoError(t, os.WriteFile(file, []byte("x|yy|"), 0o644))
	stdout, stderr, code = cli(t, "perf", "produce", "--dir", dir, "--topic", "t", "--num-records", "10", "--payload-file", file, "--payload-delimiter", "|")
	require.Equal(t, exitOK, code, stderr)
	require.Equal(t, "Number of messages read: 2", lines(stdout)[1])
}

// TestPerfProducePropsBootstrap: --producer-props bootstrap.servers is the
// node to reach, as scripts written for Kafka's tool give it.
func TestPerfProducePropsBootstrap(t *testing.T) {
	n, addr := servedNode(t)
	stdout, stderr, code := cli(t, "perf", "produce", "--topic", "p", "--num-records", "100", "--record-size", "10",
		"--producer-props", "bootstrap.servers="+addr+",127.0.0.1:1", "key.serializer=org.apache.kafka.common.serialization.ByteArraySerializer")
	require.Equal(t, exitOK, code, stderr)
	require.Regexp(t, `(?m)^100 records sent, `, stdout)
	d, err := n.DescribeTopics("p")
	require.NoError(t, err)
	require.Equal(t, int64(100), d[0].Partitions[0].HighWatermark)
}

func TestPerfProducePropsUsage(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "empty")
	require.NoError(t, os.WriteFile(file, []byte("\n\n"), 0o644))
	base := []string{"perf", "produce", "--dir", dir, "--topic", "t", "--num-records", "1"}
	for _, tc := range []struct {
		args []string
		want string
		code int
	}{
		{[]string{"--record-size", "1", "--producer-props", "client.id=x"}, "perf produce: --producer-props client.id: not a producer config partlog's producer has; it takes acks, batch.size, buffer.memory, compression.type, delivery.timeout.ms, enable.idempotence, linger.ms, max.block.ms, max.in.flight.requests.per.connection, max.request.size, metadata.max.age.ms, request.timeout.ms, retries, retry.backoff.ms, bootstrap.servers, key.serializer and value.serializer", exitUsage},
		{[]string{"--record-size", "1", "--linger", "1", "--producer-props", "linger.ms=5"}, "perf produce: --linger and --producer-props linger.ms both set linger.ms; give one", exitUsage},
		{[]string{"--record-size", "1", "--producer-props", "compression.type=brotli"}, "perf produce: --producer-props compression.type=brotli: not none, gzip, snappy, lz4 or zstd", exitUsage},
		{[]string{"--record-size", "1", "--producer-props", "linger.ms=5ms"}, "perf produce: --producer-props linger.ms=5ms: not a number of milliseconds", exitUsage},
		{[]string{"--record-size", "1", "--producer-props", "value.serializer=org.apache.kafka.common.serialization.StringSerializer"}, "perf produce: --producer-props value.serializer=org.apache.kafka.common.serialization.StringSerializer: perf produce's records are bytes; only org.apache.kafka.common.serialization.ByteArraySerializer serializes them", exitUsage},
		{[]string{"--record-size", "1", "--producer-props", "acks"}, `perf produce: invalid value "acks" for --producer-props: "acks" is not key=value`, exitUsage},
		{[]string{"--record-size", "1", "--payload-file", file}, "perf produce: --record-size and --payload-file cannot both be given", exitUsage},
		{[]string{"--record-size", "1", "--payload-delimiter", ","}, "perf produce: --payload-delimiter needs --payload-file", exitUsage},
		{[]string{"--payload-file", file}, "perf produce: --payload-file " + file + " holds no payloads", exitFailure},
		{[]string{"--payload-file", file + ".none"}, "perf produce: --payload-file: open " + file + ".none: no such file or directory", exitFailure},
	} {
		_, stderr, code := cli(t, append(base, tc.args...)...)
		require.Equal(t, tc.code, code, tc.args)
		require.Equal(t, "partlog: "+tc.want, lines(stderr)[0], tc.args)
	}
}

func TestExpandMultiValue(t *testing.T) {
	for _, tc := range []struct{ in, want []string }{
		{[]string{"--producer-props", "a=1", "b=2", "--topic", "t"}, []string{"--producer-props", "a=1", "--producer-props", "b=2", "--topic", "t"}},
		{[]string{"-producer-props", "a=1"}, []string{"-producer-props", "a=1"}},
		{[]string{"--producer-props", "a=1", "--", "b=2"}, []string{"--producer-props", "a=1", "--", "b=2"}},
		{[]string{"--producer-props=a=1", "b=2"}, []string{"--producer-props=a=1", "b=2"}},
		{[]string{"--topic", "a=1"}, []string{"--topic", "a=1"}},
	} {
		require.Equal(t, tc.want, expandMultiValue(tc.in, "producer-props"), "%v", tc.in)
	}
}

// perfTxnLine is perf produce's line on transactions.
var perfTxnLine = regexp.MustCompile(`^(\d+) transactions committed, \d+\.\d transactions/sec, \d+\.\d\d ms avg commit latency, \d+\.\d\d ms max commit latency, \d+\.\d\d ms 50th, \d+\.\d\d ms 95th, \d+\.\d\d ms 99th\.$`)

// dumpTopic returns what dump-log --deep-iteration prints of topic t's
// partitions in dir: its batch lines and its record lines.
func dumpTopic(t *testing.T, dir string, partitions int) (batches, records []string) {
	t.Helper()
	var logs []string
	for p := range partitions {
		l, err := filepath.Glob(filepath.Join(dir, fmt.Sprintf("t-%d", p), "*.log"))
		require.NoError(t, err)
		logs = append(logs, l...)
	}
	stdout, stderr, code := cli(t, append([]string{"dump-log", "--deep-iteration"}, logs...)...)
	require.Equal(t, exitOK, code, stderr)
	for _, l := range lines(stdout) {
		switch {
		case strings.HasPrefix(l, "baseOffset: "):
			batches = append(batches, l)
		case strings.HasPrefix(l, "| offset: "):
			records = append(records, l)
		}
	}
	return batches, records
}

// TestPerfProduceTransactions: with --transactional-id and
// --transaction-duration-ms every record is written in a transaction that
// committed, the run reports as many records as read_committed reads and
// as many transactions as the log holds commits, and its lines are
// Kafka's plus one on the transactions.
func TestPerfProduceTransactions(t *testing.T) {
	dir := t.TempDir()
	stdout, stderr, code := cli(t, "perf", "produce", "--dir", dir, "--topic", "t", "--num-records", "3000", "--record-size", "100",
		"--partitions", "2", "--config", noFlush, "--batch-size", "4096", "--throughput", "30000",
		"--transactional-id", "perf-txn", "--transaction-duration-ms", "1")
	require.Equal(t, exitOK, code, stderr)
	require.Empty(t, stderr)
	out := lines(stdout)
	require.GreaterOrEqual(t, len(out), 2)
	for _, line := range out[:len(out)-2] {
		require.Regexp(t, perfWindowLine, line)
	}
	m := perfTotalLine.FindStringSubmatch(out[len(out)-2])
	require.NotNil(t, m, out[len(out)-2])
	require.Equal(t, "3000", m[1])
	m = perfTxnLine.FindStringSubmatch(out[len(out)-1])
	require.NotNil(t, m, out[len(out)-1])
	txns, err := strconv.Atoi(m[1])
	require.NoError(t, err)
	require.Positive(t, txns)

	// The log holds the 3000 records, all transactional, and one COMMIT
	// marker per partition each transaction wrote to; each transaction
	// has an epoch of its own (transaction version 2), so the epochs of
	// the markers count the transactions.
	batches, records := dumpTopic(t, dir, 2)
	data, epochs := 0, map[string]bool{}
	for _, b := range batches {
		require.Contains(t, b, " isTransactional: true ")
		if strings.Contains(b, " isControl: true ") {
			epochs[regexp.MustCompile(`producerEpoch: \d+`).FindString(b)] = true
		}
	}
	for _, r := range records {
		if strings.Contains(r, " endTxnMarker: ") {
			require.Contains(t, r, " endTxnMarker: COMMIT ")
		} else {
			data++
		}
	}
	require.Equal(t, 3000, data)
	require.Len(t, epochs, txns)

	// A read_committed consumer reads every one of them.
	_, stderr, code = cli(t, "consume", "--dir", dir, "--topic", "t", "--from-beginning", "--isolation-level", "read_committed",
		"--max-messages", "3000", "--timeout", "1m")
	require.Equal(t, exitOK, code, stderr)
	require.Equal(t, "Processed a total of 3000 messages\n", stderr)

	stdout, stderr, code = cli(t, "transactions", "list", "--dir", dir)
	require.Equal(t, exitOK, code, stderr)
	rows := fields(stdout)
	require.Len(t, rows, 2)
	require.Equal(t, "perf-txn", rows[1][0])
	require.Contains(t, []string{"PrepareCommit", "CompleteCommit"}, rows[1][3], "the node may close before it completes")

	// --transaction-duration-ms alone names an id as Kafka's tool does,
	// and a run shorter than a transaction commits one at the end.
	stdout, stderr, code = cli(t, "perf", "produce", "--dir", dir, "--topic", "t", "--num-records", "10", "--record-size", "10",
		"--transaction-duration-ms", "1h")
	require.Equal(t, exitOK, code, stderr)
	out = lines(stdout)
	require.Regexp(t, `^10 records sent, `, out[0])
	require.Regexp(t, `^1 transactions committed, `, out[1])
	stdout, stderr, code = cli(t, "transactions", "list", "--dir", dir)
	require.Equal(t, exitOK, code, stderr)
	require.Regexp(t, `(?m)^performance-producer-\w+ +1 +\d+ +(Prepare|Complete)Commit$`, stdout)
}

// TestPerfProduceTransactionFails: a record that fails stops the run, its
// transaction is aborted, and nothing counts, reads as committed, or is
// written.
func TestPerfProduceTransactionFails(t *testing.T) {
	dir := newTopic(t, 1, "max.message.bytes=1000")
	stdout, stderr, code := cli(t, "perf", "produce", "--dir", dir, "--topic", "t", "--num-records", "100", "--record-size", "2000",
		"--producer-props", "transactional.id=perf-fail")
	require.Equal(t, exitFailure, code)
	out := lines(stdout)
	require.Len(t, out, 2)
	require.Regexp(t, `^0 records sent, `, out[0])
	require.Regexp(t, `^0 transactions committed, `, out[1])
	require.Regexp(t, `^partlog: perf produce: \d+ records failed; the first: .*MESSAGE_TOO_LARGE`, stderr)
	// The log holds nothing: the refused batch added no partition to the
	// transaction (transaction version 2: the leader adds it when it takes
	// a batch), so the abort had no marker to write — Kafka's empty abort.
	_, records := dumpTopic(t, dir, 1)
	require.Empty(t, records)

	stdout, stderr, code = cli(t, "transactions", "list", "--dir", dir)
	require.Equal(t, exitOK, code, stderr)
	rows := fields(stdout)
	require.Len(t, rows, 2)
	require.Equal(t, "perf-fail", rows[1][0])
	require.Contains(t, []string{"PrepareAbort", "CompleteAbort"}, rows[1][3], "the node may close before it completes")
}

func TestPerfProduceTransactionsUsage(t *testing.T) {
	dir := t.TempDir()
	base := []string{"perf", "produce", "--dir", dir, "--topic", "t", "--num-records", "1", "--record-size", "1"}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--transaction-duration-ms", "0"}, "perf produce: --transaction-duration-ms must be positive"},
		{[]string{"--transactional-id", ""}, "perf produce: --transactional-id is empty"},
		{[]string{"--transactional-id", "a", "--producer-props", "transactional.id=b"}, "perf produce: --transactional-id and --producer-props transactional.id both set transactional.id; give one"},
		{[]string{"--producer-props", "transactional.id="}, "perf produce: --producer-props transactional.id is empty"},
	} {
		stdout, stderr, code := cli(t, append(base, tc.args...)...)
		require.Equal(t, exitUsage, code, tc.args)
		require.Empty(t, stdout, tc.args)
		require.Equal(t, "partlog: "+tc.want, lines(stderr)[0], tc.args)
	}
}

func TestWriteTransactionsLine(t *testing.T) {
	var b strings.Builder
	writeTransactionsLine(&b, 50, 5*time.Second, 4200*time.Microsecond, 21370*time.Microsecond,
		3510*time.Microsecond, 9020*time.Microsecond, 21330*time.Microsecond)
	require.Equal(t, "50 transactions committed, 10.0 transactions/sec, 4.20 ms avg commit latency, 21.37 ms max commit latency, 3.51 ms 50th, 9.02 ms 95th, 21.33 ms 99th.\n", b.String())
}

// firstWrite is an io.Writer for output written from several goroutines
// that closes written at its first write.
type firstWrite struct {
	mu      sync.Mutex
	b       strings.Builder
	once    sync.Once
	written chan struct{}
}

func (w *firstWrite) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.once.Do(func() { close(w.written) })
	return w.b.Write(p)
}

// TestPerfProduceTransactionsInterrupted: records count only once their
// transaction committed — none in the windows while the one transaction
// is open — and an interrupt commits the open transaction and ends the
// run without a failure.
func TestPerfProduceTransactionsInterrupted(t *testing.T) {
	old := progressInterval
	progressInterval = time.Millisecond
	defer func() { progressInterval = old }()
	signals := interruptContext
	interrupt := interruptible(t)
	dir := t.TempDir()
	out := &firstWrite{written: make(chan struct{})}
	var errOut strings.Builder
	done := make(chan int)
	go func() {
		done <- run([]string{"perf", "produce", "--dir", dir, "--topic", "t", "--num-records", "1000000000", "--record-size", "10",
			"--config", noFlush, "--buffer-memory", "65536", "--transaction-duration-ms", "1h"}, out, &errOut)
	}()
	<-out.written // a window's line, while the transaction is open
	interrupt()
	require.Equal(t, exitOK, <-done, errOut.String())
	interruptContext = signals // the commands below are not interrupted
	require.Empty(t, errOut.String())
	got := lines(out.b.String())
	require.GreaterOrEqual(t, len(got), 3)
	require.Regexp(t, `^0 records sent, `, got[0])
	m := perfTotalLine.FindStringSubmatch(got[len(got)-2])
	require.NotNil(t, m, got[len(got)-2])
	require.Regexp(t, `^1 transactions committed, `, got[len(got)-1])

	_, records := dumpTopic(t, dir, 1)
	require.Equal(t, m[1], strconv.Itoa(len(records)-1), "the records, and a COMMIT marker")
	require.Contains(t, records[len(records)-1], " endTxnMarker: COMMIT ")
	_, stderr, code := cli(t, "consume", "--dir", dir, "--topic", "t", "--from-beginning", "--isolation-level", "read_committed",
		"--max-messages", m[1], "--timeout", "1m")
	require.Equal(t, exitOK, code, stderr)
	require.Equal(t, "Processed a total of "+m[1]+" messages\n", stderr)
}
