package replica

import (
	"fmt"
	"io"
	"log/slog"
	"time"
)

// BufferPool lends byte buffers (see Options.AnswerBuffers). A replica
// only takes them; whoever ends up holding one gives it back to the pool
// it came from.
type BufferPool interface {
	// Get returns a buffer of n bytes, whose content is undefined, for
	// the caller to own until it hands it on.
	Get(n int) []byte
}

// Options configures a Replica. The zero value works: Kafka's defaults.
//
// Time in a Replica is counted in ticks: the driver calls Tick once per
// TickInterval, and every duration below is rounded up to whole ticks.
type Options struct {
	// TickInterval is the time one Tick stands for. Zero means 100 ms.
	TickInterval time.Duration
	// ReplicaLagTimeMax is replica.lag.time.max.ms: a leader drops a
	// follower from the ISR once the follower has not been caught up to
	// the leader's log end offset for this long. Zero means 30 s.
	ReplicaLagTimeMax time.Duration
	// MinInsyncReplicas is min.insync.replicas: acks=all appends fail with
	// kafka.ErrNotEnoughReplicas, and the high watermark stands still,
	// while fewer replicas are in sync. Zero means 1.
	MinInsyncReplicas int
	// FetchMaxBytes is replica.fetch.max.bytes: how many bytes of batches
	// a follower asks for at once (at least one batch comes, however
	// large). Zero means 1 MiB.
	FetchMaxBytes int
	// FetchWaitMax is replica.fetch.wait.max.ms: how long a leader holds a
	// follower's fetch that found nothing new before answering it empty.
	// Zero means 500 ms.
	FetchWaitMax time.Duration
	// FetchTimeout is replica.socket.timeout.ms: how long a follower waits
	// for the answer to a fetch before sending another. Zero means 30 s.
	FetchTimeout time.Duration
	// FetchBackoff is replica.fetch.backoff.ms: how long a follower waits
	// after an error answer before fetching again. Zero means 1 s.
	FetchBackoff time.Duration
	// HighWatermark is the high watermark this replica had when it last
	// ran (from replication-offset-checkpoint). It is capped at the log
	// end offset. Zero means nothing is known to be committed.
	HighWatermark int64
	// BrokerEpoch is this node's incarnation (Kafka's broker epoch): it
	// must grow with every restart of the node. A follower numbers its
	// fetches from BrokerEpoch<<32, so that an answer to a fetch sent
	// before a restart, still on its way, is never taken for the answer
	// to a fetch sent after. Zero is fine for a node that never restarts
	// with messages in flight.
	BrokerEpoch uint32
	// Logger receives state changes. Nil discards them.
	Logger *slog.Logger
	// CheckAppend, when not nil, vets each batch Propose accepts as the
	// leader, just before the batch gets its offsets: baseOffset is the
	// offset its first record will get. It may rewrite the batch in place
	// (a LogAppendTime stamp) and record what it must of it (an
	// idempotent producer's sequence); an error refuses the batch, which
	// Propose then returns as it is. It runs on the driver's loop, in the
	// order batches are proposed.
	CheckAppend func(batch []byte, baseOffset int64) error
	// AnswerBuffers, when not nil, lends the buffers a leader reads its
	// answers to followers' fetches into, in place of new memory for each.
	// The answer's Records are that buffer: the replica hands it to
	// Transport.Send in the MsgFetchResponse and never touches it again,
	// so the transport may give it back to the pool once nothing reads
	// it any more — a network transport after writing it to the
	// connection; one that passes messages on by reference never does.
	AnswerBuffers BufferPool

	// truncateToHighWatermark makes a follower truncate its log to its own
	// high watermark when it starts or follows a new leader, and fetch
	// without its last epoch — the protocol before KIP-101, which loses
	// acknowledged data. It also appends a fetched batch that straddles
	// the log end as it is, as followers then did (the log refuses it:
	// offsets would go backwards). Tests switch it on to show that they
	// would catch both.
	truncateToHighWatermark bool
}

const (
	defaultTickInterval      = 100 * time.Millisecond
	defaultReplicaLagTimeMax = 30 * time.Second
	defaultFetchMaxBytes     = 1 << 20
	defaultFetchWaitMax      = 500 * time.Millisecond
	defaultFetchTimeout      = 30 * time.Second
	defaultFetchBackoff      = time.Second
)

func (o Options) withDefaults() (Options, error) {
	if o.TickInterval == 0 {
		o.TickInterval = defaultTickInterval
	}
	if o.ReplicaLagTimeMax == 0 {
		o.ReplicaLagTimeMax = defaultReplicaLagTimeMax
	}
	if o.MinInsyncReplicas == 0 {
		o.MinInsyncReplicas = 1
	}
	if o.FetchMaxBytes == 0 {
		o.FetchMaxBytes = defaultFetchMaxBytes
	}
	if o.FetchWaitMax == 0 {
		o.FetchWaitMax = defaultFetchWaitMax
	}
	if o.FetchTimeout == 0 {
		o.FetchTimeout = defaultFetchTimeout
	}
	if o.FetchBackoff == 0 {
		o.FetchBackoff = defaultFetchBackoff
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	switch {
	case o.TickInterval < 0:
		return o, fmt.Errorf("replica: TickInterval %v is negative", o.TickInterval)
	case o.ReplicaLagTimeMax < 0:
		return o, fmt.Errorf("replica: ReplicaLagTimeMax %v is negative", o.ReplicaLagTimeMax)
	case o.MinInsyncReplicas < 0:
		return o, fmt.Errorf("replica: MinInsyncReplicas %d is negative", o.MinInsyncReplicas)
	case o.FetchMaxBytes < 0:
		return o, fmt.Errorf("replica: FetchMaxBytes %d is negative", o.FetchMaxBytes)
	case o.FetchWaitMax < 0, o.FetchTimeout < 0, o.FetchBackoff < 0:
		return o, fmt.Errorf("replica: FetchWaitMax %v, FetchTimeout %v and FetchBackoff %v must not be negative",
			o.FetchWaitMax, o.FetchTimeout, o.FetchBackoff)
	case o.HighWatermark < 0:
		return o, fmt.Errorf("replica: HighWatermark %d is negative", o.HighWatermark)
	}
	return o, nil
}

// ticks converts d to whole ticks, rounding up.
func (o Options) ticks(d time.Duration) int64 {
	return int64((d + o.TickInterval - 1) / o.TickInterval)
}
