package main

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/partlog/partlog/transport"
)

// TestReassignPartitionsCLI moves a topic's partition off node 1 with
// partlog reassign-partitions, as kafka-reassign-partitions.sh is used:
// --generate proposes an assignment over nodes 2, 3, 4, --execute starts
// it, --verify fails until it completes and then says so; the records are
// all there; node 1, stopped, is then unregistered with partlog cluster
// unregister.
func TestReassignPartitionsCLI(t *testing.T) {
	bin := buildPartlog(t)
	c := startProcessCluster(t, bin, 4, 3*time.Second, 100*time.Millisecond)
	boot := c.nodes[2].addr
	stdout, stderr, code := cli(t, "topics", "create", "--bootstrap-server", boot, "--topic", "t",
		"--partitions", "2", "--replication-factor", "3")
	require.Equal(t, exitOK, code, stderr)
	require.Equal(t, "Created topic t.\n", stdout)
	c.waitFor("the topic's leaders", "t", fullISR)
	for _, p := range []string{"0", "1"} {
		_, stderr, code = cliIn(t, "a\nb\nc\n", "produce", "--bootstrap-server", boot, "--topic", "t", "--partition", p)
		require.Equal(t, exitOK, code, stderr)
	}

	dir := t.TempDir()
	topicsFile := filepath.Join(dir, "topics.json")
	require.NoError(t, os.WriteFile(topicsFile, []byte(`{"version":1,"topics":[{"topic":"t"}]}`), 0o644))
	stdout, stderr, code = cli(t, "reassign-partitions", "--bootstrap-server", boot, "--topics-to-move-json-file", topicsFile,
		"--broker-list", "2,3,4", "--generate")
	require.Equal(t, exitOK, code, stderr)
	out := lines(stdout)
	require.Len(t, out, 5, stdout)
	require.Equal(t, "Current partition replica assignment", out[0])
	require.Equal(t, "Proposed partition reassignment configuration", out[3])
	require.Equal(t, `{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[2,3,4]},{"topic":"t","partition":1,"replicas":[3,4,2]}]}`, out[4])
	plan := filepath.Join(dir, "plan.json")
	require.NoError(t, os.WriteFile(plan, []byte(out[4]), 0o644))

	stdout, stderr, code = cli(t, "reassign-partitions", "--bootstrap-server", boot, "--reassignment-json-file", plan, "--execute")
	require.Equal(t, exitOK, code, stderr)
	require.Equal(t, "Successfully started partition reassignments for t-0,t-1\n", stdout)
	deadline := time.Now().Add(30 * time.Second)
	for {
		stdout, stderr, code = cli(t, "reassign-partitions", "--bootstrap-server", boot, "--reassignment-json-file", plan, "--verify")
		if code == exitOK {
			break
		}
		require.Equal(t, exitFailure, code, stderr)
		require.True(t, time.Now().Before(deadline), "not completed: %s", stdout)
		time.Sleep(processPoll)
	}
	require.Equal(t, "Status of partition reassignment:\nReassignment of partition t-0 is completed.\nReassignment of partition t-1 is completed.\n", stdout)
	tm := c.waitFor("full ISRs on 2, 3, 4", "t", fullISR)
	require.Equal(t, []int32{2, 3, 4}, tm.Partitions[0].Replicas)
	require.Equal(t, []int32{3, 4, 2}, tm.Partitions[1].Replicas)
	for _, p := range []string{"0", "1"} {
		stdout, stderr, code = cli(t, "consume", "--bootstrap-server", boot, "--topic", "t", "--partition", p, "--from-beginning", "--max-messages", "3")
		require.Equal(t, exitOK, code, stderr)
		require.Equal(t, "a\nb\nc\n", stdout)
	}

	c.nodes[1].terminate()
	stdout, stderr, code = cli(t, "cluster", "unregister", "--bootstrap-server", boot, "--id", "1")
	require.Equal(t, exitOK, code, stderr)
	require.Equal(t, "Broker 1 is no longer registered.\n", stdout)
	_, stderr, code = cli(t, "cluster", "unregister", "--bootstrap-server", boot, "--id", "1")
	require.Equal(t, exitFailure, code)
	require.Contains(t, stderr, "BROKER_ID_NOT_REGISTERED")
	client, err := transport.Dial(t.Context(), boot, transport.DialOptions{})
	require.NoError(t, err)
	defer client.Close()
	md, err := client.Metadata(t.Context(), &transport.MetadataRequest{Topics: []string{}})
	require.NoError(t, err)
	require.False(t, slices.ContainsFunc(md.Brokers, func(b transport.Broker) bool { return b.NodeID == 1 }))
}
