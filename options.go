package partlog

import (
	"crypto/tls"
	"log/slog"
	"net"
	"time"

	"github.com/partlog/partlog/broker"
	"github.com/partlog/partlog/controller"
	"github.com/partlog/partlog/replica"
	"github.com/partlog/partlog/transport"
	"github.com/partlog/partlog/vfs"
)

// Option configures Open.
type Option interface{ apply(*broker.Options) }

type optionFunc func(*broker.Options)

func (f optionFunc) apply(o *broker.Options) { f(o) }

// brokerOptions returns the broker's options: partlog's defaults (node id
// 1), then opts in order.
func brokerOptions(opts []Option) broker.Options {
	o := broker.Options{NodeID: 1}
	for _, opt := range opts {
		opt.apply(&o)
	}
	return o
}

// AutoCreateTopics sets Kafka's auto.create.topics.enable, num.partitions
// and default.replication.factor: when enabled, a Metadata request that
// allows it (a Kafka client's allow.auto.create.topics; partlog's own
// clients never ask) creates the unknown topics it names, with partitions
// partitions and replicationFactor replicas (at most the cluster's live
// nodes). The default is Kafka's: enabled, 1 partition, 1 replica.
// Internal names (starting with __) are never created so.
func AutoCreateTopics(enabled bool, partitions int32, replicationFactor int16) Option {
	return optionFunc(func(o *broker.Options) {
		o.NoAutoCreateTopics, o.AutoCreatePartitions, o.AutoCreateReplicationFactor = !enabled, max(partitions, 1), max(replicationFactor, 1)
	})
}

// NodeID sets the node's id (Kafka's node.id). The default is 1. A data
// directory remembers its node id in meta.properties and refuses another.
func NodeID(id int32) Option { return optionFunc(func(o *broker.Options) { o.NodeID = id }) }

// ClusterID sets the id of the cluster a new data directory joins; by
// default a new directory makes up a random one.
func ClusterID(id string) Option { return optionFunc(func(o *broker.Options) { o.ClusterID = id }) }

// WriteMissingMeta lets Open write a new meta.properties (a new cluster id)
// for a data directory that holds partitions but has lost its own, which
// Open otherwise refuses with ErrMetaPropertiesMissing, as Kafka refuses an
// unformatted log directory.
func WriteMissingMeta() Option {
	return optionFunc(func(o *broker.Options) { o.WriteMissingMeta = true })
}

// Filesystem sets the filesystem; the default is the OS. vfs.NewMem gives
// an in-memory one for tests.
func Filesystem(fsys vfs.FS) Option { return optionFunc(func(o *broker.Options) { o.FS = fsys }) }

// Logger sets where the node reports recovery, retention and failures. The
// default discards everything.
func Logger(l *slog.Logger) Option { return optionFunc(func(o *broker.Options) { o.Logger = l }) }

// Clock sets the node's clock, used for retention and segment rolling. The
// default is time.Now.
func Clock(now func() time.Time) Option { return optionFunc(func(o *broker.Options) { o.Now = now }) }

// RetentionCheckInterval sets how often retention deletes old segments
// (Kafka's log.retention.check.interval.ms). The default is 5 minutes.
func RetentionCheckInterval(d time.Duration) Option {
	return optionFunc(func(o *broker.Options) { o.RetentionCheckInterval = d })
}

// CheckpointInterval sets how often the recovery points are written, which
// bounds what a restart after a crash scans (Kafka's
// log.flush.offset.checkpoint.interval.ms). The default is a minute.
func CheckpointInterval(d time.Duration) Option {
	return optionFunc(func(o *broker.Options) { o.CheckpointInterval = d })
}

// TopicDefaults sets topic configs that apply to every topic that does not
// override them, as Kafka's broker-level log.* settings do — for example
// {"flush.messages": "9223372036854775807"} to leave flushing to the OS.
func TopicDefaults(configs map[string]string) Option {
	return optionFunc(func(o *broker.Options) { o.TopicDefaults = configs })
}

// ProducerIDExpiration sets how long a partition keeps an idempotent
// producer's state after the timestamp of its last batch
// (producer.id.expiration.ms); a producer silent for longer is forgotten,
// and a retry from it is no longer recognised as a duplicate. The default
// is 24 hours.
func ProducerIDExpiration(d time.Duration) Option {
	return optionFunc(func(o *broker.Options) { o.ProducerIDExpiration = d })
}

// ProducerIDExpirationCheckInterval sets how often expired producers are
// forgotten (producer.id.expiration.check.interval.ms). The default is 10
// minutes.
func ProducerIDExpirationCheckInterval(d time.Duration) Option {
	return optionFunc(func(o *broker.Options) { o.ProducerIDExpirationCheckInterval = d })
}

// TransactionPartitionVerification sets whether a partition's leader asks
// the transaction's coordinator, before it takes a transactional batch
// that would open a transaction there, whether the producer added the
// partition to its transaction (KIP-890 part 1;
// transaction.partition.verification.enable). The default is true; false
// lets a produce that arrives after its transaction ended open a
// transaction that never ends.
func TransactionPartitionVerification(enabled bool) Option {
	return optionFunc(func(o *broker.Options) { o.NoTransactionVerification = !enabled })
}

// TransactionVersion2 sets whether the node tells Kafka's clients to use
// transaction version 2 (KIP-890 part 2; the feature transaction.version
// finalized at 2): the coordinator bumps the producer epoch at the end of
// every transaction, fencing a late write of the one before, and the
// partition leaders and group coordinators add the partitions a
// transaction writes, so a client sends no AddPartitionsToTxn or
// AddOffsetsToTxn. The default is true; false finalizes the feature at 0,
// and clients speak the protocol of KIP-98 and KIP-890 part 1. Set it
// alike on every node of a cluster.
func TransactionVersion2(enabled bool) Option {
	return optionFunc(func(o *broker.Options) { o.NoTransactionVersion2 = !enabled })
}

// LogCleanerInterval sets how often the log cleaner compacts the partitions
// of topics whose cleanup.policy includes compact (Kafka's
// log.cleaner.backoff.ms). The default is 15 seconds; zero or negative
// turns the background cleaner off (Kafka's log.cleaner.enable=false), and
// partlogtest.CleanNow still cleans.
func LogCleanerInterval(d time.Duration) Option {
	return optionFunc(func(o *broker.Options) {
		if d <= 0 {
			d = -1 // off
		}
		o.LogCleanerInterval = d
	})
}

// ShareStateTopicPartitions sets the partitions of __share_group_state
// when the node creates it (Kafka's
// share.coordinator.state.topic.num.partitions); the default is 50. A
// share partition's state lives in partition
// abs(hash("group:topicId:partition")) % n, as in Kafka. It has no effect
// once the topic exists.
func ShareStateTopicPartitions(n int32) Option {
	return optionFunc(func(o *broker.Options) { o.ShareStatePartitions = n })
}

// JoinCluster makes the node a member of the cluster that c controls,
// exchanging replica messages with the other members over the in-memory
// network net: several nodes in one process, for examples and tests.
func JoinCluster(c *Controller, net *MemNetwork) Option {
	return optionFunc(func(o *broker.Options) { o.Controller, o.Network = c, net })
}

// JoinQuorum makes the node a member of the cluster whose controllers are
// ctls, a quorum in this process (their Raft messages on a MemRaft),
// exchanging replica messages with the other members over net: each call
// goes to the active controller, whichever it is, as a node over TCP finds
// it among ControllerAddress's.
func JoinQuorum(net *MemNetwork, ctls ...*Controller) Option {
	return optionFunc(func(o *broker.Options) { o.Controller, o.Network = controller.NewLocal(ctls...), net })
}

// ControllerAddress makes the node a member of the cluster whose
// controller listens at addr (host:port; see Controller.Serve). For a
// quorum of controllers, addr lists them all, comma-separated (Kafka's
// controller.quorum.bootstrap.servers), and the node calls the active one,
// whichever it is. The node reaches the other members over TCP at the
// addresses they registered (AdvertisedAddress), and must serve its own
// address with a transport.Server.
func ControllerAddress(addr string) Option {
	return optionFunc(func(o *broker.Options) { o.ControllerAddress = addr })
}

// PeerTLS makes the node speak TLS to the other members of its cluster
// (ControllerAddress) when it replicates from them and writes transaction
// markers to them, for members that serve their listeners with TLS
// (transport.ServerOptions.TLS). cfg's RootCAs vouch for their
// certificates; its Certificates are the node's own, for listeners that
// ask for a client certificate (ssl.client.auth=required). The calls to
// the controller take ControllerTLS.
func PeerTLS(cfg *tls.Config) Option {
	return optionFunc(func(o *broker.Options) { o.PeerTLS = cfg })
}

// ControllerTLS makes the node speak TLS to the controllers at
// ControllerAddress, whose listeners serve it (ControllerOptions.TLS):
// cfg's RootCAs vouch for their certificates, its Certificates are the
// node's own, for listeners that ask for one.
func ControllerTLS(cfg *tls.Config) Option {
	return optionFunc(func(o *broker.Options) { o.ControllerTLS = cfg })
}

// PeerSASL makes the node authenticate as cred's user on the SASL
// listeners of the other members of its cluster (Kafka's
// sasl.mechanism.inter.broker.protocol and the broker's own JAAS
// credentials), for members whose transport.ServerOptions.SASL ask for
// it. The calls to the controller do not authenticate.
func PeerSASL(cred transport.SASLCredentials) Option {
	return optionFunc(func(o *broker.Options) { o.PeerSASL = &cred })
}

// ControllerRole makes the node also a controller of the quorum that
// opts.Voters names, as process.roles=broker,controller makes a Kafka node
// a combined one: its member of the quorum keeps the metadata log in the
// node's data directory, under the node's id (opts.NodeID, FS and Logger
// are the node's), and serves the quorum's Raft messages and the nodes'
// controller calls on ln, the listener at the node's voter address (Kafka's
// CONTROLLER listener), which the node closes when it closes. The node
// joins the cluster through the quorum: ControllerAddress is every voter's
// address. Every node of the quorum must be given the same voters.
func ControllerRole(ln net.Listener, opts ControllerOptions) Option {
	return optionFunc(func(o *broker.Options) { o.QuorumController, o.QuorumListener = opts, ln })
}

// AdvertisedAddress is the host:port other nodes and clients reach this
// node at, which it registers with the controller (Kafka's
// advertised.listeners).
func AdvertisedAddress(addr string) Option {
	return optionFunc(func(o *broker.Options) { o.AdvertisedAddress = addr })
}

// HeartbeatInterval sets how often a cluster member heartbeats to the
// controller and learns of metadata changes (broker.heartbeat.interval.ms).
// The default is 500 ms; keep it well within the controller's
// SessionTimeout.
func HeartbeatInterval(d time.Duration) Option {
	return optionFunc(func(o *broker.Options) { o.HeartbeatInterval = d })
}

// ReplicaOptions sets how a cluster member replicates: the tick, the
// replica.lag.time.max.ms, fetch sizes and waits (see replica.Options).
// MinInsyncReplicas, HighWatermark and BrokerEpoch are the node's to set,
// and are ignored here.
func ReplicaOptions(ro replica.Options) Option {
	return optionFunc(func(o *broker.Options) { o.Replica = ro })
}
