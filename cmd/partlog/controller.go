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
	"time"

	"github.com/partlog/partlog"
)

const controllerHelp = `Usage: partlog controller --dir DIR [--listen HOST:PORT] [flags]

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
leader. There is one controller; while it is down, nodes keep serving what
they lead, but no leader is elected.

  partlog controller --dir /tmp/ctl --listen 127.0.0.1:9093

Run 'partlog help serve' for the nodes.
`

// runController runs "partlog controller".
func runController(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("controller")
	dir := fs.String("dir", "", "the controller's data `directory` (required)")
	listen := fs.String("listen", "127.0.0.1:9093", "the `address` to listen on")
	session := durationVar(fs, "session-timeout", 9*time.Second, "how long a node may go without a heartbeat before it is fenced (broker.session.timeout.ms), a `duration`")
	tick := durationVar(fs, "tick", 100*time.Millisecond, "how often the controller checks sessions and elects leaders, a `duration`")
	rebalance := durationVar(fs, "leader-imbalance-check", 300*time.Second, "how often leadership moves back to preferred replicas (leader.imbalance.check.interval.seconds), a `duration`, 0 turning it off")
	level := logLevelFlag(fs)
	operands, err := parseFlags(fs, args, controllerHelp, stdout)
	if err != nil {
		return err
	}
	switch {
	case len(operands) > 0:
		return usageErrorf("controller", "unexpected argument %q", operands[0])
	case *dir == "":
		return usageErrorf("controller", "--dir is required")
	case *session <= 0 || *tick <= 0:
		return usageErrorf("controller", "--session-timeout and --tick must be positive")
	case *rebalance < 0:
		return usageErrorf("controller", "--leader-imbalance-check must not be negative")
	}
	c, err := partlog.OpenController(*dir, partlog.ControllerOptions{TickInterval: *tick, SessionTimeout: *session,
		LeaderImbalanceCheckInterval: *rebalance, NoAutoLeaderRebalance: *rebalance == 0, Logger: newLogger(stderr, level)})
	if err != nil {
		return fmt.Errorf("controller: %w", err)
	}
	defer c.Close()
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return fmt.Errorf("controller: %w", err)
	}
	ctx, stop := interruptContext(context.Background())
	defer stop()
	served := make(chan error, 1)
	go func() { served <- c.Serve(ln) }()
	fmt.Fprintf(stderr, "partlog: controller serving %s on %s\n", *dir, ln.Addr())
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
