package main

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/partlog/partlog"
	"github.com/partlog/partlog/transport"
)

// TestConfigsOnADataDir: kafka-configs.sh's describe and alter of a
// topic's configs and a node's, on a data directory.
func TestConfigsOnADataDir(t *testing.T) {
	dir := newTopic(t, 1, "retention.ms=600000")
	testConfigs(t, dir, "--dir", dir)
}

// TestConfigsOverTCP: the same over --bootstrap-server, to a served node:
// the same output, the node's errors the same.
func TestConfigsOverTCP(t *testing.T) {
	n, addr := servedNode(t)
	require.NoError(t, n.CreateTopic(context.Background(), partlog.NewTopic{Name: "t", Configs: map[string]string{"retention.ms": "600000"}}))
	testConfigs(t, addr, "--bootstrap-server", addr)
}

// testConfigs runs the configs command on a node with topic t, which sets
// retention.ms=600000, given by target (--dir DIR or --bootstrap-server
// ADDR) and named where in messages.
func testConfigs(t *testing.T, where string, target ...string) {
	t.Helper()
	run := func(args ...string) string {
		t.Helper()
		stdout, stderr, code := cli(t, append(append([]string{"configs"}, args...), target...)...)
		require.Equal(t, exitOK, code, "%v: %s", args, stderr)
		require.Empty(t, stderr, args)
		return stdout
	}
	fail := func(want string, args ...string) {
		t.Helper()
		stdout, stderr, code := cli(t, append(append([]string{"configs"}, args...), target...)...)
		require.Equal(t, exitFailure, code, "%v: %s", args, stdout)
		require.Equal(t, "partlog: configs: "+want+"\n", stderr, args)
	}

	retention := "  retention.ms=600000 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:retention.ms=600000, DEFAULT_CONFIG:log.retention.ms=604800000}\n"
	require.Equal(t, "Dynamic configs for topic t are:\n"+retention, run("--describe", "--entity-type", "topics", "--entity-name", "t"))
	require.Equal(t, "Dynamic configs for topic t are:\n"+retention, run("describe", "--topic", "t"))
	require.Equal(t, "Dynamic configs for topic t are:\n"+retention, run("--describe", "--entity-type", "topics"), "every topic")

	all := lines(run("--describe", "--topic", "t", "--all"))
	require.Equal(t, "All configs for topic t are:", all[0])
	require.Len(t, all, 1+len(partlog.TopicConfigKeys()), "every topic config")
	require.Equal(t, "  cleanup.policy=delete sensitive=false synonyms={DEFAULT_CONFIG:log.cleanup.policy=delete}", all[1])
	require.Contains(t, all, strings.TrimSuffix(retention, "\n"))
	require.Contains(t, all, "  max.message.bytes=1048588 sensitive=false synonyms={DEFAULT_CONFIG:message.max.bytes=1048588}")

	require.Equal(t, "Completed updating config for topic t.\n",
		run("--alter", "--topic", "t", "--add-config", "cleanup.policy=[compact,delete], segment.bytes = 2048", "--delete-config", "retention.ms"))
	require.Equal(t, "Dynamic configs for topic t are:\n"+
		"  cleanup.policy=compact,delete sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:cleanup.policy=compact,delete, DEFAULT_CONFIG:log.cleanup.policy=delete}\n"+
		"  segment.bytes=2048 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:segment.bytes=2048, DEFAULT_CONFIG:log.segment.bytes=1073741824}\n",
		run("--describe", "--topic", "t"))

	file := filepath.Join(t.TempDir(), "t.properties")
	require.NoError(t, os.WriteFile(file, []byte("# retention\nretention.ms = 3600000\nmin.insync.replicas:1\n"), 0o644))
	require.Equal(t, "Completed updating config for topic t.\n", run("alter", "--entity-type", "topics", "--entity-name", "t", "--add-config-file", file, "--delete-config", "cleanup.policy,segment.bytes"))
	require.Equal(t, "Dynamic configs for topic t are:\n"+
		"  min.insync.replicas=1 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:min.insync.replicas=1, DEFAULT_CONFIG:min.insync.replicas=1}\n"+
		"  retention.ms=3600000 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:retention.ms=3600000, DEFAULT_CONFIG:log.retention.ms=604800000}\n",
		run("--describe", "--topic", "t"))

	// A node's settings: all static, so none dynamic.
	require.Equal(t, "Dynamic configs for broker 1 are:\n", run("--describe", "--broker", "1"))
	require.Equal(t, "Dynamic configs for broker 1 are:\nDefault configs for brokers in the cluster are:\n", run("--describe", "--entity-type", "brokers"))
	all = lines(run("--describe", "--entity-type", "brokers", "--entity-name", "1", "--all"))
	require.Equal(t, "All configs for broker 1 are:", all[0])
	require.Contains(t, all, "  node.id=1 sensitive=false synonyms={STATIC_BROKER_CONFIG:node.id=1}")
	require.Contains(t, all, "  log.retention.ms=604800000 sensitive=false synonyms={DEFAULT_CONFIG:log.retention.ms=604800000}")

	fail(`topic "nope" does not exist in `+where, "--describe", "--topic", "nope")
	fail(`topic "nope" does not exist in `+where, "--alter", "--topic", "nope", "--add-config", "retention.ms=1")
	fail(`topic "nope" does not exist in `+where, "--alter", "--topic", "nope", "--delete-config", "retention.ms")
	fail(`altering topic t: INVALID_CONFIG: invalid configuration: unknown topic config "retention.hours" (known: `+strings.Join(partlog.TopicConfigKeys(), ", ")+")",
		"--alter", "--topic", "t", "--add-config", "retention.hours=1")
	fail("altering topic t: INVALID_CONFIG: invalid configuration: segment.bytes: 5 is outside [1024, 2147483647]", "--alter", "--topic", "t", "--add-config", "segment.bytes=5")
	fail("invalid config(s) to delete: segment.bytes,cleanup.policy; topic t's own configs are min.insync.replicas,retention.ms",
		"--alter", "--topic", "t", "--delete-config", "segment.bytes,cleanup.policy")
	fail("altering broker 1: INVALID_REQUEST: malformed request: a partlog node's settings are static: set them with partlog serve's flags or the Go options",
		"--alter", "--broker", "1", "--add-config", "log.retention.ms=1000")
	require.Equal(t, "Dynamic configs for topic t are:\n"+
		"  min.insync.replicas=1 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:min.insync.replicas=1, DEFAULT_CONFIG:min.insync.replicas=1}\n"+
		"  retention.ms=3600000 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:retention.ms=3600000, DEFAULT_CONFIG:log.retention.ms=604800000}\n",
		run("--describe", "--topic", "t"), "the failed alterations changed nothing")
}

func TestConfigsBrokerNotTheNode(t *testing.T) {
	dir := newTopic(t, 1)
	_, stderr, code := cli(t, "configs", "--describe", "--broker", "2", "--dir", dir)
	require.Equal(t, exitFailure, code)
	require.Equal(t, "partlog: configs: broker 2 is not the node of "+dir+", which is node 1\n", stderr)

	_, addr := servedNode(t)
	_, stderr, code = cli(t, "configs", "--describe", "--broker", "2", "--bootstrap-server", addr)
	require.Equal(t, exitFailure, code)
	require.Equal(t, "partlog: configs: broker 2 is not a live node of the cluster at "+addr+" (live: 1)\n", stderr)
}

// TestConfigsBrokerSynonyms: each topic config has a node setting that
// gives its default, which the node describes.
func TestConfigsBrokerSynonyms(t *testing.T) {
	n, err := partlog.Open(t.TempDir())
	require.NoError(t, err)
	defer n.Close()
	entries, err := describeResource(context.Background(), n.Client(), transport.ConfigResource{Type: transport.ConfigBroker})
	require.NoError(t, err)
	for _, k := range partlog.TopicConfigKeys() {
		b, ok := partlog.BrokerConfigName(k)
		require.True(t, ok, "%s has a broker synonym", k)
		require.True(t, slices.ContainsFunc(entries, func(e transport.ConfigEntry) bool { return e.Name == b }), "%s's synonym %s", k, b)
	}
}

func TestConfigsUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--describe"}, "give --entity-type topics, brokers, groups or users (or --topic T, --broker N, --group G)"},
		{[]string{"--describe", "--entity-type", "topic"}, `entity type "topic" is not topics, brokers, groups or users`},
		{[]string{"--describe", "--entity-type", "topics", "--topic", "t"}, "--entity-type and --entity-name cannot be given with --topic or --broker"},
		{[]string{"--describe", "--topic", "t", "--broker", "1"}, "--topic and --broker cannot both be given"},
		{[]string{"--describe", "--broker", "one"}, `the entity name for brokers must be a node id, an integer, not "one"`},
		{[]string{"--describe", "--topic", ""}, "the entity name is empty"},
		{[]string{"--describe", "--topic", "t", "--add-config", "a=b"}, "--add-config, --add-config-file and --delete-config go with alter, not describe"},
		{[]string{"--alter", "--entity-type", "topics", "--add-config", "a=b"}, "an entity name must be given with alter of topics"},
		{[]string{"--alter", "--topic", "t"}, "alter needs --add-config, --add-config-file or --delete-config"},
		{[]string{"--alter", "--topic", "t", "--all", "--delete-config", "a"}, "--all goes with describe, not alter"},
		{[]string{"--alter", "--topic", "t", "--add-config", "a=b", "--add-config-file", "f"}, "give --add-config or --add-config-file, not both"},
		{[]string{"--alter", "--topic", "t", "--add-config", "a=b,c"}, `--add-config "c": every config must be key=value, or key=[v1,v2] for a value that holds commas`},
		{[]string{"--alter", "--topic", "t", "--add-config", "a=b=c"}, `--add-config "a=b=c": every config must be key=value, or key=[v1,v2] for a value that holds commas`},
		{[]string{"--describe", "--alter", "--topic", "t"}, "--describe and --alter cannot both be given; say one of describe, alter (or --describe, --alter)"},
		{[]string{"--topic", "t"}, "say one of describe, alter (or --describe, --alter)"},
		{[]string{"--describe", "--topic", "t", "extra"}, `unexpected argument "extra"`},
		{[]string{"--describe", "--group", "g", "--topic", "t"}, "--group cannot be given with --entity-type, --entity-name, --topic or --broker"},
		{[]string{"--describe", "--group", ""}, "the entity name is empty"},
		{[]string{"--alter", "--entity-type", "groups", "--add-config", "a=b"}, "an entity name must be given with alter of groups"},
	} {
		_, stderr, code := cli(t, append([]string{"configs", "--dir", t.TempDir()}, tc.args...)...)
		require.Equal(t, exitUsage, code, tc.args)
		require.Equal(t, "partlog: configs: "+tc.want+"\nRun 'partlog help configs' for usage.\n", stderr, tc.args)
	}
	_, stderr, code := cli(t, "configs", "--alter", "--topic", "t", "--add-config-file", filepath.Join(t.TempDir(), "none"), "--dir", t.TempDir())
	require.Equal(t, exitFailure, code)
	require.Contains(t, stderr, "partlog: configs: --add-config-file: open ")
}

// TestParseAddConfig: --add-config as kafka-configs.sh reads it.
func TestParseAddConfig(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want map[string]string
	}{
		{"k1=v1", map[string]string{"k1": "v1"}},
		{"k1=v1,k2=[a,b],k3=v3", map[string]string{"k1": "v1", "k2": "a,b", "k3": "v3"}},
		{" k1 = v1 , k2=[ a,b ]", map[string]string{"k1": "v1", "k2": "a,b"}},
		{"k1=", map[string]string{"k1": ""}},
		{"k1=[x=y]", map[string]string{"k1": "x=y"}},
	} {
		got := map[string]string{}
		require.NoError(t, parseAddConfig(tc.in, got), tc.in)
		require.Equal(t, tc.want, got, tc.in)
	}
	for _, in := range []string{"k1", "k1=v1,,k2=v2", "=v", "k=a=b"} {
		require.Error(t, parseAddConfig(in, map[string]string{}), in)
	}
}

func TestReadPropertiesFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "p.properties")
	require.NoError(t, os.WriteFile(file, []byte(`# a comment
! another
   retention.ms=1000
segment.bytes : 2048
cleanup.policy compact,\
   delete
key\=with\ts=a\u0041b
empty=
`), 0o644))
	props, err := readPropertiesFile(file)
	require.NoError(t, err)
	require.Equal(t, map[string]string{
		"retention.ms": "1000", "segment.bytes": "2048", "cleanup.policy": "compact,delete",
		"key=with\ts": "aAb", "empty": "",
	}, props)
}
