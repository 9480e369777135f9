package controller

import (
	"crypto/tls"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/partlog/partlog/vfs"
)

// Options configures a Controller and its Machine. The zero value works:
// Kafka's defaults. Durations are rounded up to whole ticks. A Machine
// reads only the first four fields: it does no I/O and logs nothing, so
// it ignores FS and Logger.
type Options struct {
	// TickInterval is how often the controller ticks: the time one
	// Machine.Tick stands for, and the unit of the timeouts. Zero means
	// 100 ms.
	TickInterval time.Duration
	// SessionTimeout is broker.session.timeout.ms: a node that has not
	// heartbeat for this long is fenced, and its partitions' leadership
	// moves. Zero means 9 s. Nodes must heartbeat well within it.
	SessionTimeout time.Duration
	// LeaderImbalanceCheckInterval is
	// leader.imbalance.check.interval.seconds: how often leadership moves
	// back to preferred replicas. Zero means 300 s.
	LeaderImbalanceCheckInterval time.Duration
	// NoAutoLeaderRebalance turns that off: auto.leader.rebalance.enable
	// set to false. Unlike Kafka, leadership moves back whatever
	// leader.imbalance.per.broker.percentage would say.
	NoAutoLeaderRebalance bool
	// ElectionTimeout is controller.quorum.election.timeout.ms, for a
	// controller in a quorum (Member): a follower that hears nothing from
	// the active controller for this long (up to twice as long, at random)
	// stands for election. Zero means 1 s. The active controller's
	// heartbeats to the others go every TickInterval.
	ElectionTimeout time.Duration
	// FailoverSessionTimeout is how long a controller that becomes active
	// gives each live node to heartbeat to it before fencing the node:
	// it cannot know when a node last heartbeat to the controller before
	// it. Zero means half the SessionTimeout; at most SessionTimeout.
	FailoverSessionTimeout time.Duration
	// SnapshotEntries is how many metadata log entries a controller in a
	// quorum applies between snapshots (checkpoints), after which it
	// drops the entries a snapshot covers. Zero means 10000.
	SnapshotEntries int
	// NodeID is this controller's node.id among the quorum's Voters. Zero
	// by default.
	NodeID int32
	// Voters are the quorum's controllers by node id, NodeID among them,
	// with the address (host:port) each serves Raft messages at: Kafka's
	// controller.quorum.voters, 1@host:port,2@host:port,... (ParseVoters
	// reads that form). None means a quorum of this controller alone.
	// Every controller of a new quorum must be given the same voters.
	Voters map[int32]string
	// RaftTransport carries Raft messages to the other voters. Nil means
	// TCP, to the Voters' addresses (NewTCPRaft), where the controllers
	// serve (Controller.Serve).
	RaftTransport RaftTransport
	// TLS, when set, serves the controller's listener (Serve) with TLS:
	// with ClientAuth tls.RequireAndVerifyClientCert, nodes and the
	// other controllers must show a certificate ClientCAs vouch for.
	TLS *tls.Config
	// PeerTLS, when set, is how the controller speaks TLS to the other
	// voters over TCP (their listeners serve TLS): RootCAs vouch for
	// their certificates, Certificates are its own.
	PeerTLS *tls.Config
	// FS is the filesystem; nil means the OS.
	FS vfs.FS
	// Logger receives the controller's decisions and failures. Nil
	// discards them.
	Logger *slog.Logger
}

const (
	defaultTickInterval                 = 100 * time.Millisecond
	defaultSessionTimeout               = 9 * time.Second
	defaultLeaderImbalanceCheckInterval = 300 * time.Second
	defaultElectionTimeout              = time.Second
	defaultSnapshotEntries              = 10000
)

// withDefaults returns a copy of o with its zero fields filled in, or an
// error naming a field that is out of range.
func (o Options) withDefaults() (Options, error) {
	if o.FS == nil {
		o.FS = vfs.Default
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	for _, d := range []struct {
		name string
		v    *time.Duration
		def  time.Duration
	}{
		{"TickInterval", &o.TickInterval, defaultTickInterval},
		{"SessionTimeout", &o.SessionTimeout, defaultSessionTimeout},
		{"LeaderImbalanceCheckInterval", &o.LeaderImbalanceCheckInterval, defaultLeaderImbalanceCheckInterval},
		{"ElectionTimeout", &o.ElectionTimeout, defaultElectionTimeout},
	} {
		switch {
		case *d.v < 0:
			return o, fmt.Errorf("controller: %s %v must not be negative", d.name, *d.v)
		case *d.v == 0:
			*d.v = d.def
		}
	}
	switch {
	case o.FailoverSessionTimeout < 0:
		return o, fmt.Errorf("controller: FailoverSessionTimeout %v must not be negative", o.FailoverSessionTimeout)
	case o.FailoverSessionTimeout == 0:
		o.FailoverSessionTimeout = o.SessionTimeout / 2
	}
	o.FailoverSessionTimeout = min(o.FailoverSessionTimeout, o.SessionTimeout)
	switch {
	case o.SnapshotEntries < 0:
		return o, fmt.Errorf("controller: SnapshotEntries %d must not be negative", o.SnapshotEntries)
	case o.SnapshotEntries == 0:
		o.SnapshotEntries = defaultSnapshotEntries
	}
	return o, nil
}

// ticks returns how many ticks d spans, rounded up, and at least one.
func (o Options) ticks(d time.Duration) int64 {
	return max(1, int64((d+o.TickInterval-1)/o.TickInterval))
}

// ParseVoters reads voters as Kafka's controller.quorum.voters writes
// them, id@host:port separated by commas, into Options.Voters.
func ParseVoters(s string) (map[int32]string, error) {
	voters := map[int32]string{}
	for _, v := range strings.Split(s, ",") {
		id, addr, ok := strings.Cut(strings.TrimSpace(v), "@")
		n, err := strconv.ParseInt(id, 10, 32)
		switch {
		case !ok || err != nil || n < 0:
			return nil, fmt.Errorf("controller: voter %q is not id@host:port", v)
		case voters[int32(n)] != "":
			return nil, fmt.Errorf("controller: voter %d is named twice", n)
		}
		if _, _, err := net.SplitHostPort(addr); err != nil {
			return nil, fmt.Errorf("controller: voter %q: %w", v, err)
		}
		voters[int32(n)] = addr
	}
	return voters, nil
}
