package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	plog "github.com/partlog/partlog/log"
	"github.com/partlog/partlog/record"
)

// TestDumpLogCleanedSegment dumps a segment the log cleaner wrote: batches
// with offset gaps, an emptied batch kept for its end offset, and a
// tombstone's batch stamped with a delete horizon all read as valid.
func TestDumpLogCleanedSegment(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "study-0")
	now := time.UnixMilli(ts0)
	l, err := plog.Open(dir, plog.Options{SegmentBytes: 1024, CleanupPolicy: plog.CleanupCompact,
		MinCleanableDirtyRatio: -1, DeleteRetentionMs: time.Hour, Now: func() time.Time { return now }})
	require.NoError(t, err)
	defer l.Close()
	for i := range 60 {
		b := record.NewBuilder(record.DefaultBatchOptions())
		rec := record.Record{Timestamp: ts0, Key: fmt.Appendf(nil, "k%d", i%4), Value: fmt.Appendf(nil, "v%d", i)}
		switch i {
		case 5:
			rec.Key = []byte("gone")
		case 30:
			rec.Key, rec.Value = []byte("gone"), nil
		}
		b.Append(rec)
		_, err := l.Append(b.Build())
		require.NoError(t, err)
	}
	st, err := l.Clean(context.Background(), l.LogEndOffset())
	require.NoError(t, err)
	require.True(t, st.Cleaned)

	var files []string
	for _, s := range l.Segments() {
		files = append(files, s.Path)
	}
	stdout, stderr, code := cli(t, "dump-log", "--deep-iteration", "--print-data-log", "--files", strings.Join(files, ","))
	require.Equal(t, exitOK, code, stderr)
	require.Empty(t, stderr)
	require.Contains(t, stdout, "count: 0 ", "an emptied batch keeps a segment's end offset")
	require.NotContains(t, stdout, "isvalid: false")
	require.Contains(t, stdout, fmt.Sprintf("deleteHorizonMs: OptionalLong[%d]", ts0+time.Hour.Milliseconds()), "the tombstone's batch")
	require.Contains(t, stdout, "| offset: 30 ")
	require.NotContains(t, stdout, "| offset: 5 ", "superseded records are gone")
}
