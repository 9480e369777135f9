// Package testcert makes the certificates TLS tests need: a certificate
// authority, and server and client certificates it signs, generated at
// run time (nothing secret is kept in the repository) and written as PEM
// files for tools that take files (partlog serve, kcat).
package testcert

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"
)

// CA is a certificate authority for tests.
type CA struct {
	// Cert is the authority's own certificate, and Key its key.
	Cert *x509.Certificate
	Key  *ecdsa.PrivateKey
	// Pool holds Cert alone: the roots that trust what the CA signs.
	Pool *x509.CertPool
}

// serial numbers the certificates of this process.
var serial atomic.Int64

// NewCA makes a new certificate authority named name.
func NewCA(name string) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(serial.Add(1)),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &CA{Cert: cert, Key: key, Pool: pool}, nil
}

// Issue returns a certificate the CA signs for subject, good for a server
// at 127.0.0.1, ::1 and localhost and for a client.
func (ca *CA) Issue(subject pkix.Name) (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial.Add(1)),
		Subject:      subject,
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
		DNSNames:     []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.Key)
	if err != nil {
		return tls.Certificate{}, err
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, nil
}

// WriteCA writes the CA's certificate to dir/name as PEM and returns the
// file's path: a trust store (ssl.truststore.location of type PEM, or
// ssl.ca.location).
func (ca *CA) WriteCA(dir, name string) (string, error) {
	path := filepath.Join(dir, name)
	return path, os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.Cert.Raw}), 0o600)
}

// WriteKeyPair writes cert's private key and certificate chain to
// dir/name as PEM, the key first, and returns the file's path: a key store
// of type PEM (ssl.keystore.location), or both of kcat's
// ssl.key.location and ssl.certificate.location.
func WriteKeyPair(cert tls.Certificate, dir, name string) (string, error) {
	der, err := x509.MarshalPKCS8PrivateKey(cert.PrivateKey)
	if err != nil {
		return "", err
	}
	out := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
	for _, c := range cert.Certificate {
		out = append(out, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c})...)
	}
	path := filepath.Join(dir, name)
	return path, os.WriteFile(path, out, 0o600)
}
