package compat

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/partlog/partlog/internal/testcert"
	"github.com/partlog/partlog/transport"
)

// clientTLS is what a client of a target with SSL listeners needs: PEM
// files of the authority that signed the node's certificate (caFile) and
// of the client's own certificate and private key, as librdkafka and
// kafkajs take them, and the same as a tls.Config for the Go clients.
type clientTLS struct {
	caFile, certFile, keyFile string
	config                    *tls.Config
}

// dialOptions are the options partlog's own clients reach tg with.
func (tg *target) dialOptions() transport.DialOptions {
	if tg.tls == nil {
		return transport.DialOptions{}
	}
	return transport.DialOptions{TLS: tg.tls.config}
}

// startSSL starts one 'partlog serve' on an SSL listener that requires a
// client certificate signed by the test's authority (mutual TLS), on a new
// data directory; the clients present CN=compat,OU=clients, which the
// node's mapping rule makes User:compat.
func startSSL(t *testing.T, bin string) *target {
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
	c := &clientTLS{caFile: caFile, certFile: filepath.Join(dir, "client.crt"), keyFile: filepath.Join(dir, "client.key"),
		config: &tls.Config{RootCAs: ca.Pool, Certificates: []tls.Certificate{clientCert}}}
	if err := os.WriteFile(c.certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: clientCert.Certificate[0]}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(c.keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	args := append([]string{"serve", "--dir", filepath.Join(dir, "ssl")}, nodeArgs()...)
	args = append(args, "--listen", "SSL://127.0.0.1:0", "--ssl-keystore", nodeFile, "--ssl-truststore", caFile,
		"--ssl-client-auth", "required", "--ssl-principal-mapping-rules", "RULE:^CN=(.*?),OU=clients$/$1/")
	p := startProcess(t, "the SSL node", bin, args...)
	tg := &target{name: "ssl", bin: bin, rf: 1, nodes: map[int32]*process{}, tls: c}
	id, err := tg.nodeID(p.addr)
	if err != nil {
		t.Fatal(err)
	}
	tg.nodes[id] = p
	tg.dial(t)
	return tg
}

// withoutCertificate returns c without the client's certificate: the
// node's authority is still trusted.
func (c *clientTLS) withoutCertificate() *clientTLS {
	return &clientTLS{caFile: c.caFile, config: &tls.Config{RootCAs: c.config.RootCAs}}
}

// reachedWith returns tg as clients reach it with c (plaintext when nil);
// the harness's own client stays tg's.
func (tg *target) reachedWith(c *clientTLS) *target {
	return &target{name: tg.name, bin: tg.bin, rf: tg.rf, nodes: tg.nodes, ctl: tg.ctl, client: tg.client, tls: c}
}

// checkSSLRefused: a node whose SSL listener requires client certificates
// takes no record from a client without one, nor from a client speaking
// plaintext to it. Each tries to produce a record with acks=all; the
// client must report a failure (or still be failing when the attempt is
// given up after 10 s, as librdkafka retries until message.timeout.ms),
// and the partition must stay empty.
func checkSSLRefused(ctx context.Context, x *run) error {
	topic := x.topic()
	if err := x.tg.createTopic(ctx, topic, 1, nil); err != nil {
		return err
	}
	for _, c := range []struct {
		name string
		tls  *clientTLS
	}{{"without a client certificate", x.tg.tls.withoutCertificate()}, {"in plaintext", nil}} {
		attempt, cancel := context.WithTimeout(ctx, 10*time.Second)
		acked, err := x.d.produce(attempt, x.tg.reachedWith(c.tls), produceSpec{Topic: topic, Acks: -1, Compression: "none",
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
