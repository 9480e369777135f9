package transport

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/partlog/partlog/auth"
	"github.com/partlog/partlog/internal/bufpool"
	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/quota"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ServerOptions configures a Server. The zero value works.
type ServerOptions struct {
	// Advertised is the host:port a Metadata answer gives for a node
	// whose address the handler left empty (a single Node does not know
	// its listener). Empty means the address the connection came in on.
	Advertised string
	// MaxRequestBytes bounds a request frame: Kafka's
	// socket.request.max.bytes. Zero means 100 MiB.
	MaxRequestBytes int
	// IdleTimeout closes a connection with no request for this long:
	// Kafka's connections.max.idle.ms. Zero means 10 minutes.
	IdleTimeout time.Duration
	// Logger receives connection errors. Nil discards them.
	Logger *slog.Logger
	// CopyRecords makes the server send fetched records from memory,
	// read by the node, rather than from their segment files with
	// sendfile: for comparing the two.
	CopyRecords bool
	// TLS, when set, serves every connection with TLS, as a Kafka
	// listener whose security protocol is SSL; nil serves plaintext
	// (PLAINTEXT). With ClientAuth tls.RequireAndVerifyClientCert
	// (Kafka's ssl.client.auth=required) a client without a certificate
	// that ClientCAs vouch for is refused in the handshake. Fetched
	// records then go through the TLS connection, not sendfile.
	TLS *tls.Config
	// PrincipalMappingRules map a client certificate's subject to the
	// principal of its connection: ssl.principal.mapping.rules. A client
	// whose subject no rule maps is refused; one without a certificate
	// is auth.Anonymous. The zero value is DEFAULT: the subject as it is.
	PrincipalMappingRules auth.MappingRules
	// HandshakeTimeout bounds a TLS handshake. Zero means 10 seconds.
	HandshakeTimeout time.Duration
	// SASL, when set, makes clients authenticate (SaslHandshake,
	// SaslAuthenticate) before the server answers anything but
	// ApiVersions: Kafka's SASL_PLAINTEXT listener, or SASL_SSL with
	// TLS. A connection that sends another request first is closed, and
	// so is one whose authentication failed, once told why. The
	// principal is then User:name of the user who authenticated.
	SASL *SASL
	// Authorizer, when set, checks every request against what the
	// connection's principal may do — *auth.Authorizer with the
	// cluster's ACLs (partlog.Node.ACLs), as a Kafka broker with an
	// authorizer does — and the server answers DescribeAcls, CreateAcls
	// and DeleteAcls; nil lets every client do everything, and ACL
	// requests get SECURITY_DISABLED. Calls in the node's own process
	// are not checked.
	Authorizer Authorizer
	// Quotas, when set, meters each client's requests against the
	// quotas of its user and client id (quota.Manager, with
	// partlog.Node.ClientQuotas): a client over its produce or fetch
	// byte rate or its request percentage is answered with Kafka's
	// throttle_time_ms, and the server reads nothing more from its
	// connection until that time has passed. partlog's calls between
	// nodes are not metered.
	Quotas *quota.Manager
	// Observer, when set, is told of every request the server answers:
	// metrics.Node counts them (partlog.Node.Metrics).
	Observer RequestObserver
}

// RequestObserver is told of each request a server answered: its API's
// name (Kafka's: "Produce", "Fetch", ...), the time from its arrival to
// its answer (the answer's write to the connection not counted), and
// whether it failed whole (the connection then closes). It must not
// block.
type RequestObserver interface {
	ObserveRequest(api string, took time.Duration, failed bool)
}

func (o ServerOptions) withDefaults() ServerOptions {
	if o.MaxRequestBytes <= 0 {
		o.MaxRequestBytes = 100 << 20
	}
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = 10 * time.Minute
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.HandshakeTimeout <= 0 {
		o.HandshakeTimeout = 10 * time.Second
	}
	if o.SASL != nil && len(o.SASL.Mechanisms) == 0 {
		sasl := *o.SASL
		sasl.Mechanisms = slices.Clone(auth.Mechanisms)
		o.SASL = &sasl
	}
	if o.TLS != nil {
		// A certificate no rule maps is refused in the handshake, so
		// that the client hears why (a bad_certificate alert).
		o.TLS = o.TLS.Clone()
		verify, rules := o.TLS.VerifyConnection, o.PrincipalMappingRules
		o.TLS.VerifyConnection = func(cs tls.ConnectionState) error {
			if verify != nil {
				if err := verify(cs); err != nil {
					return err
				}
			}
			if len(cs.PeerCertificates) == 0 {
				return nil
			}
			_, err := auth.CertificatePrincipal(cs.PeerCertificates[0], rules)
			return err
		}
	}
	return o
}

// ErrServerClosed is what Serve returns once Close was called.
var ErrServerClosed = errors.New("transport: server closed")

// ErrSSLAuthentication says a TLS handshake with a node failed: the node's
// certificate is not one the client trusts or not for the address
// dialled, or the node refused the client's (or its lack of one). Kafka's
// clients raise SslAuthenticationException; they do not retry it.
var ErrSSLAuthentication = errors.New("transport: SSL authentication failed")

// Server answers Kafka protocol requests on TCP connections with a Client
// — a *partlog.Node — so that producers and consumers in other processes,
// partlog's own (Dial) or any Kafka client, reach the node: ApiVersions,
// Metadata, Produce, Fetch and ListOffsets, in the versions that carry
// RecordBatch v2; and, for a handler that implements the optional
// interface, the admin APIs (AdminClient), the group coordinator's
// (GroupClient), InitProducerId (ProducerIDClient), the transaction
// coordinator's and transaction markers (TxnClient) and partlog's own
// calls between nodes (InternalHandler).
//
// As a Kafka broker does, it handles the requests of one connection one
// at a time, in order, so that batches a client pipelines on a connection
// are appended in the order it sent them; clients open a connection for
// fetches, whose long polls would otherwise hold up the rest.
type Server struct {
	handler  Client
	opts     ServerOptions
	apis     []apiRange      // what ApiVersions reports
	features []Feature       // and its features (FeatureReporter)
	ctx      context.Context // ends at Close: handlers stop waiting
	cancel   context.CancelFunc
	// frames lends the memory large request frames are read into. A
	// frame goes back after its request was answered, for Produce and
	// Fetch alone (reusableFrame): their handlers borrow its bytes for
	// the call (a Client borrows a ProduceRequest's Records until Produce
	// returns), and their answers hold none of them. Frames of other
	// requests may be kept by their handlers (group metadata,
	// assignments) and are left to the collector.
	frames bufpool.Pool

	mu        sync.Mutex
	closed    bool
	listeners map[net.Listener]struct{}
	conns     map[net.Conn]struct{}
	wg        sync.WaitGroup // Serve loops and connections
}

// NewServer returns a server whose requests handler answers.
func NewServer(handler Client, opts ServerOptions) *Server {
	ctx, cancel := context.WithCancel(context.Background())
	opts = opts.withDefaults()
	apis := apisFor(handler)
	if opts.SASL != nil {
		apis = append(apis, saslAPIs...)
	}
	return &Server{
		handler: handler, opts: opts, apis: apis, features: featuresOf(handler), ctx: ctx, cancel: cancel,
		listeners: map[net.Listener]struct{}{}, conns: map[net.Conn]struct{}{},
	}
}

// Serve accepts connections on ln and answers their requests until Close,
// when it returns ErrServerClosed, or until ln fails.
func (s *Server) Serve(ln net.Listener) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		ln.Close()
		return ErrServerClosed
	}
	s.listeners[ln] = struct{}{}
	s.wg.Add(1)
	s.mu.Unlock()
	defer s.wg.Done()
	for {
		c, err := ln.Accept()
		if err != nil {
			s.mu.Lock()
			closed := s.closed
			delete(s.listeners, ln)
			s.mu.Unlock()
			if closed {
				return ErrServerClosed
			}
			return fmt.Errorf("transport: accept: %w", err)
		}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			c.Close()
			return ErrServerClosed
		}
		s.conns[c] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		go s.serveConn(c, ln.Addr())
	}
}

// Close stops accepting, closes every connection, cancels the requests in
// progress and waits until their goroutines are done.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	for ln := range s.listeners {
		ln.Close()
	}
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.cancel()
	s.wg.Wait()
	return nil
}

// serveConn reads requests from c and answers each before reading the
// next.
func (s *Server) serveConn(raw net.Conn, local net.Addr) {
	defer s.wg.Done()
	defer func() {
		raw.Close()
		s.mu.Lock()
		delete(s.conns, raw)
		s.mu.Unlock()
	}()
	p := peer{advertised: s.opts.Advertised, principal: auth.Anonymous}
	if p.advertised == "" {
		p.advertised = local.String()
	}
	if host, _, err := net.SplitHostPort(raw.RemoteAddr().String()); err == nil {
		p.clientHost = host
	}
	c := raw
	if s.opts.TLS != nil {
		tc, principal, err := s.handshake(raw)
		if err != nil {
			s.opts.Logger.Info("transport: TLS handshake failed", "remote", raw.RemoteAddr(), "err", err)
			return
		}
		defer tc.Close()
		c, p.principal = tc, principal
	}
	p.ctx = auth.NewContext(s.ctx, p.principal)
	if s.opts.SASL != nil {
		p.sasl = &saslSession{}
	}
	r := bufio.NewReaderSize(c, 64<<10)
	w := bufio.NewWriterSize(c, 64<<10)
	// Fetch answers go out with sendfile where the connection is a socket.
	sc, _ := c.(syscall.Conn)
	if s.opts.CopyRecords {
		sc = nil
	}
	var out []byte
	for {
		c.SetReadDeadline(time.Now().Add(s.opts.IdleTimeout))
		// The decoded request's record bytes point into the frame, and the
		// handler borrows them until it returns (the log gives a batch its
		// offsets in place): see Server.frames for when it is reused.
		frame, err := readFrameWith(r, s.frames.Get, s.opts.MaxRequestBytes)
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				s.opts.Logger.Debug("transport: connection ends", "remote", c.RemoteAddr(), "err", err)
			}
			return
		}
		c.SetReadDeadline(time.Time{})
		var (
			files    []filePiece
			api      string // observed when set
			arrived  time.Time
			throttle time.Duration
		)
		if p.sasl != nil && p.sasl.raw && !p.sasl.done {
			out, err = s.answerRawSASL(out[:0], frame, &p)
		} else {
			if s.opts.Observer != nil && len(frame) >= 2 {
				api, arrived = apiName(int16(binary.BigEndian.Uint16(frame))), time.Now()
			}
			out, files, throttle, err = s.answer(out[:0], frame, &p, sc)
		}
		if api != "" {
			// Answered, or failed (the answer's write is its own
			// connection's matter).
			s.opts.Observer.ObserveRequest(api, time.Since(arrived), err != nil)
		}
		if reusableFrame(frame) {
			s.frames.Put(frame)
		}
		if errors.Is(err, errAcksNoneFailed) {
			s.opts.Logger.Debug("transport: closing the connection of a failed acks=0 produce", "remote", c.RemoteAddr(), "err", err)
			return
		}
		if err != nil {
			if p.sasl != nil && p.sasl.failed {
				return // refused, and logged
			}
			// Kafka closes a connection whose request it cannot parse.
			s.opts.Logger.Warn("transport: bad request", "remote", c.RemoteAddr(), "err", err)
			return
		}
		if len(out) == 0 {
			if !s.mute(throttle) {
				return
			}
			continue // acks=0: no answer
		}
		if len(files) > 0 {
			err = writeFrameWithFiles(w, sc, out, files)
			for _, f := range files {
				f.file.Close()
			}
		} else {
			_, err = w.Write(out)
		}
		if err != nil {
			s.opts.Logger.Debug("transport: write answer", "remote", c.RemoteAddr(), "err", err)
			return
		}
		if p.sasl != nil && p.sasl.failed { // refused: it was told why
			w.Flush()
			return
		}
		if r.Buffered() == 0 || throttle > 0 { // no pipelined request waiting, or a wait: send now
			if err := w.Flush(); err != nil {
				return
			}
		}
		if !s.mute(throttle) {
			return
		}
	}
}

// mute waits out a client's throttle before the server reads its next
// request, as Kafka mutes a throttled client's channel (KIP-219); false
// when the server closed meanwhile.
func (s *Server) mute(throttle time.Duration) bool {
	if throttle <= 0 {
		return true
	}
	t := time.NewTimer(throttle)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-s.ctx.Done():
		return false
	}
}

// handshake runs the server's side of a TLS handshake on c and returns
// the TLS connection and its principal: its client certificate's, or
// auth.Anonymous without one.
func (s *Server) handshake(c net.Conn) (*tls.Conn, auth.Principal, error) {
	tc := tls.Server(c, s.opts.TLS)
	ctx, cancel := context.WithTimeout(s.ctx, s.opts.HandshakeTimeout)
	defer cancel()
	if err := tc.HandshakeContext(ctx); err != nil {
		return nil, auth.Principal{}, err
	}
	certs := tc.ConnectionState().PeerCertificates
	if len(certs) == 0 {
		return tc, auth.Anonymous, nil
	}
	principal, err := auth.CertificatePrincipal(certs[0], s.opts.PrincipalMappingRules)
	if err != nil {
		tc.Close()
		return nil, auth.Principal{}, err
	}
	return tc, principal, nil
}

// readFrame reads one length-prefixed frame into dst.
func readFrame(r io.Reader, dst []byte, maxBytes int) ([]byte, error) {
	return readFrameWith(r, func(n int) []byte {
		if cap(dst) < n {
			return make([]byte, n)
		}
		return dst[:n]
	}, maxBytes)
}

// readFrameWith reads one length-prefixed frame into the memory alloc
// returns for its size.
func readFrameWith(r io.Reader, alloc func(n int) []byte, maxBytes int) ([]byte, error) {
	var size [4]byte
	if _, err := io.ReadFull(r, size[:]); err != nil {
		return nil, err
	}
	n := int32(binary.BigEndian.Uint32(size[:]))
	if string(size[:]) == "HTTP" {
		return nil, fmt.Errorf("%w: the peer answered in HTTP, not in Kafka's protocol", kafka.ErrInvalidRequest)
	}
	if size[0] == 0x16 && size[1] == 3 { // a TLS handshake record, version 3.x
		return nil, fmt.Errorf("%w: the peer speaks TLS to a plaintext connection (security.protocol SSL against a PLAINTEXT listener?)", kafka.ErrInvalidRequest)
	}
	if n < 0 || int(n) > maxBytes {
		return nil, fmt.Errorf("%w: frame of %d bytes, the limit is %d", kafka.ErrInvalidRequest, n, maxBytes)
	}
	dst := alloc(int(n))
	if _, err := io.ReadFull(r, dst); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return dst, nil
}

// reusableFrame reports whether a frame may go back to the pool once its
// request was answered: Produce and Fetch keep none of its bytes (see
// Server.frames).
func reusableFrame(frame []byte) bool {
	if len(frame) < 2 {
		return false
	}
	key := int16(binary.BigEndian.Uint16(frame))
	return key == 0 || key == 1 // Produce, Fetch
}

// peer is what a server knows of a connection's two ends.
type peer struct {
	advertised string         // the server's address, for answers that name it
	clientHost string         // the client's IP address
	principal  auth.Principal // who the client authenticated as
	sasl       *saslSession   // on a SASL listener: the client's progress
	// ctx is the context of the connection's requests: it ends at
	// Close, and carries principal (auth.FromContext).
	ctx context.Context
}

// guard asks a about what p's principal may do.
func (p *peer) guard(a Authorizer) guard {
	return guard{a: a, who: p.principal, host: p.clientHost}
}

// answer handles one request frame and appends its response frame to out,
// or nothing for a request that gets none. A Fetch answer on a socket
// (sc not nil) leaves its records in their files: the pieces say where
// they go in the frame, and the caller closes them. throttle is how long
// the client went over its quotas by (Quotas): the answer says so, and
// the caller reads nothing more from the connection until it has passed.
func (s *Server) answer(out, frame []byte, p *peer, sc syscall.Conn) (_ []byte, _ []filePiece, throttle time.Duration, _ error) {
	h, req, body, err := parseRequestHeader(frame)
	if err != nil {
		return nil, nil, 0, err
	}
	if p.sasl != nil && !p.sasl.done && h.apiKey != apiApiVersions && h.apiKey != apiSaslHandshake && h.apiKey != apiSaslAuthenticate {
		return nil, nil, 0, fmt.Errorf("%w: %s", errUnauthenticated, apiName(h.apiKey))
	}
	if h.apiKey == 18 { // ApiVersions answers even a version it does not know
		return appendResponseFrame(out, h.correlationID, apiVersionsResponse(s.apis, s.features, h.apiVersion)), nil, 0, nil
	}
	rng, ok := findRange(s.apis, h.apiKey)
	if !ok || h.apiVersion < rng.min || h.apiVersion > rng.max {
		return nil, nil, 0, fmt.Errorf("%w: %s v%d is not supported", kafka.ErrInvalidRequest, apiName(h.apiKey), h.apiVersion)
	}
	if err := req.ReadFrom(body); err != nil {
		return nil, nil, 0, fmt.Errorf("%w: %s v%d: %v", kafka.ErrInvalidRequest, kmsg.NameForKey(h.apiKey), h.apiVersion, err)
	}
	if h.apiKey == apiSaslHandshake || h.apiKey == apiSaslAuthenticate {
		resp, err := s.answerSASL(req, p)
		if err != nil {
			return nil, nil, 0, err
		}
		return appendResponseFrame(out, h.correlationID, resp), nil, 0, nil
	}
	meter := s.meter(p, h)
	if fr, ok := req.(*kmsg.FetchRequest); ok {
		r := fetchFromWire(fr)
		r.FileRecords = sc != nil
		var refused func(*FetchResponse)
		if s.opts.Authorizer != nil {
			refused = authorizeFetch(p.guard(s.opts.Authorizer), r)
		}
		resp, err := s.handler.Fetch(p.ctx, r)
		if err != nil {
			return nil, nil, 0, err
		}
		if refused != nil {
			refused(resp)
		}
		out, pieces := appendFetchFrame(out, h.correlationID, resp, h.apiVersion)
		if throttle = meter.done(h.apiKey, quota.ConsumerByteRate, 4+int(binary.BigEndian.Uint32(out))); throttle > 0 {
			setFetchThrottle(out, h.apiVersion, throttle)
		}
		return out, pieces, throttle, nil
	}
	var authz authorization
	if s.opts.Authorizer != nil {
		if authz, err = s.authorize(req, h.apiVersion, p); err != nil {
			return nil, nil, 0, err
		}
	}
	resp := authz.answer
	if resp == nil {
		if resp, err = s.dispatch(req, h, *p); err != nil {
			return nil, nil, 0, err
		}
		if authz.merge != nil && resp != nil {
			authz.merge(resp)
		}
	}
	if h.apiKey == 0 { // Produce
		throttle = meter.done(h.apiKey, quota.ProducerByteRate, len(frame))
	} else if !isInternalKey(h.apiKey) {
		throttle = meter.done(h.apiKey, "", 0)
	}
	if resp == nil {
		return out, nil, throttle, nil
	}
	if throttle > 0 {
		if t, ok := resp.(kmsg.SetThrottleResponse); ok {
			t.SetThrottle(millis(throttle))
		}
	}
	return appendResponseFrame(out, h.correlationID, resp), nil, throttle, nil
}

// errAcksNoneFailed says an acks=0 produce failed in part: the server
// closes the connection, as Kafka does, since it sends no answer.
var errAcksNoneFailed = errors.New("transport: acks=0 produce failed")

// firstProduceError returns the first partition error of a produce answer.
func firstProduceError(resp *ProduceResponse) error {
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if p.Err != nil {
				return fmt.Errorf("%s-%d: %w", t.Topic, p.Partition, p.Err)
			}
		}
	}
	return nil
}

// dispatch calls the handler for one decoded request with header h.
func (s *Server) dispatch(req kmsg.Request, h requestHeader, p peer) (kmsg.Response, error) {
	ctx, version := p.ctx, h.apiVersion
	switch req := req.(type) {
	case *kmsg.ProduceRequest:
		if req.TransactionID != nil && !isTxnClient(s.handler) {
			return nil, fmt.Errorf("%w: transactional produce is not supported", kafka.ErrInvalidRequest)
		}
		resp, err := s.handler.Produce(ctx, produceFromWire(req))
		if err != nil {
			return nil, err
		}
		if req.Acks == 0 {
			if err := firstProduceError(resp); err != nil {
				// Kafka closes the connection instead: the producer, which
				// gets no answer, learns that way to refresh its metadata.
				return nil, fmt.Errorf("%w: %w", errAcksNoneFailed, err)
			}
			return nil, nil
		}
		return produceResponseToWire(resp, version), nil
	case *kmsg.ListOffsetsRequest:
		return answerWith(ctx, s.handler.ListOffsets, listOffsetsFromWire(req), listOffsetsResponseToWire, version)
	case *internalRequest:
		if s.opts.Authorizer != nil && !p.guard(s.opts.Authorizer).mayCluster(auth.ClusterActionOperation) {
			// partlog's calls between nodes: Kafka's inter-broker APIs
			// need CLUSTER_ACTION.
			err := kafka.ErrClusterAuthorizationFailed
			return &internalResponse{key: req.key, code: err.Code, msg: errorMessage(err)}, nil
		}
		return s.answerInternal(req)
	case *kmsg.MetadataRequest:
		r := metadataFromWire(req)
		var g guard
		if s.opts.Authorizer != nil {
			g = p.guard(s.opts.Authorizer)
			r.MayCreate = g.mayCreate
		}
		resp, err := s.handler.Metadata(ctx, r)
		if err != nil {
			return nil, err
		}
		if r.MayCreate != nil {
			createRefused(resp, r, g)
		}
		fillAddresses(resp, p.advertised)
		return metadataResponseToWire(resp, version), nil
	}
	if fc, ok := s.handler.(coordinatorFinder); ok {
		if req, ok := req.(*kmsg.FindCoordinatorRequest); ok {
			return findCoordinator(ctx, fc, req, version, p)
		}
	}
	if gc, ok := s.handler.(GroupClient); ok && isGroupRequest(req) {
		return s.dispatchGroup(ctx, gc, req, h, p)
	}
	if tc, ok := s.handler.(TxnClient); ok && isTxnRequest(req) {
		return dispatchTxn(ctx, tc, req, version)
	}
	if ca, ok := s.handler.(ClusterAdminClient); ok {
		if resp, ok, err := dispatchClusterAdmin(ctx, ca, req, version); ok {
			return resp, err
		}
	}
	if isACLRequest(req) {
		ac, ok := s.handler.(ACLAdminClient)
		if s.opts.Authorizer == nil || !ok {
			return securityDisabled(req, version), nil
		}
		resp, _, err := dispatchACLAdmin(ctx, ac, req, version)
		return resp, err
	}
	if cg, ok := s.handler.(ConsumerGroupClient); ok {
		if resp, ok, err := dispatchConsumerGroup(ctx, cg, req, version, deref(h.clientID), p.clientHost); ok {
			return resp, err
		}
	}
	if sg, ok := s.handler.(ShareGroupClient); ok {
		if resp, ok, err := s.dispatchShareGroup(ctx, sg, req, h, p); ok {
			return resp, err
		}
	}
	if ss, ok := s.handler.(ShareStateClient); ok {
		if resp, ok, err := dispatchShareState(ctx, ss, req, version); ok {
			return resp, err
		}
	}
	if so, ok := s.handler.(ShareGroupOffsetsClient); ok {
		if resp, ok, err := dispatchShareGroupOffsets(ctx, so, req, version); ok {
			return resp, err
		}
	}
	if qa, ok := s.handler.(QuotaAdminClient); ok {
		if resp, ok, err := dispatchQuotaAdmin(ctx, qa, req, version); ok {
			return resp, err
		}
	}
	if ua, ok := s.handler.(UserAdminClient); ok {
		if resp, ok, err := dispatchUserAdmin(ctx, ua, req, version); ok {
			return resp, err
		}
	}
	if pc, ok := s.handler.(ProducerIDClient); ok {
		if req, ok := req.(*kmsg.InitProducerIDRequest); ok {
			return answerWith(ctx, pc.InitProducerID, initProducerIDFromWire(req), initProducerIDResponseToWire, version)
		}
	}
	if ec, ok := s.handler.(EpochClient); ok {
		if req, ok := req.(*kmsg.OffsetForLeaderEpochRequest); ok {
			return answerWith(ctx, ec.OffsetsForLeaderEpoch, offsetsForLeaderEpochFromWire(req), offsetsForLeaderEpochResponseToWire, version)
		}
	}
	if _, ok := req.(*kmsg.DescribeClusterRequest); ok {
		md, err := s.handler.Metadata(ctx, &MetadataRequest{Topics: []string{}})
		if err != nil {
			return nil, err
		}
		fillAddresses(md, p.advertised)
		return describeClusterResponse(md, version), nil
	}
	if admin, ok := s.handler.(AdminClient); ok {
		return s.dispatchAdmin(ctx, admin, req, version)
	}
	return nil, fmt.Errorf("%w: %s is not supported", kafka.ErrInvalidRequest, kmsg.NameForKey(req.Key()))
}

// answerWith calls a handler method with req, already translated from
// the wire, and translates its answer back in the request's version.
func answerWith[Req, Resp any, W kmsg.Response](ctx context.Context, call func(context.Context, Req) (Resp, error), req Req, toWire func(Resp, int16) W, version int16) (kmsg.Response, error) {
	resp, err := call(ctx, req)
	if err != nil {
		return nil, err
	}
	return toWire(resp, version), nil
}

// dispatchAdmin calls an AdminClient handler for one decoded request.
func (s *Server) dispatchAdmin(ctx context.Context, h AdminClient, req kmsg.Request, version int16) (kmsg.Response, error) {
	switch req := req.(type) {
	case *kmsg.CreateTopicsRequest:
		return answerWith(ctx, h.CreateTopics, createTopicsFromWire(req), createTopicsResponseToWire, version)
	case *kmsg.DeleteTopicsRequest:
		return answerWith(ctx, h.DeleteTopics, deleteTopicsFromWire(req), deleteTopicsResponseToWire, version)
	case *kmsg.DescribeConfigsRequest:
		resp, err := h.DescribeConfigs(ctx, describeConfigsFromWire(req))
		if err != nil {
			return nil, err
		}
		return describeConfigsResponseToWire(req, resp, version), nil
	case *kmsg.AlterConfigsRequest:
		return answerWith(ctx, h.AlterConfigs, alterConfigsFromWire(req), alterConfigsResponseToWire, version)
	case *kmsg.IncrementalAlterConfigsRequest:
		return answerWith(ctx, h.AlterConfigs, incrementalAlterConfigsFromWire(req), incrementalAlterConfigsResponseToWire, version)
	case *kmsg.CreatePartitionsRequest:
		resp := &CreatePartitionsResponse{}
		var asked []PartitionCount
		for _, t := range req.Topics {
			if t.Assignment != nil {
				resp.Topics = append(resp.Topics, TopicResult{Name: t.Topic,
					Err: fmt.Errorf("%w: partlog places new partitions itself; leave the assignment out", kafka.ErrInvalidReplicaAssignment)})
				continue
			}
			asked = append(asked, PartitionCount{Topic: t.Topic, Count: t.Count})
		}
		if len(asked) > 0 {
			r := createPartitionsFromWire(req)
			r.Topics = asked
			done, err := h.CreatePartitions(ctx, r)
			if err != nil {
				return nil, err
			}
			resp.Topics = append(resp.Topics, done.Topics...)
		}
		return createPartitionsResponseToWire(resp, version), nil
	case *kmsg.DeleteRecordsRequest:
		return answerWith(ctx, h.DeleteRecords, deleteRecordsFromWire(req), deleteRecordsResponseToWire, version)
	case *kmsg.DescribeLogDirsRequest:
		return answerWith(ctx, h.DescribeLogDirs, describeLogDirsFromWire(req), describeLogDirsResponseToWire, version)
	case *kmsg.ElectLeadersRequest:
		return answerWith(ctx, h.ElectLeaders, electLeadersFromWire(req), electLeadersResponseToWire, version)
	case *kmsg.DescribeProducersRequest:
		return answerWith(ctx, h.DescribeProducers, describeProducersFromWire(req), describeProducersResponseToWire, version)
	}
	return nil, fmt.Errorf("%w: %s is not supported", kafka.ErrInvalidRequest, kmsg.NameForKey(req.Key()))
}

// isTxnRequest reports whether req is one of TxnClient's own.
func isTxnRequest(req kmsg.Request) bool {
	switch req.(type) {
	case *kmsg.AddPartitionsToTxnRequest, *kmsg.AddOffsetsToTxnRequest, *kmsg.EndTxnRequest, *kmsg.WriteTxnMarkersRequest,
		*kmsg.TxnOffsetCommitRequest, *kmsg.DescribeTransactionsRequest, *kmsg.ListTransactionsRequest:
		return true
	}
	return false
}

// dispatchTxn calls a TxnClient handler for one decoded request in the
// given version. FindCoordinator and InitProducerId, which TxnClient
// shares with GroupClient and ProducerIDClient, are answered with theirs,
// and a transactional Produce as any Produce.
//
// A WriteTxnMarkers waits until its markers are replicated, and an EndTxn
// until the outcome is durable; the connection answers nothing else
// meanwhile, as a Kafka broker does.
func dispatchTxn(ctx context.Context, tc TxnClient, req kmsg.Request, version int16) (kmsg.Response, error) {
	switch req := req.(type) {
	case *kmsg.AddPartitionsToTxnRequest:
		r := addPartitionsToTxnFromWire(req)
		resp, err := tc.AddPartitionsToTxn(ctx, r)
		if err != nil {
			return nil, err
		}
		return addPartitionsToTxnResponseToWire(r, resp, version), nil
	case *kmsg.AddOffsetsToTxnRequest:
		return answerWith(ctx, tc.AddOffsetsToTxn, addOffsetsToTxnFromWire(req), addOffsetsToTxnResponseToWire, version)
	case *kmsg.EndTxnRequest:
		return answerWith(ctx, tc.EndTxn, endTxnFromWire(req), endTxnResponseToWire, version)
	case *kmsg.WriteTxnMarkersRequest:
		return answerWith(ctx, tc.WriteTxnMarkers, writeTxnMarkersFromWire(req), writeTxnMarkersResponseToWire, version)
	case *kmsg.TxnOffsetCommitRequest:
		return answerWith(ctx, tc.TxnOffsetCommit, txnOffsetCommitFromWire(req), txnOffsetCommitResponseToWire, version)
	case *kmsg.DescribeTransactionsRequest:
		return answerWith(ctx, tc.DescribeTransactions, describeTransactionsFromWire(req), describeTransactionsResponseToWire, version)
	case *kmsg.ListTransactionsRequest:
		return answerWith(ctx, tc.ListTransactions, listTransactionsFromWire(req), listTransactionsResponseToWire, version)
	}
	return nil, fmt.Errorf("%w: %s is not supported", kafka.ErrInvalidRequest, kmsg.NameForKey(req.Key()))
}

// fillAddresses gives the brokers of a Metadata answer that have no
// address the server's.
func fillAddresses(resp *MetadataResponse, advertised string) {
	host, port, ok := splitAdvertised(advertised)
	if !ok {
		return
	}
	for i := range resp.Brokers {
		if resp.Brokers[i].Host == "" {
			resp.Brokers[i].Host, resp.Brokers[i].Port = host, port
		}
	}
}

// splitAdvertised splits the server's address into the host and port
// that answers naming it carry; ok is false for one that does not parse.
func splitAdvertised(advertised string) (host string, port int32, ok bool) {
	host, portText, err := net.SplitHostPort(advertised)
	if err != nil {
		return "", 0, false
	}
	p, err := strconv.Atoi(portText)
	if err != nil {
		return "", 0, false
	}
	return host, int32(p), true
}

// apiVersionsResponse answers ApiVersions: the APIs and versions the
// server supports, with its features from version 3. A client that asked
// in a version newer than the server knows gets UNSUPPORTED_VERSION in a
// v0 answer that lists ApiVersions alone, the versions to ask again in
// (KIP-511), as Kafka answers it: a client given every API there (kgo)
// would keep that v0 answer, which has no features.
func apiVersionsResponse(apis []apiRange, features []Feature, version int16) kmsg.Response {
	resp := kmsg.NewPtrApiVersionsResponse()
	if rng, _ := findRange(apis, 18); version > rng.max || version < 0 {
		resp.ErrorCode = 35 // UNSUPPORTED_VERSION
		k := kmsg.NewApiVersionsResponseApiKey()
		k.ApiKey, k.MinVersion, k.MaxVersion = rng.key, rng.min, rng.max
		resp.ApiKeys = append(resp.ApiKeys, k)
		return resp // version 0
	}
	resp.Version = version
	for _, r := range apis {
		k := kmsg.NewApiVersionsResponseApiKey()
		k.ApiKey, k.MinVersion, k.MaxVersion = r.key, r.min, r.max
		if r.key == 0 {
			// Kafka 4 does the same (KAFKA-18659): librdkafka before 2.10
			// compresses with gzip, snappy and lz4 only for a broker that
			// lists Produce v0, and sends them uncompressed otherwise. A
			// Produce below v3 is still refused.
			k.MinVersion = 0
		}
		resp.ApiKeys = append(resp.ApiKeys, k)
	}
	if version >= 3 {
		addFeatures(resp, features)
	}
	return resp
}
