package partlog_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/partlog/partlog"
	"github.com/partlog/partlog/consumer"
	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/partlogtest"
	"github.com/partlog/partlog/producer"
	"github.com/partlog/partlog/record"
	"github.com/partlog/partlog/vfs"
)

// txnLogEntries returns what partition p of topic holds up to end: each
// record's value, and each marker as "COMMIT" or "ABORT".
func txnLogEntries(t *testing.T, n *partlog.Node, topic string, p int32, end int64) []string {
	t.Helper()
	l, err := partlogtest.Log(n, topic, p)
	require.NoError(t, err)
	waitUntil(t, "the markers", func() bool { return l.LogEndOffset() >= end })
	var got []string
	eachLogBatch(t, l, func(h record.Header, b *record.Batch) {
		if h.BaseOffset >= end {
			return
		}
		require.True(t, h.Attributes.IsTransactional(), "every batch of a transactional producer is transactional")
		for _, r := range b.Records {
			if h.Attributes.IsControl() {
				c, err := record.ParseControlRecord(r)
				require.NoError(t, err)
				got = append(got, c.Type.String())
			} else {
				got = append(got, string(r.Value))
			}
		}
	})
	return got
}

// txnTestNode opens a node with topics of one partition, closed when the
// test ends, and returns it with a context for the test.
func txnTestNode(t *testing.T, topics ...string) (*partlog.Node, context.Context) {
	t.Helper()
	n := openNode(t, vfs.NewMem())
	t.Cleanup(func() { n.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	for _, name := range topics {
		require.NoError(t, n.CreateTopic(ctx, partlog.NewTopic{Name: name}))
	}
	return n, ctx
}

// newTxnProducer returns a transactional producer with id on the node.
func newTxnProducer(t *testing.T, n *partlog.Node, id string, opts ...producer.Option) *producer.Producer {
	t.Helper()
	p, err := producer.New(n.Client(), append([]producer.Option{producer.TransactionalID(id), producer.Linger(0)}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(func() { p.Close() })
	return p
}

// txnReadAll reads topic's partition 0 from the start at isolation iso
// until its position reaches end, and returns the values read.
func txnReadAll(t *testing.T, ctx context.Context, n *partlog.Node, topic string, end int64, iso consumer.IsolationLevel) []string {
	t.Helper()
	tp := kafka.TopicPartition{Topic: topic, Partition: 0}
	c, err := consumer.New(n.Client(), consumer.Partitions(tp), consumer.AutoOffsetReset(consumer.Earliest), consumer.Isolation(iso))
	require.NoError(t, err)
	defer c.Close()
	return pollUntil(t, ctx, c, tp, end)
}

// pollUntil polls c until its position in tp reaches end, and returns the
// values read.
func pollUntil(t *testing.T, ctx context.Context, c *consumer.Consumer, tp kafka.TopicPartition, end int64) []string {
	t.Helper()
	var got []string
	for {
		pos, err := c.Position(ctx, tp)
		require.NoError(t, err)
		if pos >= end {
			return got
		}
		fs, err := c.Poll(ctx, 100*time.Millisecond)
		require.NoError(t, err)
		for _, r := range fs.Records() {
			got = append(got, string(r.Value))
		}
	}
}

func rec(topic, v string) *producer.Record {
	return &producer.Record{Topic: topic, Value: []byte(v)}
}

// TestTxnClientCommitAndAbort: a transactional producer's committed
// transaction is followed in the log by its COMMIT marker, an aborted
// one's by ABORT; a read_committed consumer reads the committed records
// only, a read_uncommitted one the aborted ones too.
func TestTxnClientCommitAndAbort(t *testing.T) {
	n, ctx := txnTestNode(t, "t")
	p := newTxnProducer(t, n, "tx")
	require.Equal(t, producer.StateReady, p.TransactionState())

	require.NoError(t, p.BeginTransaction())
	require.NoError(t, p.ProduceSync(ctx, rec("t", "a"), rec("t", "b")).FirstErr())
	require.NoError(t, p.CommitTransaction(ctx))
	require.Equal(t, producer.StateReady, p.TransactionState())
	require.Equal(t, []string{"a", "b"}, txnReadAll(t, ctx, n, "t", 3, consumer.ReadCommitted))

	require.NoError(t, p.BeginTransaction())
	require.NoError(t, p.ProduceSync(ctx, rec("t", "c")).FirstErr())
	require.NoError(t, p.AbortTransaction(ctx))

	require.NoError(t, p.BeginTransaction())
	require.NoError(t, p.ProduceSync(ctx, rec("t", "d")).FirstErr())
	require.NoError(t, p.CommitTransaction(ctx))

	require.Equal(t, []string{"a", "b", "COMMIT", "c", "ABORT", "d", "COMMIT"}, txnLogEntries(t, n, "t", 0, 7))
	require.Equal(t, []string{"a", "b", "c", "d"}, txnReadAll(t, ctx, n, "t", 7, consumer.ReadUncommitted),
		"read_uncommitted reads the aborted transaction too")
	require.Equal(t, []string{"a", "b", "d"}, txnReadAll(t, ctx, n, "t", 7, consumer.ReadCommitted),
		"read_committed skips the aborted transaction")
}

// TestTxnClientReadCommittedWaitsForTheOutcome: records of an open
// transaction are invisible to read_committed — the consumer stops at the
// last stable offset, as does ListOffsets latest — until the commit; two
// producers interleaved on one partition, one aborting and one
// committing, leave exactly the committed records.
func TestTxnClientReadCommittedWaitsForTheOutcome(t *testing.T) {
	n, ctx := txnTestNode(t, "t")
	tp := kafka.TopicPartition{Topic: "t", Partition: 0}
	aborter, committer := newTxnProducer(t, n, "aborter"), newTxnProducer(t, n, "committer")

	require.NoError(t, aborter.BeginTransaction())
	require.NoError(t, committer.BeginTransaction())
	require.NoError(t, aborter.ProduceSync(ctx, rec("t", "a1")).FirstErr())
	require.NoError(t, committer.ProduceSync(ctx, rec("t", "c1")).FirstErr())
	require.NoError(t, aborter.ProduceSync(ctx, rec("t", "a2")).FirstErr())

	c, err := consumer.New(n.Client(), consumer.Partitions(tp), consumer.AutoOffsetReset(consumer.Earliest),
		consumer.Isolation(consumer.ReadCommitted))
	require.NoError(t, err)
	defer c.Close()
	fs, err := c.Poll(ctx, 200*time.Millisecond)
	require.NoError(t, err)
	require.True(t, fs.Empty(), "nothing is decided yet")
	latest, err := consumer.New(n.Client(), consumer.Partitions(tp), consumer.AutoOffsetReset(consumer.Latest),
		consumer.Isolation(consumer.ReadCommitted))
	require.NoError(t, err)
	defer latest.Close()
	pos, err := latest.Position(ctx, tp)
	require.NoError(t, err)
	require.Equal(t, int64(0), pos, "latest under read_committed is the last stable offset")

	require.NoError(t, aborter.AbortTransaction(ctx))
	// EndTxn is answered once the outcome is durable; the marker follows.
	// Waiting for it keeps the log's order the one checked below.
	require.Equal(t, []string{"a1", "c1", "a2", "ABORT"}, txnLogEntries(t, n, "t", 0, 4))
	require.NoError(t, committer.ProduceSync(ctx, rec("t", "c2")).FirstErr())
	require.NoError(t, committer.CommitTransaction(ctx))
	require.Equal(t, []string{"a1", "c1", "a2", "ABORT", "c2", "COMMIT"}, txnLogEntries(t, n, "t", 0, 6))

	require.Equal(t, []string{"c1", "c2"}, pollUntil(t, ctx, c, tp, 6))
}

// TestTxnClientZombieIsFenced: a new producer with the same transactional
// id fences the old one, whose open transaction the coordinator aborts;
// the old producer fails fatally.
func TestTxnClientZombieIsFenced(t *testing.T) {
	n, ctx := txnTestNode(t, "t")
	zombie := newTxnProducer(t, n, "tx")
	require.NoError(t, zombie.BeginTransaction())
	require.NoError(t, zombie.ProduceSync(ctx, rec("t", "z")).FirstErr())

	fresh := newTxnProducer(t, n, "tx")
	require.Equal(t, []string{"z", "ABORT"}, txnLogEntries(t, n, "t", 0, 2), "the zombie's open transaction is aborted")

	err := zombie.CommitTransaction(ctx)
	require.ErrorIs(t, err, producer.ErrFatal)
	require.Equal(t, producer.StateFatalError, zombie.TransactionState())
	require.ErrorIs(t, zombie.BeginTransaction(), producer.ErrFatal)

	require.NoError(t, fresh.BeginTransaction())
	require.NoError(t, fresh.ProduceSync(ctx, rec("t", "f")).FirstErr())
	require.NoError(t, fresh.CommitTransaction(ctx))
	require.Equal(t, []string{"z", "ABORT", "f", "COMMIT"}, txnLogEntries(t, n, "t", 0, 4))
	require.Equal(t, []string{"f"}, txnReadAll(t, ctx, n, "t", 4, consumer.ReadCommitted),
		"read_committed never sees the zombie's record")
}

// TestTxnClientConsumeTransformProduce: a group member's offsets sent in
// a transaction become the group's committed offsets only when the
// transaction commits; an aborted transaction leaves them as they were.
func TestTxnClientConsumeTransformProduce(t *testing.T) {
	n, ctx := txnTestNode(t, "in", "out")
	plain, err := producer.New(n.Client())
	require.NoError(t, err)
	defer plain.Close()
	require.NoError(t, plain.ProduceSync(ctx, rec("in", "x"), rec("in", "y")).FirstErr())

	in := kafka.TopicPartition{Topic: "in", Partition: 0}
	c, err := consumer.New(n.Client(), consumer.Group("g"), consumer.Topics("in"), consumer.AutoOffsetReset(consumer.Earliest),
		consumer.DisableAutoCommit(), consumer.Isolation(consumer.ReadCommitted))
	require.NoError(t, err)
	defer c.Close()
	var got []string
	for len(got) < 2 {
		fs, err := c.Poll(ctx, 100*time.Millisecond)
		require.NoError(t, err)
		for _, r := range fs.Records() {
			got = append(got, string(r.Value))
		}
	}
	require.Equal(t, []string{"x", "y"}, got)
	m := c.GroupMetadata()
	require.NotEmpty(t, m.MemberID)
	group := producer.GroupMetadata{Group: m.Group, GenerationID: m.Generation, MemberID: m.MemberID, GroupInstanceID: m.GroupInstanceID}
	offsets := map[kafka.TopicPartition]int64{in: 2}

	p := newTxnProducer(t, n, "ctp")
	transform := func(end func(context.Context) error) {
		t.Helper()
		require.NoError(t, p.BeginTransaction())
		for _, v := range got {
			p.Produce(ctx, rec("out", v+"'"), nil)
		}
		sctx, scancel := context.WithTimeout(ctx, 5*time.Second)
		err := p.SendOffsetsToTransaction(sctx, offsets, group)
		scancel()
		require.NoError(t, err)
		require.NoError(t, p.Flush(ctx), "sent before the end: an abort drops what is unsent")
		require.NoError(t, end(ctx))
	}
	committed := func() int64 {
		t.Helper()
		co, err := c.Committed(ctx, in)
		require.NoError(t, err)
		if o, ok := co[in]; ok {
			return o.Offset
		}
		return -1
	}

	transform(p.AbortTransaction)
	require.Equal(t, []string{"x'", "y'", "ABORT"}, txnLogEntries(t, n, "out", 0, 3))
	require.Equal(t, int64(-1), committed(), "an aborted transaction commits no offsets")

	transform(p.CommitTransaction)
	require.Equal(t, []string{"x'", "y'", "ABORT", "x'", "y'", "COMMIT"}, txnLogEntries(t, n, "out", 0, 6))
	waitUntil(t, "the offsets committed", func() bool { return committed() == 2 })
}
