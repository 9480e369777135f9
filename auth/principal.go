package auth

import (
	"context"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"fmt"
	"strings"
)

// Principal is who a connection acts as: Kafka's KafkaPrincipal, a type
// and a name, written "User:alice".
type Principal struct {
	// Type is the principal's type: "User" for every principal a
	// listener authenticates.
	Type string
	// Name is the user's name: the mapped subject of a client
	// certificate, or the user a SASL exchange authenticated.
	Name string
}

// UserType is the type of the principals listeners authenticate.
const UserType = "User"

// Anonymous is the principal of a connection that did not authenticate:
// a plaintext listener's, or a TLS one's without a client certificate.
var Anonymous = User("ANONYMOUS")

// User returns the principal User:name.
func User(name string) Principal { return Principal{Type: UserType, Name: name} }

// String writes the principal as Kafka does: "User:alice".
func (p Principal) String() string { return p.Type + ":" + p.Name }

// ParsePrincipal reads a principal written "Type:name", as Kafka's ACL
// tools take it ("User:alice"). The name may hold colons; the type may
// not be empty.
func ParsePrincipal(s string) (Principal, error) {
	typ, name, ok := strings.Cut(s, ":")
	if !ok || typ == "" {
		return Principal{}, fmt.Errorf("auth: principal %q is not Type:name (User:alice)", s)
	}
	return Principal{Type: typ, Name: name}, nil
}

// CertificatePrincipal returns the principal of a client that presented
// cert: its subject's distinguished name, written as RFC 2253 writes it
// (most specific first: "CN=alice,OU=eng,O=Acme,C=GB", as Java's
// X500Principal gives it to Kafka), mapped by rules.
func CertificatePrincipal(cert *x509.Certificate, rules MappingRules) (Principal, error) {
	dn, err := SubjectDN(cert)
	if err != nil {
		return Principal{}, err
	}
	name, err := rules.Map(dn)
	if err != nil {
		return Principal{}, err
	}
	return User(name), nil
}

// SubjectDN writes cert's subject as RFC 2253 does, in the order of the
// certificate's own sequence of names, reversed.
func SubjectDN(cert *x509.Certificate) (string, error) {
	var rdns pkix.RDNSequence
	rest, err := asn1.Unmarshal(cert.RawSubject, &rdns)
	if err != nil || len(rest) > 0 {
		return "", fmt.Errorf("auth: the certificate's subject does not parse: %v", err)
	}
	return rdns.String(), nil
}

// principalKey is the context key of a connection's principal.
type principalKey struct{}

// NewContext returns ctx carrying p, the principal of the connection a
// request came on.
func NewContext(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// FromContext returns the principal of the connection whose request ctx
// belongs to, and false for a call that came in no connection (a caller
// in the node's own process).
func FromContext(ctx context.Context) (Principal, bool) {
	p, ok := ctx.Value(principalKey{}).(Principal)
	return p, ok
}
