// Exactlyonce is Kafka's exactly-once processing in one program: a
// consume-transform-produce pipeline whose every input record is in its
// output exactly once, although one of its workers dies in the middle of a
// transaction.
//
//	go run ./examples/exactlyonce [-dir DIR] [-records N] [-break offsets|read]
//
// A node gets topic "numbers" (4 partitions), filled with the numbers 0 to
// N-1, and topic "squares" (4 partitions). Two members of consumer group
// "squarers" share the numbers' partitions. Each member is what a Kafka
// Streams task or an exactly-once service is: a read_committed consumer and
// a transactional producer of its own (transactional ids squarers-member-1
// and squarers-member-2, one per member as KIP-447 allows), looping
//
//	poll numbers → BeginTransaction → produce each square to "squares" →
//	SendOffsetsToTransaction(the consumer's positions, its group metadata) →
//	CommitTransaction
//
// so that a batch's squares and the group's offsets past its numbers
// commit together or not at all.
//
// In its third transaction member-2 crashes: its squares are written and
// its offsets sent to the transaction, and then its process is gone — no
// commit, no abort, no LeaveGroup. Every request its goroutines send from
// then on is lost, as when a process dies (link.go: its consumer and
// producer talk to the node through a link that the crash cuts). The node
// learns of the death only from the silence. The group's session timeout
// (1s here) removes member-2, and member-1 takes its partitions over from
// the offsets the group last committed: member-2's offsets in the open
// transaction are UNSTABLE_OFFSET_COMMIT until it ends, and member-1 waits
// that out. The transaction coordinator aborts the dead transaction when
// its timeout (1.5s here) passes, and its squares are never read by a
// read_committed consumer. When the group's offsets reach the end of
// "numbers", the program reads "squares" with read_committed and checks
// that every number's square is there exactly once. It prints a summary
// and exits non-zero if a square is missing, duplicated or wrong.
//
// The members fetch the group's committed offsets with require_stable
// (KIP-447), as partlog's consumer and Kafka's always do: without it, a
// member that rebalances just after committing a transaction could start
// from the offsets before it — the commit's marker not yet on
// __consumer_offsets — and square numbers twice.
//
// -break shows what the check catches when the mechanism is switched off:
// with -break offsets the members commit their offsets with the consumer
// (OffsetCommit) after each transaction commits, rather than in it, and
// member-2 dies between the two, so member-1 squares its last batch again;
// with -break read the check reads "squares" with read_uncommitted, and
// sees the aborted squares as well. Both exit non-zero.
//
// Timeouts are much shorter than Kafka's defaults (session.timeout.ms 45s,
// transaction.timeout.ms 60s) so that the whole run takes a few seconds.
//
// The directory is emptied first: by default a new one under the OS's
// temporary directory; a directory of your own must be a partlog data
// directory (or empty) to be used.
package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/partlog/partlog"
	"github.com/partlog/partlog/consumer"
	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/producer"
	"github.com/partlog/partlog/transport"
)

func main() {
	dir := flag.String("dir", "", "data directory, emptied first (default: a new directory under the OS's temporary directory)")
	records := flag.Int("records", 10000, "how many numbers to square (at least 1000); with the default, member-1 is still at work when it takes member-2's partitions over")
	brk := flag.String("break", "", `switch exactly-once off, to see the check fail: "offsets" commits offsets outside the transactions, "read" checks with read_uncommitted`)
	flag.Parse()
	cfg := config{dir: *dir, records: *records}
	switch *brk {
	case "":
	case "offsets":
		cfg.brk = breakOffsets
	case "read":
		cfg.brk = breakRead
	default:
		fmt.Fprintf(os.Stderr, "exactlyonce: -break %q: want offsets or read\n", *brk)
		os.Exit(2)
	}
	if cfg.records < 1000 {
		fmt.Fprintf(os.Stderr, "exactlyonce: -records %d: at least 1000, so that member-2 is still at work in its third transaction\n", cfg.records)
		os.Exit(2)
	}
	if err := run(context.Background(), cfg, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "exactlyonce:", err)
		os.Exit(1)
	}
}

const (
	inputTopic  = "numbers"
	outputTopic = "squares"
	partitions  = 4
	group       = "squarers"
	// crashIn is the transaction member-2 dies in.
	crashIn = 3
	// memberHeader names the member that squared a number, in each square.
	memberHeader = "member"
)

// The timings, much shorter than Kafka's defaults so that a run takes
// seconds: a member silent for sessionTimeout is dropped from the group
// (session.timeout.ms, Kafka: 45s), and a transaction open for
// transactionTimeout is aborted by its coordinator
// (transaction.timeout.ms, Kafka: 60s).
//
// The member that takes the dead one's partitions over waits, inside the
// rebalance, for the dead transaction to end (its offsets are unstable
// until then): about transactionTimeout less sessionTimeout, heartbeating
// meanwhile.
var (
	sessionTimeout        = time.Second
	heartbeatInterval     = 100 * time.Millisecond
	transactionTimeout    = 1500 * time.Millisecond
	initialRebalanceDelay = 300 * time.Millisecond // group.initial.rebalance.delay.ms, Kafka: 3s
	pollRecords           = 100                    // max.poll.records: the most numbers in one transaction
	waitAtMost            = 25 * time.Second       // for the whole pipeline; a run takes a few seconds
)

// breakMode is what -break switches off.
type breakMode int

const (
	// exactlyOnce switches nothing off.
	exactlyOnce breakMode = iota
	// breakOffsets commits the offsets with the consumer after the
	// transaction, rather than in it.
	breakOffsets
	// breakRead checks the output with read_uncommitted.
	breakRead
)

// config is what the flags set.
type config struct {
	dir     string
	records int
	brk     breakMode
}

// printer prints lines stamped with the time since the run began; the
// members print from their own goroutines.
type printer struct {
	mu    sync.Mutex
	w     io.Writer
	start time.Time
}

func (p *printer) say(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.w, "[%5.2fs] %s\n", time.Since(p.start).Seconds(), fmt.Sprintf(format, args...))
}

// plain prints a line without a time stamp.
func (p *printer) plain(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.w, format+"\n", args...)
}

func run(ctx context.Context, cfg config, w io.Writer) error {
	out := &printer{w: w, start: time.Now()}
	dir := cfg.dir
	if dir == "" {
		var err error
		if dir, err = os.MkdirTemp("", "partlog-exactlyonce-"); err != nil {
			return err
		}
	} else if err := emptyDataDir(dir); err != nil {
		return err
	}
	out.plain("data directory: %s", dir)
	node, err := partlog.Open(dir,
		partlog.GroupMinSessionTimeout(100*time.Millisecond),
		partlog.GroupInitialRebalanceDelay(initialRebalanceDelay))
	if err != nil {
		return err
	}
	defer node.Close()
	for _, t := range []string{inputTopic, outputTopic} {
		if err := node.CreateTopic(ctx, partlog.NewTopic{Name: t, Partitions: partitions}); err != nil {
			return err
		}
	}
	out.plain("created topics %s and %s, %d partitions each", inputTopic, outputTopic, partitions)

	ends, err := produceNumbers(ctx, node, cfg.records)
	if err != nil {
		return err
	}
	out.say("produced the numbers 0 to %d to %s: %s", cfg.records-1, inputTopic, describeOffsets(ends))

	out.plain("\nGroup %s: member-1 and member-2, each a read_committed consumer with a transactional", group)
	out.plain("producer of its own (transactional ids %s-member-1 and %s-member-2). Each loops:", group, group)
	if cfg.brk == breakOffsets {
		out.plain("poll, begin, produce the squares, commit the transaction, then commit the offsets")
		out.plain("with the consumer (-break offsets: the offsets are NOT in the transaction).")
	} else {
		out.plain("poll, begin, produce the squares, send the offsets to the transaction, commit.")
	}
	out.plain("session.timeout.ms %v, transaction.timeout.ms %v; member-2 dies in its transaction number %d.\n",
		sessionTimeout, transactionTimeout, crashIn)

	// A node creates __consumer_offsets (50 partitions) on the first
	// request for a group, which takes a while; JoinGroups that come
	// meanwhile are answered COORDINATOR_LOAD_IN_PROGRESS and retried, and
	// one member could miss the first generation. With the coordinator
	// ready, both members join generation 1 together.
	if err := awaitGroupCoordinator(ctx, node); err != nil {
		return err
	}
	progress := newTracker()
	m1, err := newMember(node, "member-1", 0, cfg.brk, out, progress)
	if err != nil {
		return err
	}
	m2, err := newMember(node, "member-2", crashIn, cfg.brk, out, progress)
	if err != nil {
		m1.abandon()
		return err
	}
	m1.start()
	m2.start()
	// member-2's consumer and producer are closed only at the end, and
	// through its dead link: nothing of their closing reaches the node.
	defer m2.abandon()

	// The dead member's transaction, watched from its death on.
	watch := &txnWatch{node: node, out: out, id: m2.transactionalID}
	if err := awaitPipeline(ctx, out, progress, ends, watch, m1, m2); err != nil {
		m1.stopAndClose()
		return err
	}
	out.say("member-1 has committed every number's offset; it closes (leaving the group)")
	if err := m1.stopAndClose(); err != nil {
		return err
	}
	out.say("member-2's goroutines sent %s request(s) after the crash; none reached the node", m2.link.refusedSummary())

	// Every transaction must have ended, the dead one included, before
	// the output is read to its end: the coordinator aborts member-2's
	// when its timeout passes.
	if err := awaitTransactionsEnded(ctx, node, out, watch, m1, m2); err != nil {
		return err
	}
	return check(ctx, node, out, cfg, ends, m1, m2)
}

// produceNumbers writes the numbers 0 to n-1 to the input topic, number i
// to partition i%partitions, and returns each partition's end offset.
func produceNumbers(ctx context.Context, node *partlog.Node, n int) (map[kafka.TopicPartition]int64, error) {
	p, err := producer.New(node.Client(), producer.Linger(time.Millisecond))
	if err != nil {
		return nil, err
	}
	defer p.Close()
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	ends := map[kafka.TopicPartition]int64{}
	for i := range n {
		r := &producer.Record{Topic: inputTopic, Value: []byte(strconv.Itoa(i))}
		r.SetPartition(int32(i % partitions))
		wg.Add(1)
		p.Produce(ctx, r, func(r *producer.Record, err error) {
			defer wg.Done()
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				if first == nil {
					first = err
				}
				return
			}
			tp := kafka.TopicPartition{Topic: r.Topic, Partition: r.Partition}
			ends[tp] = max(ends[tp], r.Offset+1)
		})
	}
	wg.Wait()
	return ends, first
}

// tracker is the group's committed offsets as the members report their
// commits, for the main goroutine to see when the input has been
// processed.
type tracker struct {
	mu        sync.Mutex
	committed map[kafka.TopicPartition]int64
	changed   chan struct{}
}

func newTracker() *tracker {
	return &tracker{committed: map[kafka.TopicPartition]int64{}, changed: make(chan struct{}, 1)}
}

// commit records offsets the group committed.
func (t *tracker) commit(offsets map[kafka.TopicPartition]int64) {
	t.mu.Lock()
	for tp, off := range offsets {
		t.committed[tp] = off
	}
	t.mu.Unlock()
	select {
	case t.changed <- struct{}{}:
	default:
	}
}

// reached reports whether every partition's committed offset is at its
// end, and how many records are committed in all.
func (t *tracker) reached(ends map[kafka.TopicPartition]int64) (bool, int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	done, total := true, int64(0)
	for tp, end := range ends {
		total += min(t.committed[tp], end)
		done = done && t.committed[tp] >= end
	}
	return done, total
}

// awaitPipeline waits until the group's offsets reach the end of the
// input, printing progress every half second and, once member-2 has died,
// its transaction's state when it changes (looked up every tick).
func awaitPipeline(ctx context.Context, out *printer, progress *tracker, ends map[kafka.TopicPartition]int64, watch *txnWatch,
	m1, m2 *member) error {
	var total int64
	for _, end := range ends {
		total += end
	}
	deadline := time.NewTimer(waitAtMost)
	defer deadline.Stop()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	m1done, m2done := m1.done, m2.done
	for ticks := 1; ; {
		done, committed := progress.reached(ends)
		if done {
			return nil
		}
		select {
		case <-progress.changed:
		case <-m1done:
			return fmt.Errorf("member-1 stopped: %v", m1.err)
		case <-m2done:
			if !errors.Is(m2.err, errCrashed) {
				return fmt.Errorf("member-2 stopped: %v", m2.err)
			}
			m2done = nil
		case <-tick.C:
			if m2done == nil { // member-2 has died
				watch.check(ctx)
			}
			if ticks++; ticks%5 == 0 {
				out.say("progress: %d of %d numbers committed (member-1: %s; member-2: %s)", committed, total, m1.stats(), m2.stats())
			}
		case <-deadline.C:
			return fmt.Errorf("the numbers were not all processed within %v: %d of %d committed (member-1: %s; member-2: %s)",
				waitAtMost, committed, total, m1.stats(), m2.stats())
		}
	}
}

// txnWatch prints a transactional id's state whenever it changes.
type txnWatch struct {
	node *partlog.Node
	out  *printer
	id   string
	last string
}

// check looks the transactional id's state up and prints it if it
// changed, and returns it.
func (tw *txnWatch) check(ctx context.Context) string {
	st := transactionState(ctx, tw.node, tw.id)
	switch {
	case tw.last == "":
		tw.out.say("transaction coordinator: %s is %s", tw.id, st)
	case st != tw.last:
		note := ""
		if st == "PrepareAbort" || st == "CompleteAbort" {
			note = ": the coordinator aborted the dead transaction, its timeout having passed"
		}
		tw.out.say("transaction coordinator: %s %s → %s%s", tw.id, tw.last, st, note)
	}
	tw.last = st
	return st
}

// transactionState returns a transactional id's state as the
// coordinator has it ("Ongoing", "CompleteAbort", ...), or why it could
// not be described.
func transactionState(ctx context.Context, node *partlog.Node, id string) string {
	resp, err := node.Client().DescribeTransactions(ctx, &transport.DescribeTransactionsRequest{TransactionalIDs: []string{id}})
	switch {
	case err != nil:
		return err.Error()
	case len(resp.Transactions) != 1:
		return "not described"
	case resp.Transactions[0].Err != nil:
		return resp.Transactions[0].Err.Error()
	}
	return resp.Transactions[0].State
}

// awaitTransactionsEnded waits until the members' transactional ids have
// no transaction open or ending, so that every marker is written. The
// coordinator tells nobody when a transaction completes, so this asks
// (DescribeTransactions, as kafka-transactions.sh describe does) every
// 20ms.
func awaitTransactionsEnded(ctx context.Context, node *partlog.Node, out *printer, watch *txnWatch, m1, m2 *member) error {
	ended := func(st string) bool { return st == "CompleteCommit" || st == "CompleteAbort" || st == "Empty" }
	if st := watch.check(ctx); !ended(st) {
		out.say("waiting for the coordinator to end %s's transaction, %s (transaction.timeout.ms %v)", m2.name, st, transactionTimeout)
	}
	deadline := time.NewTimer(waitAtMost)
	defer deadline.Stop()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		st1, st2 := transactionState(ctx, node, m1.transactionalID), watch.check(ctx)
		if ended(st1) && ended(st2) {
			out.say("every transaction has ended: %s %s, %s %s", m1.transactionalID, st1, m2.transactionalID, st2)
			return nil
		}
		select {
		case <-tick.C:
		case <-deadline.C:
			return fmt.Errorf("the transactions did not end within %v: %s %s, %s %s", waitAtMost, m1.transactionalID, st1, m2.transactionalID, st2)
		}
	}
}

// isolationName returns the isolation level as isolation.level spells it.
func isolationName(iso consumer.IsolationLevel) string {
	if iso == consumer.ReadCommitted {
		return "read_committed"
	}
	return "read_uncommitted"
}

// awaitGroupCoordinator waits until the group's coordinator answers
// FindCoordinator, retrying while it is being created or loaded.
func awaitGroupCoordinator(ctx context.Context, node *partlog.Node) error {
	ctx, cancel := context.WithTimeout(ctx, waitAtMost)
	defer cancel()
	for {
		resp, err := node.Client().FindCoordinator(ctx, &transport.FindCoordinatorRequest{Key: group, KeyType: transport.CoordinatorGroup})
		if err == nil {
			err = resp.Err
		}
		if err == nil {
			return nil
		}
		if !kafka.IsRetriable(err) {
			return fmt.Errorf("finding group %s's coordinator: %w", group, err)
		}
		retry := time.NewTimer(20 * time.Millisecond) // a client's retry.backoff.ms
		select {
		case <-retry.C:
		case <-ctx.Done():
			retry.Stop()
			return fmt.Errorf("finding group %s's coordinator: %w (last error: %w)", group, ctx.Err(), err)
		}
	}
}

// square is one record read from the output topic.
type square struct {
	tp     kafka.TopicPartition
	offset int64
	number string
	value  string
	member string
}

// readOutput reads every partition of the output topic to its high
// watermark, at isolation level iso.
func readOutput(ctx context.Context, node *partlog.Node, iso consumer.IsolationLevel) ([]square, error) {
	desc, err := node.DescribeTopics(outputTopic)
	if err != nil {
		return nil, err
	}
	ends := map[kafka.TopicPartition]int64{}
	for _, p := range desc[0].Partitions {
		ends[kafka.TopicPartition{Topic: outputTopic, Partition: p.Partition}] = p.HighWatermark
	}
	c, err := consumer.New(node.Client(), consumer.Partitions(slices.Collect(maps.Keys(ends))...),
		consumer.AutoOffsetReset(consumer.Earliest), consumer.Isolation(iso), consumer.FetchMaxWait(50*time.Millisecond))
	if err != nil {
		return nil, err
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(ctx, waitAtMost)
	defer cancel()
	var got []square
	for {
		behind := false
		for tp, end := range ends {
			pos, err := c.Position(ctx, tp)
			if err != nil {
				return nil, err
			}
			behind = behind || pos < end
		}
		if !behind {
			return got, nil
		}
		fs, err := c.Poll(ctx, 100*time.Millisecond)
		if err != nil {
			return nil, fmt.Errorf("reading %s with %s: %w", outputTopic, isolationName(iso), err)
		}
		fs.EachRecord(func(r *consumer.Record) {
			s := square{tp: r.TopicPartition(), offset: r.Offset, number: string(r.Key), value: string(r.Value)}
			for _, h := range r.Headers {
				if h.Key == memberHeader {
					s.member = string(h.Value)
				}
			}
			got = append(got, s)
		})
	}
}

// check reads the output with read_committed (read_uncommitted with
// -break read) and with read_uncommitted, prints the summary, and fails
// unless every number's square is in the output exactly once.
func check(ctx context.Context, node *partlog.Node, out *printer, cfg config, ends map[kafka.TopicPartition]int64, m1, m2 *member) error {
	checkIso := consumer.ReadCommitted
	if cfg.brk == breakRead {
		checkIso = consumer.ReadUncommitted
	}
	out.say("reading %s with %s", outputTopic, isolationName(checkIso))
	checked, err := readOutput(ctx, node, checkIso)
	if err != nil {
		return err
	}
	committed, uncommitted := checked, checked
	if checkIso == consumer.ReadCommitted {
		if uncommitted, err = readOutput(ctx, node, consumer.ReadUncommitted); err != nil {
			return err
		}
	} else if committed, err = readOutput(ctx, node, consumer.ReadCommitted); err != nil {
		return err
	}
	// The aborted squares: read_uncommitted reads them, read_committed
	// skips them.
	type at struct {
		tp     kafka.TopicPartition
		offset int64
	}
	visible := map[at]bool{}
	for _, s := range committed {
		visible[at{s.tp, s.offset}] = true
	}
	abortedBy := map[string]int{}
	for _, s := range uncommitted {
		if !visible[at{s.tp, s.offset}] {
			abortedBy[s.member]++
		}
	}

	var records int
	for _, end := range ends {
		records += int(end)
	}
	count := map[string]int{}
	by := map[string]int{}
	var problems []string
	for _, s := range checked {
		count[s.number]++
		by[s.member]++
		n, err := strconv.ParseInt(s.number, 10, 64)
		switch {
		case err != nil || n < 0 || n >= int64(records):
			problems = append(problems, fmt.Sprintf("%v@%d: %q is not an input number", s.tp, s.offset, s.number))
		case s.value != strconv.FormatInt(n*n, 10):
			problems = append(problems, fmt.Sprintf("%v@%d: the square of %s is not %s", s.tp, s.offset, s.number, s.value))
		}
	}
	var duplicates, missing int
	var dupExamples, missingExamples []string
	for i := range records {
		switch n := count[strconv.Itoa(i)]; {
		case n == 0:
			missing++
			if len(missingExamples) < 5 {
				missingExamples = append(missingExamples, strconv.Itoa(i))
			}
		case n > 1:
			duplicates += n - 1
			if len(dupExamples) < 5 {
				dupExamples = append(dupExamples, fmt.Sprintf("%d (%d times)", i, n))
			}
		}
	}

	out.plain("\nSummary (%s read with %s):", outputTopic, isolationName(checkIso))
	line := func(label, format string, args ...any) {
		out.plain("  %-26s "+format, append([]any{label + ":"}, args...)...)
	}
	line("numbers in", "%d", records)
	line("squares out", "%d (member-1 %d, member-2 %d)", len(checked), by[m1.name], by[m2.name])
	line("duplicates", "%d%s", duplicates, examples(dupExamples))
	line("missing", "%d%s", missing, examples(missingExamples))
	line("aborted squares", "%d%s, read by read_uncommitted only", len(uncommitted)-len(committed), describeCounts(abortedBy))
	line("transactions", "member-1 %d committed, %d aborted; member-2 %d committed, %d aborted",
		m1.txns(), m1.aborts(), m2.txns(), m2.aborts())
	if duplicates > 0 || missing > 0 || len(problems) > 0 {
		if len(problems) > 10 {
			problems = append(problems[:10], fmt.Sprintf("and %d more", len(problems)-10))
		}
		for _, p := range problems {
			out.plain("  wrong: %s", p)
		}
		out.plain("\nNOT exactly once.")
		return fmt.Errorf("%d duplicates, %d missing, %d wrong squares in %s", duplicates, missing, len(problems), outputTopic)
	}
	out.plain("\nExactly once: every number's square is in %s once, though member-2 died in a transaction.", outputTopic)
	return nil
}

// examples prints a few examples after a count.
func examples(ex []string) string {
	if len(ex) == 0 {
		return ""
	}
	return " (" + strings.Join(ex, ", ") + ", ...)"
}

// describeCounts prints counts by member: " (member-2 100)".
func describeCounts(counts map[string]int) string {
	if len(counts) == 0 {
		return ""
	}
	var parts []string
	for _, name := range slices.Sorted(maps.Keys(counts)) {
		parts = append(parts, fmt.Sprintf("%s %d", name, counts[name]))
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

// describeOffsets prints offsets by partition: "numbers-0 1000, numbers-1 1000".
func describeOffsets(offsets map[kafka.TopicPartition]int64) string {
	var parts []string
	for _, tp := range sortedPartitions(offsets) {
		parts = append(parts, fmt.Sprintf("%s %d", tp, offsets[tp]))
	}
	return strings.Join(parts, ", ")
}

// sortedPartitions returns the partitions of m in order.
func sortedPartitions[V any](m map[kafka.TopicPartition]V) []kafka.TopicPartition {
	return slices.SortedFunc(maps.Keys(m), func(a, b kafka.TopicPartition) int {
		return cmp.Or(strings.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
}

// emptyDataDir removes dir if it is a partlog data directory, or empty.
func emptyDataDir(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(dir, partlog.MetaPropertiesFileName)); err != nil && len(entries) > 0 {
		return fmt.Errorf("%s holds files but is not a partlog data directory; give an empty one", dir)
	}
	return os.RemoveAll(dir)
}
