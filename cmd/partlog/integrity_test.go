package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/partlog/partlog/internal/integrity"
)

// TestIntegrityCLI is the integrity suite's shell path, used as a user
// uses it: generated lines are piped into 'partlog produce' processes
// (a real pipe on standard input), read back with 'partlog consume', and
// the segment files decoded as dump-log decodes them. Every line produced
// must be read back exactly once, byte for byte, in the order its producer
// sent it within its partition; keyed lines stay with their key's
// partition; offsets are contiguous; and the segment files hold exactly
// what the consumer printed, timestamps included. One producer writes to
// the data directory (--dir); three write at once to a served node
// (--bootstrap-server). Each flush policy, 1 and 8 partitions, keyed and
// unkeyed.
func TestIntegrityCLI(t *testing.T) {
	bin := buildIntegrityPartlog(t)
	seed := integrity.NewSeed()
	lines := 60000
	if raceEnabled {
		lines = 30000 // a race-detecting binary is slower, and finds races with less
	}
	for _, flush := range []string{"sync-before-ack", "flush-off", "flush-ms"} {
		for _, partitions := range []int{1, 8} {
			for _, keyed := range []bool{false, true} {
				for _, producers := range []int{1, 3} {
					c := cliCase{bin: bin, seed: seed, flush: flush, partitions: partitions, keyed: keyed, producers: producers, lines: lines / producers}
					t.Run(fmt.Sprintf("%s/partitions=%d/keyed=%v/producers=%d", flush, partitions, keyed, producers), func(t *testing.T) {
						t.Parallel() // the processes wait on fsync more than they compute
						t.Cleanup(func() {
							if t.Failed() {
								t.Logf("seed %d", seed)
							}
						})
						c.run(t)
					})
				}
			}
		}
	}
}

// buildIntegrityPartlog builds the binary, with the race detector when
// the test runs with it.
func buildIntegrityPartlog(tb testing.TB) string {
	tb.Helper()
	bin := filepath.Join(tb.TempDir(), "partlog")
	args := []string{"build", "-o", bin}
	if raceEnabled {
		args = append(args, "-race")
	}
	out, err := exec.Command("go", append(args, ".")...).CombinedOutput()
	require.NoError(tb, err, "go build: %s", out)
	return bin
}

// cliCase is one cell of TestIntegrityCLI.
type cliCase struct {
	bin                   string
	seed                  uint64
	flush                 string
	partitions, producers int
	keyed                 bool
	lines                 int // per producer
}

// configs are the topic's --config flags for the flush policy.
func (c cliCase) configs() []string {
	switch c.flush {
	case "flush-off":
		return []string{"--config", "flush.messages=9223372036854775807"}
	case "flush-ms":
		return []string{"--config", "flush.messages=9223372036854775807", "--config", "flush.ms=20"}
	}
	return nil
}

// input returns producer pr's lines: each names the seed, producer and
// line, then random printable bytes (no tab, which the consumer prints
// between fields); keyed lines start with a key and ':'. A few keyed lines
// have an empty value.
func (c cliCase) input(pr int) []byte {
	rng := rand.New(rand.NewPCG(c.seed, uint64(pr)))
	var b bytes.Buffer
	for i := range c.lines {
		if c.keyed {
			fmt.Fprintf(&b, "key-%d-%d:", pr, rng.IntN(40))
			if rng.IntN(100) == 0 {
				b.WriteByte('\n') // an empty value
				continue
			}
		}
		fmt.Fprintf(&b, "s%d/p%d/r%d|", c.seed, pr, i)
		for range rng.IntN(120) {
			b.WriteByte(byte(' ' + rng.IntN(95)))
		}
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// cli runs the binary and fails the test unless it exits 0.
func (c cliCase) cli(t *testing.T, stdin []byte, args ...string) []byte {
	t.Helper()
	out, err := c.exec(stdin, args...)
	require.NoError(t, err)
	return out
}

// exec runs the binary and returns its standard output, or an error with
// its standard error unless it exits 0.
func (c cliCase) exec(stdin []byte, args ...string) ([]byte, error) {
	cmd := exec.Command(c.bin, args...)
	cmd.Stdin = bytes.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("partlog %s: %w: %s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.Bytes(), nil
}

func (c cliCase) run(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "d")
	c.cli(t, nil, append([]string{"topics", "create", "--dir", dir, "--topic", "t", "--partitions", strconv.Itoa(c.partitions)}, c.configs()...)...)
	keyFlags := []string{}
	if c.keyed {
		keyFlags = []string{"--key-separator", ":"}
	}
	inputs := make([][]byte, c.producers)
	for pr := range inputs {
		inputs[pr] = c.input(pr)
	}
	target := []string{"--dir", dir}
	if c.producers > 1 {
		served := startProcess(t, c.bin, "serve", "--dir", dir, "--listen", "127.0.0.1:0")
		target = []string{"--bootstrap-server", served.addr}
		var wg sync.WaitGroup
		errs := make([]error, len(inputs))
		for pr := range inputs {
			wg.Go(func() {
				_, errs[pr] = c.exec(inputs[pr], append(append([]string{"produce", "--topic", "t"}, target...), keyFlags...)...)
			})
		}
		wg.Wait()
		require.NoError(t, errors.Join(errs...))
		served.terminate()
	} else {
		c.cli(t, inputs[0], append(append([]string{"produce", "--topic", "t"}, target...), keyFlags...)...)
	}

	// The consumer stops once it has printed every line produced, and
	// gives up only after 30 s without a record: an idle timeout short
	// enough to end a complete read at once would, on a loaded machine,
	// end one that has not started. Should the files hold more records
	// than that, the comparison with them below says so.
	total := strconv.Itoa(c.lines * c.producers)
	out := c.cli(t, nil, "consume", "--dir", dir, "--topic", "t", "--from-beginning", "--timeout", "30s", "--max-messages", total,
		"--print-timestamp", "--print-partition", "--print-offset", "--print-key")
	consumed := parseConsumed(t, out)
	disk, err := integrity.ReadDir(dir, "t", c.partitions)
	require.NoError(t, err)
	require.NoError(t, integrity.Compare("the segment files", consumed, disk), "the consumer printed what the files hold")
	c.checkAgainstInput(t, inputs, consumed)
}

// parseConsumed parses consume's lines:
// CreateTime:T \t Partition:P \t Offset:O \t KEY \t VALUE.
func parseConsumed(t *testing.T, out []byte) []integrity.Record {
	t.Helper()
	var rs []integrity.Record
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		f := strings.SplitN(sc.Text(), "\t", 5)
		require.Len(t, f, 5, "line %q", sc.Text())
		ts, err1 := strconv.ParseInt(strings.TrimPrefix(f[0], "CreateTime:"), 10, 64)
		p, err2 := strconv.ParseInt(strings.TrimPrefix(f[1], "Partition:"), 10, 32)
		off, err3 := strconv.ParseInt(strings.TrimPrefix(f[2], "Offset:"), 10, 64)
		require.NoError(t, errors.Join(err1, err2, err3), "line %q", sc.Text())
		rs = append(rs, integrity.Record{Partition: int32(p), Offset: off, Timestamp: ts, Key: nullable(f[3]), Value: []byte(f[4])})
	}
	require.NoError(t, sc.Err())
	return rs
}

// nullable is consume's printed key: "null" is a null key.
func nullable(s string) []byte {
	if s == nullLiteral {
		return nil
	}
	return []byte(s)
}

// checkAgainstInput checks the consumed records against the lines piped
// in: the same lines, each once; offsets contiguous from 0; each
// producer's lines of a partition in the order it sent them; a key in one
// partition only. (Plain comparisons: a require call per record is slow
// under -race.)
func (c cliCase) checkAgainstInput(t *testing.T, inputs [][]byte, consumed []integrity.Record) {
	t.Helper()
	want := map[string]int{}
	total := 0
	for _, in := range inputs {
		for line := range strings.SplitSeq(strings.TrimSuffix(string(in), "\n"), "\n") {
			want[line]++
			total++
		}
	}
	require.Len(t, consumed, total, "one record per line")
	next := map[int32]int64{}
	last := map[[2]int]int{} // {partition, producer} -> last line index seen
	keyPartition := map[string]int32{}
	prefix := fmt.Sprintf("s%d/p", c.seed)
	for _, r := range consumed {
		if r.Offset != next[r.Partition] {
			t.Fatalf("partition %d: offset %d after %d", r.Partition, r.Offset, next[r.Partition]-1)
		}
		next[r.Partition]++
		line := string(r.Value)
		switch {
		case c.keyed && r.Key == nil, !c.keyed && r.Key != nil:
			t.Fatalf("%v: keyed=%v, key %q", r, c.keyed, r.Key)
		case c.keyed:
			line = string(r.Key) + ":" + line
			if p, ok := keyPartition[string(r.Key)]; ok && p != r.Partition {
				t.Fatalf("key %q in partitions %d and %d", r.Key, p, r.Partition)
			}
			keyPartition[string(r.Key)] = r.Partition
		}
		if want[line] == 0 {
			t.Fatalf("%v: line %q read but never produced, or read too often", r, line)
		}
		want[line]--
		if pr, i, ok := lineID(string(r.Value), prefix); ok {
			k := [2]int{int(r.Partition), pr}
			if l, seen := last[k]; seen && i <= l {
				t.Fatalf("partition %d: producer %d's line %d after its line %d", r.Partition, pr, i, l)
			}
			last[k] = i
		}
	}
}

// lineID parses the producer and line index that begin a generated value:
// prefix, then "P/rI|".
func lineID(v, prefix string) (pr, i int, ok bool) {
	rest, found := strings.CutPrefix(v, prefix)
	if !found {
		return 0, 0, false
	}
	p, rest, found := strings.Cut(rest, "/r")
	if !found {
		return 0, 0, false
	}
	n, _, found := strings.Cut(rest, "|")
	pr, err1 := strconv.Atoi(p)
	i, err2 := strconv.Atoi(n)
	return pr, i, found && err1 == nil && err2 == nil
}
