package partlog_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/partlog/partlog"
	"github.com/partlog/partlog/vfs"
)

// TestZombieProducerFenced is the reliability plan's test 19 with
// franz-go's kgo: P1 opens a transaction and writes; P2, a new instance
// with the same transactional id, starts; its InitProducerId bumps the
// epoch and aborts P1's transaction (an ABORT marker follows P1's
// record), and P1's commit then fails as fenced. A producer with another
// transactional id is never fenced. A read_committed consumer (kgo's)
// never sees the zombie's record; a read_uncommitted one does.
func TestZombieProducerFenced(t *testing.T) {
	n := openNode(t, vfs.NewMem())
	defer n.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, n.CreateTopic(ctx, partlog.NewTopic{Name: "t"}))
	addr := serveNode(t, n)
	client := func(id string) *kgo.Client {
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.TransactionalID(id), kgo.DefaultProduceTopic("t"))
		require.NoError(t, err)
		return cl
	}
	p1 := client("tx")
	defer p1.Close()
	other := client("other")
	defer other.Close()
	require.NoError(t, p1.BeginTransaction())
	require.NoError(t, p1.ProduceSync(ctx, &kgo.Record{Value: []byte("zombie")}).FirstErr())
	require.NoError(t, other.BeginTransaction())
	require.NoError(t, other.ProduceSync(ctx, &kgo.Record{Value: []byte("bystander")}).FirstErr())

	p2 := client("tx")
	defer p2.Close()
	require.NoError(t, p2.BeginTransaction()) // InitProducerId: fences p1
	require.NoError(t, p2.ProduceSync(ctx, &kgo.Record{Value: []byte("successor")}).FirstErr())
	require.NoError(t, p2.EndTransaction(ctx, kgo.TryCommit))

	err := p1.EndTransaction(ctx, kgo.TryCommit)
	require.Error(t, err, "the zombie cannot commit")
	require.True(t, errors.Is(err, kerr.ProducerFenced) || errors.Is(err, kerr.InvalidProducerEpoch), "%v", err)
	require.NoError(t, other.EndTransaction(ctx, kgo.TryCommit), "another transactional id is not fenced")

	got := txnLogEntries(t, n, "t", 0, 6)
	require.Equal(t, []string{"zombie", "bystander", "ABORT", "successor", "COMMIT", "COMMIT"}, got)

	require.Equal(t, []string{"bystander", "successor"}, readValues(t, addr, kgo.ReadCommitted(), 2),
		"none of the zombie's writes is visible to read_committed")
	require.Equal(t, []string{"zombie", "bystander", "successor"}, readValues(t, addr, kgo.ReadUncommitted(), 3))
}

// readValues reads topic t from the start with kgo at isolation level
// iso until it has want values and no more come, and returns them.
func readValues(t *testing.T, addr string, iso kgo.IsolationLevel, want int) []string {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics("t"), kgo.FetchIsolationLevel(iso),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	require.NoError(t, err)
	defer cl.Close()
	var got []string
	deadline := time.Now().Add(20 * time.Second)
	for len(got) < want && time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		fs := cl.PollFetches(ctx)
		cancel()
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	return got
}
