// Package partlog is Kafka's design as an embeddable Go library: a program
// opens a data directory and gets durable, partitioned topics it produces
// to and consumes from, in its own process — with Kafka's data layout,
// offsets, acks, batches and consumer semantics.
//
//	node, err := partlog.Open("/var/lib/app/partlog")      // a data directory
//	err = node.CreateTopic(ctx, partlog.NewTopic{Name: "study", Partitions: 2})
//
//	p, err := producer.New(node.Client())                   // package producer
//	res := p.ProduceSync(ctx, &producer.Record{Topic: "study", Key: k, Value: v})
//
//	c, err := consumer.New(node.Client(), consumer.Topics("study"), // package consumer
//		consumer.AutoOffsetReset(consumer.Earliest))
//	for rec, err := range c.Records(ctx) { ... }
//
// # Guarantees
//
//   - Records of a partition have consecutive offsets and are read in that
//     order; a key's records go to one partition.
//   - An acknowledged record is on disk: by default a topic syncs before it
//     acknowledges (flush.messages=1), and appenders waiting at once share
//     one fdatasync. Consumers read only up to the high watermark, which
//     for such a topic never passes what is on disk, so a crash never takes
//     back a record anyone has read. Kafka's flush.messages and flush.ms
//     trade that for speed, per topic.
//   - After a crash — a killed process or a lost machine — Open recovers every
//     partition: each batch above the last known durable offset is checked
//     (length, magic, CRC-32C) and the log is cut at the first invalid byte;
//     nothing half written is ever returned. A clean Close makes the next
//     Open scan nothing.
//   - A failed write or fsync fails the partition (KAFKA_STORAGE_ERROR):
//     nothing waiting is acknowledged and an fsync is never retried and
//     trusted. A full disk fails the write and loses nothing.
//   - A data directory is open in one Node at a time; a second Open, in this
//     process or another, fails with ErrLocked.
//
// Consumer groups share a topic's partitions between consumers
// (consumer.Group); a group's committed offsets, fenced by generation, live
// in the compacted internal topic __consumer_offsets and survive crashes.
//
// Producers are idempotent by default: a retry after a lost answer, a
// timeout or a node restart is recognised by its producer id and sequence
// and never written twice. Topics with cleanup.policy=compact keep the
// latest record per key (the log cleaner). A Node serves other processes
// over TCP in Kafka's own wire protocol (transport.NewServer, partlog
// serve): partlog's producer and consumer through transport.Dial, or any
// Kafka client.
//
// # A node is a cluster of one
//
// A node opened on its own runs as a Kafka node in combined mode does: an
// in-process controller keeps the cluster metadata in the data directory,
// and the node's partitions — replication factor 1, the node the leader
// and the whole ISR — go through the same replica and request path as a
// cluster's, so there is one produce path and one fetch path. For such a
// partition the high watermark is the leader's own durable end offset: no
// follower, no extra hop.
//
// # Clusters
//
// Nodes replicate each other's partitions as Kafka brokers do. A
// Controller (OpenController) owns the cluster metadata — nodes and their
// liveness, topics, each partition's replicas, leader, ISR and epochs — and
// persists every change before it takes effect. Nodes join it in process
// (JoinCluster, over a MemNetwork) or over TCP (ControllerAddress):
//
//	ctl, err := partlog.OpenController(ctlDir, partlog.ControllerOptions{})
//	net := partlog.NewMemNetwork()
//	n1, err := partlog.Open(dir1, partlog.NodeID(1), partlog.JoinCluster(ctl, net))
//	// ... nodes 2 and 3 the same way
//	err = n1.CreateTopic(ctx, partlog.NewTopic{Name: "orders", Partitions: 3,
//		ReplicationFactor: 3, Configs: map[string]string{"min.insync.replicas": "2"}})
//	client, err := net.Client(ctx) // routes to leaders; transport.DialCluster over TCP
//
// With acks=all a record is acknowledged once every in-sync replica has
// it (on disk, with the default flush.messages=1) and at least
// min.insync.replicas are in sync. When a leader dies, the controller
// elects another from the ISR; producers and consumers follow it; a
// diverged replica truncates by leader epoch, never losing an acknowledged
// record. Idempotent producers stay exactly-once across leader changes.
// Transactions (producer.TransactionalID, consumer.Isolation with
// ReadCommitted) are Kafka's; the README says what is still missing.
//
// # Packages, bottom up
//
//	vfs        the filesystem seam: the OS, and an in-memory filesystem that
//	           can crash and fail chosen operations (for tests)
//	record     Kafka RecordBatch v2, byte for byte, with gzip, snappy, lz4, zstd
//	index      the mmap'd offset index (.index) and time index (.timeindex)
//	segment    one .log file with its indexes: append, read, recover
//	log        one partition's directory of segments; Dir for a node's directory
//	kafka      Kafka's vocabulary apart from the wire: its errors as values,
//	           acks, isolation levels, epochs, the replicas' fetch messages
//	auth       who a connection is: principals, TLS certificates' mapping
//	           rules, SASL (SCRAM-SHA-256/512, PLAIN) and users' credentials
//	partition  one partition: log, high watermark, leader epoch, long polls,
//	           idempotent producers' state
//	replica    replication as a deterministic state machine: followers, ISR,
//	           high watermark, truncation by leader epoch
//	topicconfig the topic configs by Kafka's names: defaults, checks, the
//	           options they make, how config changes apply
//	transport  Produce, Fetch, ListOffsets, Metadata, the group, admin and
//	           producer-id calls; the Client interface a broker answers in
//	           process, and a TCP server and client in Kafka's wire protocol,
//	           with TLS and SASL
//	memnet     (transport/memnet) the in-memory network between the
//	           brokers of a cluster in one process, with faults
//	producer   partitioners, batching, acks, retries, idempotence
//	txn        the transaction coordinator as a state machine
//	group      the group coordinator: membership, generations, offsets in
//	           __consumer_offsets
//	consumer   assign or subscribe, long-poll Poll, iteration, seeks; groups,
//	           assignors, commits
//	controller the controller: its state machine over a Raft-replicated
//	           metadata log, a member of the controller quorum, the service
//	           that runs it, a typed API answered in process and over TCP
//	broker     one node: hosts the replicas the controller assigns it (a
//	           node on its own runs its controller in process), answers
//	           every request, hosts the group coordinators and the cleaner;
//	           cluster membership and the peers' network
//	partlog    the façade: Open and its options, Node (topics, Client,
//	           Close), OpenController
//	partlogtest for tests: a node's background work now, a crash, a
//	           replica's log
//
// The command partlog (cmd/partlog) is Kafka's console tools for a data
// directory or a served node: topics, produce, consume, groups, perf,
// dump-log, and serve.
//
// # On disk
//
// A data directory is laid out as a Kafka log directory: meta.properties,
// recovery-point-offset-checkpoint, log-start-offset-checkpoint, and a
// <topic>-<partition> directory per partition holding segment files named by
// their base offset (00000000000000000000.log, .index, .timeindex),
// leader-epoch-checkpoint and partition.metadata; replication-offset-checkpoint
// holds the high watermarks. A node on its own, or in combined mode
// (ControllerRole), keeps its controller's metadata log — topics,
// partitions, leaders, ISRs, epochs — in __cluster_metadata-0 as a Raft
// log, as a KRaft node in combined mode does, with quorum-state and
// checkpoint snapshots beside it. A directory written before a node became
// a cluster of one, or before the controller quorum, is migrated when it
// opens.
package partlog
