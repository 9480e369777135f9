package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/partlog/partlog/consumer"
)

// TestRun runs the whole example: three nodes, the leader shut down while
// an idempotent producer writes with acks=all, the old leader back. run
// fails if an acknowledged record is lost, consumed twice or at another
// offset, or if a step does not happen (a new leader, the ISR shrinking,
// the old leader rejoining, every replica catching up).
func TestRun(t *testing.T) {
	var out bytes.Buffer
	err := run(context.Background(), filepath.Join(t.TempDir(), "cluster"), &out)
	require.NoError(t, err, "output:\n%s", out.String())
	text := out.String()
	for _, want := range []string{
		"leader node 1, leader epoch 0, replicas [1 2 3], ISR [1 2 3]\n",  // the topic
		"leader node 2, leader epoch 1, replicas [1 2 3], ISR [2 3]  (",   // node 1 shut down
		"leader node 2, leader epoch 1, replicas [1 2 3], ISR [1 2 3]  (", // node 1 back
		"node 1: down",
		"replicas just after it opens:",
		"replicas, every one caught up:",
		"each consumed once at its acknowledged offset",
		"written in leader epoch 0",
		"written in leader epoch 1",
	} {
		require.Contains(t, text, want)
	}
	t.Log(text)
}

// TestVerify checks that the final check catches a lost record, a
// duplicate and a record consumed at another offset than acknowledged.
func TestVerify(t *testing.T) {
	acked := func() *ackLog {
		return &ackLog{offsets: map[string]int64{"order-0": 0, "order-1": 1, "order-2": 2}}
	}
	consumed := func(values ...string) *readConsumer {
		rc := &readConsumer{}
		for i, v := range values {
			rc.records = append(rc.records, consumer.Record{Topic: topic, Offset: int64(i), Value: []byte(v)})
		}
		return rc
	}
	require.NoError(t, verify(acked(), consumed("order-0", "order-1", "order-2")))
	for name, tc := range map[string]struct {
		rc   *readConsumer
		want string
	}{
		"lost":       {consumed("order-0", "order-1"), "order-2 acknowledged at offset 2 but never consumed"},
		"duplicated": {consumed("order-0", "order-1", "order-2", "order-2"), "order-2 consumed twice"},
		"moved":      {consumed("order-1", "order-0", "order-2"), "order-1 acknowledged at offset 1 but consumed at 0"},
		"unacked":    {consumed("order-0", "order-1", "order-2", "order-3"), "order-3 consumed at offset 3 but never acknowledged"},
	} {
		err := verify(acked(), tc.rc)
		require.Error(t, err, name)
		require.Contains(t, err.Error(), tc.want, name)
	}
}

// TestEmptyDataDir checks that -dir is emptied only when it holds what
// the example makes.
func TestEmptyDataDir(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("mine"), 0o644))
	err := emptyDataDir(dir)
	require.Error(t, err)
	require.True(t, strings.Contains(err.Error(), "notes.txt"), err.Error())
	_, err = os.Stat(filepath.Join(dir, "notes.txt"))
	require.NoError(t, err, "a directory of someone else's is left alone")

	require.NoError(t, emptyDataDir(filepath.Join(dir, "missing")), "a directory that does not exist is fine")
}
