package log_test

import (
	"fmt"

	"github.com/stretchr/testify/require"

	plog "github.com/partlog/partlog/log"
	"github.com/partlog/partlog/record"
)

// tb is what the helpers need of a *testing.T or *rapid.T.
type tb interface {
	require.TestingT
	Helper()
}

// kv is one record of a compacted topic; tomb makes it a tombstone.
type kv struct {
	key, value string
	tomb       bool
}

func put(key, value string) kv { return kv{key: key, value: value} }
func del(key string) kv        { return kv{key: key, tomb: true} }

// written is a record as appended, or as read back.
type written struct {
	offset int64
	key    string
	value  string
	tomb   bool
}

func (w written) String() string {
	if w.tomb {
		return fmt.Sprintf("%d:%s=<tombstone>", w.offset, w.key)
	}
	return fmt.Sprintf("%d:%s=%s", w.offset, w.key, w.value)
}

// keyedBatch builds a batch of kvs with timestamp ts.
func keyedBatch(opts record.BatchOptions, ts int64, kvs ...kv) []byte {
	b := record.NewBuilder(opts)
	for _, r := range kvs {
		rec := record.Record{Timestamp: ts, Key: []byte(r.key)}
		if !r.tomb {
			rec.Value = []byte(r.value)
		}
		b.Append(rec)
	}
	return b.Build()
}

// history records what was appended to a log, in offset order.
type history []written

// appendKV appends kvs as one batch and records them.
func (h *history) appendKV(t tb, l *plog.Log, ts int64, kvs ...kv) plog.AppendInfo {
	t.Helper()
	return h.appendWith(t, l, record.DefaultBatchOptions(), ts, kvs...)
}

func (h *history) appendWith(t tb, l *plog.Log, opts record.BatchOptions, ts int64, kvs ...kv) plog.AppendInfo {
	t.Helper()
	info, err := l.Append(keyedBatch(opts, ts, kvs...))
	require.NoError(t, err)
	for i, r := range kvs {
		*h = append(*h, written{offset: info.FirstOffset + int64(i), key: r.key, value: r.value, tomb: r.tomb})
	}
	return info
}

// compacted returns what a compacted log must hold when every clean so far
// ended at cleanEnd at the latest and no tombstone has expired: below
// cleanEnd, the latest record of each key among those below cleanEnd;
// above it, everything.
func (h history) compacted(cleanEnd int64) []written {
	latest := map[string]int64{}
	for _, w := range h {
		if w.offset < cleanEnd {
			latest[w.key] = w.offset
		}
	}
	var out []written
	for _, w := range h {
		if w.offset >= cleanEnd || latest[w.key] == w.offset {
			out = append(out, w)
		}
	}
	return out
}

// latest returns each key's latest record.
func (h history) latest() map[string]written {
	out := map[string]written{}
	for _, w := range h {
		out[w.key] = w
	}
	return out
}

// at returns the record appended at offset.
func (h history) at(offset int64) (written, bool) {
	for _, w := range h {
		if w.offset == offset {
			return w, true
		}
	}
	return written{}, false
}

// readKV reads every record of the log from its start, checking that
// offsets increase.
func readKV(t tb, l *plog.Log) []written {
	t.Helper()
	var out []written
	last := int64(-1)
	for off := l.LogStartOffset(); off < l.LogEndOffset(); {
		b, err := l.Read(nil, off, l.LogEndOffset(), 1<<20)
		require.NoError(t, err)
		require.NotEmpty(t, b)
		for len(b) > 0 {
			hd, err := record.ParseHeader(b)
			require.NoError(t, err)
			batch, err := record.Decode(b[:hd.Size()])
			require.NoError(t, err)
			b = b[hd.Size():]
			off = hd.NextOffset()
			if hd.Attributes.IsControl() {
				continue
			}
			for _, r := range batch.Records {
				require.Greater(t, r.Offset, last, "offsets increase")
				last = r.Offset
				require.NotNil(t, r.Key, "record %d has a key", r.Offset)
				out = append(out, written{offset: r.Offset, key: string(r.Key), value: string(r.Value), tomb: r.Value == nil})
			}
		}
	}
	return out
}

// requireConsistent checks what any compacted log must satisfy against its
// history, whatever the cleans did: each record read is the one appended at
// its offset; each key's latest record is there, unless it is a tombstone
// (which may have expired); and no key's value is older than the latest.
func requireConsistent(t tb, h history, got []written, what string) {
	t.Helper()
	seen := map[string]bool{}
	for _, w := range got {
		want, ok := h.at(w.offset)
		require.True(t, ok, "%s: offset %d was never written", what, w.offset)
		require.Equal(t, want, w, "%s: record at %d", what, w.offset)
		seen[w.key] = true
	}
	byKey := map[string]written{}
	for _, w := range got {
		byKey[w.key] = w
	}
	for k, w := range h.latest() {
		if w.tomb {
			if g, ok := byKey[k]; ok {
				require.Equal(t, w, g, "%s: key %s is deleted", what, k)
			}
			continue
		}
		require.Equal(t, w, byKey[k], "%s: latest of key %s", what, k)
	}
}
