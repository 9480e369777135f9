package main

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/partlog/partlog"
	"github.com/partlog/partlog/transport"
)

// TestTransactionsListDescribe: transactions list and describe show what
// the node's coordinator knows of the transactional ids franz-go's kgo
// used: one whose transaction committed, one with a transaction open —
// whose record consume --isolation-level read_committed does not print.
func TestTransactionsListDescribe(t *testing.T) {
	dir := newTopic(t, 2)
	n, err := partlog.Open(dir)
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s := transport.NewServer(n.Client(), transport.ServerOptions{})
	go s.Serve(ln)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client := func(id string) *kgo.Client {
		cl, err := kgo.NewClient(kgo.SeedBrokers(ln.Addr().String()), kgo.TransactionalID(id), kgo.DefaultProduceTopic("t"),
			kgo.TransactionTimeout(time.Minute))
		require.NoError(t, err)
		return cl
	}
	done := client("done")
	require.NoError(t, done.BeginTransaction())
	require.NoError(t, done.ProduceSync(ctx, &kgo.Record{Value: []byte("x"), Partition: 0}).FirstErr())
	require.NoError(t, done.EndTransaction(ctx, kgo.TryCommit))
	done.Close()
	open := client("open")
	require.NoError(t, open.BeginTransaction())
	require.NoError(t, open.ProduceSync(ctx, &kgo.Record{Value: []byte("y")}).FirstErr())

	addr := ln.Addr().String()
	stdout, stderr, code := cli(t, "transactions", "list", "--bootstrap-server", addr)
	require.Equal(t, exitOK, code, stderr)
	rows := fields(stdout)
	require.Equal(t, []string{"TransactionalId", "Coordinator", "ProducerId", "TransactionState"}, rows[0])
	require.Len(t, rows, 3)
	require.Equal(t, []string{"done", "1"}, rows[1][:2])
	require.Contains(t, []string{"PrepareCommit", "CompleteCommit"}, rows[1][3])
	require.Equal(t, []string{"open", "1"}, rows[2][:2])
	require.Equal(t, "Ongoing", rows[2][3])

	stdout, stderr, code = cli(t, "transactions", "describe", "--bootstrap-server", addr, "--transactional-id", "open")
	require.Equal(t, exitOK, code, stderr)
	rows = fields(stdout)
	require.Equal(t, "CoordinatorId", rows[0][0])
	require.Equal(t, []string{"1", "open", rows[2-1][2], "0", "Ongoing", "60000"}, rows[1][:6])
	require.Regexp(t, `^t-[01]$`, rows[1][8], "the partition it wrote to")

	// The open transaction's record is read only at read_uncommitted.
	consume := func(iso string) string {
		t.Helper()
		stdout, stderr, code := cli(t, "consume", "--bootstrap-server", addr, "--topic", "t", "--from-beginning",
			"--timeout", "500ms", "--isolation-level", iso)
		require.Equal(t, exitOK, code, stderr)
		return stdout
	}
	require.Equal(t, "x\n", consume("read_committed"))
	require.ElementsMatch(t, []string{"x", "y"}, lines(consume("read_uncommitted")))
	_, stderr, code = cli(t, "consume", "--bootstrap-server", addr, "--topic", "t", "--isolation-level", "dirty")
	require.NotEqual(t, exitOK, code)
	require.Contains(t, stderr, "--isolation-level")

	_, stderr, code = cli(t, "transactions", "describe", "--bootstrap-server", addr, "--transactional-id", "nobody")
	require.NotEqual(t, exitOK, code)
	require.Contains(t, stderr, "TRANSACTIONAL_ID_NOT_FOUND")

	open.Close()
	s.Close()
	require.NoError(t, n.Close())
	stdout, stderr, code = cli(t, "transactions", "list", "--dir", dir)
	require.Equal(t, exitOK, code, stderr)
	require.Len(t, fields(stdout), 3, "kept in __transaction_state")
}
