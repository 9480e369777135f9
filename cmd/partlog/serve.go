package main

// serve runs a node as a process: it opens a data directory and answers
// Kafka protocol requests on a TCP listener until it is interrupted, as
// kafka-server-start.sh runs a broker. With --controller the node is a
// member of a cluster that 'partlog controller' runs.

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/partlog/partlog"
	"github.com/partlog/partlog/auth"
	"github.com/partlog/partlog/quota"
	"github.com/partlog/partlog/replica"
	"github.com/partlog/partlog/transport"
)

const serveHelp = `Usage: partlog serve --dir DIR [--listen HOST:PORT] [--advertised HOST:PORT]
       partlog serve --dir DIR --node-id N --controller HOST:PORT[,...] [--listen HOST:PORT] [flags]
       partlog serve --dir DIR --node-id N --process-roles broker,controller --voters ID@HOST:PORT,... [flags]

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

With --controller, the node is a member of the cluster whose controller
('partlog controller') listens there: it registers as node --node-id at its
advertised address (the listener's by default, so port 0 works), heartbeats
every --heartbeat, and hosts the replicas of the replicated topics the
controller assigns it. Topics created through any member ('partlog topics
create --bootstrap-server HOST:PORT --replication-factor R') go to the
controller; clients reach every partition's leader through any member
(transport.DialCluster). A member restarted on the same DIR catches up from
the leaders and rejoins the in-sync replicas. For example:

  partlog controller --dir /tmp/ctl --listen 127.0.0.1:9093
  partlog serve --dir /tmp/n1 --node-id 1 --controller 127.0.0.1:9093 --listen 127.0.0.1:9101
  partlog serve --dir /tmp/n2 --node-id 2 --controller 127.0.0.1:9093 --listen 127.0.0.1:9102
  partlog serve --dir /tmp/n3 --node-id 3 --controller 127.0.0.1:9093 --listen 127.0.0.1:9103

--controller takes several controllers' addresses, comma-separated, when
they are a quorum ('partlog controller --voters'): the node calls the
active one.

With --process-roles broker,controller (Kafka's combined mode), the node is
also a controller of the quorum of --voters (controller.quorum.voters,
id@host:port,...): its controller keeps the metadata log in DIR and
listens at its own voter address, and the node joins the cluster through
the quorum. Three such nodes survive the loss of any one, the active
controller's included. Start them together: each waits for a majority.

  V=1@127.0.0.1:9191,2@127.0.0.1:9192,3@127.0.0.1:9193
  partlog serve --process-roles broker,controller --voters $V --dir /tmp/c1 --node-id 1 --listen 127.0.0.1:9101 &
  partlog serve --process-roles broker,controller --voters $V --dir /tmp/c2 --node-id 2 --listen 127.0.0.1:9102 &
  partlog serve --process-roles broker,controller --voters $V --dir /tmp/c3 --node-id 3 --listen 127.0.0.1:9103 &

--listen SSL://HOST:PORT serves TLS, as a Kafka listener of security
protocol SSL: --ssl-keystore is a PEM file with the node's private key and
certificate chain. With --ssl-client-auth required (mutual TLS) a client
must show a certificate that an authority of --ssl-truststore signed, and
its principal is the certificate's subject (User:CN=alice,OU=eng,...) or
what --ssl-principal-mapping-rules make of it; without one a client is
User:ANONYMOUS. Members of a cluster with SSL listeners reach each other
over TLS, trusting --ssl-truststore and showing their own certificate, and
so a controller named --controller SSL://HOST:PORT ('partlog controller
--listen SSL://...'); a combined node's controller listener serves TLS when
its broker listener does. SASL_SSL:// and SASL_PLAINTEXT:// listeners make
clients authenticate (SCRAM-SHA-512, SCRAM-SHA-256, PLAIN) as the users of
the cluster ('partlog configs --entity-type users') or of --sasl-users; the
members authenticate to each other as --sasl-inter-broker-user. Clients give
their settings in a --command-config file, as Kafka's tools do:

  partlog serve --dir /tmp/tls --listen SSL://127.0.0.1:9093 \
    --ssl-keystore node.pem --ssl-truststore ca.pem --ssl-client-auth required \
    --ssl-principal-mapping-rules 'RULE:^CN=(.*?),.*$/$1/'
  printf 'security.protocol=SSL\nssl.truststore.location=ca.pem\nssl.keystore.location=alice.pem\n' >client.properties
  partlog topics list --bootstrap-server 127.0.0.1:9093 --command-config client.properties

With --acls the node checks every client request against the cluster's
ACLs ('partlog acls'), as a Kafka broker with an authorizer: a principal
may do what an ACL allows it and nothing else, with Kafka's
TOPIC_AUTHORIZATION_FAILED (GROUP_, CLUSTER_, TRANSACTIONAL_ID_) for the
rest; --super-users may do anything. A cluster's members call each other
on the client listener, so the principal they connect as (the
--sasl-inter-broker-user, or their certificates' under mTLS) must be a
super user or have ClusterAction on the cluster.
`

// listenerTLS returns the TLS configuration and principal mapping rules
// of a listener of protocol from serve's --ssl flags: no configuration
// for PLAINTEXT, which takes none of the flags.
func listenerTLS(protocol, keyStore, trustStore, clientAuth, mappingRules string) (*tls.Config, auth.MappingRules, error) {
	mode, ok := clientAuthModes[clientAuth]
	if !ok {
		return nil, auth.MappingRules{}, fmt.Errorf("--ssl-client-auth %q is not none, requested or required", clientAuth)
	}
	rules, err := auth.ParseMappingRules(mappingRules)
	if err != nil {
		return nil, auth.MappingRules{}, fmt.Errorf("--ssl-principal-mapping-rules: %v", err)
	}
	if !usesTLS(protocol) {
		if keyStore != "" || trustStore != "" || mode != tls.NoClientCert || mappingRules != "DEFAULT" {
			return nil, auth.MappingRules{}, fmt.Errorf("the --ssl flags need an SSL or SASL_SSL listener (--listen SSL://HOST:PORT)")
		}
		return nil, rules, nil
	}
	if keyStore == "" {
		return nil, auth.MappingRules{}, fmt.Errorf("an %s listener needs --ssl-keystore", protocol)
	}
	if mode != tls.NoClientCert && trustStore == "" {
		return nil, auth.MappingRules{}, fmt.Errorf("--ssl-client-auth %s needs --ssl-truststore", clientAuth)
	}
	cert, err := readKeyStore(keyStore)
	if err != nil {
		return nil, auth.MappingRules{}, err
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{cert}, ClientAuth: mode, MinVersion: tls.VersionTLS12}
	if trustStore != "" {
		if cfg.ClientCAs, err = readTrustStore(trustStore); err != nil {
			return nil, auth.MappingRules{}, err
		}
	}
	return cfg, rules, nil
}

// listenerSASL returns the SASL settings of a listener of protocol from
// serve's --sasl flags, with the static users of --sasl-users (if any) as
// its credentials, and their passwords: none for a protocol without SASL,
// which takes neither flag. The node adds the users of the cluster's
// metadata once it is open.
func listenerSASL(protocol, mechanisms, usersFile string) (*transport.SASL, map[string]string, error) {
	if !usesSASL(protocol) {
		if usersFile != "" || mechanisms != strings.Join(auth.Mechanisms, ",") {
			return nil, nil, fmt.Errorf("the --sasl flags need a SASL_PLAINTEXT or SASL_SSL listener")
		}
		return nil, nil, nil
	}
	var enabled []string
	for _, m := range strings.Split(mechanisms, ",") {
		m = strings.ToUpper(strings.TrimSpace(m))
		if !slices.Contains(auth.Mechanisms, m) {
			return nil, nil, fmt.Errorf("--sasl-enabled-mechanisms: %q is not one of %s", m, strings.Join(auth.Mechanisms, ", "))
		}
		enabled = append(enabled, m)
	}
	sasl := &transport.SASL{Mechanisms: enabled}
	if usersFile == "" {
		return sasl, nil, nil
	}
	users, passwords, err := readUsers(usersFile)
	if err != nil {
		return nil, nil, err
	}
	sasl.Credentials = users
	return sasl, passwords, nil
}

// listenerName writes a listener as Kafka's logs do: SSL://127.0.0.1:9093;
// a PLAINTEXT one as its address alone.
func listenerName(protocol string, addr net.Addr) string {
	if protocol != protocolPlaintext {
		return protocol + "://" + addr.String()
	}
	return addr.String()
}

// serveReady, when set, is told the listener's address once it listens:
// tests listen on port 0 and learn the port from it.
var serveReady func(addr string)

// runServe runs "partlog serve".
func runServe(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("serve")
	dir := dirFlag(fs)
	listen := fs.String("listen", "127.0.0.1:9092", "the `address` to listen on, as Kafka's listeners are written: HOST:PORT or PLAINTEXT://HOST:PORT; SSL://, SASL_PLAINTEXT:// or SASL_SSL://HOST:PORT for TLS, SASL or both")
	advertised := fs.String("advertised", "", "the `address` clients and other nodes are told to use; the listener's by default")
	nodeID := fs.Int("node-id", 0, "the node's `id` (node.id), for a new DIR; required with --controller")
	controller := fs.String("controller", "", "the `address` of the cluster's controller ('partlog controller'), or of every controller of a quorum, comma-separated; the node serves alone without it")
	heartbeat := durationVar(fs, "heartbeat", 500*time.Millisecond, "how often a cluster member heartbeats to the controller (broker.heartbeat.interval.ms), a `duration`")
	lagMax := durationVar(fs, "replica-lag-max", 30*time.Second, "how long a follower may lag before its leader drops it from the ISR (replica.lag.time.max.ms), a `duration`")
	autoCreate := fs.Bool("auto-create-topics", true, "create a topic a client's Metadata request names and allows to be created (auto.create.topics.enable)")
	numPartitions := fs.Int("num-partitions", 1, "the `partitions` of an auto-created topic (num.partitions)")
	defaultReplication := fs.Int("default-replication-factor", 1, "the `replicas` of an auto-created topic, at most the cluster's nodes (default.replication.factor)")
	initialDelay := durationVar(fs, "group-initial-rebalance-delay", 3*time.Second, "how long a new group's first rebalance waits for more members (group.initial.rebalance.delay.ms), a `duration`, 0 for none")
	roles := fs.String("process-roles", "broker", "the node's `roles` (process.roles): broker, or broker,controller to be also a controller of the --voters quorum")
	voters := fs.String("voters", "", "with --process-roles broker,controller, the controller quorum's `voters` (controller.quorum.voters): id@host:port,...; the node's controller listens at its own")
	session := durationVar(fs, "session-timeout", 9*time.Second, "with the controller role, how long a node may go without a heartbeat before it is fenced (broker.session.timeout.ms), a `duration`")
	election := durationVar(fs, "election-timeout", time.Second, "with the controller role, how long the controllers wait without hearing the active one before electing another (controller.quorum.election.timeout.ms), a `duration`")
	writeMeta := fs.Bool("write-missing-meta", false, "write a new meta.properties (a new cluster id) when DIR holds partitions but has lost its own, rather than refuse it")
	keyStore := fs.String("ssl-keystore", "", "with an SSL listener, a PEM `file` with the node's private key and certificate chain (ssl.keystore.location, ssl.keystore.type=PEM)")
	trustStore := fs.String("ssl-truststore", "", "a PEM `file` of the certificate authorities that vouch for client certificates and, in a cluster, for the other members' (ssl.truststore.location, ssl.truststore.type=PEM)")
	clientAuth := fs.String("ssl-client-auth", "none", "whether an SSL listener asks clients for certificates (ssl.client.auth): none, requested or required")
	mappingRules := fs.String("ssl-principal-mapping-rules", "DEFAULT", "how a client certificate's subject becomes a user name (ssl.principal.mapping.rules): RULE:pattern/replacement/[LU],...,DEFAULT")
	mechanisms := fs.String("sasl-enabled-mechanisms", strings.Join(auth.Mechanisms, ","), "the SASL `mechanisms` a SASL listener offers (sasl.enabled.mechanisms)")
	usersFile := fs.String("sasl-users", "", "with a SASL listener, a `file` of user=password lines: static users clients authenticate as (a broker's JAAS user_NAME=\"password\" list), beside the cluster's ('partlog configs --entity-type users')")
	interBroker := fs.String("sasl-inter-broker-user", "", "with a SASL listener in a cluster, the `user` of --sasl-users this node authenticates as to the other members")
	interBrokerMechanism := fs.String("sasl-mechanism-inter-broker-protocol", auth.MechanismScramSHA512, "the SASL `mechanism` this node authenticates with to the other members (sasl.mechanism.inter.broker.protocol)")
	level := logLevelFlag(fs)
	cpuProfile := cpuProfileFlag(fs)
	checkACLs := fs.Bool("acls", false, "check every client request against the cluster's ACLs ('partlog acls'), as a Kafka broker with authorizer.class.name=StandardAuthorizer")
	superUsers := fs.String("super-users", "", "with --acls, the `principals` that may do anything (super.users): User:admin;User:broker — a cluster's members authenticate as one of them")
	allowEveryone := fs.Bool("allow-everyone-if-no-acl-found", false, "with --acls, let everyone use a resource no ACL covers (allow.everyone.if.no.acl.found)")
	quotaWindowNum := fs.Int("quota-window-num", 11, "the `samples` a client's rate is measured over (quota.window.num): a client may go a quota's worth of (samples − 1) windows at once before it is throttled")
	quotaWindowSize := fs.Int("quota-window-size-seconds", 1, "the `seconds` of a quota sample (quota.window.size.seconds)")
	metricsAddr := fs.String("metrics", "", "serve the node's Prometheus metrics at http://`HOST:PORT`/metrics")
	operands, err := parseFlags(fs, args, serveHelp, stdout)
	if err != nil {
		return err
	}
	combined := *roles == "broker,controller" || *roles == "controller,broker"
	controllerAddrs, controllerTLS, err := splitControllers(*controller)
	if err != nil {
		return usageErrorf("serve", "--controller: %v", err)
	}
	protocol, listenAddr, err := splitListener(*listen)
	if err != nil {
		return usageErrorf("serve", "--listen: %v", err)
	}
	tlsConfig, rules, err := listenerTLS(protocol, *keyStore, *trustStore, *clientAuth, *mappingRules)
	if err != nil {
		return usageErrorf("serve", "%v", err)
	}
	sasl, passwords, err := listenerSASL(protocol, *mechanisms, *usersFile)
	if err != nil {
		return usageErrorf("serve", "%v", err)
	}
	var peerSASL *transport.SASLCredentials
	switch {
	case tlsConfig != nil && tlsConfig.ClientCAs == nil && (*controller != "" || combined):
		return usageErrorf("serve", "a cluster member with an %s listener needs --ssl-truststore: the authorities of the other members' certificates", protocol)
	case *interBroker != "" && sasl == nil:
		return usageErrorf("serve", "--sasl-inter-broker-user needs a SASL listener")
	case *interBroker != "" && passwords[*interBroker] == "":
		return usageErrorf("serve", "--sasl-inter-broker-user %s is not a user of --sasl-users", *interBroker)
	case *interBroker != "" && !slices.Contains(auth.Mechanisms, *interBrokerMechanism):
		return usageErrorf("serve", "--sasl-mechanism-inter-broker-protocol %s: partlog speaks %s", *interBrokerMechanism, strings.Join(auth.Mechanisms, ", "))
	case *interBroker != "":
		peerSASL = &transport.SASLCredentials{Mechanism: *interBrokerMechanism, User: *interBroker, Password: passwords[*interBroker]}
	case sasl != nil && (*controller != "" || combined):
		return usageErrorf("serve", "a cluster member with a SASL listener needs --sasl-inter-broker-user: the user it authenticates as to the other members")
	}
	authorizer, err := serveAuthorizer(*checkACLs, *superUsers, *allowEveryone)
	if err != nil {
		return err
	}
	if *quotaWindowNum < 2 || *quotaWindowSize < 1 {
		return usageErrorf("serve", "--quota-window-num is at least 2 and --quota-window-size-seconds at least 1")
	}
	var quorum map[int32]string
	if combined {
		if quorum, err = partlog.ParseVoters(*voters); err != nil {
			return usageErrorf("serve", "--voters: %v", err)
		}
	}
	switch {
	case len(operands) > 0:
		return usageErrorf("serve", "unexpected argument %q", operands[0])
	case *roles != "broker" && !combined:
		return usageErrorf("serve", "--process-roles %q is neither broker nor broker,controller ('partlog controller' runs a controller alone)", *roles)
	case *nodeID < 0 || *nodeID > 1<<31-1:
		return usageErrorf("serve", "--node-id %d is not a node id", *nodeID)
	case combined && (*nodeID == 0 || quorum[int32(*nodeID)] == ""):
		return usageErrorf("serve", "--process-roles broker,controller needs --node-id, one of the --voters")
	case combined && *controller != "":
		return usageErrorf("serve", "--controller is not for a controller: the node finds the active one among the --voters")
	case !combined && (isSet(fs, "voters") || isSet(fs, "session-timeout") || isSet(fs, "election-timeout")):
		return usageErrorf("serve", "--voters, --session-timeout and --election-timeout need --process-roles broker,controller")
	case *session <= 0 || *election <= 0:
		return usageErrorf("serve", "--session-timeout and --election-timeout must be positive")
	case *controller != "" && *nodeID == 0:
		return usageErrorf("serve", "--controller needs --node-id")
	case *controller == "" && !combined && (isSet(fs, "heartbeat") || isSet(fs, "replica-lag-max")):
		return usageErrorf("serve", "--heartbeat and --replica-lag-max need --controller or the controller role")
	case *heartbeat <= 0 || *lagMax <= 0:
		return usageErrorf("serve", "--heartbeat and --replica-lag-max must be positive")
	case *numPartitions < 1 || *numPartitions > 100_000:
		return usageErrorf("serve", "--num-partitions %d is not 1 to 100000", *numPartitions)
	case *defaultReplication < 1 || *defaultReplication > math.MaxInt16:
		return usageErrorf("serve", "--default-replication-factor %d is not a replica count", *defaultReplication)
	}
	ln, err := net.Listen("tcp", listenAddr)
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	defer ln.Close()
	opts := []partlog.Option{partlog.Logger(newLogger(stderr, level))}
	if *nodeID != 0 {
		opts = append(opts, partlog.NodeID(int32(*nodeID)))
	}
	if *writeMeta {
		opts = append(opts, partlog.WriteMissingMeta())
	}
	opts = append(opts, partlog.AutoCreateTopics(*autoCreate, int32(*numPartitions), int16(*defaultReplication)),
		partlog.GroupInitialRebalanceDelay(*initialDelay))
	if combined {
		ctlLn, err := net.Listen("tcp", quorum[int32(*nodeID)])
		if err != nil {
			return fmt.Errorf("serve: the controller's listener: %w", err)
		}
		defer ctlLn.Close()
		ctlOpts := partlog.ControllerOptions{Voters: quorum, SessionTimeout: *session, ElectionTimeout: *election}
		if tlsConfig != nil {
			// A combined node's controller listener serves TLS when its
			// broker listener does, with the same certificates.
			ctlOpts.TLS, ctlOpts.PeerTLS = tlsConfig, peerTLS(tlsConfig)
		}
		opts = append(opts, partlog.ControllerRole(ctlLn, ctlOpts))
	}
	if *controller != "" || combined {
		addr := *advertised
		if addr == "" {
			addr = ln.Addr().String()
		}
		if *controller != "" {
			opts = append(opts, partlog.ControllerAddress(controllerAddrs))
		}
		opts = append(opts, partlog.AdvertisedAddress(addr),
			partlog.HeartbeatInterval(*heartbeat), partlog.ReplicaOptions(replica.Options{ReplicaLagTimeMax: *lagMax}))
		if tlsConfig != nil {
			// The other members serve SSL listeners too: the node trusts
			// what vouches for its clients and shows its own certificate.
			opts = append(opts, partlog.PeerTLS(peerTLS(tlsConfig)))
		}
		if controllerTLS {
			if tlsConfig == nil {
				return usageErrorf("serve", "--controller SSL://... needs the node's --ssl-keystore and --ssl-truststore, of an SSL or SASL_SSL listener")
			}
			opts = append(opts, partlog.ControllerTLS(peerTLS(tlsConfig)))
		}
		if peerSASL != nil {
			opts = append(opts, partlog.PeerSASL(*peerSASL))
		}
	}
	// A cluster member registers its address in Open: it listens first,
	// and peers that reach it before it serves wait in the backlog.
	n, err := openNode("serve", *dir, opts...)
	if err != nil {
		return err
	}
	defer n.Close()
	if sasl != nil {
		// The static users of --sasl-users first, then the cluster's
		// (partlog configs --alter --entity-type users).
		if sasl.Credentials != nil {
			sasl.Credentials = auth.AnyOf(sasl.Credentials, n.Credentials())
		} else {
			sasl.Credentials = n.Credentials()
		}
	}
	serverOpts := transport.ServerOptions{Advertised: *advertised, TLS: tlsConfig, PrincipalMappingRules: rules, SASL: sasl,
		Observer: n.Metrics()}
	if authorizer != nil {
		authorizer.ACLs = n.ACLs
		serverOpts.Authorizer = authorizer
	}
	serverOpts.Quotas = &quota.Manager{Config: n.ClientQuotas,
		Window: time.Duration(*quotaWindowNum-1) * time.Duration(*quotaWindowSize) * time.Second}
	s := transport.NewServer(n.Client(), serverOpts)
	if *metricsAddr != "" {
		stopMetrics, err := serveMetrics(*metricsAddr, n, stderr)
		if err != nil {
			return err
		}
		defer stopMetrics()
	}
	stopProfile, err := startCPUProfile("serve", *cpuProfile)
	if err != nil {
		return err
	}
	ctx, stop := interruptContext(context.Background())
	defer stop()
	served := make(chan error, 1)
	go func() { served <- s.Serve(ln) }()
	switch {
	case combined:
		fmt.Fprintf(stderr, "partlog: node %d serving %s on %s (its controller on %s, of the quorum %s)\n", n.NodeID(), n.Dir(), listenerName(protocol, ln.Addr()), quorum[int32(*nodeID)], *voters)
	case *controller != "":
		fmt.Fprintf(stderr, "partlog: node %d serving %s on %s in the cluster of controller %s\n", n.NodeID(), n.Dir(), listenerName(protocol, ln.Addr()), *controller)
	default:
		fmt.Fprintf(stderr, "partlog: node %d serving %s on %s\n", n.NodeID(), n.Dir(), listenerName(protocol, ln.Addr()))
	}
	if serveReady != nil {
		serveReady(ln.Addr().String())
	}
	var errs []error
	select {
	case <-ctx.Done():
	case err := <-served:
		errs = append(errs, fmt.Errorf("serve: %w", err))
	}
	// The node closes before its server, as a Kafka broker's controlled
	// shutdown comes before its socket server stops: Close stops the
	// node's heartbeats and ISR changes and moves its leaderships at once.
	// Closing the server first cut the node's replicas off from their
	// followers while it was still in the cluster, for as long as the
	// server waited for its requests in progress (up to a produce's
	// timeout): its leaders shrank their ISRs to themselves, and the
	// controlled shutdown then left those partitions without a leader.
	if err := n.Close(); err != nil {
		errs = append(errs, fmt.Errorf("serve: %w", err))
	}
	s.Close()
	if err := stopProfile(); err != nil {
		errs = append(errs, fmt.Errorf("serve: %w", err))
	}
	if len(errs) == 0 {
		fmt.Fprintln(stderr, "partlog: closed cleanly")
	}
	return errors.Join(errs...)
}
