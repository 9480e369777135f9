package broker

import (
	"crypto/tls"
	"io"
	"log/slog"
	"maps"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/partlog/partlog/controller"
	"github.com/partlog/partlog/group"
	"github.com/partlog/partlog/replica"
	"github.com/partlog/partlog/share"
	"github.com/partlog/partlog/transport"
	"github.com/partlog/partlog/transport/memnet"
	"github.com/partlog/partlog/vfs"
)

// Options configures a Broker. The zero value works: node 0 of a cluster
// of one on the OS filesystem, with Kafka's defaults. Package partlog's
// Option functions fill it for Open.
type Options struct {
	// NodeID is node.id. A data directory remembers its node id in
	// meta.properties and refuses another.
	NodeID int32
	// ClusterID is the id of the cluster a new data directory joins;
	// empty makes up a random one.
	ClusterID string
	// WriteMissingMeta lets Open write a new meta.properties (a new
	// cluster id) for a data directory that holds partitions but has lost
	// its own, which Open otherwise refuses with ErrMetaPropertiesMissing.
	WriteMissingMeta bool
	// FS is the filesystem; nil means the OS.
	FS vfs.FS
	// Logger receives recovery, retention and failure reports; nil
	// discards them.
	Logger *slog.Logger
	// Now is the clock retention and segment rolling read; nil means
	// time.Now.
	Now func() time.Time
	// RetentionCheckInterval is log.retention.check.interval.ms; zero
	// means 5 minutes.
	RetentionCheckInterval time.Duration
	// CheckpointInterval is log.flush.offset.checkpoint.interval.ms: how
	// often recovery points and high watermarks are written. Zero means a
	// minute.
	CheckpointInterval time.Duration
	// LogCleanerInterval is log.cleaner.backoff.ms: how often compacted
	// partitions are cleaned. Zero means 15 s; negative turns the
	// background cleaner off (log.cleaner.enable=false).
	LogCleanerInterval time.Duration
	// TopicDefaults are topic configs that apply to every topic that does
	// not override them, as Kafka's broker-level log.* settings do.
	TopicDefaults map[string]string
	// Groups configures the group coordinators the broker hosts.
	Groups group.Options
	// ShareStatePartitions is share.coordinator.state.topic.num.partitions:
	// the partitions of __share_group_state when the broker creates it,
	// where the share coordinator keeps share partitions' state (KIP-932).
	// Zero means 50. It has no effect once the topic exists.
	ShareStatePartitions int32
	// Shares configures the share partitions the broker keeps as a
	// partition's leader (KIP-932): the acquisition lock duration
	// (group.share.record.lock.duration.ms), the delivery count limit
	// (group.share.delivery.count.limit) and the in-flight records cap
	// (group.share.partition.max.record.locks); the zero value is
	// Kafka's defaults.
	Shares share.Config
	// ProducerIDExpiration is producer.id.expiration.ms; zero means 24
	// hours.
	ProducerIDExpiration time.Duration
	// ProducerIDExpirationCheckInterval is
	// producer.id.expiration.check.interval.ms; zero means 10 minutes.
	ProducerIDExpirationCheckInterval time.Duration
	// NoTransactionVerification is
	// transaction.partition.verification.enable set to false: a partition
	// leader takes a transactional batch that opens a transaction without
	// asking the coordinator whether the partition is in it (KIP-890 part
	// 1 off), and a late produce can open a transaction no coordinator
	// will end.
	NoTransactionVerification bool
	// NoTransactionVersion2 finalizes the feature transaction.version at
	// 0 rather than 2 in what the node reports to Kafka's clients
	// (ApiVersions): they then add every partition to a transaction
	// themselves (AddPartitionsToTxn, AddOffsetsToTxn) and keep their
	// producer epoch across transactions, as before KIP-890 part 2. It is
	// Kafka's `kafka-features.sh downgrade --feature transaction.version=0`;
	// set it alike on every node of a cluster. A request in the version 2
	// protocol is still understood.
	NoTransactionVersion2 bool
	// NoAutoCreateTopics is auto.create.topics.enable set to false: a
	// Metadata request never creates the topics it names.
	NoAutoCreateTopics bool
	// AutoCreatePartitions is num.partitions, the partitions of a topic a
	// Metadata request creates; zero means 1.
	AutoCreatePartitions int32
	// AutoCreateReplicationFactor is default.replication.factor, at most
	// the cluster's live nodes; zero means 1.
	AutoCreateReplicationFactor int16

	// Controller is the in-process controller of the cluster the broker
	// joins, over Network: a *controller.Controller, or a
	// *controller.Local over a quorum of them. With neither Controller nor
	// ControllerAddress the broker runs a controller of its own over its
	// data directory: a cluster of one.
	Controller controller.API
	// Network carries replica messages between the brokers of
	// Controller's cluster in one process.
	Network *memnet.Network
	// ControllerAddress is the host:port of the cluster's controller over
	// TCP; the broker reaches the other members over TCP at the addresses
	// they registered, and must serve its own with a transport.Server.
	ControllerAddress string
	// PeerTLS, when set, is how the broker speaks TLS to the other
	// members it reaches over TCP (replication, transaction markers):
	// their listeners are SSL ones. Nil is plaintext.
	PeerTLS *tls.Config
	// ControllerTLS, when set, is how the broker speaks TLS to the
	// controllers at ControllerAddress, whose listeners serve it.
	ControllerTLS *tls.Config
	// PeerSASL, when set, is what the broker authenticates with on the
	// other members' SASL listeners. Nil: their listeners do not ask.
	PeerSASL *transport.SASLCredentials
	// QuorumController, with Voters set, makes the broker also a
	// controller of that quorum, as process.roles=broker,controller makes
	// a Kafka node: it runs its member over its data directory, with the
	// broker's node id, serves it on QuorumListener, and joins the cluster
	// through the quorum (ControllerAddress is then every voter's).
	QuorumController controller.Options
	// QuorumListener is where the broker's controller serves the other
	// controllers and the brokers: its voter address (Kafka's CONTROLLER
	// listener). The broker closes it when it closes.
	QuorumListener net.Listener
	// AdvertisedAddress is advertised.listeners: the host:port the broker
	// registers with the controller.
	AdvertisedAddress string
	// HeartbeatInterval is broker.heartbeat.interval.ms; zero means 500
	// ms. Keep it well within the controller's SessionTimeout.
	HeartbeatInterval time.Duration
	// Replica sets how replicas replicate (see replica.Options);
	// MinInsyncReplicas, HighWatermark and BrokerEpoch are the broker's to
	// set, and are ignored here.
	Replica replica.Options
}

// withDefaults returns o with its zero fields filled in.
func (o Options) withDefaults() Options {
	if o.FS == nil {
		o.FS = vfs.Default
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.RetentionCheckInterval == 0 {
		o.RetentionCheckInterval = 5 * time.Minute
	}
	if o.CheckpointInterval == 0 {
		o.CheckpointInterval = time.Minute
	}
	if o.LogCleanerInterval == 0 {
		o.LogCleanerInterval = defaultCleanerInterval
	}
	if o.ProducerIDExpiration == 0 {
		o.ProducerIDExpiration = 24 * time.Hour
	}
	if o.ProducerIDExpirationCheckInterval == 0 {
		o.ProducerIDExpirationCheckInterval = 10 * time.Minute
	}
	o.AutoCreatePartitions = max(o.AutoCreatePartitions, 1)
	o.AutoCreateReplicationFactor = max(o.AutoCreateReplicationFactor, 1)
	if o.HeartbeatInterval <= 0 {
		o.HeartbeatInterval = 500 * time.Millisecond
	}
	if o.combined() && o.ControllerAddress == "" {
		var addrs []string
		for _, id := range slices.Sorted(maps.Keys(o.QuorumController.Voters)) {
			addrs = append(addrs, o.QuorumController.Voters[id])
		}
		o.ControllerAddress = strings.Join(addrs, ",")
	}
	return o
}

// combined says the broker is also a controller of a quorum.
func (o Options) combined() bool { return len(o.QuorumController.Voters) > 0 }

// joinsCluster says the broker joins a cluster whose controller runs
// elsewhere, rather than running its own.
func (o Options) joinsCluster() bool { return o.Controller != nil || o.ControllerAddress != "" }
