package transport

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/partlog/partlog/auth"
	"github.com/partlog/partlog/kafka"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// SASL makes a listener's clients authenticate before they are served:
// Kafka's SASL_PLAINTEXT security protocol, or SASL_SSL with TLS.
type SASL struct {
	// Mechanisms are the mechanisms the listener offers, of
	// auth.Mechanisms (sasl.enabled.mechanisms). Empty means all of
	// them.
	Mechanisms []string
	// Credentials are the users clients authenticate as. Required.
	Credentials auth.Credentials
}

// The SASL API keys, which a SASL listener answers before a client has
// authenticated, with ApiVersions.
const (
	apiSaslHandshake    = 17
	apiSaslAuthenticate = 36
	apiApiVersions      = 18
)

// saslAPIs are the versions of the SASL APIs a SASL listener answers.
// After a SaslHandshake v1 the mechanism's messages go in SaslAuthenticate
// requests; after a v0 (clients before Kafka 1.0, and sarama's default)
// they go as frames of their own, a 4-byte length and the bytes, each way.
var saslAPIs = []apiRange{{key: apiSaslHandshake, min: 0, max: 1}, {key: apiSaslAuthenticate, min: 0, max: 2}}

// saslSession is a connection's progress through SASL.
type saslSession struct {
	mechanism string // from the handshake; "" before it
	conv      auth.ServerConversation
	raw       bool // a v0 handshake: the messages come as frames of their own
	done      bool // authenticated
	failed    bool // refused: close once the answer is written
}

// errUnauthenticated closes a connection that sent a request other than
// ApiVersions and SASL's before it authenticated, as Kafka closes it.
var errUnauthenticated = errors.New("transport: a request before SASL authentication")

// answerSASL answers a SaslHandshake or SaslAuthenticate on a connection
// of p, moving its session along; any other request before the session
// is done is errUnauthenticated.
func (s *Server) answerSASL(req kmsg.Request, p *peer) (kmsg.Response, error) {
	ss := p.sasl
	mechanisms := s.opts.SASL.Mechanisms
	switch req := req.(type) {
	case *kmsg.SASLHandshakeRequest:
		resp := req.ResponseKind().(*kmsg.SASLHandshakeResponse)
		resp.SupportedMechanisms = slices.Clone(mechanisms)
		switch {
		case ss.mechanism != "":
			// A second handshake (re-authentication, KIP-368) is not
			// offered.
			resp.ErrorCode = kafka.ErrIllegalSaslState.Code
		case !slices.Contains(mechanisms, req.Mechanism):
			resp.ErrorCode = kafka.ErrUnsupportedSaslMechanism.Code
		default:
			conv, err := auth.NewServerConversation(req.Mechanism, s.opts.SASL.Credentials)
			if err != nil {
				return nil, err
			}
			ss.mechanism, ss.conv, ss.raw = req.Mechanism, conv, req.Version == 0
		}
		return resp, nil
	case *kmsg.SASLAuthenticateRequest:
		resp := req.ResponseKind().(*kmsg.SASLAuthenticateResponse)
		if ss.conv == nil || ss.done || ss.raw {
			resp.ErrorCode = kafka.ErrIllegalSaslState.Code
			msg := "SaslAuthenticate before a SaslHandshake, or after authentication"
			resp.ErrorMessage = &msg
			ss.failed = true
			return resp, nil
		}
		out, err := s.stepSASL(req.SASLAuthBytes, p)
		resp.SASLAuthBytes = out
		if err != nil {
			code := kafka.ErrSaslAuthenticationFailed.Code
			if kerr, ok := errors.AsType[*kafka.Error](err); ok {
				code = kerr.Code
			}
			resp.ErrorCode = code
			msg := err.Error()
			resp.ErrorMessage = &msg
		}
		return resp, nil
	}
	return nil, fmt.Errorf("%w: %s", errUnauthenticated, kmsg.NameForKey(req.Key()))
}

// stepSASL takes the client's next message of the session of p, and
// returns the answer to send. A refusal marks the session failed (the
// connection closes once the answer is written); the last step marks it
// done, and p authenticated as its user.
func (s *Server) stepSASL(in []byte, p *peer) ([]byte, error) {
	ss := p.sasl
	out, done, err := ss.conv.Step(in)
	if err != nil {
		ss.failed = true
		reason := err.Error()
		if ae, ok := errors.AsType[*auth.AuthenticationError](err); ok {
			reason = ae.Reason
		}
		s.opts.Logger.Info("transport: SASL authentication failed", "client", p.clientHost, "mechanism", ss.mechanism, "reason", reason)
		return out, err
	}
	if done {
		ss.done = true
		p.principal = auth.User(ss.conv.User())
		p.ctx = auth.NewContext(s.ctx, p.principal)
	}
	return out, nil
}

// answerRawSASL answers a frame of a session in which a v0 handshake
// said that the mechanism's messages come as frames of their own: the
// answer is one too, and a refusal closes the connection without one, as
// Kafka's does.
func (s *Server) answerRawSASL(out, frame []byte, p *peer) ([]byte, error) {
	answer, err := s.stepSASL(frame, p)
	if err != nil {
		return nil, err
	}
	out = binary.BigEndian.AppendUint32(out, uint32(len(answer)))
	return append(out, answer...), nil
}

// SASLCredentials are what a client authenticates with on a SASL
// listener: Kafka's sasl.mechanism and the user's name and password
// (sasl.jaas.config's username and password).
type SASLCredentials struct {
	// Mechanism is one of auth.Mechanisms.
	Mechanism string
	// User and Password are the user's.
	User, Password string
}

// authenticate runs SASL on wc: SaslHandshake v1 naming cred's mechanism,
// then SaslAuthenticate until the client's conversation is done. A
// refusal is kafka.ErrSaslAuthenticationFailed (not retriable), or the
// node's ErrUnsupportedSaslMechanism naming what it offers.
func authenticate(ctx context.Context, wc *wireConn, cred *SASLCredentials, authVersion int16) error {
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Version, hs.Mechanism = 1, cred.Mechanism
	resp, err := wc.request(ctx, hs)
	if err != nil {
		return err
	}
	hr := resp.(*kmsg.SASLHandshakeResponse)
	if err := kafka.ErrorForCode(hr.ErrorCode); err != nil {
		return fmt.Errorf("SASL handshake for %s: %w (the node offers %v)", cred.Mechanism, err, hr.SupportedMechanisms)
	}
	conv, err := auth.NewClientConversation(cred.Mechanism, cred.User, cred.Password)
	if err != nil {
		return err
	}
	out, err := conv.Step(nil)
	if err != nil {
		return err
	}
	for range 4 {
		req := kmsg.NewPtrSASLAuthenticateRequest()
		req.Version, req.SASLAuthBytes = authVersion, out
		resp, err := wc.request(ctx, req)
		if err != nil {
			return err
		}
		ar := resp.(*kmsg.SASLAuthenticateResponse)
		if err := kafka.ErrorForCode(ar.ErrorCode); err != nil {
			if ar.ErrorMessage != nil {
				return fmt.Errorf("%w (%s)", err, *ar.ErrorMessage)
			}
			return err
		}
		if conv.Done() {
			return nil
		}
		if out, err = conv.Step(ar.SASLAuthBytes); err != nil {
			return err
		}
		if conv.Done() {
			return nil
		}
	}
	return fmt.Errorf("%w: the SASL exchange does not end", kafka.ErrSaslAuthenticationFailed)
}
