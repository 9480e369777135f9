package controller

import (
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/partlog/partlog/vfs"
)

// Options configures a Controller and its Machine. The zero value works:
// Kafka's defaults. Durations are rounded up to whole ticks. A Machine
// reads only the first four fields: it does no I/O and logs nothing, so
// it ignores FS and Logger.
type Options struct {
	// TickInterval is how often the controller ticks: the time one
	// Machine.Tick stands for, and the unit of the timeouts. Zero means
	// 100 ms.
	TickInterval time.Duration
	// SessionTimeout is broker.session.timeout.ms: a node that has not
	// heartbeat for this long is fenced, and its partitions' leadership
	// moves. Zero means 9 s. Nodes must heartbeat well within it.
	SessionTimeout time.Duration
	// LeaderImbalanceCheckInterval is
	// leader.imbalance.check.interval.seconds: how often leadership moves
	// back to preferred replicas. Zero means 300 s.
	LeaderImbalanceCheckInterval time.Duration
	// NoAutoLeaderRebalance turns that off: auto.leader.rebalance.enable
	// set to false. Unlike Kafka, leadership moves back whatever
	// leader.imbalance.per.broker.percentage would say.
	NoAutoLeaderRebalance bool
	// FS is the filesystem; nil means the OS.
	FS vfs.FS
	// Logger receives the controller's decisions and failures. Nil
	// discards them.
	Logger *slog.Logger
}

const (
	defaultTickInterval                 = 100 * time.Millisecond
	defaultSessionTimeout               = 9 * time.Second
	defaultLeaderImbalanceCheckInterval = 300 * time.Second
)

// withDefaults returns a copy of o with its zero fields filled in, or an
// error naming a field that is out of range.
func (o Options) withDefaults() (Options, error) {
	if o.FS == nil {
		o.FS = vfs.Default
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	for _, d := range []struct {
		name string
		v    *time.Duration
		def  time.Duration
	}{
		{"TickInterval", &o.TickInterval, defaultTickInterval},
		{"SessionTimeout", &o.SessionTimeout, defaultSessionTimeout},
		{"LeaderImbalanceCheckInterval", &o.LeaderImbalanceCheckInterval, defaultLeaderImbalanceCheckInterval},
	} {
		switch {
		case *d.v < 0:
			return o, fmt.Errorf("controller: %s %v must not be negative", d.name, *d.v)
		case *d.v == 0:
			*d.v = d.def
		}
	}
	return o, nil
}

// ticks returns how many ticks d spans, rounded up, and at least one.
func (o Options) ticks(d time.Duration) int64 {
	return max(1, int64((d+o.TickInterval-1)/o.TickInterval))
}
