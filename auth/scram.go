package auth

import (
	"bytes"
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/rand"
	"errors"
	"fmt"
	"sync"

	"github.com/xdg-go/scram"
)

// The SASL mechanisms a listener can offer (sasl.enabled.mechanisms).
const (
	// MechanismPlain is SASL/PLAIN (RFC 4616): the client sends its user
	// name and password, which only TLS (SASL_SSL) keeps from the wire.
	MechanismPlain = "PLAIN"
	// MechanismScramSHA256 is SCRAM-SHA-256 (RFC 7677): a challenge and
	// response in which the password never crosses the wire.
	MechanismScramSHA256 = "SCRAM-SHA-256"
	// MechanismScramSHA512 is SCRAM-SHA-512.
	MechanismScramSHA512 = "SCRAM-SHA-512"
)

// Mechanisms are the SASL mechanisms partlog serves, in the order it
// prefers them.
var Mechanisms = []string{MechanismScramSHA512, MechanismScramSHA256, MechanismPlain}

// ScramMechanisms are the SCRAM mechanisms, whose credentials a node keeps.
var ScramMechanisms = []string{MechanismScramSHA256, MechanismScramSHA512}

// DefaultScramIterations is the iteration count Kafka salts passwords
// with by default (and its minimum): 4096.
const DefaultScramIterations = 4096

// MaxScramIterations is the most iterations Kafka takes: 16384.
const MaxScramIterations = 16384

// ScramCredential is what a node keeps of a user's password for one SCRAM
// mechanism, as Kafka keeps it (RFC 5802): the salt and iteration count
// the password was salted with, and the keys derived from it. The
// password itself is not kept.
type ScramCredential struct {
	// Salt is the random salt; Iterations the PBKDF2 iteration count.
	Salt       []byte
	Iterations int
	// StoredKey checks a client's proof; ServerKey signs the server's
	// answer, which proves to the client that the server knew it.
	StoredKey []byte
	ServerKey []byte
}

// hashOf returns the xdg-go/scram hash of a SCRAM mechanism.
func hashOf(mechanism string) (scram.HashGeneratorFcn, error) {
	switch mechanism {
	case MechanismScramSHA256:
		return scram.SHA256, nil
	case MechanismScramSHA512:
		return scram.SHA512, nil
	}
	return nil, fmt.Errorf("auth: %q is not a SCRAM mechanism (%s, %s)", mechanism, MechanismScramSHA256, MechanismScramSHA512)
}

// NewScramCredential salts password for mechanism with a new random salt
// and iterations rounds (at least DefaultScramIterations, as Kafka asks;
// zero means that).
func NewScramCredential(mechanism, password string, iterations int) (ScramCredential, error) {
	if iterations == 0 {
		iterations = DefaultScramIterations
	}
	if iterations < DefaultScramIterations || iterations > MaxScramIterations {
		return ScramCredential{}, fmt.Errorf("auth: %d SCRAM iterations: Kafka takes %d to %d", iterations, DefaultScramIterations, MaxScramIterations)
	}
	salt := make([]byte, 32)
	rand.Read(salt)
	return scramCredential(mechanism, password, salt, iterations)
}

// scramCredential salts password for mechanism with salt.
func scramCredential(mechanism, password string, salt []byte, iterations int) (ScramCredential, error) {
	hash, err := hashOf(mechanism)
	if err != nil {
		return ScramCredential{}, err
	}
	// The user name does not enter the keys; SASLprep applies to the
	// password.
	client, err := hash.NewClient("user", password, "")
	if err != nil {
		return ScramCredential{}, fmt.Errorf("auth: the password: %w", err)
	}
	stored, err := client.GetStoredCredentialsWithError(scram.KeyFactors{Salt: string(salt), Iters: iterations})
	if err != nil {
		return ScramCredential{}, fmt.Errorf("auth: salting the password: %w", err)
	}
	return ScramCredential{Salt: salt, Iterations: iterations, StoredKey: stored.StoredKey, ServerKey: stored.ServerKey}, nil
}

// ScramCredentialFromSalted returns the credential of a password salted
// for mechanism (PBKDF2 of the password with salt and iterations), as
// Kafka's AlterUserScramCredentials sends it: a client salts the password
// itself, so that the password never leaves it.
func ScramCredentialFromSalted(mechanism string, salt, saltedPassword []byte, iterations int) (ScramCredential, error) {
	hash, err := hashOf(mechanism)
	if err != nil {
		return ScramCredential{}, err
	}
	switch {
	case iterations < DefaultScramIterations || iterations > MaxScramIterations:
		return ScramCredential{}, fmt.Errorf("auth: %d SCRAM iterations: Kafka takes %d to %d", iterations, DefaultScramIterations, MaxScramIterations)
	case len(salt) == 0 || len(saltedPassword) == 0:
		return ScramCredential{}, errors.New("auth: an empty salt or salted password")
	}
	mac := func(msg string) []byte {
		m := hmac.New(hash, saltedPassword)
		m.Write([]byte(msg))
		return m.Sum(nil)
	}
	h := hash()
	h.Write(mac("Client Key"))
	return ScramCredential{Salt: bytes.Clone(salt), Iterations: iterations, StoredKey: h.Sum(nil), ServerKey: mac("Server Key")}, nil
}

// SaltPassword salts password for mechanism with salt and iterations
// (PBKDF2, RFC 5802's Hi): what a client sends in
// AlterUserScramCredentials.
func SaltPassword(mechanism, password string, salt []byte, iterations int) ([]byte, error) {
	hash, err := hashOf(mechanism)
	if err != nil {
		return nil, err
	}
	return pbkdf2.Key(hash, password, salt, iterations, hash().Size())
}

// Credentials are the users a listener authenticates: their SCRAM
// credentials by mechanism. PLAIN checks a password against the user's
// SCRAM-SHA-512 credential, or its SCRAM-SHA-256 one.
type Credentials interface {
	// ScramCredential returns user's credential for mechanism, and false
	// when the user has none.
	ScramCredential(user, mechanism string) (ScramCredential, bool)
}

// ErrNoPassword says a user was given an empty password.
var ErrNoPassword = errors.New("auth: empty password")

// Users is Credentials kept in memory: the users a program sets up itself,
// as a Kafka broker's JAAS configuration lists static users. It is safe
// for concurrent use.
type Users struct {
	mu    sync.RWMutex
	creds map[string]map[string]ScramCredential // by user, then mechanism
}

// NewUsers returns Users with no user.
func NewUsers() *Users { return &Users{creds: map[string]map[string]ScramCredential{}} }

// SetPassword gives user password for both SCRAM mechanisms (and so for
// PLAIN), salted with DefaultScramIterations.
func (u *Users) SetPassword(user, password string) error {
	if password == "" {
		return ErrNoPassword
	}
	for _, m := range ScramMechanisms {
		c, err := NewScramCredential(m, password, 0)
		if err != nil {
			return err
		}
		u.Set(user, m, c)
	}
	return nil
}

// Set gives user the credential c for mechanism.
func (u *Users) Set(user, mechanism string, c ScramCredential) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.creds[user] == nil {
		u.creds[user] = map[string]ScramCredential{}
	}
	u.creds[user][mechanism] = c
}

// Delete removes user's credential for mechanism.
func (u *Users) Delete(user, mechanism string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	delete(u.creds[user], mechanism)
	if len(u.creds[user]) == 0 {
		delete(u.creds, user)
	}
}

// ScramCredential implements Credentials.
func (u *Users) ScramCredential(user, mechanism string) (ScramCredential, bool) {
	u.mu.RLock()
	defer u.mu.RUnlock()
	c, ok := u.creds[user][mechanism]
	return c, ok
}

// AnyOf returns the credentials of the first of creds that has a user's
// credential for a mechanism: a listener's static users before the
// cluster's, say.
func AnyOf(creds ...Credentials) Credentials { return anyOf(creds) }

type anyOf []Credentials

func (a anyOf) ScramCredential(user, mechanism string) (ScramCredential, bool) {
	for _, c := range a {
		if cred, ok := c.ScramCredential(user, mechanism); ok {
			return cred, true
		}
	}
	return ScramCredential{}, false
}
