package main

// serve runs a node as a process: it opens a data directory and answers
// Kafka protocol requests on a TCP listener until it is interrupted, as
// kafka-server-start.sh runs a broker.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"

	"github.com/partlog/partlog/transport"
)

const serveHelp = `Usage: partlog serve --dir DIR [--listen HOST:PORT] [--advertised HOST:PORT]

Serve opens the data directory DIR and answers requests on a TCP listener
until it is interrupted (Ctrl-C, SIGTERM), then closes the directory
cleanly. It speaks Kafka's wire protocol, so partlog's producer and consumer
in other processes (transport.Dial) and Kafka clients reach its topics:
ApiVersions, Metadata, Produce, Fetch and ListOffsets. Topics are created
with 'partlog topics create' before serving, or by the program that embeds
the node.

--advertised is the address Metadata answers give clients for this node,
when it differs from the listener's (a wildcard listener, a container).
While it serves, no other partlog command can open DIR.
`

// serveReady, when set, is told the listener's address once it listens:
// tests listen on port 0 and learn the port from it.
var serveReady func(addr string)

// runServe runs "partlog serve".
func runServe(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("serve")
	dir := dirFlag(fs)
	listen := fs.String("listen", "127.0.0.1:9092", "the `address` to listen on")
	advertised := fs.String("advertised", "", "the `address` clients are told to use; the listener's by default")
	operands, err := parseFlags(fs, args, serveHelp, stdout)
	if err != nil {
		return err
	}
	if len(operands) > 0 {
		return usageErrorf("serve", "unexpected argument %q", operands[0])
	}
	n, err := openNode("serve", *dir)
	if err != nil {
		return err
	}
	defer n.Close()
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	s := transport.NewServer(n, transport.ServerOptions{Advertised: *advertised})
	ctx, stop := interruptContext(context.Background())
	defer stop()
	served := make(chan error, 1)
	go func() { served <- s.Serve(ln) }()
	fmt.Fprintf(stderr, "partlog: node %d serving %s on %s\n", n.NodeID(), n.Dir(), ln.Addr())
	if serveReady != nil {
		serveReady(ln.Addr().String())
	}
	var errs []error
	select {
	case <-ctx.Done():
	case err := <-served:
		errs = append(errs, fmt.Errorf("serve: %w", err))
	}
	s.Close()
	if err := n.Close(); err != nil {
		errs = append(errs, fmt.Errorf("serve: %w", err))
	}
	if len(errs) == 0 {
		fmt.Fprintln(stderr, "partlog: closed cleanly")
	}
	return errors.Join(errs...)
}
