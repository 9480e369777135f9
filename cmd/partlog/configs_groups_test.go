package main

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestConfigsGroupsOnADataDir: kafka-configs.sh's describe and alter of a
// group's configs, on a data directory.
func TestConfigsGroupsOnADataDir(t *testing.T) {
	dir := newTopic(t, 1)
	testGroupConfigs(t, "--dir", dir)
}

// TestConfigsGroupsOverTCP: the same over --bootstrap-server.
func TestConfigsGroupsOverTCP(t *testing.T) {
	_, addr := servedNode(t)
	testGroupConfigs(t, "--bootstrap-server", addr)
}

// testGroupConfigs runs the configs command on the group configs of a
// group that does not exist, on the node target names, and checks
// kafka-configs.sh's output lines.
func testGroupConfigs(t *testing.T, target ...string) {
	t.Helper()
	run := func(args ...string) string {
		t.Helper()
		stdout, stderr, code := cli(t, append(append([]string{"configs"}, args...), target...)...)
		require.Equal(t, exitOK, code, "%v: %s", args, stderr)
		require.Empty(t, stderr, args)
		return stdout
	}
	fail := func(args ...string) string {
		t.Helper()
		stdout, stderr, code := cli(t, append(append([]string{"configs"}, args...), target...)...)
		require.Equal(t, exitFailure, code, "%v: %s", args, stdout)
		return stderr
	}

	require.Equal(t, "Dynamic configs for group g are:\n", run("--describe", "--entity-type", "groups", "--entity-name", "g"), "no configs of its own")
	all := lines(run("--describe", "--group", "g", "--all"))
	require.Equal(t, []string{"All configs for group g are:",
		"  consumer.heartbeat.interval.ms=5000 sensitive=false synonyms={DEFAULT_CONFIG:consumer.heartbeat.interval.ms=5000}",
		"  consumer.session.timeout.ms=45000 sensitive=false synonyms={DEFAULT_CONFIG:consumer.session.timeout.ms=45000}",
		"  share.auto.offset.reset=latest sensitive=false synonyms={DEFAULT_CONFIG:share.auto.offset.reset=latest}",
		"  share.heartbeat.interval.ms=5000 sensitive=false synonyms={DEFAULT_CONFIG:share.heartbeat.interval.ms=5000}",
		"  share.isolation.level=read_uncommitted sensitive=false synonyms={DEFAULT_CONFIG:share.isolation.level=read_uncommitted}",
		"  share.record.lock.duration.ms=30000 sensitive=false synonyms={DEFAULT_CONFIG:share.record.lock.duration.ms=30000}",
		"  share.session.timeout.ms=45000 sensitive=false synonyms={DEFAULT_CONFIG:share.session.timeout.ms=45000}",
	}, all)

	require.Equal(t, "Completed updating config for group g.\n",
		run("--alter", "--entity-type", "groups", "--entity-name", "g", "--add-config", "share.auto.offset.reset=earliest,share.record.lock.duration.ms=15000"))
	require.Equal(t, "Dynamic configs for group g are:\n"+
		"  share.auto.offset.reset=earliest sensitive=false synonyms={DYNAMIC_GROUP_CONFIG:share.auto.offset.reset=earliest}\n"+
		"  share.record.lock.duration.ms=15000 sensitive=false synonyms={DYNAMIC_GROUP_CONFIG:share.record.lock.duration.ms=15000}\n",
		run("--describe", "--entity-type", "groups", "--entity-name", "g"))
	require.Contains(t, lines(run("describe", "--group", "g", "--all")),
		"  share.record.lock.duration.ms=15000 sensitive=false synonyms={DYNAMIC_GROUP_CONFIG:share.record.lock.duration.ms=15000}")

	require.Equal(t, "Completed updating config for group g.\n", run("alter", "--group", "g", "--delete-config", "share.auto.offset.reset"))
	own := "Dynamic configs for group g are:\n" +
		"  share.record.lock.duration.ms=15000 sensitive=false synonyms={DYNAMIC_GROUP_CONFIG:share.record.lock.duration.ms=15000}\n"
	require.Equal(t, own, run("--describe", "--group", "g"))

	require.Equal(t, "partlog: configs: invalid config(s) to delete: share.isolation.level; group g's own configs are share.record.lock.duration.ms\n",
		fail("--alter", "--group", "g", "--delete-config", "share.isolation.level"))
	require.Equal(t, "partlog: configs: altering group g: INVALID_CONFIG: invalid configuration: "+
		"share.record.lock.duration.ms must be greater than or equal to group.share.min.record.lock.duration.ms (15000), not 1000\n",
		fail("--alter", "--group", "g", "--add-config", "share.record.lock.duration.ms=1000"))
	require.Contains(t, fail("--alter", "--group", "g", "--add-config", "share.auto.offset.reset=none"),
		"Invalid value `none` for configuration share.auto.offset.reset")
	require.Contains(t, fail("--alter", "--group", "g", "--add-config", "retention.ms=1000"), "Unknown group config name: retention.ms")
	require.Equal(t, own, run("--describe", "--group", "g"), "the refused alterations changed nothing")

	require.Equal(t, "", run("--describe", "--entity-type", "groups"), "every group: there is none, configs or not")
}
