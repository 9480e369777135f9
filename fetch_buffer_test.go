package partlog_test

import (
	"bytes"
	"context"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/partlog/partlog"
	"github.com/partlog/partlog/transport"
	"github.com/partlog/partlog/vfs"
)

// fetchInto fetches partitions 0 and 1 of topic "t" from offset 0, into
// buf when it is not nil, and returns each partition's records.
func fetchInto(t *testing.T, n *partlog.Node, buf []byte) [2][]byte {
	t.Helper()
	resp, err := n.Client().Fetch(context.Background(), &transport.FetchRequest{ReplicaID: -1, MaxBytes: 1 << 20, Buffer: buf,
		Topics: []transport.FetchTopic{{Topic: "t", Partitions: []transport.FetchPartition{
			{Partition: 0, MaxBytes: 1 << 20}, {Partition: 1, MaxBytes: 1 << 20},
		}}}})
	require.NoError(t, err)
	var out [2][]byte
	for i, pr := range resp.Topics[0].Partitions {
		require.NoError(t, pr.Err)
		out[i] = pr.Records
	}
	return out
}

// within reports whether b lies in buf's backing array.
func within(b, buf []byte) bool {
	lo := uintptr(unsafe.Pointer(unsafe.SliceData(buf[:1])))
	p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	return p >= lo && p+uintptr(len(b)) <= lo+uintptr(cap(buf))
}

func TestFetchReadsIntoTheRequestsBuffer(t *testing.T) {
	n := openNode(t, vfs.NewMem())
	defer n.Close()
	require.NoError(t, n.CreateTopic(context.Background(), partlog.NewTopic{Name: "t", Partitions: 2}))
	produce(t, n, "t", 0, "a0", "a1", "a2")
	produce(t, n, "t", 0, "a3")
	produce(t, n, "t", 1, "b0", "b1")
	want := fetchInto(t, n, nil)

	// Room for both: each partition's records lie in the buffer, one
	// after the other, and are capped so that appending cannot run into
	// the next.
	buf := bytes.Repeat([]byte{0xee}, 4096)[:0]
	got := fetchInto(t, n, buf)
	for i := range got {
		require.Equal(t, want[i], got[i], "partition %d", i)
		require.True(t, within(got[i], buf), "partition %d not read into the buffer", i)
		require.Equal(t, len(got[i]), cap(got[i]))
	}
	require.Equal(t, unsafe.SliceData(buf[:1]), unsafe.SliceData(got[0]))
	require.Equal(t, unsafe.SliceData(buf[len(got[0]):len(got[0])+1]), unsafe.SliceData(got[1]))

	// Room for the first only: the second is read into new memory.
	small := make([]byte, 0, len(want[0])+len(want[1])-1)
	got = fetchInto(t, n, small)
	require.Equal(t, want, got)
	require.True(t, within(got[0], small))
	require.False(t, within(got[1], small))
}
