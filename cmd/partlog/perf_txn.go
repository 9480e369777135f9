package main

// perf_txn.go is perf produce's transactional mode, as Kafka's
// kafka-producer-perf-test.sh runs it with --transactional-id and
// --transaction-duration-ms.

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"time"

	"github.com/partlog/partlog/producer"
)

// defaultTransactionDuration is --transaction-duration-ms when
// transactions are on and it is not given: Kafka's tool's 3000.
const defaultTransactionDuration = 3 * time.Second

// transactionalIDProp is the producer config that names the transactional
// id, as --producer-props may give it to Kafka's tool.
const transactionalIDProp = "transactional.id"

// defaultTransactionalID returns the transactional id of a run that turns
// transactions on with --transaction-duration-ms alone: as Kafka's tool
// names it, "performance-producer-" and something random.
func defaultTransactionalID() string { return "performance-producer-" + rand.Text() }

// perfTxn is perf produce's transactions: the producing loop begins one,
// produces for duration, commits it, and begins the next; the records of
// a transaction count once it committed.
type perfTxn struct {
	duration time.Duration
	// pending counts the records of the open transaction, acknowledged
	// but not committed; a commit moves them to the run's statistics.
	pending *latencyStats
	// commits holds the commit latencies: from the call to
	// CommitTransaction to its return.
	commits *latencyStats
	// open says a transaction was begun and not yet committed or aborted;
	// began is when, as time since the run's start.
	open  bool
	began time.Duration
}

func newPerfTxn(duration time.Duration, partitions int) *perfTxn {
	return &perfTxn{duration: duration, pending: newLatencyStats(partitions), commits: newLatencyStats(1)}
}

// begin opens a transaction at elapsed, the time since the run's start.
func (pt *perfTxn) begin(p *producer.Producer, elapsed time.Duration) error {
	if err := p.BeginTransaction(); err != nil {
		return err
	}
	pt.open, pt.began = true, elapsed
	return nil
}

// due reports whether the open transaction has run its duration at
// elapsed, as Kafka's tool checks after each record it sends.
func (pt *perfTxn) due(elapsed time.Duration) bool { return pt.open && elapsed-pt.began >= pt.duration }

// commit commits the open transaction and, once it committed, counts its
// records in stats. When ctx ends first the transaction stays open, to be
// committed again (the producer goes on where it stopped). Any other
// failure is recorded in stats, the transaction is aborted and its
// records are not counted.
func (pt *perfTxn) commit(ctx context.Context, p *producer.Producer, stats *latencyStats) error {
	start := time.Now()
	err := p.CommitTransaction(ctx)
	took := time.Since(start)
	if err != nil && ctx.Err() != nil && p.TransactionState() == producer.StateCommitting {
		return err
	}
	if err != nil {
		stats.fail(fmt.Errorf("commit transaction: %w", err))
		pt.abort(p)
		return err
	}
	pt.open = false
	pt.commits.record(0, took)
	pt.pending.moveTo(stats)
	return nil
}

// abort aborts the open or failed transaction, if any, and drops its
// records. A fatal producer has nothing to abort: its transaction dies
// with it, at its coordinator's timeout or its next instance.
func (pt *perfTxn) abort(p *producer.Producer) {
	pt.open = false
	pt.pending.reset()
	switch p.TransactionState() {
	case producer.StateInTransaction, producer.StateCommitting, producer.StateAbortableError, producer.StateAborting:
		// Its failure is that of a record, or of the commit, recorded
		// already.
		_ = p.AbortTransaction(context.Background())
	}
}

// finish ends the run's last transaction: it commits it, or aborts it
// when a record or a commit failed. Like the flush at the end of a run
// without transactions, it is not cut short by an interrupt.
func (pt *perfTxn) finish(p *producer.Producer, stats *latencyStats) {
	if !pt.open {
		return
	}
	if stats.failed.Load() {
		pt.abort(p)
		return
	}
	_ = pt.commit(context.Background(), p, stats) // recorded in stats
}

// writeTransactionsLine writes perf produce's line on transactions, after
// the totals, in the style of Kafka's summary line:
//
//	N transactions committed, X transactions/sec, A ms avg commit latency, M ms max commit latency, P50 ms 50th, P95 ms 95th, P99 ms 99th.
//
// The latencies are those of CommitTransaction calls, to the
// microsecond; the percentiles are within 1%, printed as milliseconds
// with two decimals, since a commit takes a few.
func writeTransactionsLine(w io.Writer, n int64, elapsed time.Duration, avg, maxLatency, p50, p95, p99 time.Duration) {
	fmt.Fprintf(w, "%d transactions committed, %.1f transactions/sec, %.2f ms avg commit latency, %.2f ms max commit latency, %.2f ms 50th, %.2f ms 95th, %.2f ms 99th.\n",
		n, float64(n)/elapsed.Seconds(), ms(avg), ms(maxLatency), ms(p50), ms(p95), ms(p99))
}

// report writes the transactions line of a run that took elapsed.
func (pt *perfTxn) report(w io.Writer, elapsed time.Duration) {
	count, sum, maxLatency := pt.commits.snapshot()
	var avg time.Duration
	if count > 0 {
		avg = sum / time.Duration(count)
	}
	ps := pt.commits.percentiles(0.5, 0.95, 0.99)
	for i := range ps {
		ps[i] = min(ps[i], maxLatency) // the middle of the largest's bucket may lie above it
	}
	writeTransactionsLine(w, count, elapsed, avg, maxLatency, ps[0], ps[1], ps[2])
}
