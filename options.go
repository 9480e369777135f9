package partlog

import (
	"io"
	"log/slog"
	"time"

	"github.com/partlog/partlog/group"
	"github.com/partlog/partlog/vfs"
)

// Option configures Open.
type Option interface{ apply(*nodeOptions) }

type optionFunc func(*nodeOptions)

func (f optionFunc) apply(o *nodeOptions) { f(o) }

type nodeOptions struct {
	nodeID             int32
	clusterID          string
	writeMissingMeta   bool
	fs                 vfs.FS
	logger             *slog.Logger
	now                func() time.Time
	retentionInterval  time.Duration
	checkpointInterval time.Duration
	cleanerInterval    time.Duration
	topicDefaults      map[string]string
	groups             group.Options

	producerIDExpiration      time.Duration
	producerIDExpirationCheck time.Duration

	cluster clusterOptions

	// autoCreate is auto.create.topics.enable; autoPartitions and
	// autoReplication are num.partitions and default.replication.factor.
	autoCreate      bool
	autoPartitions  int32
	autoReplication int16
}

func defaultNodeOptions() nodeOptions {
	return nodeOptions{
		nodeID:             1,
		fs:                 vfs.Default,
		logger:             slog.New(slog.NewTextHandler(io.Discard, nil)),
		now:                time.Now,
		retentionInterval:  5 * time.Minute,
		checkpointInterval: time.Minute,
		cleanerInterval:    defaultCleanerInterval,

		producerIDExpiration:      24 * time.Hour,
		producerIDExpirationCheck: 10 * time.Minute,

		autoCreate:      true,
		autoPartitions:  1,
		autoReplication: 1,
	}
}

// AutoCreateTopics sets Kafka's auto.create.topics.enable, num.partitions
// and default.replication.factor: when enabled, a Metadata request that
// allows it (a Kafka client's allow.auto.create.topics; partlog's own
// clients never ask) creates the unknown topics it names, with partitions
// partitions and replicationFactor replicas (at most the cluster's live
// nodes). The default is Kafka's: enabled, 1 partition, 1 replica.
// Internal names (starting with __) are never created so.
func AutoCreateTopics(enabled bool, partitions int32, replicationFactor int16) Option {
	return optionFunc(func(o *nodeOptions) {
		o.autoCreate, o.autoPartitions, o.autoReplication = enabled, max(partitions, 1), max(replicationFactor, 1)
	})
}

// NodeID sets the node's id (Kafka's node.id). The default is 1. A data
// directory remembers its node id in meta.properties and refuses another.
func NodeID(id int32) Option { return optionFunc(func(o *nodeOptions) { o.nodeID = id }) }

// ClusterID sets the id of the cluster a new data directory joins; by
// default a new directory makes up a random one.
func ClusterID(id string) Option { return optionFunc(func(o *nodeOptions) { o.clusterID = id }) }

// WriteMissingMeta lets Open write a new meta.properties (a new cluster id)
// for a data directory that holds partitions but has lost its own, which
// Open otherwise refuses with ErrMetaPropertiesMissing, as Kafka refuses an
// unformatted log directory.
func WriteMissingMeta() Option { return optionFunc(func(o *nodeOptions) { o.writeMissingMeta = true }) }

// Filesystem sets the filesystem; the default is the OS. vfs.NewMem gives
// an in-memory one for tests.
func Filesystem(fsys vfs.FS) Option { return optionFunc(func(o *nodeOptions) { o.fs = fsys }) }

// Logger sets where the node reports recovery, retention and failures. The
// default discards everything.
func Logger(l *slog.Logger) Option { return optionFunc(func(o *nodeOptions) { o.logger = l }) }

// Clock sets the node's clock, used for retention and segment rolling. The
// default is time.Now.
func Clock(now func() time.Time) Option { return optionFunc(func(o *nodeOptions) { o.now = now }) }

// RetentionCheckInterval sets how often retention deletes old segments
// (Kafka's log.retention.check.interval.ms). The default is 5 minutes.
func RetentionCheckInterval(d time.Duration) Option {
	return optionFunc(func(o *nodeOptions) { o.retentionInterval = d })
}

// CheckpointInterval sets how often the recovery points are written, which
// bounds what a restart after a crash scans (Kafka's
// log.flush.offset.checkpoint.interval.ms). The default is a minute.
func CheckpointInterval(d time.Duration) Option {
	return optionFunc(func(o *nodeOptions) { o.checkpointInterval = d })
}

// TopicDefaults sets topic configs that apply to every topic that does not
// override them, as Kafka's broker-level log.* settings do — for example
// {"flush.messages": "9223372036854775807"} to leave flushing to the OS.
func TopicDefaults(configs map[string]string) Option {
	return optionFunc(func(o *nodeOptions) { o.topicDefaults = configs })
}

// ProducerIDExpiration sets how long a partition keeps an idempotent
// producer's state after the timestamp of its last batch
// (producer.id.expiration.ms); a producer silent for longer is forgotten,
// and a retry from it is no longer recognised as a duplicate. The default
// is 24 hours.
func ProducerIDExpiration(d time.Duration) Option {
	return optionFunc(func(o *nodeOptions) { o.producerIDExpiration = d })
}

// ProducerIDExpirationCheckInterval sets how often expired producers are
// forgotten (producer.id.expiration.check.interval.ms). The default is 10
// minutes.
func ProducerIDExpirationCheckInterval(d time.Duration) Option {
	return optionFunc(func(o *nodeOptions) { o.producerIDExpirationCheck = d })
}
