package main

// security.go reads the security settings of a listener (partlog serve
// --listen SSL://..., SASL_SSL://...) and of a client (--command-config):
// TLS from PEM files as Kafka reads them with ssl.keystore.type=PEM and
// ssl.truststore.type=PEM, and SASL's mechanism and credentials.

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/partlog/partlog/auth"
	"github.com/partlog/partlog/internal/props"
	"github.com/partlog/partlog/transport"
)

// Security protocols of a listener and a client (security.protocol).
const (
	protocolPlaintext     = "PLAINTEXT"
	protocolSSL           = "SSL"
	protocolSASLPlaintext = "SASL_PLAINTEXT"
	protocolSASLSSL       = "SASL_SSL"
)

// usesTLS reports whether a security protocol runs over TLS.
func usesTLS(protocol string) bool { return protocol == protocolSSL || protocol == protocolSASLSSL }

// usesSASL reports whether a security protocol authenticates with SASL.
func usesSASL(protocol string) bool {
	return protocol == protocolSASLPlaintext || protocol == protocolSASLSSL
}

// splitListener splits a listener written as Kafka's listeners are,
// "SSL://host:port", into its security protocol and address; an address
// without a protocol is PLAINTEXT.
func splitListener(listener string) (protocol, addr string, err error) {
	protocol, addr, ok := strings.Cut(listener, "://")
	if !ok {
		return protocolPlaintext, listener, nil
	}
	switch protocol = strings.ToUpper(protocol); protocol {
	case protocolPlaintext, protocolSSL, protocolSASLPlaintext, protocolSASLSSL:
		return protocol, addr, nil
	}
	return "", "", fmt.Errorf("unknown security protocol %q: PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL", protocol)
}

// splitControllers splits --controller's comma-separated addresses, each
// HOST:PORT or SSL://HOST:PORT (PLAINTEXT:// too), into the addresses and
// whether they serve TLS: all of them, or none.
func splitControllers(s string) (addrs string, ssl bool, err error) {
	if s == "" {
		return "", false, nil
	}
	var out []string
	for i, a := range strings.Split(s, ",") {
		protocol, addr, err := splitListener(strings.TrimSpace(a))
		if err != nil {
			return "", false, err
		}
		if protocol != protocolPlaintext && protocol != protocolSSL {
			return "", false, fmt.Errorf("a controller's listener is PLAINTEXT or SSL, not %s", protocol)
		}
		if i > 0 && (protocol == protocolSSL) != ssl {
			return "", false, fmt.Errorf("the controllers of a quorum all serve TLS or none does")
		}
		ssl = protocol == protocolSSL
		out = append(out, addr)
	}
	return strings.Join(out, ","), ssl, nil
}

// peerTLS returns the TLS configuration with which a process whose own
// listener serves server reaches others like it: it trusts what vouches
// for its clients, and shows its own certificate.
func peerTLS(server *tls.Config) *tls.Config {
	return &tls.Config{RootCAs: server.ClientCAs, Certificates: server.Certificates}
}

// readKeyStore reads a PEM key store: a private key and the certificate
// chain that goes with it, in one file (ssl.keystore.location with
// ssl.keystore.type=PEM).
func readKeyStore(path string) (tls.Certificate, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("key store: %w", err)
	}
	cert, err := tls.X509KeyPair(data, data)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("key store %s: %w (want one PEM file with the private key and its certificate chain)", path, err)
	}
	return cert, nil
}

// readTrustStore reads a PEM trust store: the certificates of the
// authorities to trust (ssl.truststore.location with
// ssl.truststore.type=PEM).
func readTrustStore(path string) (*x509.CertPool, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("trust store: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(data) {
		return nil, fmt.Errorf("trust store %s holds no PEM certificate", path)
	}
	return pool, nil
}

// clientAuthModes are the values of ssl.client.auth.
var clientAuthModes = map[string]tls.ClientAuthType{
	"none":      tls.NoClientCert,
	"requested": tls.VerifyClientCertIfGiven,
	"required":  tls.RequireAndVerifyClientCert,
}

// commandConfigKeys are the client properties --command-config knows.
var commandConfigKeys = []string{
	"client.id", "security.protocol",
	"ssl.truststore.location", "ssl.truststore.type",
	"ssl.keystore.location", "ssl.keystore.type",
	"ssl.endpoint.identification.algorithm",
	"sasl.mechanism", "sasl.jaas.config", "sasl.username", "sasl.password",
}

// jaasCredentials finds the user name and password in a sasl.jaas.config
// value: "org.apache.kafka.common.security.scram.ScramLoginModule required
// username="alice" password="alice-secret";".
var jaasCredentials = regexp.MustCompile(`\b(username|password)\s*=\s*"((?:[^"\\]|\\.)*)"`)

// readCommandConfig reads a client properties file, as Kafka's tools read
// --command-config, into dial options: client.id, security.protocol
// (PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL) with PEM trust and key
// stores, and sasl.mechanism with the user's name and password from
// sasl.jaas.config (or librdkafka's sasl.username and sasl.password).
// Properties it does not know are named on stderr and otherwise left
// alone, as Kafka's clients log them.
func readCommandConfig(path string, opts transport.DialOptions, stderr io.Writer, command string) (transport.DialOptions, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return opts, err
	}
	p, err := props.Parse(data)
	if err != nil {
		return opts, fmt.Errorf("%s: %w", path, err)
	}
	var unknown []string
	for k := range p {
		if !slices.Contains(commandConfigKeys, k) {
			unknown = append(unknown, k)
		}
	}
	sort.Strings(unknown)
	for _, k := range unknown {
		fmt.Fprintf(stderr, "partlog: %s: %s: %s is not a property partlog knows; ignored\n", command, path, k)
	}
	if id := p["client.id"]; id != "" {
		opts.ClientID = id
	}
	for _, k := range []string{"ssl.truststore.type", "ssl.keystore.type"} {
		if t := p[k]; t != "" && !strings.EqualFold(t, "PEM") {
			return opts, fmt.Errorf("%s: %s=%s: partlog reads PEM files only", path, k, t)
		}
	}
	protocol := strings.ToUpper(p["security.protocol"])
	switch protocol {
	case "":
		protocol = protocolPlaintext
	case protocolPlaintext, protocolSSL, protocolSASLPlaintext, protocolSASLSSL:
	default:
		return opts, fmt.Errorf("%s: unknown security.protocol %q: PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL", path, p["security.protocol"])
	}
	if !usesTLS(protocol) {
		for _, k := range []string{"ssl.truststore.location", "ssl.keystore.location"} {
			if p[k] != "" {
				return opts, fmt.Errorf("%s: %s needs security.protocol SSL or SASL_SSL", path, k)
			}
		}
	}
	if !usesSASL(protocol) {
		for _, k := range []string{"sasl.mechanism", "sasl.jaas.config", "sasl.username"} {
			if p[k] != "" {
				return opts, fmt.Errorf("%s: %s needs security.protocol SASL_PLAINTEXT or SASL_SSL", path, k)
			}
		}
	} else {
		cred, err := saslCredentials(p)
		if err != nil {
			return opts, fmt.Errorf("%s: %v", path, err)
		}
		opts.SASL = cred
	}
	if !usesTLS(protocol) {
		return opts, nil
	}
	cfg := &tls.Config{}
	if loc := p["ssl.truststore.location"]; loc != "" {
		if cfg.RootCAs, err = readTrustStore(loc); err != nil {
			return opts, err
		}
	}
	if loc := p["ssl.keystore.location"]; loc != "" {
		cert, err := readKeyStore(loc)
		if err != nil {
			return opts, err
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	switch alg := p["ssl.endpoint.identification.algorithm"]; strings.ToLower(alg) {
	case "https":
	case "":
		if _, set := p["ssl.endpoint.identification.algorithm"]; set {
			// Kafka's way to turn host name checks off: the chain is
			// still verified against the trust store.
			cfg.InsecureSkipVerify = true
			cfg.VerifyPeerCertificate = verifyChainOnly(cfg.RootCAs)
		}
	default:
		return opts, fmt.Errorf("%s: ssl.endpoint.identification.algorithm=%s: https or empty", path, alg)
	}
	opts.TLS = cfg
	return opts, nil
}

// saslCredentials reads a client's SASL mechanism and credentials from its
// properties.
func saslCredentials(p map[string]string) (*transport.SASLCredentials, error) {
	cred := &transport.SASLCredentials{Mechanism: strings.ToUpper(p["sasl.mechanism"]), User: p["sasl.username"], Password: p["sasl.password"]}
	if cred.Mechanism == "" {
		return nil, fmt.Errorf("sasl.mechanism is required: %s", strings.Join(auth.Mechanisms, ", "))
	}
	if !slices.Contains(auth.Mechanisms, cred.Mechanism) {
		return nil, fmt.Errorf("sasl.mechanism %s: partlog speaks %s", cred.Mechanism, strings.Join(auth.Mechanisms, ", "))
	}
	for _, m := range jaasCredentials.FindAllStringSubmatch(p["sasl.jaas.config"], -1) {
		v := strings.NewReplacer(`\"`, `"`, `\\`, `\`).Replace(m[2])
		if m[1] == "username" {
			cred.User = v
		} else {
			cred.Password = v
		}
	}
	if cred.User == "" || cred.Password == "" {
		return nil, fmt.Errorf(`sasl.jaas.config needs username="..." and password="..." (or sasl.username and sasl.password)`)
	}
	return cred, nil
}

// readUsers reads a SASL listener's users from a properties file of
// user=password lines, as a Kafka broker's JAAS configuration lists
// user_NAME="password" for PLAIN: the passwords are salted as SCRAM
// credentials in memory, and serve SCRAM-SHA-256, SCRAM-SHA-512 and
// PLAIN alike.
func readUsers(path string) (*auth.Users, map[string]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("users: %w", err)
	}
	p, err := props.Parse(data)
	if err != nil {
		return nil, nil, fmt.Errorf("users %s: %w", path, err)
	}
	if len(p) == 0 {
		return nil, nil, fmt.Errorf("users %s: no user=password line", path)
	}
	users := auth.NewUsers()
	for user, password := range p {
		if err := users.SetPassword(user, password); err != nil {
			return nil, nil, fmt.Errorf("users %s: %s: %w", path, user, err)
		}
	}
	return users, p, nil
}

// verifyChainOnly checks a node's certificate chain against roots (the
// system's when nil) without checking its host name.
func verifyChainOnly(roots *x509.CertPool) func([][]byte, [][]*x509.Certificate) error {
	return func(raw [][]byte, _ [][]*x509.Certificate) error {
		if len(raw) == 0 {
			return fmt.Errorf("the node sent no certificate")
		}
		certs := make([]*x509.Certificate, len(raw))
		for i, der := range raw {
			c, err := x509.ParseCertificate(der)
			if err != nil {
				return err
			}
			certs[i] = c
		}
		inter := x509.NewCertPool()
		for _, c := range certs[1:] {
			inter.AddCert(c)
		}
		_, err := certs[0].Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter})
		return err
	}
}

// serveAuthorizer returns the authorizer of serve's --acls flags, its ACLs
// left for the node to give, or nil without --acls (which the other two
// flags need).
func serveAuthorizer(checkACLs bool, superUsers string, allowEveryone bool) (*auth.Authorizer, error) {
	if !checkACLs {
		if superUsers != "" || allowEveryone {
			return nil, usageErrorf("serve", "--super-users and --allow-everyone-if-no-acl-found go with --acls")
		}
		return nil, nil
	}
	a := &auth.Authorizer{AllowEveryoneIfNoACLFound: allowEveryone}
	for s := range strings.SplitSeq(superUsers, ";") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		p, err := auth.ParsePrincipal(s)
		if err != nil {
			return nil, usageErrorf("serve", "--super-users: %v", err)
		}
		a.SuperUsers = append(a.SuperUsers, p)
	}
	return a, nil
}
