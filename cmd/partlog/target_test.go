package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/partlog/partlog"
	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/transport"
)

// servedNode opens a node on a new directory and serves it on a loopback
// port, until the test ends.
func servedNode(t *testing.T) (*partlog.Node, string) {
	t.Helper()
	n, err := partlog.Open(t.TempDir())
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s := transport.NewServer(n.Client(), transport.ServerOptions{})
	go s.Serve(ln)
	t.Cleanup(func() {
		s.Close()
		n.Close()
	})
	return n, ln.Addr().String()
}

// TestBootstrapServer runs the topic, produce, consume and perf commands
// against a node they reach over TCP.
func TestBootstrapServer(t *testing.T) {
	n, addr := servedNode(t)
	run := func(input string, args ...string) string {
		t.Helper()
		stdout, stderr, code := cliIn(t, input, append(args, "--bootstrap-server", addr)...)
		require.Equal(t, exitOK, code, "%v: %s", args, stderr)
		return stdout
	}
	require.Equal(t, "Created topic study.\n", run("", "topics", "create", "--topic", "study", "--partitions", "2", "--config", "retention.ms=600000"))
	require.Equal(t, []string{"study"}, n.ListTopics(), "the served node has the topic")
	require.Equal(t, "study\n", run("", "topics", "list"))

	run("k1:hello\nk2:world\nk1:again\n", "produce", "--topic", "study", "--key-separator", ":")
	out := run("", "consume", "--topic", "study", "--from-beginning", "--print-key", "--max-messages", "3", "--timeout", "10s")
	got := lines(out)
	require.ElementsMatch(t, []string{"k1\thello", "k2\tworld", "k1\tagain"}, got)
	require.Less(t, slicesIndex(got, "k1\thello"), slicesIndex(got, "k1\tagain"), "one key's records in order")

	out = run("", "consume", "--topic", "study", "--group", "g1", "--from-beginning", "--max-messages", "3", "--timeout", "10s")
	require.Len(t, lines(out), 3)
	require.Equal(t, "g1\n", run("", "groups", "list"))
	groups := run("", "groups", "describe", "--group", "g1")
	require.Contains(t, groups, "Consumer group 'g1' has no active members.")
	require.Regexp(t, `g1\s+study\s+0\s+(\d+)\s+(\d+)\s+0\s`, groups, "the group committed up to each log end")

	desc := run("", "topics", "describe", "--topic", "study")
	require.Contains(t, desc, "Topic: study\tTopicId: ")
	require.Contains(t, desc, "PartitionCount: 2\tReplicationFactor: 1\tConfigs: retention.ms=600000\n")
	d, err := n.DescribeTopics("study")
	require.NoError(t, err)
	for _, p := range d[0].Partitions {
		require.Contains(t, desc, "\tPartition: "+itoa(p.Partition)+"\tLeader: 1\tReplicas: 1\tIsr: 1\tLogStartOffset: 0\tLogEndOffset: "+itoa64(p.HighWatermark)+"\tHighWatermark: "+itoa64(p.HighWatermark)+"\n")
	}

	perf := run("", "perf", "produce", "--topic", "perf", "--num-records", "2000", "--record-size", "100")
	require.True(t, strings.HasPrefix(lastLine(perf), "2000 records sent, "), perf)
	perf = run("", "perf", "consume", "--topic", "perf", "--messages", "2000")
	require.Contains(t, perf, ", 2000, ")

	require.Equal(t, "Deleted topic perf.\n", run("", "topics", "delete", "--topic", "perf"))
	require.NotContains(t, n.ListTopics(), "perf")

	_, stderr, code := cli(t, "consume", "--topic", "nope", "--timeout", "10ms", "--bootstrap-server", addr)
	require.Equal(t, exitFailure, code)
	require.Equal(t, "partlog: consume: topic \"nope\" does not exist in "+addr+"; create it with 'partlog topics create'\n", stderr)
	_, stderr, code = cli(t, "topics", "list", "--bootstrap-server", addr, "--dir", t.TempDir())
	require.Equal(t, exitUsage, code)
	require.Contains(t, stderr, "give --dir or --bootstrap-server, not both")
}

func TestBootstrapServerUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	ln.Close()
	old := bootstrapWait
	bootstrapWait = 300 * time.Millisecond
	defer func() { bootstrapWait = old }()
	_, stderr, code := cli(t, "topics", "list", "--bootstrap-server", addr)
	require.Equal(t, exitFailure, code)
	require.Contains(t, stderr, "waiting for "+addr+" to accept connections", "it says it waits")
	require.Contains(t, stderr, "partlog: topics: NETWORK_EXCEPTION")
}

// TestBootstrapServerStartingLate: a command given a node that is not
// listening yet (started a moment before, in a script) waits for it
// rather than failing at once, as Kafka's tools retry their bootstrap
// servers.
func TestBootstrapServerStartingLate(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	ln.Close()
	n, err := partlog.Open(t.TempDir())
	require.NoError(t, err)
	defer n.Close()
	require.NoError(t, n.CreateTopic(context.Background(), partlog.NewTopic{Name: "late"}))
	s := transport.NewServer(n.Client(), transport.ServerOptions{})
	defer s.Close()
	started := make(chan struct{})
	go func() {
		<-started // once the command has been refused at least once
		ln, err := net.Listen("tcp", addr)
		if err == nil {
			s.Serve(ln)
		}
	}()
	w := &signalWriter{match: "waiting for", signal: started}
	code := run([]string{"topics", "list", "--bootstrap-server", addr}, io.Discard, w)
	require.Equal(t, exitOK, code, w.String())
}

// signalWriter collects what is written and closes signal once it has
// seen match.
type signalWriter struct {
	bytes.Buffer
	match  string
	signal chan struct{}
	once   sync.Once
}

func (w *signalWriter) Write(p []byte) (int, error) {
	n, err := w.Buffer.Write(p)
	if strings.Contains(w.Buffer.String(), w.match) {
		w.once.Do(func() { close(w.signal) })
	}
	return n, err
}

func slicesIndex(xs []string, x string) int {
	for i, v := range xs {
		if v == x {
			return i
		}
	}
	return -1
}

func itoa(v int32) string   { return itoa64(int64(v)) }
func itoa64(v int64) string { return strconv.FormatInt(v, 10) }

func lastLine(s string) string {
	ls := lines(s)
	return ls[len(ls)-1]
}

// failingProduce is a node whose first produce requests fail, partition by
// partition, with a retriable error, as a node whose disk is full does.
type failingProduce struct {
	partlog.Client
	left atomic.Int32
}

func (f *failingProduce) Produce(ctx context.Context, req *transport.ProduceRequest) (*transport.ProduceResponse, error) {
	if f.left.Add(-1) < 0 {
		return f.Client.Produce(ctx, req)
	}
	resp := &transport.ProduceResponse{}
	for _, t := range req.Topics {
		tr := transport.ProduceTopicResponse{Topic: t.Topic}
		for _, p := range t.Partitions {
			tr.Partitions = append(tr.Partitions, transport.ProducePartitionResponse{Partition: p.Partition,
				Err: fmt.Errorf("%w: no space left on device", kafka.ErrKafkaStorage), BaseOffset: -1, LogAppendTime: -1, LogStartOffset: -1})
		}
		resp.Topics = append(resp.Topics, tr)
	}
	return resp, nil
}

// TestProduceReportsRetries: while its batches are being retried, produce
// says so and why on standard error, rather than waiting in silence until
// the delivery timeout; the records land once each.
func TestProduceReportsRetries(t *testing.T) {
	n, err := partlog.Open(t.TempDir())
	require.NoError(t, err)
	defer n.Close()
	require.NoError(t, n.CreateTopic(context.Background(), partlog.NewTopic{Name: "t"}))
	f := &failingProduce{Client: n.Client()}
	f.left.Store(3)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s := transport.NewServer(f, transport.ServerOptions{})
	go s.Serve(ln)
	defer s.Close()

	_, stderr, code := cliIn(t, "a\nb\nc\n", "produce", "--bootstrap-server", ln.Addr().String(), "--topic", "t")
	require.Equal(t, exitOK, code, stderr)
	require.Contains(t, stderr, "partlog: produce: retrying")
	require.Contains(t, stderr, "KAFKA_STORAGE_ERROR")
	d, err := n.DescribeTopics("t")
	require.NoError(t, err)
	require.EqualValues(t, 3, d[0].Partitions[0].LogEndOffset, "each line once")
}
