package partlog

import (
	"context"

	"github.com/partlog/partlog/auth"
	"github.com/partlog/partlog/broker"
	"github.com/partlog/partlog/internal/nodehooks"
	"github.com/partlog/partlog/metrics"
	"github.com/partlog/partlog/quota"
	"github.com/partlog/partlog/transport"
	"github.com/partlog/partlog/transport/memnet"
)

var (
	// ErrClosed means the node was closed.
	ErrClosed = broker.ErrClosed
	// ErrLocked means another process, or another Node in this one, has
	// the data directory open.
	ErrLocked = broker.ErrLocked
	// ErrInconsistentNode means the data directory belongs to another
	// node id or cluster (Kafka's InconsistentClusterIdException).
	ErrInconsistentNode = broker.ErrInconsistentNode
	// ErrMetaPropertiesMissing means the data directory holds partitions
	// but no meta.properties, which names its node and cluster: the file
	// was lost, or the directory was not written by partlog. Kafka refuses
	// such a directory too. Restore the file, or open with
	// WriteMissingMeta to write a new one (a new cluster id).
	ErrMetaPropertiesMissing = broker.ErrMetaPropertiesMissing
)

// Node is a partlog node: a Kafka broker in the host program's process.
// It hosts replicas of topics' partitions in its data directory and
// answers producers and consumers in the same process (Client), or over
// TCP (transport.NewServer(n.Client(), ...)). A node opened on its own is
// a cluster of one, as a Kafka node in combined mode is: it runs an
// in-process controller that keeps the cluster metadata in the data
// directory, and its partitions (replication factor 1) go through the same
// replica path as a cluster's. It is safe for concurrent use.
//
// Node is the façade of package broker's Broker, which a program building
// its own server can use directly.
type Node struct {
	b *broker.Broker
}

// Client is every Kafka request a Node answers, in its own process and
// without encoding: producer.New and consumer.New take it, and
// transport.NewServer serves it to Kafka's clients. The requests are
// transport's types; what the node holds back (a fetch's records) is owned
// as each response's doc comment says.
type Client interface {
	transport.Client
	transport.ProducerIDClient
	transport.GroupClient
	transport.AdminClient
	transport.EpochClient
	transport.TxnClient
	transport.ClusterAdminClient
	transport.UserAdminClient
	transport.ACLAdminClient
	transport.QuotaAdminClient
	transport.ConsumerGroupClient
	transport.ShareGroupClient
	transport.ShareGroupOffsetsClient
}

// Open opens the data directory dir, creating it if needed, and hosts the
// replicas the cluster's metadata assigns it. Without JoinCluster or
// ControllerAddress the node is a cluster of one with its controller in
// process, and Open returns once it leads every partition. A directory is
// open in one Node at a time: a second Open, in this process or another,
// fails with ErrLocked. A crash leaves nothing for the next Open to repair
// by hand: it recovers every partition's log.
func Open(dir string, opts ...Option) (*Node, error) {
	b, err := broker.Open(dir, brokerOptions(opts))
	if err != nil {
		return nil, err
	}
	return &Node{b: b}, nil
}

// Client returns the node's requests, for clients in the same process.
// It stays usable until Close, after which every request fails with
// ErrClosed.
func (n *Node) Client() Client { return n.b }

// Metrics returns the node's Prometheus metrics (package metrics): serve
// their Registry (promhttp.HandlerFor(n.Metrics().Registry, ...)), and
// give them to the transport.Server that serves the node as its
// ServerOptions.Observer, for the request metrics.
func (n *Node) Metrics() *metrics.Node { return n.b.Metrics() }

// Credentials returns the users the cluster's metadata holds, with their
// SCRAM credentials, as this node has them: what a SASL listener serving
// the node authenticates clients with (transport.SASL.Credentials). Users
// are set and deleted with AlterUserScramCredentials through any node of
// the cluster (partlog configs --alter --entity-type users).
func (n *Node) Credentials() auth.Credentials { return n.b }

// ACLs returns the ACLs in force: those the cluster's metadata holds, as
// this node has them, for the auth.Authorizer of a transport.Server
// serving the node (ServerOptions.Authorizer: &auth.Authorizer{ACLs:
// n.ACLs}). Only requests that come through such a server are checked;
// callers in the same process (Client) are not. ACLs are created and
// deleted with CreateACLs and DeleteACLs through any node of the
// cluster. The set is cheap to get for every request: it is made once
// per change, and never changes once returned.
func (n *Node) ACLs() *auth.ACLs { return n.b.ACLs() }

// ClientQuotas returns the client quotas in force: those the cluster's
// metadata holds, as this node has them, for the quota.Manager of a
// transport.Server serving the node (ServerOptions.Quotas:
// &quota.Manager{Config: n.ClientQuotas}). Only requests that come
// through such a server are metered; callers in the same process (Client)
// are not. Quotas are set and removed with AlterClientQuotas through any
// node of the cluster. The Config is cheap to get for every request: it
// is made once per change of the quotas, is never nil, and never changes
// once returned.
func (n *Node) ClientQuotas() *quota.Config { return n.b.ClientQuotas() }

// Close stops the node: requests in flight finish, the replicas' logs are
// synced and closed, and the data directory is unlocked. A node in a
// cluster first moves its leaderships to other replicas (a controlled
// shutdown); one served with transport.NewServer is closed before its
// server (see broker.Broker.Close).
func (n *Node) Close() error { return n.b.Close() }

// ClusterID returns the id of the cluster the node belongs to, from its
// meta.properties.
func (n *Node) ClusterID() string { return n.b.ClusterID() }

// NodeID returns the node's id (Kafka's node.id).
func (n *Node) NodeID() int32 { return n.b.NodeID() }

// Dir returns the node's data directory.
func (n *Node) Dir() string { return n.b.Dir() }

// NewTopic describes a topic to create.
type NewTopic = broker.NewTopic

// TopicDescription describes a topic.
type TopicDescription = broker.TopicDescription

// PartitionDescription describes one partition.
type PartitionDescription = broker.PartitionDescription

// CreateTopic creates a topic through the controller and returns once this
// node hosts its replicas of it. Names, partition counts, replication
// factors and configs are checked as Kafka checks them; the errors are
// kafka.ErrInvalidTopic, ErrTopicAlreadyExists, ErrInvalidPartitions,
// ErrInvalidReplicationFactor and ErrInvalidConfig. A topic some of whose
// replicas on this node cannot be created (a full disk) is deleted again,
// and the error is kafka.ErrKafkaStorage.
func (n *Node) CreateTopic(ctx context.Context, nt NewTopic) error { return n.b.CreateTopic(ctx, nt) }

// DeleteTopic deletes a topic and, once the controller's metadata reaches
// them, its replicas' data.
func (n *Node) DeleteTopic(ctx context.Context, name string) error { return n.b.DeleteTopic(ctx, name) }

// ListTopics returns the names of the topics, sorted.
func (n *Node) ListTopics() []string { return n.b.ListTopics() }

// DescribeTopics describes the named topics, or every topic when none is
// named. An unknown name is kafka.ErrUnknownTopicOrPartition.
func (n *Node) DescribeTopics(names ...string) ([]TopicDescription, error) {
	return n.b.DescribeTopics(names...)
}

// ValidateTopicName checks a topic name as Kafka does: 1 to 249 of ASCII
// letters, digits, '.', '_' and '-', and not "." or "..". The error is
// kafka.ErrInvalidTopic.
func ValidateTopicName(name string) error { return broker.ValidateTopicName(name) }

// BrokerConfigName returns the name of the node setting that gives a
// topic config's default, as Kafka names its broker configs
// ("retention.ms" → "log.retention.ms"), and whether the topic config is
// one partlog knows.
func BrokerConfigName(topicConfig string) (string, bool) { return broker.BrokerConfigName(topicConfig) }

// MemNetwork is the in-memory network between the nodes of a cluster in
// one process (see JoinCluster and package memnet), with faults: Cut,
// Partition, Isolate, Heal, HealAll.
type MemNetwork = memnet.Network

// NewMemNetwork returns an in-memory network with no nodes.
func NewMemNetwork() *MemNetwork { return memnet.New() }

// MetaPropertiesFileName is the file that names a data directory's node
// and cluster, as Kafka's meta.properties does.
const MetaPropertiesFileName = broker.MetaPropertiesFileName

// HighWatermarkFileName is Kafka's replication-offset-checkpoint: the high
// watermark of every partition, written now and then and on Close.
const HighWatermarkFileName = broker.HighWatermarkFileName

func init() {
	nodehooks.Of = func(n any) nodehooks.Node { return nodehooks.OfBroker(n.(*Node).b) }
}

// Controller returns the controller that runs in the node's process — its
// own, for a node on its own, or its member of the quorum in combined mode
// (ControllerRole) — or nil for a node whose controllers run elsewhere.
func (n *Node) Controller() *Controller { return n.b.Controller() }
