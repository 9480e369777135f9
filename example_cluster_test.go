package partlog_test

import (
	"context"
	"fmt"
	"time"

	"github.com/partlog/partlog"
	"github.com/partlog/partlog/producer"
	"github.com/partlog/partlog/replica"
	"github.com/partlog/partlog/vfs"
)

// Three nodes in one process replicate a topic; when the leader goes away,
// another in-sync replica takes over and the producer follows it. (The
// example runs on an in-memory filesystem with fast timings; a real
// cluster keeps Kafka's defaults and runs the nodes in their own processes
// with ControllerAddress.)
func ExampleOpenController() {
	ctx := context.Background()
	fsys := vfs.NewMem()
	ctl, err := partlog.OpenController("/controller", partlog.ControllerOptions{FS: fsys,
		TickInterval: 10 * time.Millisecond, SessionTimeout: 5 * time.Second})
	if err != nil {
		panic(err)
	}
	defer ctl.Close()
	net := partlog.NewMemNetwork()
	nodes := map[int32]*partlog.Node{}
	for id := int32(1); id <= 3; id++ {
		n, err := partlog.Open(fmt.Sprintf("/node%d", id), partlog.NodeID(id), partlog.Filesystem(fsys),
			partlog.JoinCluster(ctl, net), partlog.HeartbeatInterval(20*time.Millisecond),
			partlog.ReplicaOptions(replica.Options{TickInterval: 10 * time.Millisecond}))
		if err != nil {
			panic(err)
		}
		defer n.Close()
		nodes[id] = n
	}
	err = nodes[1].CreateTopic(ctx, partlog.NewTopic{Name: "orders", ReplicationFactor: 3,
		Configs: map[string]string{"min.insync.replicas": "2"}})
	if err != nil {
		panic(err)
	}
	client, err := net.Client(ctx)
	if err != nil {
		panic(err)
	}
	defer client.Close()
	p, err := producer.New(client) // idempotent, acks=all
	if err != nil {
		panic(err)
	}
	defer p.Close()
	show := func() {
		s, _ := ctl.Partition("orders", 0)
		fmt.Printf("orders-0: leader %d, ISR %v\n", s.Leader, s.ISR)
	}
	rec := &producer.Record{Topic: "orders", Value: []byte("first")}
	if err := p.ProduceSync(ctx, rec).FirstErr(); err != nil {
		panic(err)
	}
	show()
	fmt.Printf("%q at offset %d\n", rec.Value, rec.Offset)

	nodes[1].Close() // a controlled shutdown: leadership moves at once
	show()
	rec = &producer.Record{Topic: "orders", Value: []byte("second")}
	if err := p.ProduceSync(ctx, rec).FirstErr(); err != nil {
		panic(err)
	}
	fmt.Printf("%q at offset %d\n", rec.Value, rec.Offset)
	// Output:
	// orders-0: leader 1, ISR [1 2 3]
	// "first" at offset 0
	// orders-0: leader 2, ISR [2 3]
	// "second" at offset 1
}

// Three controllers in one process form a Raft quorum (on a MemRaft), and
// a node joins the cluster through whichever is active: when the active
// controller closes, the other two elect another, and the node's next
// change goes there. (Over TCP, each controller is ControllerOptions with
// Voters' addresses and Serve, or a node in combined mode with
// ControllerRole.)
func ExampleJoinQuorum() {
	ctx := context.Background()
	fsys := vfs.NewMem()
	raft := partlog.NewMemRaft()
	voters := map[int32]string{1: "", 2: "", 3: ""}
	var ctls []*partlog.Controller
	for id := int32(1); id <= 3; id++ {
		c, err := partlog.OpenController(fmt.Sprintf("/controller%d", id), partlog.ControllerOptions{FS: fsys,
			NodeID: id, Voters: voters, RaftTransport: raft,
			TickInterval: 10 * time.Millisecond, ElectionTimeout: 100 * time.Millisecond})
		if err != nil {
			panic(err)
		}
		defer c.Close()
		raft.Attach(id, c)
		ctls = append(ctls, c)
	}
	n, err := partlog.Open("/node1", partlog.NodeID(1), partlog.Filesystem(fsys),
		partlog.JoinQuorum(partlog.NewMemNetwork(), ctls...), partlog.HeartbeatInterval(20*time.Millisecond))
	if err != nil {
		panic(err)
	}
	defer n.Close()
	if err := n.CreateTopic(ctx, partlog.NewTopic{Name: "orders"}); err != nil {
		panic(err)
	}
	for i, c := range ctls {
		if c.Active() {
			c.Close() // the active controller goes away
			raft.Attach(int32(i+1), nil)
		}
	}
	if err := n.CreateTopic(ctx, partlog.NewTopic{Name: "payments"}); err != nil {
		panic(err)
	}
	fmt.Println(n.ListTopics())
	// Output:
	// [orders payments]
}
