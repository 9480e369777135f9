package main

// target.go lets a command work on a data directory it opens (--dir) or on
// a node it reaches over TCP (--bootstrap-server), as Kafka's tools take
// --bootstrap-server.

import (
	"context"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/partlog/partlog"
	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/transport"
)

// targetFlags are --dir, --bootstrap-server and --command-config.
type targetFlags struct {
	dir, bootstrap, commandConfig *string
}

// addTargetFlags adds the target flags to fs.
func addTargetFlags(fs *flag.FlagSet) targetFlags {
	return targetFlags{
		dir:       dirFlag(fs),
		bootstrap: fs.String("bootstrap-server", "", "the `host:port` of a served node (partlog serve) to use instead of --dir"),
		commandConfig: fs.String("command-config", "", "a `file` of client properties for --bootstrap-server, as Kafka's tools take: "+
			"client.id, security.protocol (PLAINTEXT or SSL), ssl.truststore.location and ssl.keystore.location (PEM files), ssl.endpoint.identification.algorithm"),
	}
}

// A target is what a command works on: a node in this process over a data
// directory, or a node in another reached over TCP.
type target struct {
	node   *partlog.Node        // with --dir
	remote *transport.TCPClient // with --bootstrap-server
	// cluster, with --bootstrap-server naming a member of a cluster of
	// several nodes, sends each partition's requests to its leader.
	cluster *transport.ClusterClient
	addr    string
	// dialOpts are what remote was dialled with, for other nodes of its
	// cluster.
	dialOpts transport.DialOptions
}

// openTarget opens what the flags name: exactly one of --dir and
// --bootstrap-server.
func openTarget(command string, f targetFlags, stderr io.Writer) (*target, error) {
	switch {
	case *f.dir != "" && *f.bootstrap != "":
		return nil, usageErrorf(command, "give --dir or --bootstrap-server, not both")
	case *f.commandConfig != "" && *f.bootstrap == "":
		return nil, usageErrorf(command, "--command-config needs --bootstrap-server")
	case *f.bootstrap != "":
		opts := transport.DialOptions{ClientID: "partlog-" + command}
		if *f.commandConfig != "" {
			var err error
			if opts, err = readCommandConfig(*f.commandConfig, opts, stderr, command); err != nil {
				return nil, usageErrorf(command, "--command-config: %v", err)
			}
		}
		return dialTarget(command, *f.bootstrap, opts, stderr)
	case *f.dir == "":
		return nil, usageErrorf(command, "--dir or --bootstrap-server is required")
	}
	// What the node finds wrong as it opens the directory (damage it
	// recovered, a partition it took offline) is the user's to know.
	n, err := openNode(command, *f.dir, partlog.Logger(warningLogger(stderr, command)))
	if err != nil {
		return nil, err
	}
	return &target{node: n}, nil
}

// dialTarget connects to the node at addr with opts. When its Metadata
// names other nodes too, the node is a member of a cluster, whose
// partitions have different leaders: producers and consumers then reach
// them through a transport.ClusterClient, and the other calls (admin,
// groups) go to the node at addr.
func dialTarget(command, addr string, opts transport.DialOptions, stderr io.Writer) (*target, error) {
	ctx := context.Background()
	c, err := dialBootstrap(ctx, addr, opts, func() {
		fmt.Fprintf(stderr, "partlog: %s: waiting for %s to accept connections (up to %v)\n", command, addr, bootstrapWait)
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", command, err)
	}
	t := &target{remote: c, addr: addr, dialOpts: opts}
	md, err := c.Metadata(ctx, &transport.MetadataRequest{Topics: []string{}})
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("%s: %w", command, err)
	}
	if len(md.Brokers) > 1 {
		if t.cluster, err = transport.DialCluster(ctx, []string{addr}, opts); err != nil {
			c.Close()
			return nil, fmt.Errorf("%s: %w", command, err)
		}
	}
	return t, nil
}

// bootstrapWait is how long a command waits for its --bootstrap-server to
// accept connections, as Kafka's tools retry their bootstrap servers: a
// node started a moment before (in a script) is not listening yet.
var bootstrapWait = 15 * time.Second

// dialBootstrap dials addr, retrying while the connection is refused, for
// up to bootstrapWait; waiting is called once, when the first dial is
// refused.
func dialBootstrap(ctx context.Context, addr string, opts transport.DialOptions, waiting func()) (*transport.TCPClient, error) {
	deadline := time.Now().Add(bootstrapWait)
	for first := true; ; first = false {
		c, err := transport.Dial(ctx, addr, opts)
		if err == nil || !errors.Is(err, syscall.ECONNREFUSED) || time.Now().After(deadline) {
			return c, err
		}
		if first {
			waiting()
		}
		time.Sleep(100 * time.Millisecond) // a process starting up has no event to await
	}
}

// client returns the target as producers and consumers take it.
func (t *target) client() transport.Client {
	switch {
	case t.node != nil:
		return t.node.Client()
	case t.cluster != nil:
		// Partitions' requests go to their leaders, a group's to its
		// coordinator, producer ids to any node.
		return t.cluster
	}
	return t.remote
}

// partitions returns what answers requests about partitions: the cluster,
// or the node.
func (t *target) partitions() transport.Client {
	if t.cluster != nil {
		return t.cluster
	}
	return t.remote
}

// where names the target in messages.
func (t *target) where() string {
	if t.node != nil {
		return t.node.Dir()
	}
	return t.addr
}

// close closes the data directory or the connections. It may be called
// more than once.
func (t *target) close() error {
	if t.node != nil {
		return t.node.Close()
	}
	if t.cluster != nil {
		t.cluster.Close()
	}
	return t.remote.Close()
}

// groups returns the target's group calls.
func (t *target) groups() (transport.GroupClient, error) {
	if gc, ok := t.client().(transport.GroupClient); ok {
		return gc, nil
	}
	return nil, fmt.Errorf("%s does not answer consumer group requests", t.where())
}

// nodeID returns the id of the node, or of the coordinator the remote
// node names for itself.
func (t *target) nodeID(ctx context.Context) int32 {
	if t.node != nil {
		return t.node.NodeID()
	}
	if md, err := t.remote.Metadata(ctx, &transport.MetadataRequest{Topics: []string{}}); err == nil && len(md.Brokers) > 0 {
		return md.Brokers[0].NodeID
	}
	return -1
}

// liveNodes returns the ids of the nodes the remote node's Metadata names,
// those that are alive in its cluster; with --dir, nil: there is no other
// node to ask about.
func (t *target) liveNodes(ctx context.Context) ([]int32, error) {
	if t.node != nil {
		return nil, nil
	}
	md, err := t.remote.Metadata(ctx, &transport.MetadataRequest{Topics: []string{}})
	if err != nil {
		return nil, err
	}
	ids := []int32{}
	for _, b := range md.Brokers {
		ids = append(ids, b.NodeID)
	}
	return ids, nil
}

// listTopics returns the topics' names, sorted.
func (t *target) listTopics(ctx context.Context) ([]string, error) {
	if t.node != nil {
		return t.node.ListTopics(), nil
	}
	md, err := t.remote.Metadata(ctx, &transport.MetadataRequest{})
	if err != nil {
		return nil, err
	}
	var names []string
	for _, tm := range md.Topics {
		names = append(names, tm.Topic)
	}
	slices.Sort(names)
	return names, nil
}

// describe describes the named topics, or all of them. Over TCP the
// partitions' offsets come from ListOffsets, which knows the high
// watermark but not the log end offset beyond it: LogEndOffset is shown
// as the high watermark.
func (t *target) describe(ctx context.Context, names ...string) ([]partlog.TopicDescription, error) {
	if t.node != nil {
		return t.node.DescribeTopics(names...)
	}
	req := &transport.MetadataRequest{}
	if len(names) > 0 {
		req.Topics = names
	}
	md, err := t.remote.Metadata(ctx, req)
	if err != nil {
		return nil, err
	}
	var descs []partlog.TopicDescription
	for _, tm := range md.Topics {
		if tm.Err != nil {
			return nil, fmt.Errorf("%w: %q", tm.Err, tm.Topic)
		}
		d := partlog.TopicDescription{Name: tm.Topic, ID: base64.RawURLEncoding.EncodeToString(tm.TopicID[:])}
		for _, p := range tm.Partitions {
			d.Partitions = append(d.Partitions, partlog.PartitionDescription{
				Partition: p.Partition, Leader: p.Leader, LeaderEpoch: p.LeaderEpoch, Replicas: p.Replicas, ISR: p.ISR,
			})
			d.ReplicationFactor = int16(len(p.Replicas))
		}
		slices.SortFunc(d.Partitions, func(a, b partlog.PartitionDescription) int { return int(a.Partition - b.Partition) })
		descs = append(descs, d)
	}
	if err := t.remoteOffsets(ctx, descs); err != nil {
		return nil, err
	}
	if err := t.remoteConfigs(ctx, descs); err != nil {
		return nil, err
	}
	slices.SortFunc(descs, func(a, b partlog.TopicDescription) int { return strings.Compare(a.Name, b.Name) })
	return descs, nil
}

// remoteOffsets fills in the topics' partitions' log start offsets and
// high watermarks, with one ListOffsets request for each.
func (t *target) remoteOffsets(ctx context.Context, descs []partlog.TopicDescription) error {
	if len(descs) == 0 {
		return nil
	}
	for _, ts := range []int64{kafka.EarliestTimestamp, kafka.LatestTimestamp} {
		req := &transport.ListOffsetsRequest{ReplicaID: kafka.ConsumerReplicaID}
		for _, d := range descs {
			lt := transport.ListOffsetsTopic{Topic: d.Name}
			for _, p := range d.Partitions {
				lt.Partitions = append(lt.Partitions, transport.ListOffsetsPartition{Partition: p.Partition, CurrentLeaderEpoch: -1, Timestamp: ts})
			}
			req.Topics = append(req.Topics, lt)
		}
		resp, err := t.partitions().ListOffsets(ctx, req)
		if err != nil {
			return err
		}
		for _, tr := range resp.Topics {
			for j := range descs {
				if d := &descs[j]; d.Name == tr.Topic {
					fillOffsets(d, ts, tr.Partitions)
				}
			}
		}
	}
	return nil
}

// fillOffsets fills in d's offsets at ts (earliest or latest) from a
// ListOffsets answer.
func fillOffsets(d *partlog.TopicDescription, ts int64, prs []transport.ListOffsetsPartitionResponse) {
	for _, pr := range prs {
		i := slices.IndexFunc(d.Partitions, func(p partlog.PartitionDescription) bool { return p.Partition == pr.Partition })
		if i < 0 || pr.Err != nil {
			continue
		}
		if ts == kafka.EarliestTimestamp {
			d.Partitions[i].LogStartOffset = pr.Offset
		} else {
			d.Partitions[i].HighWatermark, d.Partitions[i].LogEndOffset = pr.Offset, pr.Offset
		}
	}
}

// remoteConfigs fills in the topics' configs.
func (t *target) remoteConfigs(ctx context.Context, descs []partlog.TopicDescription) error {
	if len(descs) == 0 {
		return nil
	}
	req := &transport.DescribeConfigsRequest{}
	for _, d := range descs {
		req.Resources = append(req.Resources, transport.ConfigResource{Type: transport.ConfigTopic, Name: d.Name})
	}
	resp, err := t.remote.DescribeConfigs(ctx, req)
	if errors.Is(err, kafka.ErrUnsupportedVersion) {
		return nil // a node without the admin calls: no configs to show
	}
	if err != nil {
		return err
	}
	for _, tc := range resp.Resources {
		i := slices.IndexFunc(descs, func(d partlog.TopicDescription) bool { return d.Name == tc.Name })
		if i < 0 || tc.Err != nil {
			continue
		}
		descs[i].Configs, descs[i].Effective = map[string]string{}, map[string]string{}
		for _, c := range tc.Configs {
			descs[i].Effective[c.Name] = c.Value
			if !c.IsDefault {
				descs[i].Configs[c.Name] = c.Value
			}
		}
	}
	return nil
}

// createTopic creates a topic.
func (t *target) createTopic(ctx context.Context, nt partlog.NewTopic) error {
	if t.node != nil {
		return t.node.CreateTopic(ctx, nt)
	}
	// NewTopic's zero is the default, which the wire asks for with -1.
	partitions, replication := nt.Partitions, nt.ReplicationFactor
	if partitions == 0 {
		partitions = -1
	}
	if replication == 0 {
		replication = -1
	}
	resp, err := t.remote.CreateTopics(ctx, &transport.CreateTopicsRequest{Topics: []transport.CreatableTopic{{
		Name: nt.Name, Partitions: partitions, ReplicationFactor: replication, Configs: nt.Configs,
	}}})
	if err != nil {
		return err
	}
	return resp.Topics[0].Err
}

// deleteTopic deletes a topic.
func (t *target) deleteTopic(ctx context.Context, name string) error {
	if t.node != nil {
		return t.node.DeleteTopic(ctx, name)
	}
	resp, err := t.remote.DeleteTopics(ctx, &transport.DeleteTopicsRequest{Topics: []string{name}})
	if err != nil {
		return err
	}
	return resp.Topics[0].Err
}

// admin returns the target's admin calls: the node's own with --dir, or
// the node at --bootstrap-server, which on a cluster forwards topic and
// config changes to the controller and answers once it has them.
func (t *target) admin() transport.AdminClient {
	if t.node != nil {
		return t.node.Client()
	}
	return t.remote
}

// clusterAdmin returns the target's reassignment and membership calls:
// the node's own with --dir, or the node at --bootstrap-server, which
// forwards them to the active controller.
func (t *target) clusterAdmin() transport.ClusterAdminClient {
	if t.node != nil {
		return t.node.Client()
	}
	return t.remote
}

// deleteRecords deletes records as req asks. Only a partition's leader
// deletes its records: on a cluster each partition's part goes to its
// leader.
func (t *target) deleteRecords(ctx context.Context, req *transport.DeleteRecordsRequest) (*transport.DeleteRecordsResponse, error) {
	if t.cluster != nil {
		return t.cluster.DeleteRecords(ctx, req)
	}
	return t.admin().DeleteRecords(ctx, req)
}

// brokerIDs returns the ids of the nodes: the data directory's own, or
// those the remote node's Metadata names, sorted.
func (t *target) brokerIDs(ctx context.Context) ([]int32, error) {
	if t.node != nil {
		return []int32{t.node.NodeID()}, nil
	}
	ids, err := t.liveNodes(ctx)
	slices.Sort(ids)
	return ids, err
}

// brokerAdmin returns the admin calls of node id, which alone describes
// its own settings: the target itself, or, on a cluster, a connection to
// that node, which close closes.
func (t *target) brokerAdmin(ctx context.Context, id int32) (admin transport.AdminClient, close func(), err error) {
	if t.node != nil {
		if id != t.node.NodeID() {
			return nil, nil, fmt.Errorf("broker %d is not the node of %s, which is node %d", id, t.where(), t.node.NodeID())
		}
		return t.node.Client(), func() {}, nil
	}
	md, err := t.remote.Metadata(ctx, &transport.MetadataRequest{Topics: []string{}})
	if err != nil {
		return nil, nil, err
	}
	i := slices.IndexFunc(md.Brokers, func(b transport.Broker) bool { return b.NodeID == id })
	switch {
	case i < 0:
		var live []int32
		for _, b := range md.Brokers {
			live = append(live, b.NodeID)
		}
		slices.Sort(live)
		return nil, nil, fmt.Errorf("broker %d is not a live node of the cluster at %s (live: %s)", id, t.addr, ids(live))
	case len(md.Brokers) == 1:
		return t.remote, func() {}, nil
	}
	b := md.Brokers[i]
	addr := net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port)))
	if addr == t.addr {
		return t.remote, func() {}, nil
	}
	c, err := transport.Dial(ctx, addr, t.dialOpts)
	if err != nil {
		return nil, nil, fmt.Errorf("broker %d at %s: %w", id, addr, err)
	}
	return c, func() { c.Close() }, nil
}

// serverMessage returns err's message as the node wrote it. An error that
// came over TCP reads "NAME: description (the node's message)", and the
// node's message already starts with the name: it is kept alone, so that
// a command says the same over TCP as on a data directory.
func serverMessage(err error) string {
	s := err.Error()
	kerr, ok := errors.AsType[*kafka.Error](err)
	if !ok {
		return s
	}
	prefix := kerr.Error() + " ("
	if i := strings.Index(s, prefix); i >= 0 && strings.HasSuffix(s, ")") {
		if inner := s[i+len(prefix) : len(s)-1]; strings.HasPrefix(inner, kerr.Name+": ") {
			return s[:i] + inner
		}
	}
	return s
}
