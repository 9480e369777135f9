package log

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// flusher makes appended batches durable. Callers waiting for durability
// take turns holding the sync token; whoever holds it syncs everything
// appended so far, so appenders that arrive while a sync runs are covered
// together by the next one (group commit). Writers that change the segment
// list under the flusher's feet (truncation, Close) hold the token too.
type flusher struct {
	l *Log

	mu      sync.Mutex
	cond    *sync.Cond
	syncing bool // the sync token is taken

	// recoveryPoint is the offset below which everything is durable.
	recoveryPoint atomic.Int64
	// indexesFlushedTo: every sealed segment ending at or below it has
	// had its indexes flushed too. The token holder owns it.
	indexesFlushedTo int64

	failed atomic.Pointer[error]

	stopc chan struct{}
	done  chan struct{}
}

func (f *flusher) init(l *Log) {
	f.l = l
	f.cond = sync.NewCond(&f.mu)
	if l.options().FlushInterval > 0 {
		f.stopc, f.done = make(chan struct{}), make(chan struct{})
		go f.run(l.options().FlushInterval)
	}
}

// run is the flush.ms loop: it flushes whatever is unflushed every interval.
func (f *flusher) run(interval time.Duration) {
	defer close(f.done)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-f.stopc:
			return
		case <-t.C:
			if leo := f.l.leo.Load(); leo > f.recoveryPoint.Load() {
				if err := f.waitDurable(leo); err != nil && !errors.Is(err, ErrClosed) {
					f.l.logger.Error("periodic flush failed", "err", err)
				}
			}
		}
	}
}

// stop ends the flush.ms loop and waits for it.
func (f *flusher) stop() {
	if f.stopc != nil {
		close(f.stopc)
		<-f.done
		f.stopc = nil
	}
}

// failure returns the error that failed the log, or nil.
func (f *flusher) failure() error {
	if p := f.failed.Load(); p != nil {
		return *p
	}
	return nil
}

// fail marks the log failed and returns err as ErrStorage.
func (f *flusher) fail(err error) error {
	wrapped := fmt.Errorf("%w: %w", ErrStorage, err)
	if f.failed.CompareAndSwap(nil, &wrapped) {
		f.l.logger.Error("log failed; appends refused until it is reopened", "err", err)
	}
	return wrapped
}

// waitDurable returns once every batch below offset (or below the log end
// offset, if that is lower) is durable, syncing when no one else is.
func (f *flusher) waitDurable(offset int64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for {
		if err := f.failure(); err != nil {
			return err
		}
		if f.recoveryPoint.Load() >= min(offset, f.l.leo.Load()) {
			return nil
		}
		if f.syncing {
			f.cond.Wait()
			continue
		}
		f.syncing = true
		target := f.l.leo.Load()
		f.mu.Unlock()
		err := f.l.flushTo(target)
		f.mu.Lock()
		f.syncing = false
		f.cond.Broadcast()
		switch {
		case errors.Is(err, ErrClosed):
			return err
		case err != nil:
			return f.fail(err)
		case target > f.recoveryPoint.Load():
			f.recoveryPoint.Store(target)
		}
	}
}

// withToken runs fn holding the sync token, so that no sync runs beside it,
// then lowers the recovery point to the log end offset if fn lowered that.
func (f *flusher) withToken(fn func() error) error {
	f.mu.Lock()
	for f.syncing {
		f.cond.Wait()
	}
	f.syncing = true
	f.mu.Unlock()

	err := fn()

	f.mu.Lock()
	leo := f.l.leo.Load()
	if f.recoveryPoint.Load() > leo {
		f.recoveryPoint.Store(leo)
	}
	f.indexesFlushedTo = min(f.indexesFlushedTo, leo)
	f.syncing = false
	f.cond.Broadcast()
	f.mu.Unlock()
	return err
}

// WaitDurable returns once every batch below offset is durable — or every
// batch, when offset is past the log end offset — syncing if needed.
// Callers waiting at once share syncs. After a failed sync it returns
// ErrStorage, now and for good.
func (l *Log) WaitDurable(offset int64) error {
	if l.isClosed() {
		return ErrClosed
	}
	return l.flush.waitDurable(offset)
}

// Flush makes every appended batch durable, as WaitDurable(LogEndOffset()).
func (l *Log) Flush() error { return l.WaitDurable(l.leo.Load()) }

// flushTo syncs the segments holding batches below target: a sealed
// segment with its indexes, once; the active one's log only (recovery
// rebuilds its indexes). The caller holds the sync token.
func (l *Log) flushTo(target int64) error {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed {
		return ErrClosed
	}
	if report := l.options().OnFlush; report != nil {
		start := time.Now()
		if err := l.flushToLocked(target); err != nil {
			return err
		}
		report(time.Since(start))
		return nil
	}
	return l.flushToLocked(target)
}

// flushToLocked is flushTo with l.mu held (read).
func (l *Log) flushToLocked(target int64) error {
	last := len(l.segments) - 1
	for i, s := range l.segments {
		if s.BaseOffset() >= target && i > 0 {
			break
		}
		if i == last {
			if err := s.Sync(); err != nil {
				return err
			}
			break
		}
		if s.NextOffset() <= l.flush.indexesFlushedTo {
			continue
		}
		if err := s.Flush(); err != nil {
			return err
		}
		l.flush.indexesFlushedTo = s.NextOffset()
	}
	return nil
}

// flushAll makes everything durable, the active segment's indexes too.
// Close calls it.
func (l *Log) flushAll() error {
	return l.flush.withToken(func() error {
		leo := l.leo.Load()
		if err := l.flushTo(leo); err != nil {
			return l.flush.fail(err)
		}
		l.mu.RLock()
		err := l.active().Flush()
		l.mu.RUnlock()
		if err != nil {
			return l.flush.fail(err)
		}
		l.flush.recoveryPoint.Store(leo)
		return nil
	})
}
