package main

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/partlog/partlog/producer"
	"github.com/partlog/partlog/transport"
)

// This file runs a cluster as on separate machines: each process in a
// network namespace of its own, with a private address on a veth pair
// whose other end is on a bridge the test makes; the test process, the
// client, reaches them through the bridge. A partition of the network is a
// link set down, as a pulled cable.

// netns is a bridge and network namespaces on it, one per machine.
type netns struct {
	tb     testing.TB
	bridge string
	names  []string // the namespaces, machine i at names[i-1]
	veths  []string // the bridge's end of each machine's link
	subnet string   // 10.N.0: machine i is 10.N.0.i, the bridge 10.N.0.254
}

// newNetns makes n machines, or skips the test, saying why, where the
// process may not make network namespaces (it is not root, or has no
// CAP_NET_ADMIN, or there is no ip command).
func newNetns(tb testing.TB, n int) *netns {
	tb.Helper()
	if os.Geteuid() != 0 {
		tb.Skip("network namespaces need root: this test runs the cluster as on separate machines only as root")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		tb.Skipf("no ip command (iproute2) to make network namespaces: %v", err)
	}
	tag := fmt.Sprintf("%04x", rand.IntN(1<<16))
	ns := &netns{tb: tb, bridge: "plb" + tag, subnet: fmt.Sprintf("10.%d.0", 100+rand.IntN(100))}
	if out, err := exec.Command("ip", "link", "add", ns.bridge, "type", "bridge").CombinedOutput(); err != nil {
		tb.Skipf("cannot make a bridge (no CAP_NET_ADMIN?): %v: %s", err, out)
	}
	tb.Cleanup(ns.remove)
	// What fails while the machines are made is the host's limit (no
	// network namespaces in this container, say), not partlog's.
	setup := func(args ...string) {
		tb.Helper()
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			tb.Skipf("cannot make the test's network (ip %s): %v: %s", strings.Join(args, " "), err, out)
		}
	}
	setup("link", "set", ns.bridge, "up")
	setup("addr", "add", ns.subnet+".254/24", "dev", ns.bridge)
	for i := 1; i <= n; i++ {
		name, veth := "pl"+tag+"-"+strconv.Itoa(i), "plv"+tag+strconv.Itoa(i)
		setup("netns", "add", name)
		ns.names, ns.veths = append(ns.names, name), append(ns.veths, veth)
		setup("link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", name)
		setup("link", "set", veth, "master", ns.bridge)
		setup("link", "set", veth, "up")
		setup("-n", name, "addr", "add", ns.addr(i)+"/24", "dev", "eth0")
		setup("-n", name, "link", "set", "eth0", "up")
		setup("-n", name, "link", "set", "lo", "up")
	}
	return ns
}

// addr returns machine i's address.
func (ns *netns) addr(i int) string { return ns.subnet + "." + strconv.Itoa(i) }

// ip runs the ip command with args, failing the test if it fails.
func (ns *netns) ip(args ...string) {
	ns.tb.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		ns.tb.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
	}
}

// link pulls machine i's cable, or plugs it back.
func (ns *netns) link(i int, up bool) {
	ns.tb.Helper()
	state := "down"
	if up {
		state = "up"
	}
	ns.ip("link", "set", ns.veths[i-1], state)
}

// remove deletes the namespaces (and with them their links) and the
// bridge.
func (ns *netns) remove() {
	for _, name := range ns.names {
		exec.Command("ip", "netns", "del", name).Run()
	}
	exec.Command("ip", "link", "del", ns.bridge).Run()
}

// startNetnsCluster starts three nodes in combined mode, node i on machine
// i, and returns them as a process cluster.
func startNetnsCluster(tb testing.TB, bin string, ns *netns) *processCluster {
	tb.Helper()
	dir := tb.TempDir()
	var voters []string
	for i := range ns.names {
		voters = append(voters, fmt.Sprintf("%d@%s:9093", i+1, ns.addr(i+1)))
	}
	var argsList [][]string
	for i, name := range ns.names {
		id := strconv.Itoa(i + 1)
		argsList = append(argsList, []string{"netns", "exec", name, bin, "serve", "--process-roles", "broker,controller",
			"--voters", strings.Join(voters, ","), "--dir", filepath.Join(dir, id), "--node-id", id,
			"--listen", ns.addr(i+1) + ":9092", "--session-timeout", quorumSession.String(),
			"--election-timeout", quorumElection.String(), "--heartbeat", "100ms", "--replica-lag-max", "5s",
			"--log-level", "warn", "--group-initial-rebalance-delay", "0"})
	}
	c := &processCluster{tb: tb, nodes: map[int32]*process{}, cutOff: map[int32]bool{}}
	for i, p := range startProcesses(tb, "ip", argsList...) {
		c.nodes[int32(i+1)] = p
	}
	return c
}

// TestNetnsPartitionActiveController runs three nodes in combined mode as
// on three machines and, under an idempotent acks=all producer in a fourth
// (the test), cuts the machine whose controller is active off the network:
// the other two elect a controller, fence the cut node and move its
// leaderships, and acks go on; once the cable is back, the node rejoins
// every ISR. Every acknowledged record is in the log once, where its
// acknowledgement said.
func TestNetnsPartitionActiveController(t *testing.T) {
	ns := newNetns(t, 3)
	bin := buildPartlog(t)
	c := startNetnsCluster(t, bin, ns)
	createReplicatedTopic(t, c)
	// A cut-off leader answers nothing, and the producer waits out its
	// request timeout before it asks for new leaders, as Kafka's does.
	client, p, acks, stop := startSequence(t, c, producer.RequestTimeout(3*time.Second))
	acks.waitAcked(t, 2000)

	cut := c.activeController(func(id int32) bool { _, ok := c.nodes[id]; return ok })
	ns.link(int(cut), false)
	c.cutOff[cut] = true
	cutAt := time.Now()
	t.Logf("cut node %d, whose controller was active, off the network", cut)
	c.waitFor("leaders on the other side", "t", func(tm transport.TopicMetadata) bool {
		for _, pm := range tm.Partitions {
			if pm.Leader < 0 || pm.Leader == cut {
				return false
			}
		}
		return true
	})
	acks.waitAcked(t, 2000)
	if now := c.activeController(func(id int32) bool { return !c.cutOff[id] }); now == cut {
		t.Fatalf("node %d is still named the active controller while cut off", cut)
	}
	t.Logf("new leaders and 2000 more acks %v after the cut", time.Since(cutAt).Round(time.Millisecond))

	ns.link(int(cut), true)
	delete(c.cutOff, cut)
	c.waitFor("the node back in every ISR", "t", inEveryISR(cut))
	acks.waitAcked(t, 2000)
	checkSequence(t, client, p, acks, stop())
}
