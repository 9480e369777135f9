package compat

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/xdg-go/scram"

	"github.com/partlog/partlog/auth"
	"github.com/partlog/partlog/internal/testcert"
	"github.com/partlog/partlog/transport"
)

// clientSecurity is what a client of a secured target needs. For TLS: PEM
// files of the authority that signed the node's certificate (caFile) and
// of the client's own certificate and private key, as librdkafka and
// kafkajs take them, and the same as a tls.Config for the Go clients
// (caFile empty: no TLS; certFile empty: no client certificate). For
// SASL: the mechanism and the user's name and password (mechanism empty:
// no SASL).
type clientSecurity struct {
	caFile, certFile, keyFile string
	tlsConfig                 *tls.Config
	mechanism, user, password string
}

// The user the clients of the sasl_ssl target authenticate as.
const (
	compatUser     = "compat"
	compatPassword = "compat \"secret\" = 42"
)

// dialOptions are the options partlog's own clients reach tg with.
func (tg *target) dialOptions() transport.DialOptions {
	c := tg.sec
	if c == nil {
		return transport.DialOptions{}
	}
	opts := transport.DialOptions{TLS: c.tlsConfig}
	if c.mechanism != "" {
		opts.SASL = &transport.SASLCredentials{Mechanism: c.mechanism, User: c.user, Password: c.password}
	}
	return opts
}

// librdkafka returns the security settings of librdkafka (kcat,
// confluent-kafka) for c: none for a nil c.
func (c *clientSecurity) librdkafka() map[string]string {
	if c == nil {
		return nil
	}
	tls, sasl := c.caFile != "", c.mechanism != ""
	conf := map[string]string{"security.protocol": map[[2]bool]string{{true, true}: "sasl_ssl", {true, false}: "ssl",
		{false, true}: "sasl_plaintext", {false, false}: "plaintext"}[[2]bool{tls, sasl}]}
	if tls {
		conf["ssl.ca.location"] = c.caFile
	}
	if c.certFile != "" {
		conf["ssl.certificate.location"], conf["ssl.key.location"] = c.certFile, c.keyFile
	}
	if sasl {
		conf["sasl.mechanisms"], conf["sasl.username"], conf["sasl.password"] = c.mechanism, c.user, c.password
	}
	return conf
}

// saramaSCRAM is the SCRAM client sarama asks its user for
// (Net.SASL.SCRAMClientGeneratorFunc), on xdg-go/scram as sarama's own
// example builds it.
type saramaSCRAM struct {
	conv *scram.ClientConversation
}

func (s *saramaSCRAM) Begin(user, password, authzID string) error {
	c, err := scram.SHA512.NewClient(user, password, authzID)
	if err != nil {
		return err
	}
	s.conv = c.NewConversation()
	return nil
}

func (s *saramaSCRAM) Step(challenge string) (string, error) { return s.conv.Step(challenge) }
func (s *saramaSCRAM) Done() bool                            { return s.conv.Done() }

// startSASLSSL starts one 'partlog serve' on a SASL_SSL listener that
// requires a client certificate signed by the test's authority (mutual
// TLS) and SCRAM-SHA-512 or -256 authentication, on a new data directory.
// The clients present CN=compat,OU=clients and authenticate as the user
// compat.
func startSASLSSL(t *testing.T, bin string) *target {
	t.Helper()
	dir := t.TempDir()
	ca, err := testcert.NewCA("partlog compat CA")
	if err != nil {
		t.Fatal(err)
	}
	caFile, err := ca.WriteCA(dir, "ca.pem")
	if err != nil {
		t.Fatal(err)
	}
	nodeCert, err := ca.Issue(pkix.Name{CommonName: "partlog-node"})
	if err != nil {
		t.Fatal(err)
	}
	nodeFile, err := testcert.WriteKeyPair(nodeCert, dir, "node.pem")
	if err != nil {
		t.Fatal(err)
	}
	clientCert, err := ca.Issue(pkix.Name{CommonName: "compat", OrganizationalUnit: []string{"clients"}})
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(clientCert.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	c := &clientSecurity{caFile: caFile, certFile: filepath.Join(dir, "client.crt"), keyFile: filepath.Join(dir, "client.key"),
		tlsConfig: &tls.Config{RootCAs: ca.Pool, Certificates: []tls.Certificate{clientCert}},
		mechanism: auth.MechanismScramSHA512, user: compatUser, password: compatPassword}
	if err := os.WriteFile(c.certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: clientCert.Certificate[0]}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(c.keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	users := filepath.Join(dir, "users.properties")
	if err := os.WriteFile(users, []byte(compatUser+"="+compatPassword+"\n"+limitedUser+"="+limitedPassword+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	args := append([]string{"serve", "--dir", filepath.Join(dir, "sasl_ssl")}, nodeArgs()...)
	args = append(args, "--listen", "SASL_SSL://127.0.0.1:0", "--ssl-keystore", nodeFile, "--ssl-truststore", caFile,
		"--ssl-client-auth", "required", "--sasl-users", users, "--sasl-enabled-mechanisms", "SCRAM-SHA-512,SCRAM-SHA-256",
		"--acls", "--super-users", auth.User(compatUser).String())
	p := startProcess(t, "the SASL_SSL node", bin, args...)
	tg := &target{name: "sasl_ssl", bin: bin, rf: 1, nodes: map[int32]*process{}, sec: c}
	id, err := tg.nodeID(p.addr)
	if err != nil {
		t.Fatal(err)
	}
	tg.nodes[id] = p
	tg.dial(t)
	return tg
}

// reachedWith returns tg as clients reach it with c (plaintext when nil);
// the harness's own client stays tg's.
func (tg *target) reachedWith(c *clientSecurity) *target {
	return &target{name: tg.name, bin: tg.bin, rf: tg.rf, nodes: tg.nodes, ctl: tg.ctl, client: tg.client, sec: c}
}

// checkSecureRefused: a node whose SASL_SSL listener requires client
// certificates and SCRAM takes no record from a client with a wrong
// password, from one without a certificate, nor from one speaking
// plaintext to it. Each tries to produce a record with acks=all; the
// client must report a failure (or still be failing when the attempt is
// given up after 10 s, as librdkafka, kgo and kafkajs retry), and the
// partition must stay empty.
func checkSecureRefused(ctx context.Context, x *run) error {
	topic := x.topic()
	if err := x.tg.createTopic(ctx, topic, 1, nil); err != nil {
		return err
	}
	good := x.tg.sec
	wrongPassword, noCertificate := *good, *good
	wrongPassword.password = "not the password"
	noCertificate.certFile, noCertificate.keyFile = "", ""
	noCertificate.tlsConfig = &tls.Config{RootCAs: good.tlsConfig.RootCAs}
	for _, c := range []struct {
		name string
		sec  *clientSecurity
	}{{"with a wrong password", &wrongPassword}, {"without a client certificate", &noCertificate}, {"in plaintext", nil}} {
		attempt, cancel := context.WithTimeout(ctx, 10*time.Second)
		acked, err := x.d.produce(attempt, x.tg.reachedWith(c.sec), produceSpec{Topic: topic, Acks: -1, Compression: "none",
			Records: []rec{{Partition: 0, Offset: 0, Key: []byte("k"), Value: []byte("refused")}}})
		cancel()
		if err == nil {
			return fmt.Errorf("a client %s produced: %v", c.name, acked)
		}
		x.t.Logf("     %s, %s: refused: %s", x.d.name(), c.name, firstLine(err.Error()))
	}
	batches, err := x.tg.readLog(ctx, topic, 0)
	if err != nil {
		return err
	}
	if len(batches) > 0 {
		return fmt.Errorf("the partition holds %d batches from refused clients", len(batches))
	}
	return nil
}

// The user the acls check grants and takes ACLs from; compat, the
// clients' own user, is the node's super user.
const (
	limitedUser     = "limited"
	limitedPassword = "limited-secret"
)

// checkACLs: the sasl_ssl node checks ACLs (serve --acls, compat its
// super user). Through the client, the user limited, who has no ACL,
// cannot produce (nothing is written), consume, create a topic or delete
// one; once compat grants limited WRITE and READ on the topic, READ on
// every group, and CREATE and DELETE on a prefix (CreateAcls, through partlog's client), the same
// client produces, reads back exactly what it produced and what compat
// did, creates a topic under the prefix and deletes it. The admin steps
// are skipped for a client without admin calls.
func checkACLs(ctx context.Context, x *run) error {
	topic := x.topic()
	if err := x.tg.createTopic(ctx, topic, 1, nil); err != nil {
		return err
	}
	first := rec{Partition: 0, Offset: 0, Key: []byte("k"), Value: []byte("by compat")}
	if _, err := x.d.produce(ctx, x.tg, produceSpec{Topic: topic, Acks: -1, Compression: "none", Records: []rec{first}}); err != nil {
		return fmt.Errorf("compat, the super user, produces: %w", err)
	}
	sec := *x.tg.sec
	sec.user, sec.password = limitedUser, limitedPassword
	limited := x.tg.reachedWith(&sec)
	a := x.d.admin()
	prefix := topic + "-owned-"

	refused := func(what string, err error) error {
		var na *naError
		switch {
		case errors.As(err, &na):
			x.t.Logf("     %s, %s: N/A (%s)", x.d.name(), what, na.reason)
		case err == nil:
			return fmt.Errorf("limited, with no ACL, %s", what)
		default:
			x.t.Logf("     %s, limited %s: refused: %s", x.d.name(), what, firstLine(err.Error()))
		}
		return nil
	}
	attempt := func(f func(ctx context.Context) error) error {
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		return f(ctx)
	}
	second := rec{Partition: 0, Offset: 1, Key: []byte("k"), Value: []byte("by limited")}
	if err := refused("produced", attempt(func(ctx context.Context) error {
		_, err := x.d.produce(ctx, limited, produceSpec{Topic: topic, Acks: -1, Compression: "none", Records: []rec{second}})
		return err
	})); err != nil {
		return err
	}
	if err := refused("consumed", attempt(func(ctx context.Context) error {
		got, err := x.d.consume(ctx, limited, consumeSpec{Topic: topic, Partition: 0, From: start{Kind: "beginning"}, Count: 1})
		if err == nil && len(got) == 0 {
			return fmt.Errorf("no record")
		}
		return err
	})); err != nil {
		return err
	}
	if err := refused("created a topic", attempt(func(ctx context.Context) error {
		return a.createTopic(ctx, limited, prefix+"a", 1, x.tg.rf, map[string]string{})
	})); err != nil {
		return err
	}
	if err := refused("deleted a topic", attempt(func(ctx context.Context) error { return a.deleteTopic(ctx, limited, topic) })); err != nil {
		return err
	}
	if batches, err := x.tg.readLog(ctx, topic, 0); err != nil {
		return err
	} else if len(batches) != 1 {
		return fmt.Errorf("the partition holds %d batches, want compat's one", len(batches))
	}

	if err := x.tg.grant(ctx, limitedUser,
		auth.ACL{ResourceType: auth.TopicResource, ResourceName: topic, PatternType: auth.LiteralPattern, Operation: auth.WriteOperation},
		auth.ACL{ResourceType: auth.TopicResource, ResourceName: topic, PatternType: auth.LiteralPattern, Operation: auth.ReadOperation},
		// librdkafka's and kafkajs's consumers have a group even when
		// assigned partitions: READ on every group.
		auth.ACL{ResourceType: auth.GroupResource, ResourceName: auth.WildcardName, PatternType: auth.LiteralPattern, Operation: auth.ReadOperation},
		auth.ACL{ResourceType: auth.TopicResource, ResourceName: prefix, PatternType: auth.PrefixedPattern, Operation: auth.CreateOperation},
		auth.ACL{ResourceType: auth.TopicResource, ResourceName: prefix, PatternType: auth.PrefixedPattern, Operation: auth.DeleteOperation},
	); err != nil {
		return err
	}
	acked, err := x.d.produce(ctx, limited, produceSpec{Topic: topic, Acks: -1, Compression: "none", Records: []rec{second}})
	if err != nil {
		return fmt.Errorf("limited, granted WRITE, produces: %w", err)
	}
	if err := checkAcked("limited's produce", acked, []rec{second}); err != nil {
		return err
	}
	got, err := x.d.consume(ctx, limited, consumeSpec{Topic: topic, Partition: 0, From: start{Kind: "beginning"}, Count: 2})
	if err != nil {
		return fmt.Errorf("limited, granted READ, consumes: %w", err)
	}
	if err := sameRecords("limited reads back", got, []rec{first, second}); err != nil {
		return err
	}
	var na *naError
	if err := a.createTopic(ctx, limited, prefix+"a", 1, x.tg.rf, map[string]string{}); errors.As(err, &na) {
		return nil
	} else if err != nil {
		return fmt.Errorf("limited, granted CREATE on %s*, creates a topic: %w", prefix, err)
	}
	if err := a.deleteTopic(ctx, limited, prefix+"a"); err != nil {
		return fmt.Errorf("limited, granted DELETE on %s*, deletes a topic: %w", prefix, err)
	}
	return x.tg.waitTopicGone(ctx, prefix+"a")
}

// grant gives user the ACLs (their resources, patterns and operations;
// ALLOW from every host), through partlog's client as the super user.
func (tg *target) grant(ctx context.Context, user string, acls ...auth.ACL) error {
	c, err := transport.Dial(ctx, tg.addrs()[0], tg.dialOptions())
	if err != nil {
		return err
	}
	defer c.Close()
	for i := range acls {
		acls[i].Principal, acls[i].Host, acls[i].Permission = auth.User(user).String(), auth.WildcardHost, auth.Allow
	}
	errs, err := c.CreateACLs(ctx, acls)
	if err != nil {
		return fmt.Errorf("harness: create ACLs: %w", err)
	}
	for i, err := range errs {
		if err != nil {
			return fmt.Errorf("harness: create ACL %s: %w", acls[i], err)
		}
	}
	return nil
}
