package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/partlog/partlog/consumer"
)

// TestRun runs the whole example, with the leader shut down cleanly and
// crashed: three nodes, the leader gone while an idempotent producer
// writes with acks=all, the old leader back. run fails if an acknowledged
// record is lost, consumed twice or at another offset, or if a step does
// not happen (a new leader, the ISR shrinking, the old leader rejoining,
// every replica catching up).
func TestRun(t *testing.T) {
	for name, stop := range map[string]leaderStop{"controlled shutdown": controlledShutdown, "crash": crashed} {
		t.Run(name, func(t *testing.T) {
			var out bytes.Buffer
			err := run(context.Background(), filepath.Join(t.TempDir(), "cluster"), stop, &out)
			require.NoError(t, err, "output:\n%s", out.String())
			text := out.String()
			for _, want := range []string{
				`leader node 1, leader epoch 0, replicas \[1 2 3\], ISR \[1 2 3\]\n`, // the topic
				`after:  orders-0: leader node [23], leader epoch 1, replicas \[1 2 3\], ISR \[[23 ]+\]  \(`,
				`node 1: down`,
				`replicas just after it opens:`,
				`leader node [23], leader epoch 1, replicas \[1 2 3\], ISR \[1 2 3\]  \(`, // node 1 back
				`replicas, every one caught up:\n(     node \d: (leader|follower) +LEO +\d+  HW +\d+\n){3}`,
				`each consumed once at its acknowledged offset`,
				`offsets 0\.\.\d+ written in leader epoch 0, offsets \d+\.\.\d+ written in leader epoch 1\n$`,
			} {
				require.Regexp(t, want, text)
			}
			// Every replica ends with the same LEO and HW: every record,
			// all committed.
			caughtUp := regexp.MustCompile(`every one caught up:\n((?:.*\n){3})`).FindStringSubmatch(text)[1]
			ends := regexp.MustCompile(`LEO +(\d+)  HW +(\d+)`).FindAllStringSubmatch(caughtUp, -1)
			require.Len(t, ends, 3)
			for _, e := range ends {
				require.Equal(t, ends[0][1], e[1], "LEO")
				require.Equal(t, ends[0][1], e[2], "HW")
			}
			t.Log(text)
		})
	}
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
