package main

// produce writes a record per line of standard input, as Kafka's
// kafka-console-producer.sh does, through the producer package: Produce
// with a promise per record, so that lines stream into batches, and a
// Flush (in Close) at the end of the input.

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/partlog/partlog"
	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/producer"
)

const produceHelp = `Usage: partlog produce --dir DIR --topic TOPIC [flags] < FILE

Produce reads standard input and produces a record per line to TOPIC, as
Kafka's kafka-console-producer.sh does. A line ends at "\n" or "\r\n", which
is not part of the record; the last line needs no newline, and an empty line
is a record with an empty value. The topic must exist: create it with
'partlog topics create'.

With --key-separator S each line is KEY S VALUE: the text before the first S
is the record's key and the rest its value. A line without S fails the
command, naming the line, unless --property ignore.error=true makes it a
record with a null key and the whole line as its value. Lines without a key
go to the partitions in turn (round-robin), keyed lines to the partition of
their key's hash, and every line to --partition when it is given.

Produce prints nothing when all goes well. At the end of the input it waits
until every record is acknowledged as --acks says and exits; when a record
fails, it stops reading, reports the first failed line and exits with status 1.
The lines before a line that fails to parse are produced. Inputs of 100,000
lines and more get a progress line on standard error every 5 seconds. An
interrupt (Ctrl-C) stops reading, sends the lines read, and closes the data
directory cleanly.

--property sets the properties of Kafka's console producer's line reader:

  parse.key=true|false      lines hold a key (what --key-separator turns on)
  key.separator=S           the key's separator; a tab unless set
  ignore.error=true|false   a line without the separator has a null key
  null.marker=M             a key or value equal to M is null, not M

Instead of --dir DIR, --bootstrap-server HOST:PORT reaches a node that
'partlog serve' (or a program embedding partlog) serves over TCP.
`

// chunkRecords is how many records produce and perf produce allocate at a
// time. A record cannot be reused until its promise has run.
const chunkRecords = 1024

// runProduce runs "partlog produce".
func runProduce(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("produce")
	where := addTargetFlags(fs)
	topic := fs.String("topic", "", "the `topic` to produce to (required)")
	partition := fs.Int("partition", -1, "the `partition` every record goes to; by default the partitioner chooses")
	keySeparator := fs.String("key-separator", "", "the `separator` between each line's key and value; without it lines have no key")
	acks := acksFlag(kafka.AcksAll)
	fs.Var(&acks, "acks", "which `acks` to wait for: all (or -1; the default), 1 (the leader's log) or 0 (none)")
	props := configFlag{}
	fs.Var(props, "property", "a line reader property `key=value` (see above); repeat for more")
	operands, err := parseFlags(fs, args, produceHelp, stdout)
	if err != nil {
		return err
	}
	if len(operands) > 0 {
		return usageErrorf("produce", "unexpected argument %q: produce reads standard input", operands[0])
	}
	if *topic == "" {
		return usageErrorf("produce", "--topic is required")
	}
	if *partition < -1 {
		return usageErrorf("produce", "--partition %d is negative", *partition)
	}
	if isSet(fs, "key-separator") {
		if *keySeparator == "" {
			return usageErrorf("produce", "--key-separator is empty")
		}
		props["parse.key"], props["key.separator"] = "true", *keySeparator
	}
	format, err := parseLineFormat(props)
	if err != nil {
		return &usageError{command: "produce", err: err}
	}

	n, err := openTarget("produce", where, stderr)
	if err != nil {
		return err
	}
	defer n.close()
	desc, err := describeTopic("produce", n, *topic)
	if err != nil {
		return err
	}
	if *partition >= 0 {
		if err := checkPartition("produce", desc, *partition); err != nil {
			return err
		}
	}
	// A line may be as long as the topic takes a record batch; the
	// producer's requests and buffer grow to carry one.
	maxLine := maxMessageBytes(desc)
	maxRequest := max(1<<20, maxLine)
	stderr = &lockedWriter{w: stderr} // the producer's goroutines report retries on it too
	retries := &retryReporter{w: stderr, command: "produce"}
	p, err := producer.New(n.client(), producer.Acks(kafka.Acks(acks)),
		producer.MaxRequestSize(maxRequest), producer.BufferMemory(max(32<<20, 2*int64(maxRequest))),
		producer.OnRetry(retries.report))
	if err != nil {
		return fmt.Errorf("produce: %w", err)
	}
	lp := &lineProducer{p: p, topic: *topic, partition: int32(*partition), format: format}

	ctx, stop := interruptContext(context.Background())
	defer stop()
	lr := &lineReader{r: bufio.NewReaderSize(stdin, 1<<20), max: maxLine}
	done := make(chan error, 1)
	go func() { done <- lp.run(ctx, lr) }()
	// The reading goroutine only produces; this one reports. After an
	// interrupt it is left blocked reading, and the process ends.
	ticker := time.NewTicker(progressInterval)
	defer ticker.Stop()
	prog := newProgress(stderr, "produced", time.Now())
	var readErr error
wait:
	for {
		select {
		case readErr = <-done:
			break wait
		case now := <-ticker.C:
			prog.report(now, lp.lines.Load())
		case <-ctx.Done():
			lp.interrupted.Store(true)
			stop() // a second interrupt kills
			break wait
		}
	}
	closeErr := p.Close()

	var errs []error
	if readErr != nil {
		errs = append(errs, fmt.Errorf("produce: %w", readErr))
	}
	if err := lp.failures.err(); err != nil {
		errs = append(errs, fmt.Errorf("produce: %w", err))
	} else if closeErr != nil && !lp.interrupted.Load() {
		errs = append(errs, fmt.Errorf("produce: %w", closeErr))
	}
	if err := n.close(); err != nil {
		errs = append(errs, fmt.Errorf("produce: %w", err))
	}
	return errors.Join(errs...)
}

// maxMessageBytes returns the topic's max.message.bytes.
func maxMessageBytes(d partlog.TopicDescription) int {
	v, err := strconv.Atoi(d.Effective[partlog.ConfigMaxMessageBytes])
	if err != nil || v <= 0 {
		return 1 << 20
	}
	return v
}

// lineFormat is how a line becomes a key and a value: the properties of
// Kafka's LineMessageReader that apply to keys and values.
type lineFormat struct {
	parseKey     bool
	keySeparator []byte
	ignoreError  bool
	nullMarker   []byte // nil for none
}

// parseLineFormat reads the --property settings.
func parseLineFormat(props map[string]string) (lineFormat, error) {
	f := lineFormat{keySeparator: []byte("\t")}
	for k, v := range props {
		var err error
		switch k {
		case "parse.key":
			f.parseKey, err = strconv.ParseBool(v)
		case "ignore.error":
			f.ignoreError, err = strconv.ParseBool(v)
		case "key.separator":
			if v == "" {
				return f, fmt.Errorf("--property key.separator is empty")
			}
			f.keySeparator = []byte(v)
		case "null.marker":
			f.nullMarker = []byte(v)
		default:
			return f, fmt.Errorf("unknown --property %q; produce knows parse.key, key.separator, ignore.error and null.marker", k)
		}
		if err != nil {
			return f, fmt.Errorf("--property %s=%s: not true or false", k, v)
		}
	}
	if f.nullMarker != nil && bytes.Equal(f.nullMarker, f.keySeparator) {
		return f, fmt.Errorf("--property null.marker and key.separator may not be equal")
	}
	return f, nil
}

// errNoKey means a line has no key separator.
var errNoKey = errors.New("no key separator")

// split returns a line's key and value, which point into line; nil is
// null. An empty key or value is empty, not nil.
func (f *lineFormat) split(line []byte) (key, value []byte, err error) {
	value = line
	if f.parseKey {
		i := bytes.Index(line, f.keySeparator)
		switch {
		case i >= 0:
			key, value = line[:i], line[i+len(f.keySeparator):]
		case !f.ignoreError:
			return nil, nil, errNoKey
		}
	}
	if f.nullMarker != nil {
		if key != nil && bytes.Equal(key, f.nullMarker) {
			key = nil
		}
		if bytes.Equal(value, f.nullMarker) {
			value = nil
		}
	}
	return key, value, nil
}

// errLineTooLong means a line is longer than a record may be.
var errLineTooLong = errors.New("line too long")

// lineReader reads lines of any length up to max bytes, without copying
// those that fit its buffer.
type lineReader struct {
	r   *bufio.Reader
	max int
	// long is a line longer than r's buffer, put together.
	long []byte
}

// next returns the next line without its "\n" or "\r\n", valid until the
// next call; io.EOF after the last line; errLineTooLong for a line longer
// than max.
func (lr *lineReader) next() ([]byte, error) {
	line, err := lr.r.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		lr.long = append(lr.long[:0], line...)
		for errors.Is(err, bufio.ErrBufferFull) {
			if len(lr.long) > lr.max+2 { // with room for "\r\n"
				return nil, errLineTooLong
			}
			line, err = lr.r.ReadSlice('\n')
			lr.long = append(lr.long, line...)
		}
		line = lr.long
	}
	if errors.Is(err, io.EOF) && len(line) > 0 {
		err = nil // the last line, without a newline
	}
	if err != nil {
		return nil, err
	}
	if n := len(line); n > 0 && line[n-1] == '\n' {
		line = line[:n-1]
		if n := len(line); n > 0 && line[n-1] == '\r' {
			line = line[:n-1]
		}
	}
	if len(line) > lr.max {
		return nil, errLineTooLong
	}
	return line, nil
}

// lineProducer produces lines read by a lineReader.
type lineProducer struct {
	p         *producer.Producer
	topic     string
	partition int32 // -1: the partitioner chooses
	format    lineFormat

	// lines counts the lines read, for progress reports.
	lines atomic.Int64
	// interrupted is set when the command is interrupted: reading stops,
	// and records failing from then on are not reported.
	interrupted atomic.Bool
	failures    produceFailures
}

// lineChunk is records allocated together, for lines first, first+1, ...
type lineChunk struct {
	first   int64
	records []producer.Record
	used    int
	// promise is the promise of the chunk's records: it knows their
	// lines.
	promise func(*producer.Record, error)
}

func (lp *lineProducer) newChunk(first int64) *lineChunk {
	c := &lineChunk{first: first, records: make([]producer.Record, chunkRecords)}
	c.promise = func(r *producer.Record, err error) {
		if err == nil || lp.interrupted.Load() {
			return
		}
		// Failures are rare: finding the record's line by its address
		// costs nothing while all goes well.
		for i := range c.records {
			if &c.records[i] == r {
				lp.failures.add(c.first+int64(i), err)
				return
			}
		}
	}
	return c
}

// run produces the lines of lr until its end, the first failure, or an
// interrupt. It returns an error for input it cannot read or parse.
func (lp *lineProducer) run(ctx context.Context, lr *lineReader) error {
	var c *lineChunk
	var line int64
	for !lp.failures.failed.Load() && !lp.interrupted.Load() {
		text, err := lr.next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		line++
		if errors.Is(err, errLineTooLong) {
			return fmt.Errorf("line %d: longer than the topic's max.message.bytes, %d", line, lr.max)
		}
		if err != nil {
			return fmt.Errorf("read standard input: %w", err)
		}
		key, value, err := lp.format.split(text)
		if err != nil {
			return fmt.Errorf("line %d: no key separator %q found in %s", line, lp.format.keySeparator, quoteLine(text))
		}
		if c == nil || c.used == len(c.records) {
			c = lp.newChunk(line)
		}
		r := &c.records[c.used]
		c.used++
		r.Topic, r.Key, r.Value = lp.topic, key, value
		if lp.partition >= 0 {
			r.SetPartition(lp.partition)
		}
		lp.p.Produce(ctx, r, c.promise)
		lp.lines.Store(line)
	}
	return nil
}

// quoteLine quotes a line for an error message, shortened when long.
func quoteLine(line []byte) string {
	const show = 80
	if len(line) > show {
		return fmt.Sprintf("%q (%d bytes)", line[:show], len(line))
	}
	return fmt.Sprintf("%q", line)
}

// produceFailures keeps the first failed line.
type produceFailures struct {
	// failed is set by the first failure, for the reading loop to stop.
	failed atomic.Bool

	mu    sync.Mutex
	count int64
	line  int64
	first error
}

func (f *produceFailures) add(line int64, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.count++
	if f.first == nil || line < f.line {
		f.line, f.first = line, err
	}
	f.failed.Store(true)
}

// err describes the failures, or returns nil when there were none.
func (f *produceFailures) err() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case f.count == 0:
		return nil
	case f.count == 1:
		return fmt.Errorf("line %d: %w", f.line, f.first)
	}
	return fmt.Errorf("%d records failed; the first, line %d: %w", f.count, f.line, f.first)
}
