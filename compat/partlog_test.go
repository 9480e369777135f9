package compat

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/transport"
)

// This file runs partlog as Kafka users run brokers: each node a separate
// 'partlog serve' process on loopback, a cluster being one 'partlog
// controller' and three 'partlog serve --controller' (as
// cmd/partlog/cluster_process_test.go does). A target is one of them as
// the checks see it: addresses to bootstrap from, and the harness's own
// partlog client for setting up topics and reading back what a client did.
//
// Across processes there is no event to await: the harness waits for a
// process's "serving ... on ADDR" line, and for the cluster's metadata to
// reach a state by asking for it every pollInterval, each wait bounded.

// pollInterval is how often the harness asks a node for its metadata while
// it waits for a state.
const pollInterval = 20 * time.Millisecond

// buildPartlog builds the partlog binary of the enclosing module into a
// temporary directory and returns its path.
func buildPartlog(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "partlog")
	out, err := exec.Command("go", "build", "-o", bin, "../cmd/partlog").CombinedOutput()
	if err != nil {
		t.Fatalf("go build ../cmd/partlog: %v\n%s", err, out)
	}
	return bin
}

// process is a partlog process the harness started.
type process struct {
	bin  string
	args []string
	name string // for messages: "controller", "node 2"

	cmd  *exec.Cmd
	addr string // from its "serving ... on ADDR" line
	exit chan error

	mu     sync.Mutex
	stderr bytes.Buffer // every run's standard error, shown when the test fails
}

// servingLine is the line serve and controller print once they listen.
var servingLine = regexp.MustCompile(`^partlog: (?:node \d+|controller) serving .* on (?:[A-Z_]+://)?(\S+)`)

// startProcess runs bin with args and waits for its serving line. The
// process is killed when the test ends, and its standard error logged if
// the test failed.
func startProcess(t *testing.T, name, bin string, args ...string) *process {
	t.Helper()
	p := &process{bin: bin, args: args, name: name}
	if err := p.start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.kill()
		if t.Failed() {
			p.mu.Lock()
			t.Logf("%s's standard error:\n%s", name, p.stderr.String())
			p.mu.Unlock()
		}
	})
	return p
}

// start runs the process (again) and waits, at most 30 s, until it serves.
func (p *process) start() error {
	p.cmd = exec.Command(p.bin, p.args...)
	pipe, err := p.cmd.StderrPipe()
	if err != nil {
		return err
	}
	if err := p.cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", p.name, err)
	}
	addr := make(chan string, 1)
	exit := make(chan error, 1)
	p.exit = exit
	cmd := p.cmd
	go func() {
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			line := sc.Text()
			p.mu.Lock()
			fmt.Fprintln(&p.stderr, line)
			p.mu.Unlock()
			if m := servingLine.FindStringSubmatch(line); m != nil {
				addr <- m[1]
			}
		}
		io.Copy(io.Discard, pipe)
		exit <- cmd.Wait()
	}()
	select {
	case p.addr = <-addr:
		return nil
	case err := <-exit:
		exit <- err
		p.mu.Lock()
		defer p.mu.Unlock()
		return fmt.Errorf("%s exited before serving: %v\n%s", p.name, err, p.stderr.String())
	case <-time.After(30 * time.Second):
		return fmt.Errorf("%s did not serve within 30 s", p.name)
	}
}

// kill kills the process with SIGKILL, as kill -9 or a machine's crash
// would, and waits for it to end; it does nothing to a process that has
// ended.
func (p *process) kill() {
	if p.cmd == nil {
		return
	}
	p.cmd.Process.Kill()
	<-p.exit
	p.cmd = nil
}

// terminate stops the process with SIGTERM, as an operator stops a node
// (a controlled shutdown, which moves its leaderships first), and waits at
// most 30 s for it to end.
func (p *process) terminate() error {
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return err
	}
	select {
	case err := <-p.exit:
		p.cmd = nil
		if err != nil {
			return fmt.Errorf("%s ended with %v", p.name, err)
		}
		return nil
	case <-time.After(30 * time.Second):
		return fmt.Errorf("%s did not stop within 30 s of SIGTERM", p.name)
	}
}

// target is what the checks run against: a single node or a cluster.
type target struct {
	name  string // "single", "cluster" or "sasl_ssl"
	bin   string // the partlog binary
	rf    int16  // the replication factor of the checks' topics
	nodes map[int32]*process
	ctl   *process // the controller; nil for a single node

	// client is the harness's own partlog client: it creates the checks'
	// topics, produces with partlog's producer, and reads back what a
	// Kafka client wrote, batch by batch.
	client *transport.ClusterClient
	// sec is how clients reach a target whose listeners are secured
	// (SASL_SSL); nil for plaintext.
	sec *clientSecurity

	// mu guards topics, the counter that names each check's topics.
	mu     sync.Mutex
	topics int
}

// nodeArgs returns the serve flags every node gets: no topic is created by
// accident (a misspelt topic in a check fails rather than appears), and a
// new group's first rebalance does not wait for more members.
func nodeArgs() []string {
	return []string{"--listen", "127.0.0.1:0", "--log-level", *logLevel, "--auto-create-topics=false", "--group-initial-rebalance-delay", "0"}
}

// startSingle starts one 'partlog serve' on a new data directory.
func startSingle(t *testing.T, bin string) *target {
	t.Helper()
	args := append([]string{"serve", "--dir", filepath.Join(t.TempDir(), "single")}, nodeArgs()...)
	p := startProcess(t, "the single node", bin, args...)
	tg := &target{name: "single", bin: bin, rf: 1, nodes: map[int32]*process{}}
	id, err := tg.nodeID(p.addr)
	if err != nil {
		t.Fatal(err)
	}
	tg.nodes[id] = p
	tg.dial(t)
	return tg
}

// startCluster starts a controller and three nodes. Nodes heartbeat every
// 100 ms and are fenced after 3 s without one, so that a killed leader is
// replaced within the checks' time while a node starved of CPU for a
// second (five clients and four processes share two cores) keeps its
// place; leadership never moves back to a preferred replica by itself
// (ElectLeaders does it).
func startCluster(t *testing.T, bin string) *target {
	t.Helper()
	dir := t.TempDir()
	tg := &target{name: "cluster", bin: bin, rf: 3, nodes: map[int32]*process{}}
	tg.ctl = startProcess(t, "the controller", bin, "controller", "--dir", filepath.Join(dir, "controller"),
		"--listen", "127.0.0.1:0", "--session-timeout", "3s", "--tick", "20ms", "--leader-imbalance-check", "0", "--log-level", *logLevel)
	for id := int32(1); id <= 3; id++ {
		args := append([]string{"serve", "--dir", filepath.Join(dir, strconv.Itoa(int(id))), "--node-id", strconv.Itoa(int(id)),
			"--controller", tg.ctl.addr, "--heartbeat", "100ms", "--replica-lag-max", "5s"}, nodeArgs()...)
		tg.nodes[id] = startProcess(t, fmt.Sprintf("node %d", id), bin, args...)
	}
	tg.dial(t)
	return tg
}

// dial connects the harness's client, and waits until every node knows
// every node.
func (tg *target) dial(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := transport.DialCluster(ctx, tg.addrs(), tg.dialOptions())
	if err != nil {
		t.Fatalf("%s: dial: %v", tg.name, err)
	}
	t.Cleanup(func() { c.Close() })
	tg.client = c
	err = tg.waitEveryNode(ctx, "every node to know every node", nil, func(md *transport.MetadataResponse) bool {
		return len(md.Brokers) == len(tg.nodes)
	})
	if err != nil {
		t.Fatalf("%s: %v", tg.name, err)
	}
}

// nodeID asks the node at addr for its id.
func (tg *target) nodeID(addr string) (int32, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := transport.Dial(ctx, addr, tg.dialOptions())
	if err != nil {
		return 0, err
	}
	defer c.Close()
	md, err := c.Metadata(ctx, &transport.MetadataRequest{})
	if err != nil {
		return 0, err
	}
	if len(md.Brokers) != 1 {
		return 0, fmt.Errorf("the single node's metadata names %d brokers", len(md.Brokers))
	}
	return md.Brokers[0].NodeID, nil
}

// ids returns the node ids in order.
func (tg *target) ids() []int32 {
	var ids []int32
	for id := range tg.nodes {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// addrs returns the nodes' addresses in node id order: what a client
// bootstraps from.
func (tg *target) addrs() []string {
	var out []string
	for _, id := range tg.ids() {
		out = append(out, tg.nodes[id].addr)
	}
	return out
}

// newTopicName returns a topic name no other check uses.
func (tg *target) newTopicName(client, check string) string {
	tg.mu.Lock()
	defer tg.mu.Unlock()
	tg.topics++
	return fmt.Sprintf("%s-%s-%s-%d", client, check, tg.name, tg.topics)
}

// createTopic creates a topic of the given partitions with the target's
// replication factor (and min.insync.replicas=2 on the cluster) plus
// configs, through partlog's CreateTopics, and waits until every node
// names a leader and a full ISR for every partition.
func (tg *target) createTopic(ctx context.Context, name string, partitions int32, configs map[string]string) error {
	all := map[string]string{}
	if tg.rf > 1 {
		all["min.insync.replicas"] = "2"
	}
	for k, v := range configs {
		all[k] = v
	}
	c, err := transport.Dial(ctx, tg.addrs()[0], tg.dialOptions())
	if err != nil {
		return err
	}
	defer c.Close()
	resp, err := c.CreateTopics(ctx, &transport.CreateTopicsRequest{Timeout: 10 * time.Second, Topics: []transport.CreatableTopic{
		{Name: name, Partitions: partitions, ReplicationFactor: tg.rf, Configs: all}}})
	if err != nil {
		return fmt.Errorf("harness: create topic %s: %w", name, err)
	}
	if err := resp.Topics[0].Err; err != nil {
		return fmt.Errorf("harness: create topic %s: %w", name, err)
	}
	err = tg.waitTopic(ctx, name, fmt.Sprintf("%d partitions with leaders and full ISRs", partitions), func(tm transport.TopicMetadata) bool {
		return len(tm.Partitions) == int(partitions) && fullISR(tm)
	})
	if err != nil {
		return err
	}
	// A node's metadata may name it a partition's leader before it hosts
	// the replica (NOT_LEADER_OR_FOLLOWER: "node 2 hosts no replica of
	// ... (leader 2)"), which an acks=0 record sent then would not
	// survive: wait until every leader answers for its partition.
	for p := range partitions {
		if _, err := tg.listOffset(ctx, name, p, kafka.LatestTimestamp); err != nil {
			return err
		}
	}
	return nil
}

// fullISR reports whether every partition of tm has a leader and all its
// replicas in sync.
func fullISR(tm transport.TopicMetadata) bool {
	for _, p := range tm.Partitions {
		if p.Leader < 0 || len(p.ISR) != len(p.Replicas) {
			return false
		}
	}
	return len(tm.Partitions) > 0
}

// waitTopic waits until every node's metadata for topic satisfies cond,
// for at most ctx's deadline.
func (tg *target) waitTopic(ctx context.Context, topic, what string, cond func(transport.TopicMetadata) bool) error {
	return tg.waitEveryNode(ctx, fmt.Sprintf("topic %s: %s", topic, what), []string{topic}, func(md *transport.MetadataResponse) bool {
		return len(md.Topics) == 1 && md.Topics[0].Err == nil && cond(md.Topics[0])
	})
}

// waitTopicGone waits until no node knows topic.
func (tg *target) waitTopicGone(ctx context.Context, topic string) error {
	return tg.waitEveryNode(ctx, fmt.Sprintf("topic %s to be gone", topic), []string{topic}, func(md *transport.MetadataResponse) bool {
		return len(md.Topics) == 1 && md.Topics[0].Err != nil
	})
}

// waitEveryNode asks each running node for metadata about topics every
// pollInterval until cond holds of every node's answer.
func (tg *target) waitEveryNode(ctx context.Context, what string, topics []string, cond func(*transport.MetadataResponse) bool) error {
	var last string
	for _, id := range tg.ids() {
		p := tg.nodes[id]
		if p.cmd == nil {
			continue // killed
		}
		err := func() error {
			c, err := transport.Dial(ctx, p.addr, tg.dialOptions())
			if err != nil {
				return err
			}
			defer c.Close()
			tick := time.NewTicker(pollInterval)
			defer tick.Stop()
			for {
				md, err := c.Metadata(ctx, &transport.MetadataRequest{Topics: topics})
				if err == nil && cond(md) {
					return nil
				}
				if err != nil {
					last = err.Error()
				} else {
					last = fmt.Sprintf("%+v", md.Topics)
				}
				select {
				case <-tick.C:
				case <-ctx.Done():
					return fmt.Errorf("harness: timed out waiting for %s at node %d; last answer: %s", what, id, last)
				}
			}
		}()
		if err != nil {
			return err
		}
	}
	return nil
}

// metadata returns the harness's view of topic.
func (tg *target) metadata(ctx context.Context, topic string) (transport.TopicMetadata, error) {
	md, err := tg.client.Metadata(ctx, &transport.MetadataRequest{Topics: []string{topic}})
	if err != nil {
		return transport.TopicMetadata{}, err
	}
	if len(md.Topics) != 1 {
		return transport.TopicMetadata{}, fmt.Errorf("metadata for %s: %d topics", topic, len(md.Topics))
	}
	return md.Topics[0], md.Topics[0].Err
}
