package log

import (
	"sync"

	"github.com/partlog/partlog/record"
)

// A write group is how appends that must be durable before they return
// share the work (the group commit of databases, as in LevelDB's writer
// queue): each appender queues its batch; the one at the head of the queue
// leads, takes every batch queued so far, writes them with as few writes as
// the segments allow, syncs once, and hands each appender its result. The
// appenders that queue meanwhile form the next group.
type writeGroups struct {
	mu    sync.Mutex
	cond  *sync.Cond
	queue []*groupWriter
	// buf is the log's own scratch for coalescing a run's batches; it
	// never holds a caller's batch (see run). Guarded by appendMu.
	buf []byte
}

// groupWriter is one queued append.
type groupWriter struct {
	h     record.Header
	batch []byte
	info  AppendInfo
	err   error
	done  bool
	// check vets the batch as it gets its offsets (AppendChecked);
	// checked says it passed, refused that it did not.
	check   AppendCheck
	checked bool
	refused bool
}

// appendGrouped appends one batch as part of a write group and returns once
// it is durable.
func (l *Log) appendGrouped(h record.Header, batch []byte, c AppendCheck) (AppendInfo, error) {
	g := &l.groups
	w := &groupWriter{h: h, batch: batch, check: c}
	g.mu.Lock()
	if g.cond == nil {
		g.cond = sync.NewCond(&g.mu)
	}
	g.queue = append(g.queue, w)
	for !w.done && g.queue[0] != w {
		g.cond.Wait()
	}
	if w.done {
		g.mu.Unlock()
		return w.info, w.err
	}
	group := append([]*groupWriter(nil), g.queue...)
	g.mu.Unlock()

	l.writeGroup(group)

	g.mu.Lock()
	for _, m := range group {
		m.done = true
	}
	g.queue = g.queue[len(group):]
	g.cond.Broadcast()
	g.mu.Unlock()
	return w.info, w.err
}

// writeGroup appends the group's batches, then makes them durable, setting
// each writer's result.
func (l *Log) writeGroup(group []*groupWriter) {
	l.appendMu.Lock()
	err := l.writable()
	if err == nil {
		l.appendRuns(group)
	}
	start, leo := l.logStartOffset, l.leo.Load()
	l.appendMu.Unlock()
	if err == nil {
		err = l.WaitDurable(leo)
	}
	for _, w := range group {
		if w.err == nil {
			w.err = err
		}
		if w.err == nil {
			w.info = AppendInfo{FirstOffset: w.h.BaseOffset, LastOffset: w.h.LastOffset(),
				MaxTimestamp: w.h.MaxTimestamp, Records: int(w.h.NumRecords), LogStartOffset: start}
		}
	}
}

// maxScratch bounds the coalescing scratch the log keeps between groups.
const maxScratch = 8 << 20

// run is the batches of a group bound for one segment, written with one
// write. Who owns data is the point of the type: a run of one batch is
// written from the caller's bytes, which the log may read only until the
// append returns; a longer run is copied into scratch the log owns, and
// only such a copy may be kept as the next group's scratch.
type run struct {
	headers []record.Header
	data    []byte
	// copied says data is the log's own copy, not a caller's batch.
	copied bool
}

// add appends a batch to the run; scratch is the log's spare buffer for
// the copy a second batch needs.
func (r *run) add(h record.Header, batch, scratch []byte) {
	switch len(r.headers) {
	case 0:
		r.data = batch
	case 1:
		r.data = append(append(scratch[:0], r.data...), batch...)
		r.copied = true
	default:
		r.data = append(r.data, batch...)
	}
	r.headers = append(r.headers, h)
}

// appendRuns gives the group's batches their offsets and writes them, each
// run of batches bound for the same segment with one write. A writer whose
// batch could not be written gets the error, as does every one after it.
// The caller holds appendMu.
func (l *Log) appendRuns(group []*groupWriter) {
	var (
		start int // group[start:] is what is not written yet
		r     run
		in    []*groupWriter // the writers whose batches r holds
	)
	s := l.active()
	write := func(end int) error {
		if len(r.headers) > 0 {
			if err := s.AppendBatches(r.headers, r.data); err != nil {
				failFrom(group[start:], l.classify("append", err))
				return err
			}
			for _, w := range in {
				x, _ := w.check.(TxnIndexer)
				if err := l.indexTxn(x, s, w.h, w.batch); err != nil {
					failFrom(group[start:], err)
					return err
				}
			}
			l.leo.Store(r.headers[len(r.headers)-1].NextOffset())
			if r.copied && cap(r.data) <= maxScratch {
				l.groups.buf = r.data[:0] // the next group's scratch
			}
		}
		start, r, in = end, run{headers: r.headers[:0]}, in[:0]
		return nil
	}
	next := l.leo.Load()
	now, o := l.nowMs(), l.options() // one set of settings for the group
	for i, w := range group {
		w.h.BaseOffset = next
		if w.check != nil {
			if err := w.check.CheckAppend(w.h, next); err != nil {
				w.err, w.refused = err, true
				continue
			}
			w.checked = true
		}
		record.SetBaseOffset(w.batch, next)
		if err := l.noteEpoch(w.h); err != nil {
			if write(i) == nil {
				failFrom(group[i:], err)
			}
			return
		}
		if reason := s.ShouldRoll(w.h, int64(len(r.data)), now, o.SegmentBytes, o.SegmentMs.Milliseconds()); reason != "" {
			if write(i) != nil {
				return
			}
			var err error
			if s, err = l.roll(w.h.BaseOffset, reason); err != nil {
				failFrom(group[i:], err)
				return
			}
		}
		r.add(w.h, w.batch, l.groups.buf)
		in = append(in, w)
		next = w.h.NextOffset()
	}
	write(len(group))
}

// failFrom gives the writers that were not written the error, and tells
// the checks of those that passed theirs.
func failFrom(ws []*groupWriter, err error) {
	for _, w := range ws {
		if w.refused {
			continue
		}
		w.err = err
		if w.checked {
			w.check.AppendFailed(w.h, err)
		}
	}
}
