// Package broker is a partlog node: Kafka's broker, hosting replicas of
// topics' partitions and answering Kafka's requests. Package partlog's
// Node is its façade; a program that builds its own server can open a
// Broker directly and serve it with transport.NewServer.
//
// A broker is always a member of a cluster. Open either joins a cluster
// whose controller runs elsewhere (Options.Controller in process,
// Options.ControllerAddress over TCP) or starts a controller of its own
// over the data directory, as a Kafka node in combined mode does: a
// cluster of one. Either way there is one path for every request:
//
//	request            broker                     below
//	Produce            handlers.go → replica_requests.go (appendReplicated)
//	                                  → replica.Node.Propose → partition → log
//	Fetch, ListOffsets handlers.go → hostedReplica → partition
//	Metadata           the controller's metadata, as the member last heard it
//	CreateTopics, ...  admin.go → controller.API → reconcile (member.go)
//	JoinGroup, ...     group.go → the group.Coordinator of the group's
//	                   __consumer_offsets partition (group_placement.go)
//
// The files, by concern:
//
//   - node.go: Open, Close, topics; meta.go: meta.properties.
//   - member.go: registration, heartbeats, reconciling hosted replicas
//     with the controller's metadata; replica_host.go: one hosted replica
//     and its replica.Node; peers.go: the outbox that carries replica
//     messages to other brokers (TCP, or an in-memory memnet.Network).
//   - handlers.go, replica_requests.go, admin.go, admin_partitions.go,
//     producer_ids.go: the Kafka requests.
//   - group.go, group_placement.go: hosting the group coordinator on the
//     partitions it leads (coordinator_partitions.go, the same for every
//     coordinator).
//   - cleaner.go: the log cleaner of compacted topics; migrate.go: opening
//     a directory written before a node on its own was a cluster of one.
package broker
