package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestClusterFlagErrors checks the command lines serve and controller
// refuse before they open anything.
func TestClusterFlagErrors(t *testing.T) {
	for _, tc := range []struct {
		args   []string
		stderr string
	}{
		{[]string{"serve", "--dir", "d", "--controller", "127.0.0.1:1"}, "partlog: serve: --controller needs --node-id\n"},
		{[]string{"serve", "--dir", "d", "--heartbeat", "1s"}, "partlog: serve: --heartbeat and --replica-lag-max need --controller or the controller role\n"},
		{[]string{"serve", "--dir", "d", "--process-roles", "controller"},
			"partlog: serve: --process-roles \"controller\" is neither broker nor broker,controller ('partlog controller' runs a controller alone)\n"},
		{[]string{"serve", "--dir", "d", "--process-roles", "broker,controller", "--voters", "1@127.0.0.1:1", "--node-id", "2"},
			"partlog: serve: --process-roles broker,controller needs --node-id, one of the --voters\n"},
		{[]string{"serve", "--dir", "d", "--process-roles", "broker,controller", "--voters", "1@nowhere"},
			"partlog: serve: --voters: controller: voter \"1@nowhere\": address nowhere: missing port in address\n"},
		{[]string{"serve", "--dir", "d", "--voters", "1@127.0.0.1:1"},
			"partlog: serve: --voters, --session-timeout and --election-timeout need --process-roles broker,controller\n"},
		{[]string{"controller", "--dir", "d", "--voters", "1@127.0.0.1:1,2@127.0.0.1:2", "--node-id", "3"},
			"partlog: controller: --node-id 3 is not one of the --voters\n"},
		{[]string{"controller", "--dir", "d", "--voters", "1@127.0.0.1:1", "--node-id", "1", "--listen", "127.0.0.1:2"},
			"partlog: controller: --listen is not for a voter: it listens at its --voters address\n"},
		{[]string{"controller", "--dir", "d", "--node-id", "1"}, "partlog: controller: --node-id and --election-timeout need --voters\n"},
		{[]string{"serve", "--dir", "d", "--node-id", "1", "--controller", "127.0.0.1:1", "--replica-lag-max", "0s"},
			"partlog: serve: --heartbeat and --replica-lag-max must be positive\n"},
		{[]string{"serve", "--dir", "d", "--node-id", "-1"}, "partlog: serve: --node-id -1 is not a node id\n"},
		{[]string{"serve", "--dir", "d", "--log-level", "loud"}, "partlog: serve: invalid value \"loud\" for --log-level: log level \"loud\" is not off, error, warn, info or debug\n"},
		{[]string{"controller"}, "partlog: controller: --dir is required\n"},
		{[]string{"controller", "--dir", "d", "--session-timeout", "0s"}, "partlog: controller: --session-timeout and --tick must be positive\n"},
		{[]string{"controller", "--dir", "d", "extra"}, "partlog: controller: unexpected argument \"extra\"\n"},
	} {
		_, stderr, code := cli(t, tc.args...)
		require.Equal(t, exitUsage, code, tc.args)
		require.Equal(t, tc.stderr+"Run 'partlog help "+tc.args[0]+"' for usage.\n", stderr, tc.args)
	}
}

func TestClusterHelp(t *testing.T) {
	stdout, _, code := cli(t, "help", "controller")
	require.Equal(t, exitOK, code)
	require.Contains(t, stdout, "Usage: partlog controller --dir DIR [--listen HOST:PORT] [flags]\n")
	for _, flag := range []string{"--dir directory", "--listen address", "--session-timeout duration", "--tick duration",
		"--leader-imbalance-check duration", "--log-level level"} {
		require.Contains(t, stdout, "\n  "+flag+"\n")
	}
	stdout, _, code = cli(t, "help", "serve")
	require.Equal(t, exitOK, code)
	require.Contains(t, stdout, "partlog serve --dir DIR --node-id N --controller HOST:PORT")
	for _, flag := range []string{"--node-id id", "--controller address", "--heartbeat duration", "--replica-lag-max duration", "--log-level level", "--cpuprofile file"} {
		require.Contains(t, stdout, "\n  "+flag+"\n")
	}
}

// TestGroupsOnAClusterMember: groups list and describe given a member of
// a cluster of three (process nodes) find a group that consumed there. They
// failed with "does not answer consumer group requests": the command's
// client embedded the cluster client and the node's, whose group calls
// clashed, so it had none. The cluster client routes a group's calls to its
// coordinator.
func TestGroupsOnAClusterMember(t *testing.T) {
	bin := buildPartlog(t)
	c := startProcessCluster(t, bin, 3, 5*time.Second, 100*time.Millisecond)
	addr := c.nodes[2].addr
	run := func(input string, args ...string) string {
		t.Helper()
		stdout, stderr, code := cliIn(t, input, append(args, "--bootstrap-server", addr)...)
		require.Equal(t, exitOK, code, "%v: %s", args, stderr)
		return stdout
	}
	run("", "topics", "create", "--topic", "t", "--partitions", "3", "--replication-factor", "3")
	c.waitFor("t's leaders", "t", fullISR)
	run("a\nb\nc\n", "produce", "--topic", "t")
	require.Len(t, lines(run("", "consume", "--topic", "t", "--group", "g", "--from-beginning", "--timeout", "2s")), 3)
	require.Contains(t, lines(run("", "groups", "list")), "g")
	require.Contains(t, run("", "groups", "describe", "--group", "g"), "t")
}
