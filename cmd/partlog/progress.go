package main

import (
	"fmt"
	"io"
	"time"
)

// progressInterval is how often long runs report their progress on
// standard error; tests shorten it.
var progressInterval = 5 * time.Second

// progressMinRecords is how many records produce and consume handle before
// they report progress: short runs, and records typed by hand, get none.
const progressMinRecords = 100_000

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
