package main

import (
	"bufio"
	"io"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/partlog/partlog/producer"
)

// consumeAll returns what "consume --from-beginning" prints of topic t in
// dir with the extra args, reading until 200ms pass without a record.
func consumeAll(t *testing.T, dir string, args ...string) string {
	t.Helper()
	// Wait for exactly the records the topic holds: a short --timeout
	// alone could end before a large record is read on a loaded machine.
	total := int64(0)
	for p, end := range topicEnds(t, dir) {
		if i := slices.Index(args, "--partition"); i < 0 || args[i+1] == strconv.Itoa(p) {
			total += end
		}
	}
	if total == 0 {
		args = append(args, "--timeout", "200ms")
	} else {
		args = append(args, "--max-messages", strconv.FormatInt(total, 10), "--timeout", "1m")
	}
	stdout, stderr, code := cli(t, append([]string{"consume", "--dir", dir, "--topic", "t", "--from-beginning"}, args...)...)
	require.Equal(t, exitOK, code, stderr)
	require.Regexp(t, `^Processed a total of \d+ messages\n$`, stderr)
	return stdout
}

func TestProduceValues(t *testing.T) {
	dir := newTopic(t, 1)
	// An empty line, a "\r\n" line, and a last line without a newline.
	stdout, stderr, code := cliIn(t, "one\ntwo\n\nthree\r\nfour", "produce", "--dir", dir, "--topic", "t")
	require.Equal(t, exitOK, code, stderr)
	require.Empty(t, stdout)
	require.Empty(t, stderr)

	stdout, stderr, code = cli(t, "consume", "--dir", dir, "--topic", "t", "--from-beginning", "--max-messages", "5")
	require.Equal(t, exitOK, code, stderr)
	require.Equal(t, "one\ntwo\n\nthree\nfour\n", stdout)
	require.Equal(t, "Processed a total of 5 messages\n", stderr)

	require.Equal(t, "Partition:0\tOffset:0\tnull\tone\n"+
		"Partition:0\tOffset:1\tnull\ttwo\n"+
		"Partition:0\tOffset:2\tnull\t\n"+
		"Partition:0\tOffset:3\tnull\tthree\n"+
		"Partition:0\tOffset:4\tnull\tfour\n",
		consumeAll(t, dir, "--print-partition", "--print-offset", "--print-key"))
}

func TestProduceKeys(t *testing.T) {
	dir := newTopic(t, 1)
	input := "k1:v1\nk2:v:2\n:empty key\nk4:\n"
	_, stderr, code := cliIn(t, input, "produce", "--dir", dir, "--topic", "t", "--key-separator", ":")
	require.Equal(t, exitOK, code, stderr)
	require.Equal(t, "k1\tv1\nk2\tv:2\n\tempty key\nk4\t\n", consumeAll(t, dir, "--print-key"))
	require.Equal(t, "Offset:0 | k1 | v1\nOffset:1 | k2 | v:2\nOffset:2 |  | empty key\nOffset:3 | k4 | \n",
		consumeAll(t, dir, "--print-key", "--print-offset", "--key-separator", " | "))
}

func TestProduceProperties(t *testing.T) {
	dir := newTopic(t, 1)
	input := "NULL=x\nk=NULL\nno separator\n"
	_, stderr, code := cliIn(t, input, "produce", "--dir", dir, "--topic", "t",
		"--property", "parse.key=true", "--property", "key.separator==",
		"--property", "null.marker=NULL", "--property", "ignore.error=true")
	require.Equal(t, exitOK, code, stderr)
	require.Equal(t, "null\tx\nk\tnull\nnull\tno separator\n", consumeAll(t, dir, "--print-key"))

	// parse.key alone separates at a tab, Kafka's default.
	dir = newTopic(t, 1)
	_, stderr, code = cliIn(t, "k\tv\n", "produce", "--dir", dir, "--topic", "t", "--property", "parse.key=true")
	require.Equal(t, exitOK, code, stderr)
	require.Equal(t, "k|v\n", consumeAll(t, dir, "--print-key", "--key-separator", "|"))
}

func TestProduceMissingKeySeparator(t *testing.T) {
	dir := newTopic(t, 1)
	stdout, stderr, code := cliIn(t, "a:1\nb\nc:3\n", "produce", "--dir", dir, "--topic", "t", "--key-separator", ":")
	require.Equal(t, exitFailure, code)
	require.Empty(t, stdout)
	require.Equal(t, "partlog: produce: line 2: no key separator \":\" found in \"b\"\n", stderr)
	// The lines before it were produced, and nothing after.
	require.Equal(t, "a\t1\n", consumeAll(t, dir, "--print-key"))
}

func TestProduceExplicitPartition(t *testing.T) {
	dir := newTopic(t, 3)
	_, stderr, code := cliIn(t, "x\ny\n", "produce", "--dir", dir, "--topic", "t", "--partition", "2", "--acks", "1")
	require.Equal(t, exitOK, code, stderr)
	require.Equal(t, []int64{0, 0, 2}, topicEnds(t, dir))
	require.Equal(t, "Partition:2\tOffset:0\tx\nPartition:2\tOffset:1\ty\n",
		consumeAll(t, dir, "--partition", "2", "--print-partition", "--print-offset"))
	require.Empty(t, consumeAll(t, dir, "--partition", "0"))
}

func TestProducePartitioner(t *testing.T) {
	dir := newTopic(t, 3)
	// Keyed lines go to their key's hash; unkeyed ones (ignore.error) go
	// round-robin, one to each partition in turn.
	var input strings.Builder
	keys := []string{"k0", "k1", "k2", "k3", "k4", "k5", "k6", "k7"}
	for _, k := range keys {
		input.WriteString(k + ":" + k + "\n" + k + ":again\n")
	}
	input.WriteString("u0\nu1\nu2\nu3\nu4\nu5\n")
	_, stderr, code := cliIn(t, input.String(), "produce", "--dir", dir, "--topic", "t",
		"--key-separator", ":", "--property", "ignore.error=true", "--acks", "0")
	require.Equal(t, exitOK, code, stderr)

	hash := producer.KeyHashPartitioner()
	unkeyed := map[string]int{}
	for _, line := range lines(consumeAll(t, dir, "--print-partition", "--print-key")) {
		fields := strings.Split(line, "\t")
		require.Len(t, fields, 3, line)
		partition, key := fields[0], fields[1]
		if key == "null" {
			unkeyed[partition]++
			continue
		}
		want := hash(&producer.Record{Key: []byte(key)}, 3)
		require.Equal(t, "Partition:"+string(rune('0'+want)), partition, key)
	}
	require.Equal(t, map[string]int{"Partition:0": 2, "Partition:1": 2, "Partition:2": 2}, unkeyed)
}

func TestProduceLongLines(t *testing.T) {
	dir := newTopic(t, 1, "max.message.bytes=4000000")
	long := strings.Repeat("x", 3<<20) // longer than the 1 MiB read buffer
	_, stderr, code := cliIn(t, "short\n"+long+"\nend\n", "produce", "--dir", dir, "--topic", "t")
	require.Equal(t, exitOK, code, stderr)
	require.Equal(t, "short\n"+long+"\nend\n", consumeAll(t, dir))

	// A line longer than the topic takes fails, naming it.
	dir = newTopic(t, 1, "max.message.bytes=1000")
	stdout, stderr, code := cliIn(t, "short\n"+strings.Repeat("y", 1001)+"\nend\n", "produce", "--dir", dir, "--topic", "t")
	require.Equal(t, exitFailure, code)
	require.Empty(t, stdout)
	require.Equal(t, "partlog: produce: line 2: longer than the topic's max.message.bytes, 1000\n", stderr)
	require.Equal(t, "short\n", consumeAll(t, dir))
}

func TestProduceRecordFails(t *testing.T) {
	// A line the node refuses: short enough to read, too long for a batch
	// once framed.
	dir := newTopic(t, 1, "max.message.bytes=1000")
	stdout, stderr, code := cliIn(t, "ok\n"+strings.Repeat("z", 990)+"\n", "produce", "--dir", dir, "--topic", "t")
	require.Equal(t, exitFailure, code)
	require.Empty(t, stdout)
	require.True(t, strings.HasPrefix(stderr, "partlog: produce: line 2: "), stderr)
	require.Contains(t, stderr, "MESSAGE_TOO_LARGE")
	require.Len(t, lines(stderr), 1)
	require.Equal(t, "ok\n", consumeAll(t, dir))
}

func TestProduceInterrupted(t *testing.T) {
	dir := newTopic(t, 1)
	interrupt := interruptible(t)
	r, w := io.Pipe()
	t.Cleanup(func() { w.Close() }) // ends the reading goroutine left blocked
	old := stdin
	stdin = r
	defer func() { stdin = old }()

	done := make(chan int)
	var out, errOut strings.Builder
	go func() { done <- run([]string{"produce", "--dir", dir, "--topic", "t"}, &out, &errOut) }()
	_, err := io.WriteString(w, "a\nb\n") // returns once the command has read it
	require.NoError(t, err)
	interrupt()
	require.Equal(t, exitOK, <-done)
	require.Empty(t, out.String())
	require.Empty(t, errOut.String())
	// The data directory was closed: it opens, holding a prefix of the
	// lines (those produced before the interrupt).
	require.Contains(t, []string{"", "a\n", "a\nb\n"}, consumeAll(t, dir))
}

func TestProduceUsage(t *testing.T) {
	dir := newTopic(t, 1)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--dir", dir}, "produce: --topic is required"},
		{[]string{"--topic", "t"}, "produce: --dir or --bootstrap-server is required"},
		{[]string{"--dir", dir, "--topic", "t", "file.txt"}, `produce: unexpected argument "file.txt": produce reads standard input`},
		{[]string{"--dir", dir, "--topic", "t", "--partition", "-2"}, "produce: --partition -2 is negative"},
		{[]string{"--dir", dir, "--topic", "t", "--key-separator", ""}, "produce: --key-separator is empty"},
		{[]string{"--dir", dir, "--topic", "t", "--acks", "2"}, `produce: invalid value "2" for --acks: acks "2" is not all, -1, 1 or 0`},
		{[]string{"--dir", dir, "--topic", "t", "--property", "parse.headers=true"}, `produce: unknown --property "parse.headers"; produce knows parse.key, key.separator, ignore.error and null.marker`},
		{[]string{"--dir", dir, "--topic", "t", "--property", "parse.key=yes"}, "produce: --property parse.key=yes: not true or false"},
		{[]string{"--dir", dir, "--topic", "t", "--key-separator", "|", "--property", "null.marker=|"}, "produce: --property null.marker and key.separator may not be equal"},
	} {
		stdout, stderr, code := cliIn(t, "a\n", append([]string{"produce"}, tc.args...)...)
		require.Equal(t, exitUsage, code, tc.args)
		require.Empty(t, stdout, tc.args)
		require.Equal(t, []string{"partlog: " + tc.want, "Run 'partlog help produce' for usage."}, lines(stderr), tc.args)
	}
	require.Equal(t, []int64{0}, topicEnds(t, dir))
}

func TestLineReader(t *testing.T) {
	input := "a\r\n" + strings.Repeat("b", 40) + "\n\n" + strings.Repeat("c", 50) + "\nlast"
	lr := &lineReader{r: bufio.NewReaderSize(strings.NewReader(input), 16), max: 50}
	var got []string
	for {
		line, err := lr.next()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		got = append(got, string(line))
	}
	require.Equal(t, []string{"a", strings.Repeat("b", 40), "", strings.Repeat("c", 50), "last"}, got)

	lr = &lineReader{r: bufio.NewReaderSize(strings.NewReader(strings.Repeat("d", 1000)+"\n"), 16), max: 50}
	_, err := lr.next()
	require.ErrorIs(t, err, errLineTooLong)
}

func TestProgress(t *testing.T) {
	var out strings.Builder
	t0 := time.Unix(1700000000, 0)
	p := newProgress(&out, "produced", t0)
	p.report(t0.Add(time.Second), 200_000)  // not due
	p.report(t0.Add(5*time.Second), 99_999) // too few records to report
	p.report(t0.Add(10*time.Second), 300_000)
	p.report(t0.Add(12*time.Second), 400_000) // not due
	p.report(t0.Add(20*time.Second), 500_000)
	require.Equal(t, "produced 300000 records (40000 records/s)\nproduced 500000 records (20000 records/s)\n", out.String())
}
