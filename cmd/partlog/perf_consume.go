package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/partlog/partlog/consumer"
)

const perfConsumeHelp = `Usage: partlog perf consume --dir DIR --topic TOPIC --messages N [flags]

Perf consume measures consuming, as Kafka's kafka-consumer-perf-test.sh does:
it reads N records of TOPIC, from the beginning of its partitions, with the
consumer's fastest loop (the Records iterator), skipping CRC checks as
Kafka's tool does and reusing its fetch buffers (the records are counted,
not kept), and prints Kafka's header and a line of figures:

  start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec
  2026-11-30 21:00:00:000, 2026-11-30 21:00:00:500, 476.8372, 953.6743, 5000000, 10000000.0000, 0, 500, 953.6743, 10000000.0000

The data are the records' keys and values, in MB of 2^20 bytes; times are
local. There is no consumer group to join, so rebalance.time.ms is 0 and the
fetch figures are those of the whole run. Every 5 seconds a progress line in
the format of Kafka's --show-detailed-stats goes to standard error.

When N records have not come within --timeout, perf consume prints the
figures of those that came and fails. (Kafka's --timeout bounds the wait
between records instead.) --from-latest starts at the partitions' ends, as
in Kafka; since no other process can write to the data directory while perf
consume has it open, it is there for scripts written for Kafka's tool.

With --dir the consumer buffers two fetches ahead (--fetch-max-bytes, the
consumer's fetch.max.bytes, is twice --fetch-size): fetches from the page
cache are quick, and a few fetch buffers, reused, stay in the CPU's caches.
Over TCP it is Kafka's default, 50 MiB.

Instead of --dir DIR, --bootstrap-server HOST:PORT reaches a node that
'partlog serve' (or a program embedding partlog) serves over TCP.
`

// kafkaDate formats t in Kafka's perf tools' default date format,
// yyyy-MM-dd HH:mm:ss:SSS, in local time. (Go's layouts know fractions of
// a second only after a period or comma.)
func kafkaDate(t time.Time) string {
	return fmt.Sprintf("%s:%03d", t.Format(time.DateTime), t.Nanosecond()/1e6)
}

// perfConsumeHeader is the header of kafka-consumer-perf-test.sh.
const perfConsumeHeader = "start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec"

// runPerfConsume runs "partlog perf consume".
func runPerfConsume(args []string, stdout, stderr io.Writer) error {
	const command = "perf consume"
	fs := newFlagSet(command)
	where := addTargetFlags(fs)
	topic := fs.String("topic", "", "the `topic` to consume (required)")
	messages := fs.Int64("messages", 0, "how many `records` to consume (required)")
	fetchSize := fs.Int("fetch-size", 1<<20, "the consumer's max.partition.fetch.bytes, in `bytes`")
	fetchMax := fs.Int("fetch-max-bytes", 0, "the consumer's fetch.max.bytes, in `bytes`; 0 means twice --fetch-size with --dir, 50 MiB over TCP")
	timeout := durationVar(fs, "timeout", 60*time.Second, "fail when the records have not all come within this `duration`")
	fromLatest := fs.Bool("from-latest", false, "start at the end of the partitions rather than the beginning")
	cpuProfile := cpuProfileFlag(fs)
	operands, err := parseFlags(fs, args, perfConsumeHelp, stdout)
	if err != nil {
		return err
	}
	switch {
	case len(operands) > 0:
		return usageErrorf(command, "unexpected argument %q", operands[0])
	case *topic == "":
		return usageErrorf(command, "--topic is required")
	case *messages <= 0:
		return usageErrorf(command, "--messages must be positive")
	case *fetchSize <= 0 || *fetchSize > 1<<31-1:
		return usageErrorf(command, "--fetch-size must be positive and below 2 GiB")
	case *fetchMax < 0 || *fetchMax > 1<<31-1:
		return usageErrorf(command, "--fetch-max-bytes must not be negative and must be below 2 GiB")
	case *timeout <= 0:
		return usageErrorf(command, "--timeout must be positive")
	}

	n, err := openTarget(command, where, stderr)
	if err != nil {
		return err
	}
	defer n.close()
	if _, err := describeTopic(command, n, *topic); err != nil {
		return err
	}
	reset := consumer.Earliest
	if *fromLatest {
		reset = consumer.Latest
	}
	// In process, a fetch from the page cache takes microseconds: two
	// fetches' worth of buffering keeps the fetcher ahead of the loop, and
	// the few reused buffers stay in the CPU's caches. Over TCP, Kafka's
	// default covers the network's round trips.
	maxBytes := int64(*fetchMax)
	if maxBytes == 0 {
		maxBytes = 50 << 20
		if n.node != nil {
			maxBytes = min(2*int64(*fetchSize), 1<<31-1)
		}
	}
	c, err := consumer.New(n.client(), consumer.Topics(*topic), consumer.AutoOffsetReset(reset),
		consumer.MaxPartitionFetchBytes(int32(*fetchSize)), consumer.FetchMaxBytes(int32(maxBytes)),
		consumer.CheckCRCs(consumer.SkipCRC), consumer.FetchBuffers(consumer.ReuseBuffers))
	if err != nil {
		return fmt.Errorf("%s: %w", command, err)
	}
	defer c.Close()

	interrupt, stop := interruptContext(context.Background())
	defer stop()
	ctx, cancel := context.WithTimeout(interrupt, *timeout)
	defer cancel()
	fmt.Fprintln(stdout, perfConsumeHeader)
	stopProfile, err := startCPUProfile(command, *cpuProfile)
	if err != nil {
		return err
	}
	start := time.Now()
	prog := perfConsumeProgress{progress: progress{w: stderr, last: start}}
	var count, bytes int64
	var errs []error
	for rec, err := range c.Records(ctx) {
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", command, err))
			break
		}
		count++
		bytes += int64(len(rec.Key) + len(rec.Value))
		if count == *messages {
			break
		}
		if count%4096 == 0 {
			prog.report(time.Now(), count, bytes)
		}
	}
	end := time.Now()
	writePerfConsumeLine(stdout, start, end, count, bytes)
	if count < *messages && len(errs) == 0 {
		why := fmt.Sprintf("within --timeout %v", *timeout)
		if interrupt.Err() != nil {
			why = "before the interrupt"
		}
		errs = append(errs, fmt.Errorf("%s: %d of the %d records came %s", command, count, *messages, why))
	}
	if err := c.Close(); err != nil {
		errs = append(errs, fmt.Errorf("%s: %w", command, err))
	}
	if err := n.close(); err != nil {
		errs = append(errs, fmt.Errorf("%s: %w", command, err))
	}
	if err := stopProfile(); err != nil {
		errs = append(errs, fmt.Errorf("%s: %w", command, err))
	}
	return errors.Join(errs...)
}

// writePerfConsumeLine writes the figures of kafka-consumer-perf-test.sh.
func writePerfConsumeLine(w io.Writer, start, end time.Time, count, bytes int64) {
	elapsed := end.Sub(start)
	mb := float64(bytes) / (1 << 20)
	secs := elapsed.Seconds()
	fmt.Fprintf(w, "%s, %s, %.4f, %.4f, %d, %.4f, %d, %d, %.4f, %.4f\n",
		kafkaDate(start), kafkaDate(end),
		mb, mb/secs, count, float64(count)/secs,
		0, elapsed.Milliseconds(), mb/secs, float64(count)/secs)
}

// perfConsumeProgress prints perf consume's progress on standard error,
// in the format of Kafka's --show-detailed-stats lines: time, thread,
// MB so far, MB/s, records so far, records/s, rebalance time, fetch time,
// fetch MB/s and records/s, the rates being those since the last line.
type perfConsumeProgress struct {
	progress
	lastBytes int64
}

func (p *perfConsumeProgress) report(now time.Time, count, bytes int64) {
	if !p.due(now) {
		return
	}
	elapsed := now.Sub(p.last)
	secs := elapsed.Seconds()
	mbRate := float64(bytes-p.lastBytes) / (1 << 20) / secs
	rate := float64(count-p.lastCount) / secs
	fmt.Fprintf(p.w, "%s, %d, %.4f, %.4f, %d, %.4f, %d, %d, %.4f, %.4f\n",
		kafkaDate(now), 0, float64(bytes)/(1<<20), mbRate, count, rate,
		0, elapsed.Milliseconds(), mbRate, rate)
	p.last, p.lastCount, p.lastBytes = now, count, bytes
}
