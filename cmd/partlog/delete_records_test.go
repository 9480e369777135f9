package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/partlog/partlog"
	"github.com/partlog/partlog/transport"
)

// offsetJSON writes an --offset-json-file holding doc and returns its path.
func offsetJSON(t *testing.T, doc string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "offsets.json")
	require.NoError(t, os.WriteFile(path, []byte(doc), 0o644))
	return path
}

// TestDeleteRecordsOnADataDir: kafka-delete-records.sh on a data directory.
func TestDeleteRecordsOnADataDir(t *testing.T) {
	dir := newTopic(t, 2)
	produceLines(t, dir, "a\nb\nc\nd\n", "--partition", "0")
	produceLines(t, dir, "e\nf\n", "--partition", "1")
	testDeleteRecords(t, dir, "--dir", dir)
}

// TestDeleteRecordsOverTCP: the same over --bootstrap-server, to a served
// node.
func TestDeleteRecordsOverTCP(t *testing.T) {
	n, addr := servedNode(t)
	require.NoError(t, n.CreateTopic(t.Context(), partlog.NewTopic{Name: "t", Partitions: 2}))
	for _, in := range []struct{ lines, partition string }{{"a\nb\nc\nd\n", "0"}, {"e\nf\n", "1"}} {
		_, stderr, code := cliIn(t, in.lines, "produce", "--bootstrap-server", addr, "--topic", "t", "--partition", in.partition)
		require.Equal(t, exitOK, code, stderr)
	}
	testDeleteRecords(t, addr, "--bootstrap-server", addr)
}

// testDeleteRecords deletes records of topic t, whose partition 0 holds
// a, b, c, d and partition 1 e, f, on the node target names (where, in
// messages).
func testDeleteRecords(t *testing.T, where string, target ...string) {
	t.Helper()
	// A partition's error comes over the wire without the node's
	// message: Kafka's DeleteRecords answer has only its code.
	detail := func(s string) string {
		if target[0] == "--bootstrap-server" {
			return ""
		}
		return s
	}
	deleteRecords := func(args ...string) (string, string, int) {
		t.Helper()
		return cli(t, append(append([]string{"delete-records"}, args...), target...)...)
	}
	stdout, stderr, code := deleteRecords("--offset-json-file", offsetJSON(t, `{"partitions":[{"topic":"t","partition":0,"offset":3},{"topic":"t","partition":1,"offset":-1}],"version":1}`))
	require.Equal(t, exitOK, code, stderr)
	require.Equal(t, "Executing records delete operation\nRecords delete operation completed:\n"+
		"partition: t-0\tlow_watermark: 3\npartition: t-1\tlow_watermark: 2\n", stdout)
	consumed, stderr, code := cli(t, append([]string{"consume", "--topic", "t", "--from-beginning", "--timeout", "500ms", "--print-partition", "--print-offset"}, target...)...)
	require.Equal(t, exitOK, code, stderr)
	require.Equal(t, []string{"Partition:0\tOffset:3\td"}, lines(consumed), "the records below the low watermarks are gone")
	desc, _, _ := cli(t, append([]string{"topics", "describe", "--topic", "t"}, target...)...)
	require.Contains(t, desc, "\tPartition: 0\tLeader: 1\tReplicas: 1\tIsr: 1\tLogStartOffset: 3\t")
	require.Contains(t, desc, "\tPartition: 1\tLeader: 1\tReplicas: 1\tIsr: 1\tLogStartOffset: 2\t")

	// Kafka's version defaults to 1; --topic alone deletes in every
	// partition; a low watermark does not go back.
	stdout, stderr, code = deleteRecords("--offset-json-file", offsetJSON(t, `{"partitions":[{"topic":"t","partition":0,"offset":1}]}`))
	require.Equal(t, exitOK, code, stderr)
	require.Equal(t, "Executing records delete operation\nRecords delete operation completed:\npartition: t-0\tlow_watermark: 3\n", stdout)
	stdout, stderr, code = deleteRecords("--topic", "t", "--offset", "-1")
	require.Equal(t, exitOK, code, stderr)
	require.Equal(t, "Executing records delete operation\nRecords delete operation completed:\n"+
		"partition: t-0\tlow_watermark: 4\npartition: t-1\tlow_watermark: 2\n", stdout)

	// Partitions that fail are reported beside those that do not, and
	// the command fails.
	stdout, stderr, code = deleteRecords("--offset-json-file", offsetJSON(t, `{"partitions":[{"topic":"t","partition":1,"offset":5},{"topic":"t","partition":0,"offset":4},{"topic":"u","partition":0,"offset":1}],"version":1}`))
	require.Equal(t, exitFailure, code)
	require.Equal(t, "Executing records delete operation\nRecords delete operation completed:\n"+
		"partition: t-1\terror: OFFSET_OUT_OF_RANGE: offset outside the range the partition holds"+detail(": t-1: cannot delete records before 5: the high watermark is 2")+"\n"+
		"partition: t-0\tlow_watermark: 4\n"+
		"partition: u-0\terror: UNKNOWN_TOPIC_OR_PARTITION: this node does not host the topic or partition"+detail(": u-0")+"\n", stdout)
	require.Equal(t, "partlog: delete-records: 2 of 3 partitions failed\n", stderr)

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--topic", "t", "--partition", "0", "--offset", "9"}, "Executing records delete operation\nRecords delete operation completed:\n" +
			"partition: t-0\terror: OFFSET_OUT_OF_RANGE: offset outside the range the partition holds" + detail(": t-0: cannot delete records before 9: the high watermark is 4") + "\n"},
		{[]string{"--topic", "t", "--partition", "2", "--offset", "0"}, ""},
		{[]string{"--topic", "nope", "--offset", "0"}, ""},
	} {
		stdout, _, code := deleteRecords(tc.args...)
		require.Equal(t, exitFailure, code, tc.args)
		require.Equal(t, tc.want, stdout, tc.args)
	}
	_, stderr, _ = deleteRecords("--topic", "t", "--partition", "2", "--offset", "0")
	require.Equal(t, "partlog: delete-records: topic t has no partition 2: it has 2 (0 to 1)\n", stderr)
	_, stderr, _ = deleteRecords("--topic", "nope", "--offset", "0")
	require.Equal(t, `partlog: delete-records: topic "nope" does not exist in `+where+"; create it with 'partlog topics create'\n", stderr)
}

func TestDeleteRecordsBadFiles(t *testing.T) {
	dir := newTopic(t, 1)
	for _, tc := range []struct{ doc, want string }{
		{`{"partitions":[`, "not valid JSON: unexpected EOF"},
		{`{"partitions":[{"topic":"t","partition":0,"offset":1}],"version":2}`, "version 2 is not supported: only 1 is"},
		{`{"version":1}`, `no "partitions" field`},
		{`{"partitions":[]}`, "no partitions"},
		{`{"partitions":[{"topic":"t","offset":1}]}`, `partitions[0] needs "topic", "partition" and "offset"`},
		{`{"partitions":[{"topic":"t","partition":0,"offset":-2}]}`, "partitions[0]: offset -2 is not an offset, or -1 for the high watermark"},
		{`{"partitions":[{"topic":"t","partition":0,"offset":1},{"topic":"t","partition":0,"offset":2}]}`, "the file names partitions more than once: t-0"},
	} {
		path := offsetJSON(t, tc.doc)
		stdout, stderr, code := cli(t, "delete-records", "--dir", dir, "--offset-json-file", path)
		require.Equal(t, exitFailure, code, tc.doc)
		require.Empty(t, stdout, tc.doc)
		require.Equal(t, "partlog: delete-records: "+path+": "+tc.want+"\n", stderr, tc.doc)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "give --offset-json-file, or --topic and --offset"},
		{[]string{"--topic", "t"}, "--topic needs --offset (-1 for the high watermark)"},
		{[]string{"--topic", "t", "--offset", "-2"}, "--offset -2 is not an offset, or -1 for the high watermark"},
		{[]string{"--offset-json-file", "f", "--topic", "t"}, "give --offset-json-file or --topic, --partition and --offset, not both"},
		{[]string{"extra"}, `unexpected argument "extra"`},
	} {
		_, stderr, code := cli(t, append([]string{"delete-records", "--dir", dir}, tc.args...)...)
		require.Equal(t, exitUsage, code, tc.args)
		require.Equal(t, "partlog: delete-records: "+tc.want+"\nRun 'partlog help delete-records' for usage.\n", stderr, tc.args)
	}
}

// TestDeleteRecordsOnACluster: given one member of a cluster of three
// (process nodes), delete-records reaches each partition's leader, and the
// records below the low watermarks are gone on every replica: a consumer
// reads from the new log start offsets. On the same cluster, configs
// describes each node's settings, read from that node, and another member
// takes a topic's config change and partitions.
func TestDeleteRecordsOnACluster(t *testing.T) {
	bin := buildPartlog(t)
	c := startProcessCluster(t, bin, 3, 5*time.Second, 100*time.Millisecond)
	addr := c.nodes[1].addr
	run := func(input string, args ...string) string {
		t.Helper()
		stdout, stderr, code := cliIn(t, input, append(args, "--bootstrap-server", addr)...)
		require.Equal(t, exitOK, code, "%v: %s", args, stderr)
		return stdout
	}
	run("", "topics", "create", "--topic", "t", "--partitions", "3", "--replication-factor", "2")
	tm := c.waitFor("t's replicas in sync", "t", fullISR)
	leaders := map[int32]bool{}
	for _, p := range tm.Partitions {
		leaders[p.Leader] = true
	}
	require.Greater(t, len(leaders), 1, "the partitions' leaders are on several nodes: %+v", tm.Partitions)
	for p := range 3 {
		run("a\nb\nc\n", "produce", "--topic", "t", "--partition", itoa(int32(p)))
	}
	out := run("", "delete-records", "--offset-json-file", offsetJSON(t,
		`{"partitions":[{"topic":"t","partition":0,"offset":1},{"topic":"t","partition":1,"offset":2},{"topic":"t","partition":2,"offset":-1}],"version":1}`))
	require.Equal(t, "Executing records delete operation\nRecords delete operation completed:\n"+
		"partition: t-0\tlow_watermark: 1\npartition: t-1\tlow_watermark: 2\npartition: t-2\tlow_watermark: 3\n", out)
	consumed := run("", "consume", "--topic", "t", "--from-beginning", "--max-messages", "3", "--timeout", "10s", "--print-partition", "--print-offset")
	require.ElementsMatch(t, []string{"Partition:0\tOffset:1\tb", "Partition:0\tOffset:2\tc", "Partition:1\tOffset:2\tc"}, lines(consumed))

	stdout, stderr, code := cli(t, "delete-records", "--topic", "t", "--partition", "1", "--offset", "4", "--bootstrap-server", addr)
	require.Equal(t, exitFailure, code)
	require.Equal(t, "Executing records delete operation\nRecords delete operation completed:\n"+
		"partition: t-1\terror: OFFSET_OUT_OF_RANGE: offset outside the range the partition holds\n", stdout)
	require.Equal(t, "partlog: delete-records: 1 of 1 partitions failed\n", stderr)

	require.Equal(t, "Dynamic configs for broker 1 are:\nDynamic configs for broker 2 are:\nDynamic configs for broker 3 are:\n"+
		"Default configs for brokers in the cluster are:\n", run("", "configs", "--describe", "--entity-type", "brokers"))
	all := lines(run("", "configs", "--describe", "--all", "--broker", "3"))
	require.Equal(t, "All configs for broker 3 are:", all[0])
	require.Contains(t, all, "  node.id=3 sensitive=false synonyms={STATIC_BROKER_CONFIG:node.id=3}", "node 3's own settings")

	other := func(args ...string) string {
		t.Helper()
		stdout, stderr, code := cli(t, append(args, "--bootstrap-server", c.nodes[2].addr)...)
		require.Equal(t, exitOK, code, "%v: %s", args, stderr)
		return stdout
	}
	require.Equal(t, "Completed updating config for topic t.\n", other("configs", "--alter", "--topic", "t", "--add-config", "retention.ms=3600000"))
	require.Equal(t, "Dynamic configs for topic t are:\n"+
		"  retention.ms=3600000 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:retention.ms=3600000, DEFAULT_CONFIG:log.retention.ms=604800000}\n",
		other("configs", "--describe", "--topic", "t"))
	require.Equal(t, "Adding partitions succeeded!\n", other("topics", "--alter", "--topic", "t", "--partitions", "4"))
	c.waitFor("t's fourth partition", "t", func(tm transport.TopicMetadata) bool { return len(tm.Partitions) == 4 && fullISR(tm) })
}
