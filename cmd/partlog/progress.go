package main

import (
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/partlog/partlog/producer"
)

// progressInterval is how often long runs report their progress on
// standard error; tests shorten it.
var progressInterval = 5 * time.Second

// progressMinRecords is how many records produce and consume handle before
// they report progress: short runs, and records typed by hand, get none.
const progressMinRecords = 100_000

// retryReporter tells the user, on standard error, that records are
// waiting because their batches are being sent again, and why — rather
// than a silent wait until the delivery timeout: at most one line per
// progressInterval, the first at once.
type retryReporter struct {
	w       io.Writer
	command string

	mu    sync.Mutex
	last  time.Time // when the last line was written
	count int       // retries since then
}

// report notes a retry, and writes a line if one is due.
func (r *retryReporter) report(rt producer.Retry) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.count++
	now := time.Now()
	if !r.last.IsZero() && now.Sub(r.last) < progressInterval {
		return
	}
	fmt.Fprintf(r.w, "partlog: %s: retrying: %d batch sends failed and will be retried (delivery.timeout.ms bounds the wait); the last, %s-%d attempt %d: %v\n",
		r.command, r.count, rt.Topic, rt.Partition, rt.Attempt, rt.Err)
	r.last, r.count = now, 0
}

// lockedWriter serializes writes to w, for output written from several
// goroutines.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// progress reports a count of records and its rate on standard error:
// "produced N records (X records/s)", the rate being that since the last
// report.
type progress struct {
	w    io.Writer
	verb string // "produced", "consumed"
	// last is when the previous report was made, or the run started, and
	// lastCount the count then.
	last      time.Time
	lastCount int64
}

func newProgress(w io.Writer, verb string, start time.Time) *progress {
	return &progress{w: w, verb: verb, last: start}
}

// due reports whether a report is due at now.
func (p *progress) due(now time.Time) bool { return now.Sub(p.last) >= progressInterval }

// report prints the count at now if a report is due and enough records
// were handled for one.
func (p *progress) report(now time.Time, count int64) {
	if !p.due(now) {
		return
	}
	if count >= progressMinRecords {
		rate := float64(count-p.lastCount) / now.Sub(p.last).Seconds()
		fmt.Fprintf(p.w, "%s %d records (%.0f records/s)\n", p.verb, count, rate)
	}
	p.last, p.lastCount = now, count
}
