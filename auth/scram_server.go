package auth

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/subtle"
	"encoding/base64"
	"hash"
	"strconv"
	"strings"
)

// scramServer is a listener's side of SCRAM (RFC 5802): client-first,
// server-first, client-final, server-final.
//
// It is ours rather than xdg-go/scram's server (whose client partlog
// uses) for one reason: librdkafka (kcat, confluent-kafka) sends back, in
// its client-final message, its own nonce followed by the whole nonce of
// the server-first message — which already starts with it — and Kafka's
// server takes that, as it only checks that the nonce ends with the one
// it sent. The client's proof covers the message as the client wrote it,
// so a server that insists on RFC 5802's exact nonce refuses every
// librdkafka client.
type scramServer struct {
	mechanism string
	newHash   func() hash.Hash
	creds     Credentials

	step            int
	user            string
	cred            ScramCredential
	gs2Header       string // "n,," or "y,,", with the authzid
	clientFirstBare string
	serverFirst     string
	nonce           string // the client's nonce and the server's
}

func newScramServer(mechanism string, creds Credentials) *scramServer {
	h := sha256.New
	if mechanism == MechanismScramSHA512 {
		h = sha512.New
	}
	return &scramServer{mechanism: mechanism, newHash: h, creds: creds}
}

// refuse is the one answer every failure gets: a client learns no more
// than that its credentials did not do (RFC 5802's e=other-error).
func (s *scramServer) refuse(why string) ([]byte, bool, error) {
	s.step = -1
	return []byte("e=other-error"), false, &AuthenticationError{Mechanism: s.mechanism, Reason: why}
}

func (s *scramServer) Step(in []byte) ([]byte, bool, error) {
	switch s.step {
	case 0:
		return s.clientFirst(string(in))
	case 1:
		return s.clientFinal(string(in))
	}
	return s.refuse("the exchange is over")
}

// clientFirst takes "gs2-header client-first-bare": "n,,n=user,r=nonce".
func (s *scramServer) clientFirst(msg string) ([]byte, bool, error) {
	flag, rest, ok := strings.Cut(msg, ",")
	if !ok || (flag != "n" && flag != "y") {
		return s.refuse("a client-first message starts n, or y, (partlog binds no channel)")
	}
	authzid, bare, ok := strings.Cut(rest, ",")
	if !ok || (authzid != "" && !strings.HasPrefix(authzid, "a=")) {
		return s.refuse("a malformed GS2 header")
	}
	s.gs2Header, s.clientFirstBare = flag+","+authzid+",", bare
	attrs := strings.Split(bare, ",")
	if len(attrs) < 2 || !strings.HasPrefix(attrs[0], "n=") || !strings.HasPrefix(attrs[1], "r=") || len(attrs[1]) < 3 {
		return s.refuse("client-first-bare is n=user,r=nonce")
	}
	for _, ext := range attrs[2:] {
		if strings.HasPrefix(ext, "tokenauth=") {
			return s.refuse("delegation tokens are not served")
		}
	}
	user, ok := decodeSaslName(attrs[0][2:])
	if !ok || user == "" {
		return s.refuse("a malformed user name")
	}
	if authzid != "" {
		if az, ok := decodeSaslName(authzid[2:]); !ok || az != user {
			return s.refuse("an authorization id other than the user's")
		}
	}
	cred, ok := s.creds.ScramCredential(user, s.mechanism)
	if !ok {
		return s.refuse("no such user, or no credential for the mechanism")
	}
	serverNonce := make([]byte, 24)
	rand.Read(serverNonce)
	s.user, s.cred, s.nonce = user, cred, attrs[1][2:]+base64.RawURLEncoding.EncodeToString(serverNonce)
	s.serverFirst = "r=" + s.nonce + ",s=" + base64.StdEncoding.EncodeToString(cred.Salt) + ",i=" + strconv.Itoa(cred.Iterations)
	s.step = 1
	return []byte(s.serverFirst), false, nil
}

// clientFinal takes "c=binding,r=nonce,p=proof", checks the proof against
// the stored key, and answers the server's signature: "v=signature".
func (s *scramServer) clientFinal(msg string) ([]byte, bool, error) {
	withoutProof, proofAttr, ok := cutLast(msg, ",p=")
	if !ok {
		return s.refuse("client-final has no proof")
	}
	attrs := strings.Split(withoutProof, ",")
	if len(attrs) < 2 || attrs[0] != "c="+base64.StdEncoding.EncodeToString([]byte(s.gs2Header)) || !strings.HasPrefix(attrs[1], "r=") {
		return s.refuse("client-final does not start c=<the GS2 header>,r=")
	}
	// Kafka's check, which librdkafka's doubled client nonce passes.
	if !strings.HasSuffix(attrs[1][2:], s.nonce) {
		return s.refuse("the nonce is not the server's")
	}
	proof, err := base64.StdEncoding.DecodeString(proofAttr)
	if err != nil || len(proof) != len(s.cred.StoredKey) {
		return s.refuse("a malformed proof")
	}
	authMessage := []byte(s.clientFirstBare + "," + s.serverFirst + "," + withoutProof)
	clientKey := s.hmac(s.cred.StoredKey, authMessage)
	for i := range clientKey {
		clientKey[i] ^= proof[i]
	}
	h := s.newHash()
	h.Write(clientKey)
	if subtle.ConstantTimeCompare(h.Sum(nil), s.cred.StoredKey) != 1 {
		return s.refuse("the proof does not match the password")
	}
	s.step = 2
	return []byte("v=" + base64.StdEncoding.EncodeToString(s.hmac(s.cred.ServerKey, authMessage))), true, nil
}

func (s *scramServer) hmac(key, msg []byte) []byte {
	m := hmac.New(s.newHash, key)
	m.Write(msg)
	return m.Sum(nil)
}

func (s *scramServer) User() string { return s.user }

// cutLast cuts s around the last sep.
func cutLast(s, sep string) (before, after string, found bool) {
	i := strings.LastIndex(s, sep)
	if i < 0 {
		return s, "", false
	}
	return s[:i], s[i+len(sep):], true
}

// decodeSaslName undoes SCRAM's escapes in a user name: =2C is a comma,
// =3D an equals sign, and no other = may appear.
func decodeSaslName(s string) (string, bool) {
	if !strings.Contains(s, "=") {
		return s, true
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '=' {
			b.WriteByte(s[i])
			continue
		}
		switch {
		case strings.HasPrefix(s[i:], "=2C"):
			b.WriteByte(',')
		case strings.HasPrefix(s[i:], "=3D"):
			b.WriteByte('=')
		default:
			return "", false
		}
		i += 2
	}
	return b.String(), true
}
