package main

// controller runs a cluster's controller as a process, as a KRaft
// controller runs beside Kafka's brokers: 'partlog serve --controller'
// nodes register with it, and it keeps the cluster's metadata in its
// directory.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"time"

	"github.com/partlog/partlog"
)

const controllerHelp = `Usage: partlog controller --dir DIR [--listen HOST:PORT] [flags]
       partlog controller --dir DIR --node-id N --voters ID@HOST:PORT,... [flags]

Controller runs a cluster's controller on a TCP listener until it is
interrupted (Ctrl-C, SIGTERM). Nodes join the cluster with
'partlog serve --node-id N --controller HOST:PORT'; the controller keeps the
cluster's metadata — the nodes and their liveness, the topics and where
their partitions' replicas are, each partition's leader and in-sync
replicas — in DIR, so that a restarted controller resumes where it stopped.

A node that has not heartbeat for --session-timeout
(broker.session.timeout.ms) is fenced, and the partitions it led get new
leaders from their in-sync replicas. Clients may bootstrap from the
controller as from any node: its Metadata answers name every partition's
leader.

  partlog controller --dir /tmp/ctl --listen 127.0.0.1:9093

Alone, the controller is a single point of failure: while it is down,
nodes keep serving what they lead, but no leader is elected. With
--voters (controller.quorum.voters) it is controller --node-id of a Raft
quorum, listening at its own voter address: the quorum elects an active
controller, and survives the loss of any minority, the active one
included (a new one is elected within about --election-timeout). Nodes
name every voter in --controller, and call whichever is active.

  V=1@127.0.0.1:9191,2@127.0.0.1:9192,3@127.0.0.1:9193
  partlog controller --dir /tmp/q1 --node-id 1 --voters $V &
  partlog controller --dir /tmp/q2 --node-id 2 --voters $V &
  partlog controller --dir /tmp/q3 --node-id 3 --voters $V &
  partlog serve --dir /tmp/n1 --node-id 1 --controller 127.0.0.1:9191,127.0.0.1:9192,127.0.0.1:9193 --listen 127.0.0.1:9101

--listen SSL://HOST:PORT serves TLS (--ssl-keystore, --ssl-truststore,
--ssl-client-auth as 'partlog serve' takes them); voters say
--security-protocol SSL, and send each other Raft messages over TLS too.
Nodes then name the controllers --controller SSL://HOST:PORT,...

Run 'partlog help serve' for the nodes, and for nodes that are also
controllers (--process-roles broker,controller).
`

// runController runs "partlog controller".
func runController(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("controller")
	dir := fs.String("dir", "", "the controller's data `directory` (required)")
	listen := fs.String("listen", "127.0.0.1:9093", "the `address` to listen on: HOST:PORT, PLAINTEXT://HOST:PORT, or SSL://HOST:PORT for TLS")
	protocolFlag := fs.String("security-protocol", "", "with --voters, the quorum's listeners' security `protocol`: PLAINTEXT or SSL (the voters reach each other with it)")
	keyStore := fs.String("ssl-keystore", "", "with SSL, a PEM `file` with the controller's private key and certificate chain")
	trustStore := fs.String("ssl-truststore", "", "a PEM `file` of the certificate authorities that vouch for nodes' and the other voters' certificates")
	clientAuth := fs.String("ssl-client-auth", "none", "whether an SSL listener asks nodes for certificates (ssl.client.auth): none, requested or required")
	session := durationVar(fs, "session-timeout", 9*time.Second, "how long a node may go without a heartbeat before it is fenced (broker.session.timeout.ms), a `duration`")
	tick := durationVar(fs, "tick", 100*time.Millisecond, "how often the controller checks sessions and elects leaders, a `duration`")
	rebalance := durationVar(fs, "leader-imbalance-check", 300*time.Second, "how often leadership moves back to preferred replicas (leader.imbalance.check.interval.seconds), a `duration`, 0 turning it off")
	nodeID := fs.Int("node-id", 0, "the controller's `id` (node.id) among the --voters")
	voters := fs.String("voters", "", "the controller quorum's `voters` (controller.quorum.voters): id@host:port,...; the controller listens at its own")
	election := durationVar(fs, "election-timeout", time.Second, "with --voters, how long the controllers wait without hearing the active one before electing another (controller.quorum.election.timeout.ms), a `duration`")
	level := logLevelFlag(fs)
	operands, err := parseFlags(fs, args, controllerHelp, stdout)
	if err != nil {
		return err
	}
	protocol, addr, err := splitListener(*listen)
	if err != nil {
		return usageErrorf("controller", "--listen: %v", err)
	}
	*listen = addr
	if isSet(fs, "security-protocol") {
		if *voters == "" {
			return usageErrorf("controller", "--security-protocol is for --voters; a controller alone says it in --listen SSL://HOST:PORT")
		}
		protocol = strings.ToUpper(*protocolFlag)
	}
	if protocol != protocolPlaintext && protocol != protocolSSL {
		return usageErrorf("controller", "a controller's listener is PLAINTEXT or SSL, not %s", protocol)
	}
	serverTLS, _, err := listenerTLS(protocol, *keyStore, *trustStore, *clientAuth, "DEFAULT")
	if err != nil {
		return usageErrorf("controller", "%v", err)
	}
	if serverTLS != nil && serverTLS.ClientCAs == nil && *voters != "" {
		return usageErrorf("controller", "a voter with an SSL listener needs --ssl-truststore: the authorities of the other voters' certificates")
	}
	var quorum map[int32]string
	if *voters != "" {
		if quorum, err = partlog.ParseVoters(*voters); err != nil {
			return usageErrorf("controller", "--voters: %v", err)
		}
		if isSet(fs, "listen") {
			return usageErrorf("controller", "--listen is not for a voter: it listens at its --voters address")
		}
		if quorum[int32(*nodeID)] == "" {
			return usageErrorf("controller", "--node-id %d is not one of the --voters", *nodeID)
		}
		*listen = quorum[int32(*nodeID)]
	}
	switch {
	case len(operands) > 0:
		return usageErrorf("controller", "unexpected argument %q", operands[0])
	case *voters == "" && (isSet(fs, "node-id") || isSet(fs, "election-timeout")):
		return usageErrorf("controller", "--node-id and --election-timeout need --voters")
	case *election <= 0:
		return usageErrorf("controller", "--election-timeout must be positive")
	case *dir == "":
		return usageErrorf("controller", "--dir is required")
	case *session <= 0 || *tick <= 0:
		return usageErrorf("controller", "--session-timeout and --tick must be positive")
	case *rebalance < 0:
		return usageErrorf("controller", "--leader-imbalance-check must not be negative")
	}
	// The listener first: the other voters reach it as soon as they
	// start.
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return fmt.Errorf("controller: %w", err)
	}
	defer ln.Close()
	opts := partlog.ControllerOptions{TickInterval: *tick, SessionTimeout: *session,
		LeaderImbalanceCheckInterval: *rebalance, NoAutoLeaderRebalance: *rebalance == 0, Logger: newLogger(stderr, level),
		NodeID: int32(*nodeID), Voters: quorum, ElectionTimeout: *election, TLS: serverTLS}
	if serverTLS != nil {
		// The other voters serve TLS too: trust what vouches for the
		// nodes, show the controller's own certificate.
		opts.PeerTLS = peerTLS(serverTLS)
	}
	c, err := partlog.OpenController(*dir, opts)
	if err != nil {
		return fmt.Errorf("controller: %w", err)
	}
	defer c.Close()
	ctx, stop := interruptContext(context.Background())
	defer stop()
	served := make(chan error, 1)
	go func() { served <- c.Serve(ln) }()
	if quorum != nil {
		fmt.Fprintf(stderr, "partlog: controller %d serving %s on %s in the quorum %s\n", *nodeID, *dir, listenerName(protocol, ln.Addr()), *voters)
	} else {
		fmt.Fprintf(stderr, "partlog: controller serving %s on %s\n", *dir, listenerName(protocol, ln.Addr()))
	}
	if serveReady != nil {
		serveReady(ln.Addr().String())
	}
	var errs []error
	select {
	case <-ctx.Done():
	case err := <-served:
		errs = append(errs, fmt.Errorf("controller: serving stopped: %w", err))
	}
	if err := c.Close(); err != nil {
		errs = append(errs, fmt.Errorf("controller: %w", err))
	}
	if len(errs) == 0 {
		if err := <-served; err != nil {
			errs = append(errs, fmt.Errorf("controller: %w", err))
		}
	}
	if len(errs) == 0 {
		fmt.Fprintln(stderr, "partlog: closed cleanly")
	}
	return errors.Join(errs...)
}
