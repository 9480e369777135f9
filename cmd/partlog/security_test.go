package main

import (
	"context"
	"crypto/tls"
	"crypto/x509/pkix"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/partlog/partlog/consumer"
	"github.com/partlog/partlog/internal/testcert"
	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/producer"
	"github.com/partlog/partlog/transport"
)

// tlsFiles writes a CA's certificate (ca.pem), a node's key store
// (node.pem) and two clients' (alice.pem: CN=alice,OU=eng; bob.pem:
// CN=bob,OU=ops) to a new directory, and returns it.
func tlsFiles(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	ca, err := testcert.NewCA("partlog test CA")
	require.NoError(t, err)
	_, err = ca.WriteCA(dir, "ca.pem")
	require.NoError(t, err)
	for name, subject := range map[string]pkix.Name{
		"node.pem":  {CommonName: "node-1"},
		"alice.pem": {CommonName: "alice", OrganizationalUnit: []string{"eng"}},
		"bob.pem":   {CommonName: "bob", OrganizationalUnit: []string{"ops"}},
	} {
		cert, err := ca.Issue(subject)
		require.NoError(t, err)
		_, err = testcert.WriteKeyPair(cert, dir, name)
		require.NoError(t, err)
	}
	return dir
}

// writeFile writes text to dir/name and returns the path.
func writeFile(t *testing.T, dir, name, text string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(path, []byte(text), 0o600))
	return path
}

// TestServeSSL serves a node on an SSL listener that requires client
// certificates, and works on it with the topic, produce and consume
// commands given a --command-config as Kafka's tools take it: the records
// come back as produced. A client without the key store, or with a
// certificate no mapping rule takes, or speaking plaintext, is refused.
func TestServeSSL(t *testing.T) {
	certs := tlsFiles(t)
	dir := t.TempDir()
	addr, stop := serveInBackground(t, "--dir", dir, "--listen", "SSL://127.0.0.1:0",
		"--ssl-keystore", filepath.Join(certs, "node.pem"), "--ssl-truststore", filepath.Join(certs, "ca.pem"),
		"--ssl-client-auth", "required", "--ssl-principal-mapping-rules", "RULE:^CN=(.*?),OU=eng$/$1/")

	alice := writeFile(t, certs, "alice.properties", "# alice, over TLS\nsecurity.protocol=SSL\nssl.truststore.type=PEM\n"+
		"ssl.truststore.location="+filepath.Join(certs, "ca.pem")+"\nssl.keystore.location="+filepath.Join(certs, "alice.pem")+"\n")
	run := func(input string, args ...string) string {
		t.Helper()
		stdout, stderr, code := cliIn(t, input, append(args, "--bootstrap-server", addr, "--command-config", alice)...)
		require.Equal(t, exitOK, code, "%v: %s", args, stderr)
		require.NotContains(t, stderr, "ignored")
		return stdout
	}
	require.Equal(t, "Created topic secure.\n", run("", "topics", "create", "--topic", "secure", "--partitions", "2"))
	run("k1:hello\nk2:world\nk1:again\n", "produce", "--topic", "secure", "--key-separator", ":")
	got := lines(run("", "consume", "--topic", "secure", "--from-beginning", "--print-key", "--max-messages", "3", "--timeout", "10s"))
	require.ElementsMatch(t, []string{"k1\thello", "k2\tworld", "k1\tagain"}, got)

	refused := func(args ...string) string {
		t.Helper()
		_, stderr, code := cli(t, append([]string{"topics", "list", "--bootstrap-server", addr}, args...)...)
		require.Equal(t, exitFailure, code, stderr)
		return stderr
	}
	noCert := writeFile(t, certs, "nocert.properties", "security.protocol=SSL\nssl.truststore.location="+filepath.Join(certs, "ca.pem")+"\n")
	require.Contains(t, refused("--command-config", noCert), "SSL authentication failed")
	bob := writeFile(t, certs, "bob.properties", "security.protocol=SSL\nssl.truststore.location="+filepath.Join(certs, "ca.pem")+
		"\nssl.keystore.location="+filepath.Join(certs, "bob.pem")+"\n")
	require.Contains(t, refused("--command-config", bob), "SSL authentication failed")
	refused() // plaintext

	stderr, code := stop()
	require.Equal(t, exitOK, code, stderr)
	require.Contains(t, stderr, "partlog: node 1 serving "+dir+" on SSL://"+addr+"\n")
}

// TestSSLUsageErrors checks the flags and client properties that do not
// go together.
func TestSSLUsageErrors(t *testing.T) {
	certs := tlsFiles(t)
	node, ca := filepath.Join(certs, "node.pem"), filepath.Join(certs, "ca.pem")
	users := writeFile(t, certs, "users.properties", "alice=alice-secret\n")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"serve", "--dir", t.TempDir(), "--listen", "127.0.0.1:0", "--ssl-keystore", node}, "the --ssl flags need an SSL or SASL_SSL listener"},
		{[]string{"serve", "--dir", t.TempDir(), "--listen", "SSL://127.0.0.1:0"}, "an SSL listener needs --ssl-keystore"},
		{[]string{"serve", "--dir", t.TempDir(), "--listen", "SSL://127.0.0.1:0", "--ssl-keystore", node, "--ssl-client-auth", "required"}, "--ssl-client-auth required needs --ssl-truststore"},
		{[]string{"serve", "--dir", t.TempDir(), "--listen", "SSL://127.0.0.1:0", "--ssl-keystore", node, "--ssl-client-auth", "always"}, `--ssl-client-auth "always" is not none, requested or required`},
		{[]string{"serve", "--dir", t.TempDir(), "--listen", "SSL://127.0.0.1:0", "--ssl-keystore", ca}, "key store " + ca},
		{[]string{"serve", "--dir", t.TempDir(), "--listen", "SASL_SSL://127.0.0.1:0"}, "an SASL_SSL listener needs --ssl-keystore"},
		{[]string{"serve", "--dir", t.TempDir(), "--listen", "127.0.0.1:0", "--sasl-users", ca}, "the --sasl flags need a SASL_PLAINTEXT or SASL_SSL listener"},
		{[]string{"serve", "--dir", t.TempDir(), "--listen", "SASL_PLAINTEXT://127.0.0.1:0", "--sasl-users", users, "--sasl-enabled-mechanisms", "PLAIN,GSSAPI"}, `--sasl-enabled-mechanisms: "GSSAPI" is not one of`},
		{[]string{"serve", "--dir", t.TempDir(), "--listen", "SASL_PLAINTEXT://127.0.0.1:0", "--sasl-users", users, "--sasl-inter-broker-user", "carol"}, "--sasl-inter-broker-user carol is not a user of --sasl-users"},
		{[]string{"serve", "--dir", t.TempDir(), "--listen", "SASL_PLAINTEXT://127.0.0.1:0", "--sasl-users", users, "--node-id", "1", "--controller", "127.0.0.1:1"}, "a cluster member with a SASL listener needs --sasl-inter-broker-user"},
		{[]string{"serve", "--dir", t.TempDir(), "--listen", "TLS://127.0.0.1:0"}, `unknown security protocol "TLS"`},
		{[]string{"serve", "--dir", t.TempDir(), "--node-id", "1", "--controller", "SSL://127.0.0.1:1", "--listen", "127.0.0.1:0"}, "--controller SSL://... needs the node's --ssl-keystore"},
		{[]string{"serve", "--dir", t.TempDir(), "--node-id", "1", "--controller", "SSL://127.0.0.1:1,127.0.0.1:2", "--listen", "127.0.0.1:0"}, "the controllers of a quorum all serve TLS or none does"},
		{[]string{"serve", "--dir", t.TempDir(), "--node-id", "1", "--controller", "SSL://127.0.0.1:1", "--listen", "SSL://127.0.0.1:0", "--ssl-keystore", node}, "a cluster member with an SSL listener needs --ssl-truststore"},
		{[]string{"controller", "--dir", t.TempDir(), "--listen", "SASL_SSL://127.0.0.1:0"}, "a controller's listener is PLAINTEXT or SSL, not SASL_SSL"},
		{[]string{"controller", "--dir", t.TempDir(), "--security-protocol", "SSL"}, "--security-protocol is for --voters"},
		{[]string{"controller", "--dir", t.TempDir(), "--listen", "SSL://127.0.0.1:0"}, "an SSL listener needs --ssl-keystore"},
		{[]string{"controller", "--dir", t.TempDir(), "--node-id", "1", "--voters", "1@127.0.0.1:1", "--security-protocol", "SSL", "--ssl-keystore", node}, "a voter with an SSL listener needs --ssl-truststore"},
		{[]string{"serve", "--dir", t.TempDir(), "--listen", "SSL://127.0.0.1:0", "--ssl-keystore", node, "--ssl-principal-mapping-rules", "RULE:x"}, "--ssl-principal-mapping-rules: auth: principal mapping rule"},
		{[]string{"topics", "list", "--dir", t.TempDir(), "--command-config", ca}, "--command-config needs --bootstrap-server"},
		{[]string{"topics", "list", "--bootstrap-server", "127.0.0.1:1", "--command-config", writeFile(t, certs, "sasl.properties", "security.protocol=SASL_SSL\n")}, "sasl.mechanism is required"},
		{[]string{"topics", "list", "--bootstrap-server", "127.0.0.1:1", "--command-config", writeFile(t, certs, "gssapi.properties", "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=GSSAPI\n")}, "sasl.mechanism GSSAPI: partlog speaks"},
		{[]string{"topics", "list", "--bootstrap-server", "127.0.0.1:1", "--command-config", writeFile(t, certs, "nouser.properties", "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n")}, `sasl.jaas.config needs username="..." and password="..."`},
		{[]string{"topics", "list", "--bootstrap-server", "127.0.0.1:1", "--command-config", writeFile(t, certs, "plainjaas.properties", "sasl.mechanism=PLAIN\n")}, "sasl.mechanism needs security.protocol SASL_PLAINTEXT or SASL_SSL"},
		{[]string{"topics", "list", "--bootstrap-server", "127.0.0.1:1", "--command-config", writeFile(t, certs, "jks.properties", "security.protocol=SSL\nssl.truststore.type=JKS\n")}, "ssl.truststore.type=JKS: partlog reads PEM files only"},
		{[]string{"topics", "list", "--bootstrap-server", "127.0.0.1:1", "--command-config", writeFile(t, certs, "plain.properties", "ssl.keystore.location=x\n")}, "ssl.keystore.location needs security.protocol SSL or SASL_SSL"},
	} {
		_, stderr, code := cli(t, tc.args...)
		require.Equal(t, exitUsage, code, "%v: %s", tc.args, stderr)
		require.Contains(t, stderr, tc.want, tc.args)
	}
}

// TestServeSASLSSL serves a node on a SASL_SSL listener whose users come
// from --sasl-users, and works on it with --command-config files as
// Kafka's tools take them: SCRAM-SHA-512 with sasl.jaas.config, and PLAIN
// with librdkafka's sasl.username and sasl.password. A wrong password is
// refused with Kafka's error, and so is a client that skips SASL.
func TestServeSASLSSL(t *testing.T) {
	certs := tlsFiles(t)
	users := writeFile(t, certs, "users.properties", "# the node's users\nalice=alice-secret\nbob=bob \"quoted\" secret\n")
	addr, stop := serveInBackground(t, "--dir", t.TempDir(), "--listen", "SASL_SSL://127.0.0.1:0",
		"--ssl-keystore", filepath.Join(certs, "node.pem"), "--sasl-users", users)
	ca := filepath.Join(certs, "ca.pem")
	scram := writeFile(t, certs, "scram.properties", "security.protocol=SASL_SSL\nssl.truststore.location="+ca+"\nsasl.mechanism=SCRAM-SHA-512\n"+
		`sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="alice" password="alice-secret";`+"\n")
	plain := writeFile(t, certs, "plain.properties", "security.protocol=SASL_SSL\nssl.truststore.location="+ca+"\nsasl.mechanism=PLAIN\n"+
		"sasl.username=bob\nsasl.password=bob \"quoted\" secret\n")
	jaasQuoted := writeFile(t, certs, "quoted.properties", "security.protocol=SASL_SSL\nssl.truststore.location="+ca+"\nsasl.mechanism=SCRAM-SHA-256\n"+
		`sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="bob" password="bob \"quoted\" secret";`+"\n")
	run := func(config, input string, args ...string) string {
		t.Helper()
		stdout, stderr, code := cliIn(t, input, append(args, "--bootstrap-server", addr, "--command-config", config)...)
		require.Equal(t, exitOK, code, "%v: %s", args, stderr)
		return stdout
	}
	require.Equal(t, "Created topic secure.\n", run(scram, "", "topics", "create", "--topic", "secure"))
	run(plain, "one\ntwo\n", "produce", "--topic", "secure")
	require.Equal(t, []string{"one", "two"}, lines(run(jaasQuoted, "", "consume", "--topic", "secure", "--from-beginning", "--max-messages", "2", "--timeout", "10s")))

	wrong := writeFile(t, certs, "wrong.properties", "security.protocol=SASL_SSL\nssl.truststore.location="+ca+"\nsasl.mechanism=SCRAM-SHA-256\n"+
		`sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="alice" password="bob-secret";`+"\n")
	_, stderr, code := cli(t, "topics", "list", "--bootstrap-server", addr, "--command-config", wrong)
	require.Equal(t, exitFailure, code)
	require.Contains(t, stderr, "SASL_AUTHENTICATION_FAILED")
	sslOnly := writeFile(t, certs, "ssl-only.properties", "security.protocol=SSL\nssl.truststore.location="+ca+"\n")
	_, stderr, code = cli(t, "topics", "list", "--bootstrap-server", addr, "--command-config", sslOnly)
	require.Equal(t, exitFailure, code, stderr)

	serveErr, code := stop()
	require.Equal(t, exitOK, code, serveErr)
	require.Contains(t, serveErr, "on SASL_SSL://"+addr+"\n")
}

// TestConfigsUsers manages SCRAM users with 'partlog configs --entity-type
// users', as kafka-configs.sh does: the first user on the data directory
// of a stopped node, then the node serves a SASL listener with no static
// users, the user authenticates, and manages the others through it.
func TestConfigsUsers(t *testing.T) {
	dir := t.TempDir()
	cfg := func(args ...string) (string, string, int) {
		t.Helper()
		return cli(t, append([]string{"configs"}, args...)...)
	}
	out, stderr, code := cfg("--alter", "--dir", dir, "--entity-type", "users", "--entity-name", "admin",
		"--add-config", "SCRAM-SHA-256=[iterations=8192,password=admin-secret],SCRAM-SHA-512=[password=admin-secret]")
	require.Equal(t, exitOK, code, stderr)
	require.Equal(t, "Completed updating config for user admin.\n", out)
	out, stderr, code = cfg("--describe", "--dir", dir, "--entity-type", "users")
	require.Equal(t, exitOK, code, stderr)
	require.Equal(t, "SCRAM credential configs for user-principal 'admin' are SCRAM-SHA-256=iterations=8192, SCRAM-SHA-512=iterations=4096\n", out)

	addr, stop := serveInBackground(t, "--dir", dir, "--listen", "SASL_PLAINTEXT://127.0.0.1:0")
	props := t.TempDir()
	login := func(user, password string) string {
		return writeFile(t, props, user+".properties", "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-512\n"+
			`sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="`+user+`" password="`+password+`";`+"\n")
	}
	admin := login("admin", "admin-secret")
	out, stderr, code = cfg("--alter", "--bootstrap-server", addr, "--command-config", admin, "--entity-type", "users", "--entity-name", "bob",
		"--add-config", "SCRAM-SHA-512=[password=bob-secret]")
	require.Equal(t, exitOK, code, stderr)
	require.Equal(t, "Completed updating config for user bob.\n", out)
	_, stderr, code = cli(t, "topics", "list", "--bootstrap-server", addr, "--command-config", login("bob", "bob-secret"))
	require.Equal(t, exitOK, code, stderr)
	out, stderr, code = cfg("--alter", "--bootstrap-server", addr, "--command-config", admin, "--entity-type", "users", "--entity-name", "bob",
		"--delete-config", "SCRAM-SHA-512")
	require.Equal(t, exitOK, code, stderr)
	_, stderr, code = cli(t, "topics", "list", "--bootstrap-server", addr, "--command-config", login("bob", "bob-secret"))
	require.Equal(t, exitFailure, code)
	require.Contains(t, stderr, "SASL_AUTHENTICATION_FAILED")
	_, stderr, code = cfg("--describe", "--bootstrap-server", addr, "--command-config", admin, "--entity-type", "users", "--entity-name", "bob")
	require.Equal(t, exitFailure, code)
	require.Contains(t, stderr, "RESOURCE_NOT_FOUND")
	_, stderr, code = cfg("--alter", "--bootstrap-server", addr, "--command-config", admin, "--entity-type", "users", "--entity-name", "bob",
		"--add-config", "SCRAM-SHA-512=[iterations=100,password=x]")
	require.Equal(t, exitUsage, code)
	require.Contains(t, stderr, "100 SCRAM iterations")
	_, stderr, code = cfg("--alter", "--bootstrap-server", addr, "--command-config", admin, "--entity-type", "users", "--entity-name", "bob",
		"--add-config", "retention.ms=1")
	require.Equal(t, exitUsage, code)
	require.Contains(t, stderr, `a user's config is SCRAM-SHA-256 or SCRAM-SHA-512, or a quota (producer_byte_rate, consumer_byte_rate, request_percentage), not "retention.ms"`)
	stderr, code = stop()
	require.Equal(t, exitOK, code, stderr)
}

// serveInBackground runs 'partlog serve' with args until the test calls
// the returned stop, which interrupts it and returns its standard error
// and exit code; addr is where it listens.
func serveInBackground(t *testing.T, args ...string) (addr string, stop func() (stderr string, code int)) {
	t.Helper()
	interrupt := interruptible(t)
	ready := make(chan string, 1)
	serveReady = func(addr string) { ready <- addr }
	t.Cleanup(func() { serveReady = nil })
	type result struct {
		stderr string
		code   int
	}
	done := make(chan result, 1)
	go func() {
		_, stderr, code := cli(t, append([]string{"serve"}, args...)...)
		done <- result{stderr, code}
	}()
	select {
	case addr = <-ready:
	case r := <-done:
		t.Fatalf("serve exited with %d before serving: %s", r.code, r.stderr)
	}
	return addr, func() (string, int) {
		interrupt()
		r := <-done
		return r.stderr, r.code
	}
}

// TestClusterProcessesSASLSSL runs a secured cluster as processes, as an
// operator would start it: a controller on an SSL listener that requires
// certificates, three nodes on SASL_SSL listeners that require
// certificates and SCRAM, reaching the controller (--controller SSL://...)
// and each other (as the user node) over them. alice creates a topic that
// needs all three replicas in sync, produces with acks=all and reads every
// record back; bob, whose password is wrong, is refused. The nodes check
// ACLs (--acls) with node and alice as super users: the members' calls to
// each other go through, and carol, who has no ACL, may not describe the
// topic.
func TestClusterProcessesSASLSSL(t *testing.T) {
	bin := buildPartlog(t)
	certs := tlsFiles(t)
	dir := t.TempDir()
	users := writeFile(t, certs, "users.properties", "node=node-secret\nalice=alice-secret\ncarol=carol-secret\n")
	ssl := []string{"--ssl-keystore", filepath.Join(certs, "node.pem"), "--ssl-truststore", filepath.Join(certs, "ca.pem"), "--ssl-client-auth", "required"}
	ctl := startProcess(t, bin, append([]string{"controller", "--dir", filepath.Join(dir, "controller"), "--listen", "SSL://127.0.0.1:0",
		"--session-timeout", "3s", "--tick", "20ms", "--log-level", "warn"}, ssl...)...)
	var addrs []string
	for id := 1; id <= 3; id++ {
		n := startProcess(t, bin, append([]string{"serve", "--dir", filepath.Join(dir, strconv.Itoa(id)), "--node-id", strconv.Itoa(id),
			"--controller", "SSL://" + ctl.addr, "--listen", "SASL_SSL://127.0.0.1:0", "--sasl-users", users,
			"--sasl-inter-broker-user", "node", "--acls", "--super-users", "User:node;User:alice",
			"--heartbeat", "100ms", "--log-level", "warn"}, ssl...)...)
		addrs = append(addrs, n.addr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cert, err := readKeyStore(filepath.Join(certs, "alice.pem"))
	require.NoError(t, err)
	pool, err := readTrustStore(filepath.Join(certs, "ca.pem"))
	require.NoError(t, err)
	peer := func(user, password string) transport.DialOptions {
		return transport.DialOptions{TLS: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}},
			SASL: &transport.SASLCredentials{Mechanism: "SCRAM-SHA-256", User: user, Password: password}}
	}
	admin, err := transport.Dial(ctx, addrs[0], peer("alice", "alice-secret"))
	require.NoError(t, err)
	defer admin.Close()
	created, err := admin.CreateTopics(ctx, &transport.CreateTopicsRequest{Topics: []transport.CreatableTopic{{Name: "secure", Partitions: 1,
		ReplicationFactor: 3, Configs: map[string]string{"min.insync.replicas": "3"}}}})
	require.NoError(t, err)
	require.NoError(t, created.Topics[0].Err)
	client, err := transport.DialCluster(ctx, addrs, peer("alice", "alice-secret"))
	require.NoError(t, err)
	defer client.Close()
	p, err := producer.New(client)
	require.NoError(t, err)
	var recs []*producer.Record
	for i := range 200 {
		recs = append(recs, &producer.Record{Topic: "secure", Value: []byte("secured " + strconv.Itoa(i))})
	}
	require.NoError(t, p.ProduceSync(ctx, recs...).FirstErr(), "acks=all with every replica in sync, over SASL_SSL")
	require.NoError(t, p.Close())
	cons, err := consumer.New(client, consumer.Topics("secure"), consumer.AutoOffsetReset(consumer.Earliest))
	require.NoError(t, err)
	defer cons.Close()
	got := 0
	for rec, err := range cons.Records(ctx) {
		require.NoError(t, err)
		require.Equal(t, "secured "+strconv.Itoa(got), string(rec.Value))
		if got++; got == len(recs) {
			break
		}
	}
	require.Equal(t, len(recs), got)
	_, err = transport.Dial(ctx, addrs[2], peer("bob", "bob-secret"))
	require.ErrorIs(t, err, kafka.ErrSaslAuthenticationFailed)
	carol, err := transport.Dial(ctx, addrs[1], peer("carol", "carol-secret"))
	require.NoError(t, err)
	defer carol.Close()
	md, err := carol.Metadata(ctx, &transport.MetadataRequest{Topics: []string{"secure"}})
	require.NoError(t, err)
	require.ErrorIs(t, md.Topics[0].Err, kafka.ErrTopicAuthorizationFailed)
}
