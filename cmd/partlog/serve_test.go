package main

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/partlog/partlog/producer"
	"github.com/partlog/partlog/transport"
)

// TestServe runs "partlog serve", produces to it over TCP from a client,
// interrupts it, and finds the records in the directory it closed.
func TestServe(t *testing.T) {
	dir := newTopic(t, 2)
	interrupt := interruptible(t)
	ready := make(chan string, 1)
	serveReady = func(addr string) { ready <- addr }
	defer func() { serveReady = nil }()
	type result struct {
		stderr string
		code   int
	}
	done := make(chan result, 1)
	go func() {
		_, stderr, code := cli(t, "serve", "--dir", dir, "--listen", "127.0.0.1:0")
		done <- result{stderr, code}
	}()
	addr := <-ready

	ctx := context.Background()
	c, err := transport.Dial(ctx, addr, transport.DialOptions{})
	require.NoError(t, err)
	p, err := producer.New(c)
	require.NoError(t, err)
	var recs []*producer.Record
	for _, v := range []string{"a", "b", "c", "d", "e"} {
		recs = append(recs, &producer.Record{Topic: "t", Value: []byte(v)})
	}
	require.NoError(t, p.ProduceSync(ctx, recs...).FirstErr())
	require.NoError(t, p.Close())
	require.NoError(t, c.Close())

	interrupt()
	r := <-done
	require.Equal(t, exitOK, r.code, r.stderr)
	require.Equal(t, "partlog: node 1 serving "+dir+" on "+addr+"\npartlog: closed cleanly\n", r.stderr)
	ends := topicEnds(t, dir)
	require.Equal(t, int64(5), ends[0]+ends[1])
}

func TestServeDirectoryInUse(t *testing.T) {
	dir := newTopic(t, 1)
	interrupt := interruptible(t)
	ready := make(chan string, 1)
	serveReady = func(addr string) { ready <- addr }
	defer func() { serveReady = nil }()
	done := make(chan int, 1)
	go func() {
		_, _, code := cli(t, "serve", "--dir", dir, "--listen", "127.0.0.1:0")
		done <- code
	}()
	<-ready
	_, stderr, code := cli(t, "topics", "list", "--dir", dir)
	require.Equal(t, exitFailure, code)
	require.Contains(t, stderr, "is in use by another partlog")
	interrupt()
	require.Equal(t, exitOK, <-done)
}
