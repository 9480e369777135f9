package transport

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"sync"
	"time"

	"github.com/partlog/partlog/kafka"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// DialOptions configures a TCPClient. The zero value works.
type DialOptions struct {
	// ClientID is the client.id sent with every request. Empty means
	// "partlog".
	ClientID string
	// DialTimeout bounds setting a connection up: dialling, and, on the
	// client's first connection, agreeing on versions (ApiVersions), so
	// that a peer that accepts but never answers — not a Kafka server —
	// fails the dial with kafka.ErrNetwork rather than hanging it. Kafka's
	// socket.connection.setup.timeout.ms. Zero means 10 seconds.
	DialTimeout time.Duration
	// ReconnectBackoff is how long a failed connection waits before it
	// is tried again: Kafka's reconnect.backoff.ms. Requests in that time
	// fail at once with kafka.ErrNetwork. Zero means 50 ms.
	ReconnectBackoff time.Duration
	// MaxResponseBytes bounds a response frame. Zero means 1 GiB.
	MaxResponseBytes int
	// TLS, when set, speaks TLS to the node (security.protocol SSL): its
	// RootCAs are the trust store (ssl.truststore), Certificates the
	// client's own certificate for a listener that asks for one
	// (ssl.keystore). Without a ServerName the host of the address
	// dialled is checked against the node's certificate, as Kafka's
	// ssl.endpoint.identification.algorithm=https does. Nil is
	// plaintext.
	TLS *tls.Config
	// SASL, when set, authenticates every connection with these
	// credentials (security.protocol SASL_PLAINTEXT, or SASL_SSL with
	// TLS) before any request but ApiVersions. A refusal is
	// kafka.ErrSaslAuthenticationFailed, which is not retried.
	SASL *SASLCredentials
}

func (o DialOptions) withDefaults() DialOptions {
	if o.ClientID == "" {
		o.ClientID = "partlog"
	}
	if o.DialTimeout <= 0 {
		o.DialTimeout = 10 * time.Second
	}
	if o.ReconnectBackoff <= 0 {
		o.ReconnectBackoff = 50 * time.Millisecond
	}
	if o.MaxResponseBytes <= 0 {
		o.MaxResponseBytes = 1 << 30
	}
	return o
}

// connection kinds: a client keeps one connection for each, so that a
// fetch's long poll never holds up a produce. Group calls that wait
// (JoinGroup, SyncGroup) take a connection of their own each, from a pool
// of kind connGroup (see groupConn).
const (
	connProduce = iota
	connFetch
	connOther
	connGroup
	connReplica    // APIReplicaMessages
	connController // APIController
	connRaft       // APIControllerRaft
	connMarkers    // WriteTxnMarkers, which wait for replication
	connKinds
)

// TCPClient sends requests to one node over TCP in Kafka's wire protocol:
// to a partlog Server, or to a Kafka broker. It implements Client,
// AdminClient, GroupClient, ProducerIDClient and TxnClient, so a producer
// (idempotent, transactional or neither) or a consumer (in a group or not)
// in another process than the node uses it as it would the node itself. A call the node does not
// speak fails with kafka.ErrUnsupportedVersion.
//
// Requests are pipelined: many may be in flight on a connection, and are
// answered in the order sent. A broken connection fails its requests in
// flight with kafka.ErrNetwork (retriable) and is dialled again by the next
// request. TCPClient is safe for concurrent use.
type TCPClient struct {
	addr string
	opts DialOptions
	fmt  *kmsg.RequestFormatter

	mu       sync.Mutex
	closed   bool
	conns    [connKinds]*wireConn
	failedAt [connKinds]time.Time
	failure  [connKinds]error
	versions map[int16]int16 // the highest version both sides speak, by api key
	features []Feature       // the node's, from the same ApiVersions
	// groupConns are the connections for waiting group calls, each
	// idle (true) or carrying one call (false).
	groupConns map[*wireConn]bool
}

// Dial connects to the node at addr (host:port) and agrees on the
// protocol versions both sides speak. The client reconnects by itself
// afterwards; Close releases it.
func Dial(ctx context.Context, addr string, opts DialOptions) (*TCPClient, error) {
	c := &TCPClient{addr: addr, opts: opts.withDefaults()}
	c.fmt = kmsg.NewRequestFormatter(kmsg.FormatterClientID(c.opts.ClientID))
	if _, err := c.conn(ctx, connOther); err != nil {
		return nil, err
	}
	return c, nil
}

// Close closes the client's connections; requests in flight fail with
// kafka.ErrClosed.
func (c *TCPClient) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	c.closed = true
	for _, wc := range c.conns {
		if wc != nil {
			wc.fail(kafka.ErrClosed)
		}
	}
	for wc := range c.groupConns {
		wc.fail(kafka.ErrClosed)
	}
	return nil
}

// conn returns the live connection of a kind, dialling it when needed.
func (c *TCPClient) conn(ctx context.Context, kind int) (*wireConn, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, kafka.ErrClosed
	}
	if wc := c.conns[kind]; wc != nil && !wc.dead() {
		return wc, nil
	}
	wc, err := c.redial(ctx, kind)
	if err != nil {
		return nil, err
	}
	c.conns[kind] = wc
	return wc, nil
}

// redial dials a connection of a kind, unless the last dial of that kind
// failed less than ReconnectBackoff ago: then it returns that failure. It
// is called with c.mu held.
func (c *TCPClient) redial(ctx context.Context, kind int) (*wireConn, error) {
	if since := time.Since(c.failedAt[kind]); since < c.opts.ReconnectBackoff {
		return nil, c.failure[kind]
	}
	wc, err := c.dial(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err() // the caller gave up: no fault of the node's
		}
		c.failedAt[kind], c.failure[kind] = time.Now(), err
		return nil, err
	}
	return wc, nil
}

// dial makes a connection and, on the client's first, learns the node's
// versions. It is called with c.mu held.
func (c *TCPClient) dial(ctx context.Context) (*wireConn, error) {
	setup, cancel := context.WithTimeout(ctx, c.opts.DialTimeout)
	defer cancel()
	var d net.Dialer
	nc, err := d.DialContext(setup, "tcp", c.addr)
	if err != nil {
		return nil, fmt.Errorf("%w: dial %s: %w", kafka.ErrNetwork, c.addr, err)
	}
	if c.opts.TLS != nil {
		if nc, err = clientHandshake(setup, nc, c.addr, c.opts.TLS); err != nil {
			return nil, err
		}
	}
	wc := newWireConn(nc, c.fmt, c.opts.MaxResponseBytes)
	if c.versions == nil {
		versions, features, err := negotiate(setup, wc)
		if err != nil {
			switch {
			case ctx.Err() == nil && setup.Err() != nil:
				err = fmt.Errorf("%w: %s accepted the connection but did not answer ApiVersions within %v: is it a Kafka server?",
					kafka.ErrNetwork, c.addr, c.opts.DialTimeout)
			case c.opts.TLS == nil && errors.Is(err, io.EOF):
				err = fmt.Errorf("%w (%s closed the connection before it answered ApiVersions: is its listener SSL? security.protocol=SSL)", err, c.addr)
			}
			wc.fail(err)
			return nil, err
		}
		c.versions, c.features = versions, features
	}
	if c.opts.SASL != nil {
		authVersion := min(c.versions[apiSaslAuthenticate], 2)
		if err := authenticate(setup, wc, c.opts.SASL, authVersion); err != nil {
			wc.fail(err)
			if ctx.Err() == nil && setup.Err() != nil {
				return nil, fmt.Errorf("%w: %s did not finish SASL authentication within %v", kafka.ErrNetwork, c.addr, c.opts.DialTimeout)
			}
			return nil, fmt.Errorf("SASL authentication with %s: %w", c.addr, err)
		}
	}
	return wc, nil
}

// clientHandshake runs the client's side of a TLS handshake with the node
// at addr on nc. A failed handshake is ErrSSLAuthentication (not
// retriable: a certificate does not mend itself), unless ctx ended first.
func clientHandshake(ctx context.Context, nc net.Conn, addr string, cfg *tls.Config) (net.Conn, error) {
	if cfg.ServerName == "" {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			host = addr
		}
		cfg = cfg.Clone()
		cfg.ServerName = host
	}
	tc := tls.Client(nc, cfg)
	if err := tc.HandshakeContext(ctx); err != nil {
		nc.Close()
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%w: TLS handshake with %s: %w", kafka.ErrNetwork, addr, err)
		}
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%w: %s closed the connection in the handshake: is its listener PLAINTEXT?", ErrSSLAuthentication, addr)
		}
		return nil, fmt.Errorf("%w: with %s: %w", ErrSSLAuthentication, addr, err)
	}
	return tc, nil
}

// remoteTLSAlert reports whether err is an alert the node sent in TLS,
// such as a node refusing the client's certificate: under TLS 1.3 the
// client finishes its handshake before the node checks its certificate,
// and learns of the refusal on its first read.
func remoteTLSAlert(err error) bool {
	var oe *net.OpError
	return errors.As(err, &oe) && oe.Op == "remote error"
}

// negotiate asks the node for its ApiVersions and returns, for each API
// the client sends, the highest version both sides speak, and the node's
// features.
func negotiate(ctx context.Context, wc *wireConn) (map[int16]int16, []Feature, error) {
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 3
	req.ClientSoftwareName, req.ClientSoftwareVersion = "partlog", "1"
	resp, err := wc.request(ctx, req)
	if err != nil {
		return nil, nil, err
	}
	av := resp.(*kmsg.ApiVersionsResponse)
	if av.ErrorCode == 35 { // the node speaks an older ApiVersions
		req.Version = 0
		if resp, err = wc.request(ctx, req); err != nil {
			return nil, nil, err
		}
		av = resp.(*kmsg.ApiVersionsResponse)
	}
	if err := kafka.ErrorForCode(av.ErrorCode); err != nil {
		return nil, nil, fmt.Errorf("transport: ApiVersions: %w", err)
	}
	theirs := map[int16]kmsg.ApiVersionsResponseApiKey{}
	for _, k := range av.ApiKeys {
		theirs[k.ApiKey] = k
	}
	versions := map[int16]int16{}
	for _, ours := range slices.Concat(supportedAPIs, saslAPIs) {
		k, ok := theirs[ours.key]
		if !ok || k.MaxVersion < ours.min || k.MinVersion > ours.max {
			continue // requests of this kind fail with kafka.ErrUnsupportedVersion
		}
		versions[ours.key] = min(ours.max, k.MaxVersion)
	}
	return versions, featuresFrom(av), nil
}

// Features returns the node's features, as its ApiVersions answer gave
// them on the client's first connection: nil before one. The slice is the
// caller's.
func (c *TCPClient) Features() []Feature {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.features)
}

// version returns the version to send an API in.
func (c *TCPClient) version(key int16) (int16, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.versions[key]
	if !ok {
		return 0, fmt.Errorf("%w: the node does not speak %s in versions partlog sends", kafka.ErrUnsupportedVersion, apiName(key))
	}
	return v, nil
}

// send sends req on a connection of the given kind and returns the answer.
func (c *TCPClient) send(ctx context.Context, kind int, req kmsg.Request) (kmsg.Response, error) {
	wc, err := c.conn(ctx, kind)
	if err != nil {
		return nil, err
	}
	return wc.request(ctx, req)
}

// roundTrip sends req, translated to the wire in the version the node
// speaks of API key, on a connection of the given kind, and translates the
// answer back.
func roundTrip[Req any, W kmsg.Request, WR kmsg.Response, Resp any](ctx context.Context, c *TCPClient, kind int, key int16, req Req, toWire func(Req, int16) W, fromWire func(WR) Resp) (Resp, error) {
	v, err := c.version(key)
	if err != nil {
		var none Resp
		return none, err
	}
	return roundTripIn(ctx, c, kind, v, req, toWire, fromWire)
}

// roundTripIn is roundTrip in version v.
func roundTripIn[Req any, W kmsg.Request, WR kmsg.Response, Resp any](ctx context.Context, c *TCPClient, kind int, v int16, req Req, toWire func(Req, int16) W, fromWire func(WR) Resp) (Resp, error) {
	resp, err := c.send(ctx, kind, toWire(req, v))
	if err != nil {
		var none Resp
		return none, err
	}
	return fromWire(resp.(WR)), nil
}

// Produce sends a Produce request, in version 11 at most unless
// req.Version asks for more (see ProduceRequest.Version). With acks=0 the
// node sends no answer, and the response says only that the request was
// written.
func (c *TCPClient) Produce(ctx context.Context, req *ProduceRequest) (*ProduceResponse, error) {
	upTo := req.Version
	if upTo == 0 {
		upTo = lastProduceWithoutAdding
	}
	v, err := c.versionUpTo(0, upTo)
	if err != nil {
		return nil, err
	}
	w := produceToWire(req, v)
	if req.Acks == kafka.AcksNone {
		wc, err := c.conn(ctx, connProduce)
		if err != nil {
			return nil, err
		}
		if err := wc.send(w); err != nil {
			return nil, err
		}
		return unansweredProduce(req), nil
	}
	resp, err := c.send(ctx, connProduce, w)
	if err != nil {
		return nil, err
	}
	return produceResponseFromWire(resp.(*kmsg.ProduceResponse)), nil
}

// lastProduceWithoutAdding is the last version of Produce in which a
// transactional request does not add its partitions to the transaction.
const lastProduceWithoutAdding = 11

// unansweredProduce is the answer to an acks=0 Produce: every partition
// without error, at offset -1, as Kafka's clients report it.
func unansweredProduce(req *ProduceRequest) *ProduceResponse {
	resp := &ProduceResponse{Topics: make([]ProduceTopicResponse, len(req.Topics))}
	for i, t := range req.Topics {
		resp.Topics[i].Topic = t.Topic
		for _, p := range t.Partitions {
			resp.Topics[i].Partitions = append(resp.Topics[i].Partitions,
				ProducePartitionResponse{Partition: p.Partition, BaseOffset: -1, LogAppendTime: -1, LogStartOffset: -1})
		}
	}
	return resp
}

// Fetch sends a Fetch request on the client's fetch connection.
func (c *TCPClient) Fetch(ctx context.Context, req *FetchRequest) (*FetchResponse, error) {
	return roundTrip(ctx, c, connFetch, 1, req, fetchToWire, fetchResponseFromWire)
}

// ListOffsets sends a ListOffsets request.
func (c *TCPClient) ListOffsets(ctx context.Context, req *ListOffsetsRequest) (*ListOffsetsResponse, error) {
	return roundTrip(ctx, c, connOther, 2, req, listOffsetsToWire, listOffsetsResponseFromWire)
}

// Metadata sends a Metadata request.
func (c *TCPClient) Metadata(ctx context.Context, req *MetadataRequest) (*MetadataResponse, error) {
	return roundTrip(ctx, c, connOther, 3, req, metadataToWire, metadataResponseFromWire)
}

// CreateTopics sends a CreateTopics request.
func (c *TCPClient) CreateTopics(ctx context.Context, req *CreateTopicsRequest) (*CreateTopicsResponse, error) {
	return roundTrip(ctx, c, connOther, 19, req, createTopicsToWire, createTopicsResponseFromWire)
}

// DeleteTopics sends a DeleteTopics request.
func (c *TCPClient) DeleteTopics(ctx context.Context, req *DeleteTopicsRequest) (*DeleteTopicsResponse, error) {
	return roundTrip(ctx, c, connOther, 20, req, deleteTopicsToWire, deleteTopicsResponseFromWire)
}

// DescribeConfigs sends a DescribeConfigs request.
func (c *TCPClient) DescribeConfigs(ctx context.Context, req *DescribeConfigsRequest) (*DescribeConfigsResponse, error) {
	return roundTrip(ctx, c, connOther, 32, req, describeConfigsToWire, describeConfigsResponseFromWire)
}

// CreatePartitions sends a CreatePartitions request.
func (c *TCPClient) CreatePartitions(ctx context.Context, req *CreatePartitionsRequest) (*CreatePartitionsResponse, error) {
	return roundTrip(ctx, c, connOther, 37, req, createPartitionsToWire, createPartitionsResponseFromWire)
}

// AlterConfigs sends an IncrementalAlterConfigs request, or an
// AlterConfigs request (Kafka's older call, which replaces a resource's
// whole set) when every resource asks to Replace.
func (c *TCPClient) AlterConfigs(ctx context.Context, req *AlterConfigsRequest) (*AlterConfigsResponse, error) {
	replace := 0
	for _, r := range req.Resources {
		if r.Replace {
			replace++
		}
	}
	switch {
	case replace == 0:
		return roundTrip(ctx, c, connOther, 44, req, incrementalAlterConfigsToWire, incrementalAlterConfigsResponseFromWire)
	case replace == len(req.Resources):
		return roundTrip(ctx, c, connOther, 33, req, alterConfigsToWire, alterConfigsResponseFromWire)
	}
	return nil, fmt.Errorf("%w: an AlterConfigs request either replaces every resource's configs or changes them incrementally", kafka.ErrInvalidRequest)
}

// DeleteRecords sends a DeleteRecords request. The node it is sent to must
// lead the partitions (a ClusterClient routes it).
func (c *TCPClient) DeleteRecords(ctx context.Context, req *DeleteRecordsRequest) (*DeleteRecordsResponse, error) {
	return roundTrip(ctx, c, connOther, 21, req, deleteRecordsToWire, deleteRecordsResponseFromWire)
}

// DescribeLogDirs sends a DescribeLogDirs request: the answer is the
// connected node's.
func (c *TCPClient) DescribeLogDirs(ctx context.Context, req *DescribeLogDirsRequest) (*DescribeLogDirsResponse, error) {
	return roundTrip(ctx, c, connOther, 35, req, describeLogDirsToWire, describeLogDirsResponseFromWire)
}

// ElectLeaders sends an ElectLeaders request.
func (c *TCPClient) ElectLeaders(ctx context.Context, req *ElectLeadersRequest) (*ElectLeadersResponse, error) {
	return roundTrip(ctx, c, connOther, 43, req, electLeadersToWire, electLeadersResponseFromWire)
}

// DescribeProducers sends a DescribeProducers request to the partitions'
// leader.
func (c *TCPClient) DescribeProducers(ctx context.Context, req *DescribeProducersRequest) (*DescribeProducersResponse, error) {
	return roundTrip(ctx, c, connOther, 61, req, describeProducersToWire, describeProducersResponseFromWire)
}

// OffsetsForLeaderEpoch sends an OffsetForLeaderEpoch request to the
// partitions' leader.
func (c *TCPClient) OffsetsForLeaderEpoch(ctx context.Context, req *kafka.OffsetsForLeaderEpochRequest) (*kafka.OffsetsForLeaderEpochResponse, error) {
	return roundTrip(ctx, c, connOther, 23, req, offsetsForLeaderEpochToWire, offsetsForLeaderEpochResponseFromWire)
}

// wireConn is one TCP connection: requests are written under a lock, each
// with the next correlation id, and a reader goroutine hands each response
// to the request waiting for it.
type wireConn struct {
	nc       net.Conn
	fmt      *kmsg.RequestFormatter
	maxBytes int

	mu      sync.Mutex
	buf     []byte // the request being written
	nextID  int32
	pending []*call // the requests waiting for an answer, in the order sent
	err     error   // set once the connection failed
	done    chan struct{}
}

// call is a request waiting for its response.
type call struct {
	id   int32 // its correlation id
	resp kmsg.Response
	raw  chan []byte // the response body, or closed on failure
}

func newWireConn(nc net.Conn, f *kmsg.RequestFormatter, maxBytes int) *wireConn {
	wc := &wireConn{
		nc: nc, fmt: f, maxBytes: maxBytes,
		done: make(chan struct{}),
	}
	go wc.readLoop()
	return wc
}

func (wc *wireConn) dead() bool {
	wc.mu.Lock()
	defer wc.mu.Unlock()
	return wc.err != nil
}

// fail closes the connection and fails every request waiting on it.
func (wc *wireConn) fail(err error) {
	wc.mu.Lock()
	defer wc.mu.Unlock()
	wc.failLocked(err)
}

func (wc *wireConn) failLocked(err error) {
	if wc.err != nil {
		return
	}
	wc.err = err
	wc.nc.Close()
	for _, cl := range wc.pending {
		close(cl.raw)
	}
	wc.pending = nil
}

// writeLocked writes req with the next correlation id, in a header that f
// makes; with cl, the response goes to cl. It is called with wc.mu held.
func (wc *wireConn) writeLocked(f *kmsg.RequestFormatter, req kmsg.Request, cl *call) error {
	if wc.err != nil {
		return wc.err
	}
	id := wc.nextID
	wc.nextID++
	wc.buf = f.AppendRequest(wc.buf[:0], req, id)
	// The whole request is in buf: write it at once, without copying it
	// through a buffered writer first.
	if _, err := wc.nc.Write(wc.buf); err != nil {
		wc.failLocked(fmt.Errorf("%w: write: %v", kafka.ErrNetwork, err))
		return wc.err
	}
	if cl != nil {
		cl.id = id
		wc.pending = append(wc.pending, cl)
	}
	return nil
}

// send writes a request that gets no answer (Produce with acks=0).
func (wc *wireConn) send(req kmsg.Request) error {
	wc.mu.Lock()
	defer wc.mu.Unlock()
	return wc.writeLocked(wc.fmt, req, nil)
}

// request writes req and waits for its answer or for ctx to end.
func (wc *wireConn) request(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	return wc.requestAs(ctx, wc.fmt, req)
}

// requestAs is request with the header f makes: another client id.
func (wc *wireConn) requestAs(ctx context.Context, f *kmsg.RequestFormatter, req kmsg.Request) (kmsg.Response, error) {
	cl := &call{resp: req.ResponseKind(), raw: make(chan []byte, 1)}
	cl.resp.SetVersion(req.GetVersion())
	wc.mu.Lock()
	err := wc.writeLocked(f, req, cl)
	wc.mu.Unlock()
	if err != nil {
		return nil, err
	}
	select {
	case body, ok := <-cl.raw:
		if !ok {
			wc.mu.Lock()
			err := wc.err
			wc.mu.Unlock()
			return nil, err
		}
		if err := cl.resp.ReadFrom(body); err != nil {
			return nil, fmt.Errorf("%w: %s response: %v", kafka.ErrCorruptMessage, kmsg.NameForKey(req.Key()), err)
		}
		return cl.resp, nil
	case <-ctx.Done():
		// The answer still comes, in order, and is dropped.
		return nil, ctx.Err()
	}
}

// readLoop reads responses until the connection fails.
func (wc *wireConn) readLoop() {
	defer close(wc.done)
	r := bufio.NewReaderSize(wc.nc, 64<<10)
	for {
		frame, err := readFrame(r, nil, wc.maxBytes)
		if err != nil {
			if remoteTLSAlert(err) {
				wc.fail(fmt.Errorf("%w: %w", ErrSSLAuthentication, err))
			} else {
				wc.fail(fmt.Errorf("%w: read: %w", kafka.ErrNetwork, err))
			}
			return
		}
		if len(frame) < 4 {
			wc.fail(fmt.Errorf("%w: response of %d bytes", kafka.ErrNetwork, len(frame)))
			return
		}
		id := int32(uint32(frame[0])<<24 | uint32(frame[1])<<16 | uint32(frame[2])<<8 | uint32(frame[3]))
		wc.mu.Lock()
		if len(wc.pending) == 0 || wc.pending[0].id != id {
			wc.failLocked(fmt.Errorf("%w: response with correlation id %d out of order", kafka.ErrNetwork, id))
			wc.mu.Unlock()
			return
		}
		cl := wc.pending[0]
		wc.pending[0] = nil
		wc.pending = wc.pending[1:]
		wc.mu.Unlock()
		body := frame[4:]
		if cl.resp.IsFlexible() && cl.resp.Key() != 18 {
			if body, err = skipTags(body); err != nil {
				wc.fail(fmt.Errorf("%w: response header: %v", kafka.ErrNetwork, err))
				return
			}
		}
		cl.raw <- body
	}
}

var (
	_ Client           = (*TCPClient)(nil)
	_ AdminClient      = (*TCPClient)(nil)
	_ EpochClient      = (*TCPClient)(nil)
	_ GroupClient      = (*TCPClient)(nil)
	_ ProducerIDClient = (*TCPClient)(nil)
	_ TxnClient        = (*TCPClient)(nil)
)
