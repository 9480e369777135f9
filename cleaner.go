package partlog

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/partlog/partlog/log"
)

// defaultCleanerInterval is Kafka's log.cleaner.backoff.ms: how long the
// cleaner waits between passes over the compacted partitions.
const defaultCleanerInterval = 15 * time.Second

// LogCleanerInterval sets how often the log cleaner compacts the partitions
// of topics whose cleanup.policy includes compact (Kafka's
// log.cleaner.backoff.ms). The default is 15 seconds; zero or negative
// turns the background cleaner off (Kafka's log.cleaner.enable=false), and
// CleanNow still cleans.
func LogCleanerInterval(d time.Duration) Option {
	return optionFunc(func(o *nodeOptions) { o.cleanerInterval = d })
}

// startCleaner runs the log cleaner on a goroutine that Close stops: a clean
// in progress is cancelled, and what it swapped in stays.
func (n *Node) startCleaner() {
	if n.opts.cleanerInterval <= 0 {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	n.bg.Go(func() {
		<-n.stop
		cancel()
	})
	n.runEvery(n.opts.cleanerInterval, func() {
		if err := n.cleanAll(ctx); err != nil && ctx.Err() == nil {
			n.logger.Error("log cleaner failed", "err", err)
		}
	})
}

// CleanNow runs one pass of the log cleaner over every partition of the
// topics whose cleanup.policy includes compact, and returns when it is done:
// each partition dirty enough (min.cleanable.dirty.ratio) is compacted up
// to its high watermark, as log.Log.Clean describes, and the cleaner
// checkpoint is written. The background cleaner does the same every
// LogCleanerInterval; tests call CleanNow to await a pass.
func (n *Node) CleanNow(ctx context.Context) error {
	if err := n.begin(); err != nil {
		return err
	}
	defer n.end()
	return n.cleanAll(ctx)
}

// cleanAll cleans every compacted partition once.
func (n *Node) cleanAll(ctx context.Context) error {
	parts := n.member.compactedPartitions()
	var errs []error
	cleaned := false
	for _, p := range parts {
		if err := ctx.Err(); err != nil {
			return err
		}
		name := partitionName(p)
		st, err := p.Log().Clean(ctx, p.HighWatermark())
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
				"records_read", st.RecordsRead, "records_kept", st.RecordsKept)
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

// compacted reports whether the topic's cleanup.policy includes compact.
func (c topicConfig) compacted() bool {
	p, _ := log.ParseCleanupPolicy(c.values[ConfigCleanupPolicy])
	return p.Compacts()
}

// cleanerOptions maps cleanup.policy, delete.retention.ms,
// min.cleanable.dirty.ratio and min.compaction.lag.ms onto a log's options,
// whose zero values are Kafka's defaults.
func (c topicConfig) cleanerOptions(o *log.Options) {
	o.CleanupPolicy, _ = log.ParseCleanupPolicy(c.values[ConfigCleanupPolicy])
	if ms := c.long(ConfigDeleteRetentionMs); ms == 0 {
		o.DeleteRetentionMs = -1 // none: the log's zero means the default
	} else {
		o.DeleteRetentionMs = longMs(ms)
	}
	ratio, _ := strconv.ParseFloat(c.values[ConfigMinCleanableRatio], 64)
	if ratio == 0 {
		ratio = -1 // any dirt: the log's zero means the default
	}
	o.MinCleanableDirtyRatio = ratio
	o.MinCompactionLagMs = longMs(c.long(ConfigMinCompactionLagMs))
}

// longMs turns a config in milliseconds into a duration, saturating.
func longMs(ms int64) time.Duration {
	if ms > math.MaxInt64/int64(time.Millisecond) {
		return math.MaxInt64
	}
	return time.Duration(ms) * time.Millisecond
}
