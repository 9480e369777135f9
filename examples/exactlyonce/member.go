package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/partlog/partlog"
	"github.com/partlog/partlog/consumer"
	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/producer"
)

// errCrashed is how a member's loop ends when its process dies.
var errCrashed = errors.New("crashed")

// member is one member of the group: a read_committed consumer and a
// transactional producer of its own, both talking to the node through the
// member's link, and the loop that squares numbers in transactions, in a
// goroutine of its own as a process's main loop.
type member struct {
	name            string
	transactionalID string
	link            *link
	c               *consumer.Consumer
	p               *producer.Producer
	out             *printer
	progress        *tracker
	brk             breakMode
	// crashIn is the transaction the member dies in, 0 for none.
	crashIn int

	stop     chan struct{}
	stopOnce sync.Once
	done     chan struct{} // closed when the loop has returned
	err      error         // why the loop returned, once done

	mu        sync.Mutex
	committed int // transactions
	aborted   int
	numbers   int // numbers squared in committed transactions
	crashed   bool
	// waitingSince is when the member began waiting out unstable
	// offsets, zero when it is not.
	waitingSince time.Time
}

// newMember makes a member's consumer and producer: the producer gets its
// producer id from the transaction coordinator (InitProducerId), which
// aborts what an earlier instance with its transactional id left open.
func newMember(node *partlog.Node, name string, crashIn int, brk breakMode, out *printer, progress *tracker) (*member, error) {
	m := &member{name: name, transactionalID: group + "-" + name, link: newLink(node.Client()), out: out, progress: progress,
		brk: brk, crashIn: crashIn, stop: make(chan struct{}), done: make(chan struct{})}
	c, err := consumer.New(m.link,
		consumer.Group(group), consumer.Topics(inputTopic), consumer.ClientID(name),
		consumer.Isolation(consumer.ReadCommitted), consumer.AutoOffsetReset(consumer.Earliest),
		consumer.DisableAutoCommit(), // the offsets go into the transactions
		consumer.SessionTimeout(sessionTimeout), consumer.HeartbeatInterval(heartbeatInterval),
		consumer.MaxPollRecords(pollRecords), consumer.FetchMaxWait(50*time.Millisecond),
		consumer.RetryBackoff(20*time.Millisecond), consumer.RetryBackoffMax(100*time.Millisecond),
		consumer.Offsets(reportingOffsets{OffsetStore: consumer.CoordinatorOffsets(m.link), onUnstable: m.unstable}),
		consumer.OnPartitionsAssigned(m.assigned),
		consumer.OnPartitionsRevoked(m.revoked),
		consumer.OnPartitionsLost(m.lost),
	)
	if err != nil {
		return nil, err
	}
	p, err := producer.New(m.link, producer.TransactionalID(m.transactionalID),
		producer.TransactionTimeout(transactionTimeout), producer.Linger(time.Millisecond),
		// A transaction's first AddOffsetsToTxn or AddPartitionsToTxn
		// often finds the previous one still writing its markers
		// (CONCURRENT_TRANSACTIONS, retriable): retry soon, not after
		// the default 100ms.
		producer.RetryBackoff(10*time.Millisecond))
	if err != nil {
		c.Close()
		return nil, err
	}
	m.c, m.p = c, p
	return m, nil
}

// start starts the member's loop.
func (m *member) start() {
	go func() {
		defer close(m.done)
		m.err = m.loop(context.Background())
	}()
}

// loop polls numbers and squares them, one transaction per poll, until
// stop, or until the member dies in transaction crashIn.
func (m *member) loop(ctx context.Context) error {
	for txn := 1; ; {
		select {
		case <-m.stop:
			return nil
		default:
		}
		fs, err := m.c.Poll(ctx, 100*time.Millisecond)
		if err != nil {
			return fmt.Errorf("poll: %w", err)
		}
		if fs.Empty() {
			continue
		}
		// The offsets to commit: each partition's position, past the
		// numbers of this poll. The group metadata names the member and
		// its generation, so that the group refuses the offsets if it has
		// given the partitions to another member meanwhile (KIP-447).
		offsets := map[kafka.TopicPartition]int64{}
		for _, fp := range fs {
			tp := kafka.TopicPartition{Topic: fp.Topic, Partition: fp.Partition}
			if offsets[tp], err = m.c.Position(ctx, tp); err != nil {
				return err
			}
		}
		gm := m.c.GroupMetadata()
		meta := producer.GroupMetadata{Group: gm.Group, GenerationID: gm.Generation, MemberID: gm.MemberID, GroupInstanceID: gm.GroupInstanceID}

		if err := m.p.BeginTransaction(); err != nil {
			return err
		}
		n := 0
		for r := range fs.All() {
			sq, err := squareOf(r, m.name)
			if err != nil {
				return err
			}
			m.p.Produce(ctx, sq, nil) // a failed record fails the commit
			n++
		}
		crash := txn == m.crashIn
		switch m.brk {
		case exactlyOnce, breakRead:
			if crash {
				// The squares are written (Flush) and the offsets are in
				// the transaction; then the process dies.
				if err := m.p.Flush(ctx); err != nil {
					return err
				}
				if err := m.p.SendOffsetsToTransaction(ctx, offsets, meta); err != nil {
					return err
				}
				m.die(txn, n, offsets, "its squares written and its offsets sent to the transaction, not committed")
				return errCrashed
			}
			err = m.p.SendOffsetsToTransaction(ctx, offsets, meta)
			if err == nil {
				err = m.p.CommitTransaction(ctx)
			}
		case breakOffsets:
			// The broken pipeline: the squares commit in the transaction,
			// the offsets after it, with the consumer.
			err = m.p.CommitTransaction(ctx)
			if err == nil && crash {
				m.die(txn, n, offsets, "its squares committed, its offsets not yet")
				return errCrashed
			}
			if err == nil {
				commit := map[kafka.TopicPartition]consumer.CommittedOffset{}
				for tp, off := range offsets {
					commit[tp] = consumer.CommittedOffset{Offset: off, LeaderEpoch: -1}
				}
				if err = m.c.CommitOffsets(ctx, commit); err != nil {
					m.out.say("%s: committing offsets after transaction %d failed: %v; they are left behind", m.name, txn, err)
					continue
				}
			}
		}
		if err != nil {
			if !errors.Is(err, producer.ErrAbortable) {
				return fmt.Errorf("transaction %d: %w", txn, err)
			}
			if err := m.abort(ctx, txn, err); err != nil {
				return err
			}
			continue
		}
		m.mu.Lock()
		m.committed++
		m.numbers += n
		m.mu.Unlock()
		m.progress.commit(offsets)
		txn++
	}
}

// squareOf returns the record of r's square, to the same partition of the
// output topic as r's of the input.
func squareOf(r *consumer.Record, by string) (*producer.Record, error) {
	n, err := strconv.ParseInt(string(r.Value), 10, 64)
	if err != nil {
		return nil, fmt.Errorf("%v@%d: %q is not a number", r.TopicPartition(), r.Offset, r.Value)
	}
	sq := &producer.Record{Topic: outputTopic, Key: r.Value, Value: []byte(strconv.FormatInt(n*n, 10)),
		Headers: []producer.Header{{Key: memberHeader, Value: []byte(by)}}}
	sq.SetPartition(r.Partition)
	return sq, nil
}

// abort aborts the failed transaction txn and moves the consumer back to
// the group's committed offsets, which the transaction did not move: its
// numbers will be squared again, in a new transaction.
func (m *member) abort(ctx context.Context, txn int, why error) error {
	m.out.say("%s: transaction %d failed (%v); aborting it and rewinding to the committed offsets", m.name, txn, why)
	if err := m.p.AbortTransaction(ctx); err != nil {
		return err
	}
	m.mu.Lock()
	m.aborted++
	m.mu.Unlock()
	tps := m.c.Assignment()
	if len(tps) == 0 {
		return nil
	}
	committed, err := m.committedOffsets(ctx, tps)
	if err != nil {
		return err
	}
	for _, tp := range tps {
		if o, ok := committed[tp]; ok {
			err = m.c.Seek(tp, o.Offset)
		} else {
			err = m.c.SeekToBeginning(tp)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// die is the member's process dying in transaction txn: its link is cut,
// and nothing it does from now on reaches the node.
func (m *member) die(txn, n int, offsets map[kafka.TopicPartition]int64, what string) {
	m.link.crash()
	m.mu.Lock()
	m.crashed = true
	m.mu.Unlock()
	m.out.say("%s: CRASH in transaction %d: %d squares, %s (offsets %s).", m.name, txn, n, what, describeOffsets(offsets))
	m.out.say("%s: its process is gone: no commit, no abort, no LeaveGroup, no more heartbeats", m.name)
}

// assigned prints the partitions a rebalance gave the member, and the
// committed offsets it starts them at.
func (m *member) assigned(ctx context.Context, c *consumer.Consumer, tps []kafka.TopicPartition) {
	m.stable()
	committed, err := m.committedOffsets(ctx, tps)
	from := ""
	for _, tp := range tps {
		switch o, ok := committed[tp]; {
		case err != nil:
			from += fmt.Sprintf(" %s ?", tp)
		case ok:
			from += fmt.Sprintf(" %s@%d", tp, o.Offset)
		default:
			from += fmt.Sprintf(" %s@start", tp)
		}
	}
	m.out.say("%s: assigned%s (generation %d), at the group's committed offsets", m.name, from, c.GroupMetadata().Generation)
}

// committedOffsets returns the group's committed offsets of tps, once
// they are stable (Committed waits out UNSTABLE_OFFSET_COMMIT).
func (m *member) committedOffsets(ctx context.Context, tps []kafka.TopicPartition) (map[kafka.TopicPartition]consumer.CommittedOffset, error) {
	ctx, cancel := context.WithTimeout(ctx, waitAtMost)
	defer cancel()
	offsets, err := m.c.Committed(ctx, tps...)
	if err != nil {
		return nil, fmt.Errorf("the committed offsets of %s: %w", describePartitions(tps), err)
	}
	m.stable()
	return offsets, nil
}

// revoked prints the partitions a rebalance takes from the member.
func (m *member) revoked(_ context.Context, _ *consumer.Consumer, tps []kafka.TopicPartition) {
	if !m.link.dead.Load() {
		m.out.say("%s: revoked %s", m.name, describePartitions(tps))
	}
}

// lost prints the partitions the member lost with its membership.
func (m *member) lost(_ context.Context, _ *consumer.Consumer, tps []kafka.TopicPartition) {
	if !m.link.dead.Load() {
		m.out.say("%s: lost %s (its membership ended)", m.name, describePartitions(tps))
	}
}

// unstable prints that the group's offsets of tps are in a transaction
// still open, which a new owner must wait out.
func (m *member) unstable(tps []kafka.TopicPartition) {
	m.mu.Lock()
	first := m.waitingSince.IsZero()
	if first {
		m.waitingSince = time.Now()
	}
	m.mu.Unlock()
	if !first {
		return
	}
	m.out.say("%s: the offsets of %s are UNSTABLE_OFFSET_COMMIT (a transaction with offsets for them has not completed); waiting",
		m.name, describePartitions(tps))
}

// stable prints, after unstable, how long the member waited.
func (m *member) stable() {
	m.mu.Lock()
	since := m.waitingSince
	m.waitingSince = time.Time{}
	m.mu.Unlock()
	if !since.IsZero() {
		m.out.say("%s: the offsets are stable again, after %v", m.name, time.Since(since).Round(time.Millisecond))
	}
}

func describePartitions(tps []kafka.TopicPartition) string {
	var parts []string
	for _, tp := range tps {
		parts = append(parts, tp.String())
	}
	return strings.Join(parts, " ")
}

// stats prints what the member has done.
func (m *member) stats() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := fmt.Sprintf("%d transactions, %d numbers", m.committed, m.numbers)
	if m.crashed {
		s += ", then died"
	}
	return s
}

func (m *member) txns() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.committed
}

func (m *member) aborts() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.aborted
}

// stopAndClose stops the loop between two transactions and closes the
// consumer, which leaves the group, and the producer.
func (m *member) stopAndClose() error {
	m.stopOnce.Do(func() { close(m.stop) })
	<-m.done
	return errors.Join(m.err, m.c.Close(), m.p.Close())
}

// abandon closes a dead member's consumer and producer, freeing their
// goroutines; through its dead link nothing of it reaches the node.
func (m *member) abandon() {
	m.c.Close()
	m.p.Close()
}

// reportingOffsets is the consumer's own offset store, which fetches with
// require_stable as Kafka's consumer does (KIP-447), so that a partition
// whose offsets are in a transaction still open is answered
// UNSTABLE_OFFSET_COMMIT — retriable: the consumer tries again until the
// transaction has ended — rather than with the offset committed before it.
// It tells onUnstable when that happens, for the program's progress lines.
type reportingOffsets struct {
	consumer.OffsetStore
	onUnstable func([]kafka.TopicPartition)
}

// FetchOffsets fetches the stable offsets of tps, reporting a wait.
func (s reportingOffsets) FetchOffsets(ctx context.Context, group string, tps []kafka.TopicPartition) (map[kafka.TopicPartition]consumer.CommittedOffset, error) {
	offsets, err := s.OffsetStore.FetchOffsets(ctx, group, tps)
	if errors.Is(err, kafka.ErrUnstableOffsetCommit) {
		s.onUnstable(tps)
	}
	return offsets, err
}
