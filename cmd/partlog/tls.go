package main

// tls.go reads the TLS settings of a listener (partlog serve --listen
// SSL://...) and of a client (--command-config), from PEM files as Kafka
// reads them with ssl.keystore.type=PEM and ssl.truststore.type=PEM.

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strings"

	"github.com/partlog/partlog/internal/props"
	"github.com/partlog/partlog/transport"
)

// Security protocols of a listener and a client (security.protocol).
const (
	protocolPlaintext = "PLAINTEXT"
	protocolSSL       = "SSL"
)

// splitListener splits a listener written as Kafka's listeners are,
// "SSL://host:port", into its security protocol and address; an address
// without a protocol is PLAINTEXT.
func splitListener(listener string) (protocol, addr string, err error) {
	protocol, addr, ok := strings.Cut(listener, "://")
	if !ok {
		return protocolPlaintext, listener, nil
	}
	switch protocol = strings.ToUpper(protocol); protocol {
	case protocolPlaintext, protocolSSL:
		return protocol, addr, nil
	case "SASL_PLAINTEXT", "SASL_SSL":
		return "", "", fmt.Errorf("security protocol %s is not served yet: PLAINTEXT or SSL", protocol)
	}
	return "", "", fmt.Errorf("unknown security protocol %q: PLAINTEXT or SSL", protocol)
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
}

// readCommandConfig reads a client properties file, as Kafka's tools read
// --command-config, into dial options: client.id, and security.protocol
// PLAINTEXT or SSL with PEM trust and key stores. Properties it does not
// know are named on stderr and otherwise left alone, as Kafka's clients
// log them.
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
	case "", protocolPlaintext:
		for _, k := range []string{"ssl.truststore.location", "ssl.keystore.location"} {
			if p[k] != "" {
				return opts, fmt.Errorf("%s: %s needs security.protocol=SSL", path, k)
			}
		}
		return opts, nil
	case protocolSSL:
	case "SASL_PLAINTEXT", "SASL_SSL":
		return opts, fmt.Errorf("%s: security.protocol=%s: partlog does not speak SASL yet", path, protocol)
	default:
		return opts, fmt.Errorf("%s: unknown security.protocol %q: PLAINTEXT or SSL", path, p["security.protocol"])
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
