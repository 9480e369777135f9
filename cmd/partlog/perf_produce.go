package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/partlog/partlog"
	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/producer"
)

const perfProduceHelp = `Usage: partlog perf produce --dir DIR --topic TOPIC --num-records N --record-size S [flags]
       partlog perf produce --dir DIR --topic TOPIC --num-records N --payload-file FILE [flags]

Perf produce measures producing, as Kafka's kafka-producer-perf-test.sh does.
One goroutine produces N records of S bytes (capital letters, no key) as fast
as it can, or at --throughput records a second, calling Produce with a
promise; each record's latency runs from its call to Produce to its promise.
Every 5 seconds it prints what that window saw, and at the end the totals and
percentiles of the latencies, in Kafka's formats:

  1543210 records sent, 308642.0 records/sec (29.43 MB/sec), 6.3 ms avg latency, 21.0 ms max latency.
  5000000 records sent, 308641.975309 records/sec (29.43 MB/sec), 5.91 ms avg latency, 23.00 ms max latency, 5 ms 50th, 9 ms 95th, 14 ms 99th, 21 ms 99.9th.

Records and latencies count the records acknowledged; a MB is 2^20 bytes.
Latencies are measured to the microsecond, and every record's counts, where
Kafka's tool samples; percentiles are within 1%, printed as whole
milliseconds rounded down. (On a topic with
message.timestamp.type=LogAppendTime the latency runs from the append.)

The topic is created when it does not exist, with --partitions and
--config. Note that a new topic syncs to disk before it acknowledges
(flush.messages=1), where a Kafka broker by default leaves flushing to the
OS: to measure that, as Kafka's figures are, give
--config flush.messages=9223372036854775807. For example:

  partlog perf produce --dir /tmp/perf --topic perf --num-records 5000000 \
      --record-size 100 --acks 1 --batch-size 1048576 --linger 5ms \
      --config flush.messages=9223372036854775807

--producer-props takes Kafka's producer configs, as Kafka's tool does,
several after one flag: acks, linger.ms, batch.size, buffer.memory,
compression.type, enable.idempotence,
max.in.flight.requests.per.connection, max.request.size, retries,
max.block.ms, retry.backoff.ms, delivery.timeout.ms, request.timeout.ms and
metadata.max.age.ms set the producer's options of those names;
bootstrap.servers is --bootstrap-server when neither it nor --dir is given;
key.serializer and value.serializer may only name ByteArraySerializer.
Another config is an error, and so is a config that a flag (--acks,
--linger, --batch-size, --buffer-memory) sets too. For example:

  partlog perf produce --bootstrap-server 127.0.0.1:9092 --topic perf \
      --num-records 100000 --record-size 100 \
      --producer-props acks=1 linger.ms=5 compression.type=lz4

--payload-file FILE produces values picked at random from FILE's payloads
instead of --record-size's letters, as Kafka's tool does: FILE is split at
each --payload-delimiter (a newline unless set; a string here, where
Kafka's takes a regular expression), trailing empty payloads dropped. The
run first prints where it read them and how many, as Kafka's does:

  Reading payloads from: /tmp/payloads.txt
  Number of messages read: 3

--transactional-id ID or --transaction-duration-ms DUR produces in
transactions, as Kafka's tool does: the producer is transactional (with
ID, or "performance-producer-" and something random); the loop begins a
transaction, produces for DUR (3000 milliseconds unless given), commits,
and begins the next; the last is committed at the end. A record counts
once its transaction committed (its latency is still that of its
acknowledgement, as in Kafka's tool). After the totals, a line gives the
transactions committed and the latencies of the commits, from the call to
CommitTransaction (which flushes the transaction's records, then ends it
at its coordinator) to its return, as milliseconds within 1%:

  50 transactions committed, 9.8 transactions/sec, 4.20 ms avg commit latency, 21.37 ms max commit latency, 3.51 ms 50th, 9.02 ms 95th, 21.33 ms 99th.

--producer-props transactional.id=ID is the same as --transactional-id ID.
For example:

  partlog perf produce --dir /tmp/perf --topic perf --num-records 5000000 \
      --record-size 100 --transaction-duration-ms 100

A record that fails stops the run; perf produce prints the totals of the
records acknowledged (committed, with transactions: the open transaction
is aborted) and the first failure, and exits with status 1. An
interrupt (Ctrl-C) stops it too (and commits the open transaction), and
prints the totals.

Instead of --dir DIR, --bootstrap-server HOST:PORT reaches a node that
'partlog serve' (or a program embedding partlog) serves over TCP.
`

// runPerfProduce runs "partlog perf produce".
func runPerfProduce(args []string, stdout, stderr io.Writer) error {
	const command = "perf produce"
	fs := newFlagSet(command)
	where := addTargetFlags(fs)
	topic := fs.String("topic", "", "the `topic` to produce to (required)")
	numRecords := fs.Int64("num-records", 0, "how many `records` to produce (required)")
	recordSize := fs.Int("record-size", 0, "each record's value size in `bytes` (this or --payload-file is required)")
	payloadFile := fs.String("payload-file", "", "produce values picked at random from the payloads in `file` instead of --record-size's letters")
	payloadDelimiter := fs.String("payload-delimiter", "\n", "the `delimiter` between --payload-file's payloads; a newline unless set")
	props := configFlag{}
	fs.Var(props, "producer-props", "Kafka producer configs `key=value` (acks, linger.ms, batch.size, buffer.memory, compression.type, enable.idempotence, ...); several may follow one flag")
	acks := acksFlag(kafka.AcksAll)
	fs.Var(&acks, "acks", "which `acks` to wait for: all (or -1; the default), 1 (the leader's log) or 0 (none)")
	batchSize := fs.Int("batch-size", 16384, "the producer's batch.size, in `bytes`")
	linger := durationVar(fs, "linger", 5*time.Millisecond, "the producer's linger.ms, a `duration`")
	bufferMemory := fs.Int64("buffer-memory", 32<<20, "the producer's buffer.memory, in `bytes`")
	throughput := fs.Float64("throughput", -1, "at most this many `records` a second; -1 for no limit")
	partitions := fs.Int("partitions", 1, "the `partitions` of a topic perf produce creates")
	configs := configFlag{}
	fs.Var(configs, "config", "a config `key=value` of a topic perf produce creates; repeat for more")
	transactionalID := fs.String("transactional-id", "", "produce in transactions, with this `transactional id`")
	transactionDuration := durationVar(fs, "transaction-duration-ms", defaultTransactionDuration,
		"produce in transactions, committing each after this `duration`; 3000 when only --transactional-id is given")
	cpuProfile := cpuProfileFlag(fs)
	operands, err := parseFlags(fs, expandMultiValue(args, "producer-props"), perfProduceHelp, stdout)
	if err != nil {
		return err
	}
	switch {
	case len(operands) > 0:
		return usageErrorf(command, "unexpected argument %q", operands[0])
	case *topic == "":
		return usageErrorf(command, "--topic is required")
	case *numRecords <= 0:
		return usageErrorf(command, "--num-records must be positive")
	case *payloadFile != "" && isSet(fs, "record-size"):
		return usageErrorf(command, "--record-size and --payload-file cannot both be given")
	case *payloadFile == "" && *recordSize <= 0:
		return usageErrorf(command, "--record-size must be positive (or give --payload-file)")
	case isSet(fs, "payload-delimiter") && *payloadFile == "":
		return usageErrorf(command, "--payload-delimiter needs --payload-file")
	case *payloadDelimiter == "":
		return usageErrorf(command, "--payload-delimiter is empty")
	case *throughput <= 0 && *throughput != -1:
		return usageErrorf(command, "--throughput must be positive, or -1 for no limit")
	case *partitions <= 0:
		return usageErrorf(command, "--partitions must be positive")
	case isSet(fs, "transactional-id") && *transactionalID == "":
		return usageErrorf(command, "--transactional-id is empty")
	case *transactionDuration <= 0:
		return usageErrorf(command, "--transaction-duration-ms must be positive")
	}
	// Transactions are on when a flag or --producer-props'
	// transactional.id asks for them, as in Kafka's tool.
	if id, ok := props[transactionalIDProp]; ok {
		switch {
		case isSet(fs, "transactional-id"):
			return usageErrorf(command, "--transactional-id and --producer-props %s both set %[1]s; give one", transactionalIDProp)
		case id == "":
			return usageErrorf(command, "--producer-props %s is empty", transactionalIDProp)
		}
		*transactionalID = id
		delete(props, transactionalIDProp)
	}
	if *transactionalID == "" && isSet(fs, "transaction-duration-ms") {
		*transactionalID = defaultTransactionalID()
	}

	popts, bootstrap, err := parseProducerProps(props, func(f string) bool { return isSet(fs, f) })
	if err != nil {
		return &usageError{command: command, err: err}
	}
	if bootstrap != "" && *where.dir == "" && *where.bootstrap == "" {
		*where.bootstrap = bootstrap // as Kafka's tool takes it
	}
	var payloads [][]byte
	if *payloadFile != "" {
		if payloads, err = readPayloads(stdout, *payloadFile, *payloadDelimiter); err != nil {
			return fmt.Errorf("%s: %w", command, err)
		}
	}

	n, err := openTarget(command, where, stderr)
	if err != nil {
		return err
	}
	defer n.close()
	desc, err := ensureTopic(n, *topic, *partitions, configs)
	if err != nil {
		return fmt.Errorf("%s: %w", command, err)
	}
	if desc.Name != "" && (isSet(fs, "partitions") || isSet(fs, "config")) {
		fmt.Fprintf(stderr, "%s: topic %s exists; --partitions and --config apply only to a topic perf produce creates\n", command, *topic)
	}
	opts := []producer.Option{producer.Acks(kafka.Acks(acks)), producer.BatchSize(*batchSize),
		producer.Linger(*linger), producer.BufferMemory(*bufferMemory)}
	if *transactionalID != "" {
		opts = append(opts, producer.TransactionalID(*transactionalID))
	}
	p, err := producer.New(n.client(), append(opts, popts...)...)
	if err != nil {
		return fmt.Errorf("%s: %w", command, err)
	}
	defer p.Close()

	ctx, stop := interruptContext(context.Background())
	defer stop()
	topicPartitions := max(*partitions, len(desc.Partitions))
	stats := newLatencyStats(topicPartitions)
	size := *recordSize
	if payloads != nil {
		size = 0 // sizes vary: the stats count the bytes
	}
	run := perfProducer{p: p, topic: *topic, size: size, payloads: payloads, throughput: *throughput, stats: stats}
	if *transactionalID != "" {
		run.txn = newPerfTxn(*transactionDuration, topicPartitions)
	}
	stopProfile, err := startCPUProfile(command, *cpuProfile)
	if err != nil {
		return err
	}
	start := time.Now()
	window := &perfWindow{w: stdout, recordSize: size, stats: stats, start: start}
	reporter := startReporter(window)
	run.produce(ctx, start, *numRecords)
	if run.txn != nil {
		run.txn.finish(p, stats)
	}
	flushErr := p.Flush(context.Background())
	end := time.Now()
	reporter.stop()

	count, sum, windowMax := stats.snapshot()
	var avg time.Duration
	if count > 0 {
		avg = sum / time.Duration(count)
	}
	ps := stats.percentiles(0.5, 0.95, 0.99, 0.999)
	sent := count * int64(size)
	if payloads != nil {
		sent = stats.totalBytes()
	}
	writeTotalLine(stdout, count, end.Sub(start), sent, avg, max(window.max, windowMax), ps[0], ps[1], ps[2], ps[3])
	if run.txn != nil {
		run.txn.report(stdout, end.Sub(start))
	}

	errs := []error{flushErr, stats.err(), p.Close(), n.close(), stopProfile()}
	for i, err := range errs {
		if err != nil {
			errs[i] = fmt.Errorf("%s: %w", command, err)
		}
	}
	return errors.Join(errs...)
}

// ensureTopic creates topic unless it exists. It returns the description
// of a topic that existed, and a zero one for a topic it created.
func ensureTopic(n *target, topic string, partitions int, configs map[string]string) (partlog.TopicDescription, error) {
	descs, err := n.describe(context.Background(), topic)
	if err == nil {
		return descs[0], nil
	}
	if !errors.Is(err, kafka.ErrUnknownTopicOrPartition) {
		return partlog.TopicDescription{}, err
	}
	err = n.createTopic(context.Background(), partlog.NewTopic{Name: topic, Partitions: int32(partitions), Configs: configs})
	return partlog.TopicDescription{}, err
}

// readPayloads reads --payload-file's payloads, as Kafka's tool does:
// the file's text split at each delimiter, trailing empty payloads dropped
// (Java's String.split), saying on w where it read them and how many.
// Unlike Kafka's, the delimiter is a string, not a regular expression.
func readPayloads(w io.Writer, path, delimiter string) ([][]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--payload-file: %w", err)
	}
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	fmt.Fprintf(w, "Reading payloads from: %s\n", path)
	payloads := bytes.Split(b, []byte(delimiter))
	for len(payloads) > 0 && len(payloads[len(payloads)-1]) == 0 {
		payloads = payloads[:len(payloads)-1]
	}
	if len(payloads) == 0 {
		return nil, fmt.Errorf("--payload-file %s holds no payloads", path)
	}
	fmt.Fprintf(w, "Number of messages read: %d\n", len(payloads))
	return payloads, nil
}

// perfProducer is perf produce's producing loop.
type perfProducer struct {
	p     *producer.Producer
	topic string
	size  int
	// payloads, when not nil, are the values to pick from at random
	// (--payload-file) instead of windows of size letters.
	payloads   [][]byte
	throughput float64 // records a second; -1 for no limit
	stats      *latencyStats
	// txn, when not nil, runs the records in transactions.
	txn *perfTxn
}

// clockEvery is how many records in a row perf produce stamps with one
// reading of the clock: reading it for each took a sixth of the producing
// goroutine's time, and the records of a run of 16 are sent within a few
// microseconds of each other, far below the milliseconds measured.
const clockEvery = 16

// payloadVariety is how many different values perf produce's records
// have: each is a window of size bytes, at a different start, into one
// buffer of random capital letters, as Kafka's values are.
const payloadVariety = 4096

// produce produces num records, or fewer when a record fails or ctx ends,
// from one goroutine. Each record is stamped
// with its time of sending, which its promise reads back: the producer
// would read the clock for its timestamp anyway, and this way it reads it
// once.
func (pp *perfProducer) produce(ctx context.Context, start time.Time, num int64) {
	rng := rand.New(rand.NewPCG(0, 0))
	payload := make([]byte, pp.size+payloadVariety)
	for i := range payload {
		payload[i] = byte('A' + rng.IntN(26))
	}
	// Records are allocated chunkRecords at a time and used again once
	// every promise of their chunk has run, so that the run measures the
	// producer rather than the allocation and collection of its records.
	free := make(chan *recordChunk, 64)
	newChunk := func() *recordChunk {
		c := &recordChunk{records: make([]producer.Record, chunkRecords)}
		c.promise = func(r *producer.Record, err error) {
			switch {
			case err != nil && ctx.Err() != nil && errors.Is(err, ctx.Err()):
				// Not sent: the run was interrupted while the record
				// waited (for buffer memory, say), which is no failure.
			case err != nil:
				pp.stats.fail(err)
			default:
				st := pp.stats
				if pp.txn != nil {
					st = pp.txn.pending // counted once its transaction commits
				}
				st.record(r.Partition, time.Since(r.Timestamp))
				if pp.payloads != nil {
					st.addBytes(r.Partition, len(r.Value))
				}
			}
			if c.pending.Add(-1) == 0 {
				select {
				case free <- c:
				default:
				}
			}
		}
		return c
	}
	var (
		chunk   *recordChunk
		used    int
		elapsed time.Duration
	)
	for i := range num {
		if chunk == nil || used == len(chunk.records) {
			if pp.stats.failed.Load() || ctx.Err() != nil {
				return
			}
			select {
			case chunk = <-free:
				clear(chunk.records)
			default:
				chunk = newChunk()
			}
			chunk.pending.Store(int64(len(chunk.records)))
			used = 0
		}
		r := &chunk.records[used]
		used++
		if pp.payloads != nil {
			r.Topic, r.Value = pp.topic, pp.payloads[rng.IntN(len(pp.payloads))]
		} else {
			at := i & (payloadVariety - 1)
			r.Topic, r.Value = pp.topic, payload[at:at+int64(pp.size)]
		}
		if pp.txn != nil && !pp.txn.open {
			elapsed = time.Since(start) // the last commit took a while
			if err := pp.txn.begin(pp.p, elapsed); err != nil {
				pp.stats.fail(err)
				return
			}
		} else if i%clockEvery == 0 || pp.throughput > 0 {
			elapsed = time.Since(start)
		}
		r.Timestamp = start.Add(elapsed)
		pp.p.Produce(ctx, r, chunk.promise)
		if pp.txn != nil && pp.txn.due(elapsed) {
			if pp.txn.commit(ctx, pp.p, pp.stats) != nil {
				return // failed (recorded), or ctx ended
			}
		}
		if pp.throughput > 0 {
			// Sleep off any lead over the rate, in steps of at least a
			// millisecond, as Kafka's ThroughputThrottler does.
			due := time.Duration(float64(i+1) / pp.throughput * float64(time.Second))
			if ahead := due - elapsed; ahead >= time.Millisecond {
				select {
				case <-time.After(ahead):
				case <-ctx.Done():
					return
				}
			}
		}
	}
}

// recordChunk is records produced together, used again once each one's
// promise has run.
type recordChunk struct {
	records []producer.Record
	pending atomic.Int64 // records whose promise has not run
	promise func(*producer.Record, error)
}

// reporter prints a perfWindow every progressInterval, from a goroutine of
// its own until stop.
type reporter struct {
	done chan struct{}
	wg   sync.WaitGroup
}

func startReporter(pw *perfWindow) *reporter {
	r := &reporter{done: make(chan struct{})}
	r.wg.Go(func() {
		t := time.NewTicker(progressInterval)
		defer t.Stop()
		for {
			select {
			case now := <-t.C:
				pw.report(now)
			case <-r.done:
				return
			}
		}
	})
	return r
}

func (r *reporter) stop() {
	close(r.done)
	r.wg.Wait()
}
