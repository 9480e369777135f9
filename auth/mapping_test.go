package auth_test

import (
	"context"
	"crypto/x509/pkix"
	"errors"
	"testing"

	"github.com/partlog/partlog/auth"
	"github.com/partlog/partlog/internal/testcert"
)

func TestMappingRules(t *testing.T) {
	for _, tc := range []struct {
		rules, dn, want string
	}{
		// The examples of Kafka's documentation.
		{"RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/", "CN=kafka-server1,OU=ServiceUsers,O=Org,C=UK", "kafka-server1"},
		{"RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L", "CN=adminUser,OU=Admin,O=Unknown,L=Unknown,ST=Unknown,C=Unknown", "adminuser@admin"},
		{"RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/L,DEFAULT", "cn=duke,ou=JavaSoft,o=Sun Microsystems", "duke"},
		{"RULE:^CN=(.*?),OU=(.*?)$/$1/U", "CN=alice,OU=eng", "ALICE"},
		// The first rule that matches the whole subject names the user;
		// DEFAULT keeps the subject as it is.
		{"RULE:^CN=(.*?),OU=ops$/ops-$1/, RULE:^CN=(.*?),.*$/$1/", "CN=bob,OU=eng", "bob"},
		{"RULE:^CN=(.*?),OU=ops$/$1/,DEFAULT", "CN=bob,OU=eng", "CN=bob,OU=eng"},
		{"", "CN=bob,OU=eng", "CN=bob,OU=eng"},
		{"RULE:OU=eng/x/,DEFAULT", "CN=bob,OU=eng", "CN=bob,OU=eng"}, // matches a part only
		// Escapes, and a group past the pattern's, which is literal.
		{`RULE:^CN=(.*?)\/(.*)$/$2\/$1/`, "CN=a/b", "b/a"},
		{`RULE:^CN=(.*)$/$1\$2/`, "CN=x", "x$2"},
		{`RULE:^CN=(.*)$/$1$2/`, "CN=x", "x$2"},
		{`RULE:^CN=(.*),O=(.*),L=(.*),ST=(.*),C=(.*),E=(.*),D=(.*),F=(.*),G=(.*),H=(.*)$/$10-$1/`, "CN=1,O=2,L=3,ST=4,C=5,E=6,D=7,F=8,G=9,H=10", "10-1"},
	} {
		m, err := auth.ParseMappingRules(tc.rules)
		if err != nil {
			t.Fatalf("ParseMappingRules(%q): %v", tc.rules, err)
		}
		got, err := m.Map(tc.dn)
		if err != nil || got != tc.want {
			t.Errorf("rules %q map %q to %q, %v; want %q", tc.rules, tc.dn, got, err, tc.want)
		}
	}
}

func TestMappingRulesNoMatch(t *testing.T) {
	m, err := auth.ParseMappingRules("RULE:^CN=(.*?),OU=ops$/$1/")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := m.Map("CN=bob,OU=eng"); !errors.Is(err, auth.ErrNoMatchingRule) {
		t.Fatalf("Map = %q, %v; want ErrNoMatchingRule", got, err)
	}
}

func TestMappingRulesInvalid(t *testing.T) {
	for _, rules := range []string{
		"RULE:abc",               // no replacement
		"RULE:^(.*)$/$1",         // no closing slash
		"default",                // DEFAULT is upper case
		"RULE:^(.*)$/$1/,junk",   // a second rule that is none
		"RULE:^(.*)$/$1/X",       // neither L nor U
		"RULE:^(?=a).*$/x/",      // lookahead: not RE2
		"RULE:^(.*)$/$x/",        // $ without a group
		`RULE:^(.*)$/x\/`,        // the closing slash escaped
		"DEFAULT RULE:^(.*)$/x/", // no comma between rules
	} {
		if _, err := auth.ParseMappingRules(rules); err == nil {
			t.Errorf("ParseMappingRules(%q) took it", rules)
		}
	}
}

func TestCertificatePrincipal(t *testing.T) {
	ca, err := testcert.NewCA("test CA")
	if err != nil {
		t.Fatal(err)
	}
	cert, err := ca.Issue(pkix.Name{CommonName: "alice", OrganizationalUnit: []string{"eng"}, Organization: []string{"Acme"}, Country: []string{"GB"}})
	if err != nil {
		t.Fatal(err)
	}
	dn, err := auth.SubjectDN(cert.Leaf)
	if err != nil || dn != "CN=alice,OU=eng,O=Acme,C=GB" {
		t.Fatalf("SubjectDN = %q, %v", dn, err)
	}
	p, err := auth.CertificatePrincipal(cert.Leaf, auth.MappingRules{})
	if err != nil || p.String() != "User:CN=alice,OU=eng,O=Acme,C=GB" {
		t.Fatalf("CertificatePrincipal with DEFAULT = %v, %v", p, err)
	}
	rules, err := auth.ParseMappingRules("RULE:^CN=(.*?),.*$/$1/")
	if err != nil {
		t.Fatal(err)
	}
	if p, err = auth.CertificatePrincipal(cert.Leaf, rules); err != nil || p != auth.User("alice") {
		t.Fatalf("CertificatePrincipal = %v, %v; want User:alice", p, err)
	}
}

func TestPrincipal(t *testing.T) {
	p, err := auth.ParsePrincipal("User:CN=a:b")
	if err != nil || p != (auth.Principal{Type: "User", Name: "CN=a:b"}) || p.String() != "User:CN=a:b" {
		t.Fatalf("ParsePrincipal = %#v, %v", p, err)
	}
	for _, s := range []string{"alice", ":alice", ""} {
		if _, err := auth.ParsePrincipal(s); err == nil {
			t.Errorf("ParsePrincipal(%q) took it", s)
		}
	}
	if _, ok := auth.FromContext(context.Background()); ok {
		t.Fatal("a bare context has a principal")
	}
	if got, ok := auth.FromContext(auth.NewContext(context.Background(), auth.Anonymous)); !ok || got.String() != "User:ANONYMOUS" {
		t.Fatalf("FromContext = %v, %v", got, ok)
	}
}
