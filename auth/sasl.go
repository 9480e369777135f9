package auth

import (
	"bytes"
	"crypto/subtle"
	"fmt"

	"github.com/partlog/partlog/kafka"
	"github.com/xdg-go/scram"
)

// AuthenticationError is a client a SASL exchange refused. Its message,
// which the client gets, says no more than Kafka's does — that the
// credentials did not do — so that a client cannot tell an unknown user
// from a wrong password; Reason says which, for the listener's log. It
// unwraps to kafka.ErrSaslAuthenticationFailed.
type AuthenticationError struct {
	// Mechanism is the exchange's mechanism.
	Mechanism string
	// Reason says what was wrong, for the listener's log.
	Reason string
}

// Error returns Kafka's message for a failed authentication.
func (e *AuthenticationError) Error() string {
	return "Authentication failed during authentication due to invalid credentials with SASL mechanism " + e.Mechanism
}

// Unwrap returns kafka.ErrSaslAuthenticationFailed.
func (e *AuthenticationError) Unwrap() error { return kafka.ErrSaslAuthenticationFailed }

// ServerConversation is a listener's side of one SASL exchange with a
// client: the client's messages go in, the listener's answers come out,
// until the client is authenticated or refused.
type ServerConversation interface {
	// Step takes the client's next message and returns the answer to
	// send back, and whether the exchange is over with the client
	// authenticated. An error (kafka.ErrSaslAuthenticationFailed) refuses
	// the client: the listener sends the error and closes the
	// connection.
	Step(in []byte) (out []byte, done bool, err error)
	// User is the name of the authenticated user, once Step said done.
	User() string
}

// NewServerConversation starts the listener's side of an exchange in
// mechanism (MechanismPlain, MechanismScramSHA256 or
// MechanismScramSHA512), authenticating users against creds.
func NewServerConversation(mechanism string, creds Credentials) (ServerConversation, error) {
	switch mechanism {
	case MechanismPlain:
		return &plainServer{creds: creds}, nil
	case MechanismScramSHA256, MechanismScramSHA512:
		return newScramServer(mechanism, creds), nil
	}
	return nil, fmt.Errorf("%w: %q", kafka.ErrUnsupportedSaslMechanism, mechanism)
}

// plainServer checks a PLAIN message — authzid NUL user NUL password —
// against the user's SCRAM credential.
type plainServer struct {
	creds Credentials
	user  string
}

func (s *plainServer) Step(in []byte) ([]byte, bool, error) {
	parts := bytes.Split(in, []byte{0})
	if len(parts) != 3 || len(parts[1]) == 0 {
		return nil, false, &AuthenticationError{Mechanism: MechanismPlain, Reason: "a PLAIN message is authzid NUL user NUL password"}
	}
	authzid, user, password := string(parts[0]), string(parts[1]), string(parts[2])
	if authzid != "" && authzid != user {
		return nil, false, &AuthenticationError{Mechanism: MechanismPlain, Reason: "an authorization id other than the user's"}
	}
	if !checkPassword(s.creds, user, password) {
		return nil, false, &AuthenticationError{Mechanism: MechanismPlain, Reason: "no such user, or not the user's password"}
	}
	s.user = user
	return nil, true, nil
}

func (s *plainServer) User() string { return s.user }

// checkPassword reports whether password is user's, by salting it as the
// user's strongest SCRAM credential was salted.
func checkPassword(creds Credentials, user, password string) bool {
	for _, m := range []string{MechanismScramSHA512, MechanismScramSHA256} {
		stored, ok := creds.ScramCredential(user, m)
		if !ok {
			continue
		}
		c, err := scramCredential(m, password, stored.Salt, stored.Iterations)
		return err == nil && subtle.ConstantTimeCompare(c.StoredKey, stored.StoredKey) == 1
	}
	return false
}

// ClientConversation is a client's side of one SASL exchange.
type ClientConversation interface {
	// Step takes the listener's last answer (nil at first) and returns
	// the client's next message, and whether the exchange is over once
	// that message is answered.
	Step(in []byte) (out []byte, err error)
	// Done reports whether the client has what it needs from the
	// listener: for SCRAM, the listener's proof that it knew the
	// password, checked.
	Done() bool
}

// NewClientConversation starts a client's side of an exchange in
// mechanism as user with password.
func NewClientConversation(mechanism, user, password string) (ClientConversation, error) {
	switch mechanism {
	case MechanismPlain:
		return &plainClient{msg: []byte("\x00" + user + "\x00" + password)}, nil
	case MechanismScramSHA256, MechanismScramSHA512:
		hash, _ := hashOf(mechanism)
		c, err := hash.NewClient(user, password, "")
		if err != nil {
			return nil, fmt.Errorf("auth: %w", err)
		}
		return &scramClient{conv: c.NewConversation()}, nil
	}
	return nil, fmt.Errorf("%w: %q (%v)", kafka.ErrUnsupportedSaslMechanism, mechanism, Mechanisms)
}

// plainClient sends its one message.
type plainClient struct {
	msg  []byte
	sent bool
}

func (c *plainClient) Step([]byte) ([]byte, error) {
	c.sent = true
	return c.msg, nil
}

func (c *plainClient) Done() bool { return c.sent }

// scramClient runs the client's side of SCRAM with xdg-go/scram.
type scramClient struct {
	conv *scram.ClientConversation
}

func (c *scramClient) Step(in []byte) ([]byte, error) {
	out, err := c.conv.Step(string(in))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", kafka.ErrSaslAuthenticationFailed, err)
	}
	return []byte(out), nil
}

func (c *scramClient) Done() bool { return c.conv.Done() }
