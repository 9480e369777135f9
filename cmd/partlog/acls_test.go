package main

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestAcls serves a node with --acls over SASL_PLAINTEXT, admin its super
// user, and manages ACLs with 'partlog acls' as kafka-acls.sh does: alice
// cannot produce, consume or list until admin adds --producer and
// --consumer ACLs for her; list prints them as Kafka's tool does; alice
// cannot add ACLs herself; removing her Read takes consuming back.
func TestAcls(t *testing.T) {
	dir := t.TempDir()
	props := t.TempDir()
	users := writeFile(t, props, "users.properties", "admin=admin-secret\nalice=alice-secret\n")
	addr, stop := serveInBackground(t, "--dir", dir, "--listen", "SASL_PLAINTEXT://127.0.0.1:0", "--sasl-users", users,
		"--acls", "--super-users", "User:admin")
	login := func(user string) string {
		return writeFile(t, props, user+".properties", "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-512\n"+
			"sasl.username="+user+"\nsasl.password="+user+"-secret\n")
	}
	admin, alice := login("admin"), login("alice")
	as := func(config, input string, args ...string) (string, string, int) {
		t.Helper()
		return cliIn(t, input, append(args, "--bootstrap-server", addr, "--command-config", config)...)
	}
	_, stderr, code := as(admin, "", "topics", "create", "--topic", "orders", "--partitions", "1")
	require.Equal(t, exitOK, code, stderr)

	_, stderr, code = as(alice, "one\ntwo\n", "produce", "--topic", "orders")
	require.Equal(t, exitFailure, code)
	require.Contains(t, stderr, "TOPIC_AUTHORIZATION_FAILED")
	out, stderr, code := as(alice, "", "topics", "list")
	require.Equal(t, exitOK, code, stderr)
	require.Empty(t, out, "alice lists a topic she may not describe")
	_, stderr, code = as(alice, "", "acls", "add", "--allow-principal", "User:alice", "--operation", "All", "--topic", "orders")
	require.Equal(t, exitFailure, code)
	require.Contains(t, stderr, "CLUSTER_AUTHORIZATION_FAILED")

	out, stderr, code = as(admin, "", "acls", "--add", "--allow-principal", "User:alice", "--producer", "--consumer", "--topic", "orders", "--group", "billing")
	require.Equal(t, exitOK, code, stderr)
	require.Contains(t, out, "Adding ACLs for resource `ResourcePattern(resourceType=TOPIC, name=orders, patternType=LITERAL)`: \n"+
		" \t(principal=User:alice, host=*, operation=WRITE, permissionType=ALLOW) \n")
	_, stderr, code = as(alice, "one\ntwo\n", "produce", "--topic", "orders")
	require.Equal(t, exitOK, code, stderr)
	out, stderr, code = as(alice, "", "consume", "--topic", "orders", "--group", "billing", "--from-beginning", "--max-messages", "2", "--timeout", "10s")
	require.Equal(t, exitOK, code, stderr)
	require.Equal(t, []string{"one", "two"}, lines(out))

	out, stderr, code = as(admin, "", "acls", "list", "--topic", "orders")
	require.Equal(t, exitOK, code, stderr)
	require.Equal(t, "Current ACLs for resource `ResourcePattern(resourceType=TOPIC, name=orders, patternType=LITERAL)`: \n"+
		" \t(principal=User:alice, host=*, operation=WRITE, permissionType=ALLOW) \n"+
		" \t(principal=User:alice, host=*, operation=DESCRIBE, permissionType=ALLOW) \n"+
		" \t(principal=User:alice, host=*, operation=CREATE, permissionType=ALLOW) \n"+
		" \t(principal=User:alice, host=*, operation=READ, permissionType=ALLOW) \n\n", out)

	out, stderr, code = as(admin, "", "acls", "remove", "--allow-principal", "User:alice", "--operation", "Read", "--topic", "orders")
	require.Equal(t, exitOK, code, stderr)
	require.Contains(t, out, "operation=READ")
	_, stderr, code = as(alice, "", "consume", "--topic", "orders", "--from-beginning", "--max-messages", "1", "--timeout", "5s")
	require.Equal(t, exitFailure, code)
	require.Contains(t, stderr, "TOPIC_AUTHORIZATION_FAILED")

	_, stderr, code = cli(t, "acls", "add", "--bootstrap-server", addr, "--topic", "orders", "--operation", "Read")
	require.Equal(t, exitUsage, code)
	require.Contains(t, stderr, "--allow-principal or --deny-principal")
	_, stderr, code = cli(t, "acls", "add", "--bootstrap-server", addr, "--allow-principal", "User:alice", "--topic", "orders", "--operation", "Fly")
	require.Equal(t, exitUsage, code)
	require.Contains(t, stderr, `unknown operation "Fly"`)
	_, stderr, code = cli(t, "serve", "--dir", t.TempDir(), "--super-users", "User:admin")
	require.Equal(t, exitUsage, code)
	require.Contains(t, stderr, "go with --acls")

	serveErr, code := stop()
	require.Equal(t, exitOK, code, serveErr)
}

// TestConfigsQuotas manages quotas with 'partlog configs' as
// kafka-configs.sh does — a user's, the default client id's, a user's
// client id's — describes them back in Kafka's words, and serves a node
// whose quota window (--quota-window-num 2: a second's burst) makes a
// produce of 96 KiB at 32 KiB/s from the quota's client id take at least
// two seconds, while the same produce from another client id is not
// throttled.
func TestConfigsQuotas(t *testing.T) {
	dir := t.TempDir()
	cfg := func(args ...string) string {
		t.Helper()
		out, stderr, code := cli(t, append([]string{"configs"}, args...)...)
		require.Equal(t, exitOK, code, "%v: %s", args, stderr)
		return out
	}
	require.Equal(t, "Completed updating config for user-principal 'alice'.\n",
		cfg("--alter", "--dir", dir, "--entity-type", "users", "--entity-name", "alice", "--add-config", "producer_byte_rate=1024,consumer_byte_rate=2048"))
	cfg("--alter", "--dir", dir, "--entity-type", "clients", "--entity-default", "--add-config", "request_percentage=50")
	cfg("--alter", "--dir", dir, "--user", "alice", "--client", "app", "--add-config", "producer_byte_rate=4096")
	require.Equal(t, "Quota configs for user-principal 'alice' are consumer_byte_rate=2048.0, producer_byte_rate=1024.0\n",
		cfg("--describe", "--dir", dir, "--entity-type", "users", "--entity-name", "alice"))
	require.Equal(t, "Quota configs for the default client-id are request_percentage=50.0\n",
		cfg("--describe", "--dir", dir, "--entity-type", "clients"))
	require.Equal(t, "Quota configs for user-principal 'alice', client-id 'app' are producer_byte_rate=4096.0\n",
		cfg("--describe", "--dir", dir, "--user", "alice", "--client", "app"))
	cfg("--alter", "--dir", dir, "--entity-type", "users", "--entity-name", "alice", "--delete-config", "producer_byte_rate,consumer_byte_rate")
	require.Empty(t, cfg("--describe", "--dir", dir, "--entity-type", "users"), "alice's quotas outlived their deletion")
	_, stderr, code := cli(t, "configs", "--alter", "--dir", dir, "--entity-type", "clients", "--entity-name", "x", "--add-config", "bytes_a_second=1")
	require.Equal(t, exitUsage, code)
	require.Contains(t, stderr, `"bytes_a_second" is not a quota`)
	cfg("--alter", "--dir", dir, "--entity-type", "clients", "--entity-name", "slow", "--add-config", "producer_byte_rate=32768")

	addr, stop := serveInBackground(t, "--dir", dir, "--quota-window-num", "2")
	props := t.TempDir()
	// 128 records of 1000 bytes at 32 KiB/s with a second's burst owe about
	// three seconds. The client never waits out its last request's throttle
	// (at most a window, a second: the answer comes before the mute), so the
	// run takes at least two of them, whatever the producer's batching.
	input := strings.Repeat(strings.Repeat("x", 1000)+"\n", 128)
	produce := func(client string) time.Duration {
		config := writeFile(t, props, client+".properties", "client.id="+client+"\n")
		began := time.Now()
		_, stderr, code := cliIn(t, input, "produce", "--bootstrap-server", addr, "--command-config", config, "--topic", "metered")
		require.Equal(t, exitOK, code, stderr)
		return time.Since(began)
	}
	_, stderr, code = cli(t, "topics", "create", "--bootstrap-server", addr, "--topic", "metered")
	require.Equal(t, exitOK, code, stderr)
	slow := produce("slow")
	require.GreaterOrEqual(t, slow, 1800*time.Millisecond, "128 kB at 32 KiB/s, a second's burst")
	fast := produce("fast")
	require.Less(t, fast, slow/2, "a client id with no quota was slowed too")
	t.Logf("128 kB: %v as slow, %v as fast", slow, fast)
	serveErr, code := stop()
	require.Equal(t, exitOK, code, serveErr)
}
