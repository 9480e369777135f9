package auth_test

import (
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/partlog/partlog/auth"
	"github.com/partlog/partlog/kafka"
)

// converse runs a client's and a listener's conversations against each
// other, as SaslAuthenticate requests and answers carry them, and returns
// the listener's user, or the first error of either side.
func converse(t *testing.T, mechanism, user, password string, creds auth.Credentials) (string, error) {
	t.Helper()
	client, err := auth.NewClientConversation(mechanism, user, password)
	if err != nil {
		t.Fatal(err)
	}
	server, err := auth.NewServerConversation(mechanism, creds)
	if err != nil {
		t.Fatal(err)
	}
	out, err := client.Step(nil)
	if err != nil {
		return "", err
	}
	for range 5 {
		answer, done, err := server.Step(out)
		if err != nil {
			return "", err
		}
		if client.Done() {
			if !done {
				t.Fatal("the client finished before the listener")
			}
			return server.User(), nil
		}
		if out, err = client.Step(answer); err != nil {
			return "", err
		}
		if client.Done() {
			if !done {
				t.Fatal("the client finished before the listener")
			}
			return server.User(), nil
		}
	}
	t.Fatal("the conversation does not end")
	return "", nil
}

func TestConversations(t *testing.T) {
	users := auth.NewUsers()
	if err := users.SetPassword("alice", "alice-secret"); err != nil {
		t.Fatal(err)
	}
	if err := users.SetPassword("bob", "bob-secret"); err != nil {
		t.Fatal(err)
	}
	for _, m := range auth.Mechanisms {
		t.Run(m, func(t *testing.T) {
			if got, err := converse(t, m, "alice", "alice-secret", users); err != nil || got != "alice" {
				t.Fatalf("alice with her password: %q, %v", got, err)
			}
			for _, bad := range []struct{ user, password string }{
				{"alice", "bob-secret"}, {"alice", ""}, {"carol", "alice-secret"}, {"", "alice-secret"},
			} {
				got, err := converse(t, m, bad.user, bad.password, users)
				if !errors.Is(err, kafka.ErrSaslAuthenticationFailed) {
					t.Errorf("%q with password %q: %q, %v; want SASL_AUTHENTICATION_FAILED", bad.user, bad.password, got, err)
				}
			}
		})
	}
	// A listener that holds other credentials for alice than her password
	// refuses her.
	other := auth.NewUsers()
	if err := other.SetPassword("alice", "not-her-password"); err != nil {
		t.Fatal(err)
	}
	if _, err := converse(t, auth.MechanismScramSHA256, "alice", "alice-secret", other); !errors.Is(err, kafka.ErrSaslAuthenticationFailed) {
		t.Fatalf("SCRAM against other credentials: %v", err)
	}
	// Credentials of one mechanism do not serve the other.
	only256 := auth.NewUsers()
	c, err := auth.NewScramCredential(auth.MechanismScramSHA256, "pw", 0)
	if err != nil {
		t.Fatal(err)
	}
	only256.Set("dave", auth.MechanismScramSHA256, c)
	if _, err := converse(t, auth.MechanismScramSHA512, "dave", "pw", only256); !errors.Is(err, kafka.ErrSaslAuthenticationFailed) {
		t.Fatalf("SCRAM-SHA-512 with a SCRAM-SHA-256 credential: %v", err)
	}
	if got, err := converse(t, auth.MechanismPlain, "dave", "pw", only256); err != nil || got != "dave" {
		t.Fatalf("PLAIN against a SCRAM-SHA-256 credential: %q, %v", got, err)
	}
}

func TestPlainAuthorizationID(t *testing.T) {
	users := auth.NewUsers()
	if err := users.SetPassword("alice", "pw"); err != nil {
		t.Fatal(err)
	}
	for msg, ok := range map[string]bool{
		"alice\x00alice\x00pw": true,  // authzid = user
		"\x00alice\x00pw":      true,  // no authzid
		"bob\x00alice\x00pw":   false, // another user's name
		"alice\x00pw":          false, // not three parts
		"\x00\x00pw":           false, // no user
	} {
		s, err := auth.NewServerConversation(auth.MechanismPlain, users)
		if err != nil {
			t.Fatal(err)
		}
		_, done, err := s.Step([]byte(msg))
		if done != ok || (err == nil) != ok {
			t.Errorf("PLAIN %q: done %v, %v", msg, done, err)
		}
	}
}

func TestScramCredentialIterations(t *testing.T) {
	for _, n := range []int{1, 4095, 16385} {
		if _, err := auth.NewScramCredential(auth.MechanismScramSHA256, "pw", n); err == nil {
			t.Errorf("%d iterations taken", n)
		}
	}
	if _, err := auth.NewScramCredential("SCRAM-SHA-1", "pw", 0); err == nil {
		t.Error("SCRAM-SHA-1 taken")
	}
	if _, err := auth.NewServerConversation("GSSAPI", auth.NewUsers()); !errors.Is(err, kafka.ErrUnsupportedSaslMechanism) {
		t.Errorf("GSSAPI: %v", err)
	}
	if err := auth.NewUsers().SetPassword("x", ""); !errors.Is(err, auth.ErrNoPassword) {
		t.Errorf("an empty password: %v", err)
	}
}

// scramProof computes a SCRAM-SHA-256 client's proof over authMessage, as
// RFC 5802 defines it.
func scramProof(t *testing.T, password string, salt []byte, iterations int, authMessage string) string {
	t.Helper()
	salted, err := pbkdf2.Key(sha256.New, password, salt, iterations, sha256.Size)
	if err != nil {
		t.Fatal(err)
	}
	mac := func(key []byte, msg string) []byte {
		m := hmac.New(sha256.New, key)
		m.Write([]byte(msg))
		return m.Sum(nil)
	}
	clientKey := mac(salted, "Client Key")
	storedKey := sha256.Sum256(clientKey)
	sig := mac(storedKey[:], authMessage)
	for i := range clientKey {
		clientKey[i] ^= sig[i]
	}
	return base64.StdEncoding.EncodeToString(clientKey)
}

// TestScramDoubledNonce: librdkafka's client-final message carries its own
// nonce and then the server's whole nonce (which starts with it); Kafka
// takes it, and so does partlog, with the proof computed over the message
// as sent. A nonce that does not end with the server's is refused, and so
// is a user name with a bad escape; =2C and =3D decode.
func TestScramDoubledNonce(t *testing.T) {
	users := auth.NewUsers()
	if err := users.SetPassword("a,b=c", "pw"); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		user      string
		doubled   bool
		badNonce  bool
		wantError bool
	}{
		{name: "exact nonce", user: "a=2Cb=3Dc"},
		{name: "librdkafka's doubled nonce", user: "a=2Cb=3Dc", doubled: true},
		{name: "another nonce", user: "a=2Cb=3Dc", badNonce: true, wantError: true},
		{name: "a bad escape", user: "a=2Xb", wantError: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := auth.NewServerConversation(auth.MechanismScramSHA256, users)
			if err != nil {
				t.Fatal(err)
			}
			const cnonce = "clientnonce"
			bare := "n=" + tc.user + ",r=" + cnonce
			first, _, err := s.Step([]byte("n,," + bare))
			if err != nil {
				if tc.wantError {
					return
				}
				t.Fatal(err)
			}
			attrs := map[string]string{}
			for _, kv := range strings.Split(string(first), ",") {
				attrs[kv[:1]] = kv[2:]
			}
			salt, _ := base64.StdEncoding.DecodeString(attrs["s"])
			iters, _ := strconv.Atoi(attrs["i"])
			nonce := attrs["r"]
			switch {
			case tc.doubled:
				nonce = cnonce + nonce
			case tc.badNonce:
				nonce = nonce + "x"
			}
			withoutProof := "c=biws,r=" + nonce
			proof := scramProof(t, "pw", salt, iters, bare+","+string(first)+","+withoutProof)
			final, done, err := s.Step([]byte(withoutProof + ",p=" + proof))
			if tc.wantError {
				if !errors.Is(err, kafka.ErrSaslAuthenticationFailed) {
					t.Fatalf("refusal: %v", err)
				}
				return
			}
			if err != nil || !done || !strings.HasPrefix(string(final), "v=") || s.User() != "a,b=c" {
				t.Fatalf("final %q, done %v, user %q, %v", final, done, s.User(), err)
			}
		})
	}
}
