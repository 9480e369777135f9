package main

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// produceLines produces lines to topic t in dir with "partlog produce".
func produceLines(t *testing.T, dir string, lines string, args ...string) {
	t.Helper()
	_, stderr, code := cliIn(t, lines, append([]string{"produce", "--dir", dir, "--topic", "t"}, args...)...)
	require.Equal(t, exitOK, code, stderr)
}

func TestConsumeStartsAtEnd(t *testing.T) {
	dir := newTopic(t, 2)
	produceLines(t, dir, "a\nb\nc\n")
	stdout, stderr, code := cli(t, "consume", "--dir", dir, "--topic", "t", "--timeout", "100ms")
	require.Equal(t, exitOK, code, stderr)
	require.Empty(t, stdout)
	require.Equal(t, "Processed a total of 0 messages\n", stderr)
}

func TestConsumeMaxMessages(t *testing.T) {
	dir := newTopic(t, 1)
	produceLines(t, dir, "a\nb\nc\nd\ne\n")
	stdout, stderr, code := cli(t, "consume", "--dir", dir, "--topic", "t", "--from-beginning", "--max-messages", "3")
	require.Equal(t, exitOK, code, stderr)
	require.Equal(t, "a\nb\nc\n", stdout)
	require.Equal(t, "Processed a total of 3 messages\n", stderr)
}

func TestConsumeTimeout(t *testing.T) {
	dir := newTopic(t, 1)
	produceLines(t, dir, "a\nb\n")
	start := time.Now()
	stdout, stderr, code := cli(t, "consume", "--dir", dir, "--topic", "t", "--from-beginning", "--timeout", "300ms", "--max-messages", "10")
	require.Equal(t, exitOK, code, stderr)
	require.GreaterOrEqual(t, time.Since(start), 300*time.Millisecond)
	require.Equal(t, "a\nb\n", stdout)
	require.Equal(t, "Processed a total of 2 messages\n", stderr)
}

func TestConsumeOffset(t *testing.T) {
	dir := newTopic(t, 2)
	produceLines(t, dir, "a\nb\nc\nd\ne\n", "--partition", "1")
	for _, tc := range []struct {
		offset, want string
	}{
		{"3", "Offset:3\td\nOffset:4\te\n"},
		{"0", "Offset:0\ta\nOffset:1\tb\nOffset:2\tc\nOffset:3\td\nOffset:4\te\n"},
		{"earliest", "Offset:0\ta\nOffset:1\tb\nOffset:2\tc\nOffset:3\td\nOffset:4\te\n"},
		{"latest", ""},
		{"5", ""},
		{"99", ""}, // outside the partition: its end
	} {
		stdout, stderr, code := cli(t, "consume", "--dir", dir, "--topic", "t", "--partition", "1", "--offset", tc.offset,
			"--print-offset", "--timeout", "100ms")
		require.Equal(t, exitOK, code, stderr)
		require.Equal(t, tc.want, stdout, tc.offset)
		require.Equal(t, "Processed a total of "+string(rune('0'+len(lines(tc.want))))+" messages\n", stderr)
	}
}

func TestConsumeFormat(t *testing.T) {
	dir := formatFixture(t)

	require.Equal(t, "CreateTime:1700000000000\tPartition:0\tOffset:0\th1:v1,h2:null\tk\tv\n"+
		"CreateTime:1700000000001\tPartition:0\tOffset:1\tNO_HEADERS\tnull\tnull\n"+
		"CreateTime:1700000000002\tPartition:0\tOffset:2\tNO_HEADERS\t\ttwo\nlines\n",
		consumeAll(t, dir, "--print-timestamp", "--print-partition", "--print-offset", "--print-headers", "--print-key"))
	require.Equal(t, "v\nnull\ntwo\nlines\n", consumeAll(t, dir))
}

// linesWriter is a writer that reports when it has been written n lines.
type linesWriter struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	n    int
	done chan struct{}
}

func (w *linesWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if w.n > 0 && bytes.Count(w.buf.Bytes(), []byte("\n")) >= w.n {
		close(w.done)
		w.n = 0
	}
	return len(p), nil
}

func (w *linesWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

func TestConsumeInterrupted(t *testing.T) {
	dir := newTopic(t, 1)
	produceLines(t, dir, "a\nb\n")
	interrupt := interruptible(t)
	out := &linesWriter{n: 2, done: make(chan struct{})}
	var errOut strings.Builder
	done := make(chan int)
	// No --timeout: it runs until interrupted.
	go func() {
		done <- run([]string{"consume", "--dir", dir, "--topic", "t", "--from-beginning"}, out, &errOut)
	}()
	<-out.done
	interrupt()
	require.Equal(t, exitOK, <-done)
	require.Equal(t, "a\nb\n", out.String())
	require.Equal(t, "Processed a total of 2 messages\n", errOut.String())
	// It closed the data directory.
	require.Equal(t, []int64{2}, topicEnds(t, dir))
}

func TestConsumeUsage(t *testing.T) {
	dir := newTopic(t, 1)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--dir", dir}, "consume: --topic is required"},
		{[]string{"--topic", "t"}, "consume: --dir or --bootstrap-server is required"},
		{[]string{"--dir", dir, "--topic", "t", "x"}, `consume: unexpected argument "x"`},
		{[]string{"--dir", dir, "--topic", "t", "--offset", "3"}, "consume: --offset needs --partition"},
		{[]string{"--dir", dir, "--topic", "t", "--partition", "0", "--offset", "3", "--from-beginning"}, "consume: --offset and --from-beginning cannot both be given"},
		{[]string{"--dir", dir, "--topic", "t", "--partition", "0", "--offset", "first"}, `consume: --offset "first" is not an offset, earliest or latest`},
		{[]string{"--dir", dir, "--topic", "t", "--partition", "0", "--offset", "-1"}, `consume: --offset "-1" is not an offset, earliest or latest`},
		{[]string{"--dir", dir, "--topic", "t", "--max-messages", "-1"}, "consume: --max-messages -1 is negative"},
		{[]string{"--dir", dir, "--topic", "t", "--timeout", "-1s"}, "consume: --timeout -1s is negative"},
		{[]string{"--dir", dir, "--topic", "t", "--timeout", "-1"}, "consume: --timeout -1ms is negative"},
		{[]string{"--dir", dir, "--topic", "t", "--timeout", "5x"}, `consume: invalid value "5x" for --timeout: not a number of milliseconds (as 500) or a duration (as 500ms, 2s)`},
		{[]string{"--dir", dir, "--topic", "t", "--timeout"}, "consume: flag needs an argument: --timeout"},
		{[]string{"--dir", dir, "--topic", "t", "--no-such"}, "consume: flag provided but not defined: --no-such"},
		{[]string{"--dir", dir, "--topic", "t", "--print-key=maybe"}, `consume: invalid boolean value "maybe" for --print-key: parse error`},
		{[]string{"--dir", dir, "--topic", "t", "--property", "print.keys=true"}, `consume: unknown --property "print.keys"; consume knows print.timestamp, print.partition, print.offset, print.delivery, print.epoch, print.headers, print.key, print.value, key.separator, line.separator, headers.separator, null.literal, key.deserializer, value.deserializer, headers.deserializer`},
		{[]string{"--dir", dir, "--topic", "t", "--property", "print.key=yes"}, "consume: --property print.key=yes: not true or false"},
		{[]string{"--dir", dir, "--topic", "t", "--property", "value.deserializer=com.example.Avro"}, "consume: --property value.deserializer=com.example.Avro: consume prints bytes as they are (org.apache.kafka.common.serialization.ByteArrayDeserializer) or as UTF-8 (org.apache.kafka.common.serialization.StringDeserializer), no other deserializer"},
		{[]string{"--dir", dir, "--topic", "t", "--property", "nokey"}, `consume: invalid value "nokey" for --property: "nokey" is not key=value`},
		{[]string{"--dir", dir, "--topic", "t", "--formatter", "kafka.tools.JsonFormatter"}, `consume: --formatter "kafka.tools.JsonFormatter" is not one of default, group-metadata, kafka.coordinator.group.GroupMetadataManager$GroupMetadataMessageFormatter, kafka.coordinator.group.GroupMetadataManager$OffsetsMessageFormatter, kafka.tools.DefaultMessageFormatter, offsets, org.apache.kafka.tools.consumer.DefaultMessageFormatter`},
	} {
		stdout, stderr, code := cli(t, append([]string{"consume"}, tc.args...)...)
		require.Equal(t, exitUsage, code, tc.args)
		require.Empty(t, stdout, tc.args)
		require.Equal(t, []string{"partlog: " + tc.want, "Run 'partlog help consume' for usage."}, lines(stderr), tc.args)
	}
}
