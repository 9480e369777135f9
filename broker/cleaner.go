package broker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/partlog/partlog/log"
)

// defaultCleanerInterval is Kafka's log.cleaner.backoff.ms: how long the
// cleaner waits between passes over the compacted partitions.
const defaultCleanerInterval = 15 * time.Second

// startCleaner runs the log cleaner on a goroutine that Close stops: a clean
// in progress is cancelled, and what it swapped in stays.
func (n *Broker) startCleaner() {
	if n.opts.LogCleanerInterval <= 0 {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	n.bg.Go(func() {
		<-n.stop
		cancel()
	})
	n.runEvery(n.opts.LogCleanerInterval, func() {
		if err := n.cleanAll(ctx); err != nil && ctx.Err() == nil {
			n.logger.Error("log cleaner failed", "err", err)
		}
	})
}

// cleanNow runs one pass of the log cleaner now (partlogtest.CleanNow).
func (n *Broker) cleanNow(ctx context.Context) error {
	if err := n.begin(); err != nil {
		return err
	}
	defer n.end()
	return n.cleanAll(ctx)
}

// cleanAll cleans every compacted partition once.
func (n *Broker) cleanAll(ctx context.Context) error {
	parts := n.member.compactedPartitions()
	var errs []error
	cleaned := false
	for _, p := range parts {
		if err := ctx.Err(); err != nil {
			return err
		}
		name := partitionName(p)
		st, err := p.Clean(ctx) // up to the last stable offset
		switch {
		case errors.Is(err, log.ErrCleanAborted):
			n.logger.Info("log clean aborted; the next pass retries", "partition", name)
		case errors.Is(err, log.ErrClosed):
			// The topic was deleted meanwhile.
		case err != nil:
			errs = append(errs, fmt.Errorf("partlog: clean %s: %w", name, err))
		case st.Cleaned:
			cleaned = true
			n.logger.Info("cleaned log", "partition", name, "dirty_ratio", st.DirtyRatio,
				"bytes_read", st.BytesRead, "bytes_written", st.BytesWritten,
				"records_read", st.RecordsRead, "records_kept", st.RecordsKept,
				"aborted_records_removed", st.AbortedRecordsRemoved, "markers_removed", st.MarkersRemoved)
		}
	}
	if cleaned {
		// Kafka writes its cleaner-offset-checkpoint after each clean.
		if err := n.logs.Checkpoint(); err != nil && !errors.Is(err, log.ErrClosed) {
			errs = append(errs, fmt.Errorf("partlog: %w", err))
		}
	}
	return errors.Join(errs...)
}
