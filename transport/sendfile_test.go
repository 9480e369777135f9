package transport

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/vfs"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// openRange writes data at an offset of a new file and returns a range of
// it, with its own descriptor.
func openRange(t *testing.T, data []byte) vfs.FileRange {
	t.Helper()
	path := filepath.Join(t.TempDir(), "seg.log")
	pad := 123
	require.NoError(t, os.WriteFile(path, append(make([]byte, pad), data...), 0o644))
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	require.NoError(t, err)
	return vfs.FileRange{FD: fd, Pos: int64(pad), Size: int64(len(data))}
}

// randomFetchResponse makes an answer with several topics and partitions,
// some with records, some empty, some failed.
func randomFetchResponse(rng *rand.Rand) *FetchResponse {
	r := &FetchResponse{}
	for ti := range 1 + rng.IntN(3) {
		t := FetchTopicResponse{Topic: fmt.Sprintf("topic-%d", ti)}
		for pi := range 1 + rng.IntN(4) {
			p := FetchPartitionResponse{Partition: int32(pi), HighWatermark: rng.Int64N(1e9), LastStableOffset: rng.Int64N(1e9), LogStartOffset: rng.Int64N(1e6)}
			switch rng.IntN(3) {
			case 0:
				p.Records = make([]byte, 1+rng.IntN(3000))
				for i := range p.Records {
					p.Records[i] = byte(rng.Uint32())
				}
			case 1:
				p.Err = kafka.ErrOffsetOutOfRange
			}
			switch rng.IntN(3) { // read_uncommitted (null), none aborted, some aborted
			case 1:
				p.AbortedTransactions = []AbortedTransaction{}
			case 2:
				for range 1 + rng.IntN(3) {
					p.AbortedTransactions = append(p.AbortedTransactions, AbortedTransaction{ProducerID: rng.Int64N(1e6), FirstOffset: rng.Int64N(1e9)})
				}
			}
			t.Partitions = append(t.Partitions, p)
		}
		r.Topics = append(r.Topics, t)
	}
	return r
}

// TestFetchFrameMatchesKmsg checks that the Fetch answers written with
// their records in files are, byte for byte, what kmsg encodes with the
// records inline, in every version the server speaks.
func TestFetchFrameMatchesKmsg(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for version := int16(4); version <= 12; version++ {
		for range 20 {
			resp := randomFetchResponse(rng)
			want := appendResponseFrame(nil, 77, fetchResponseToWire(resp, version))

			// The same answer, with the records in files.
			withFiles := *resp
			withFiles.Topics = nil
			for _, tr := range resp.Topics {
				tr.Partitions = append([]FetchPartitionResponse(nil), tr.Partitions...)
				for i := range tr.Partitions {
					if p := &tr.Partitions[i]; len(p.Records) > 0 && rng.IntN(2) == 0 {
						p.File, p.Records = openRange(t, p.Records), nil
					}
				}
				withFiles.Topics = append(withFiles.Topics, tr)
			}
			frame, pieces := appendFetchFrame(nil, 77, &withFiles, version)
			var got []byte
			prev := 0
			for _, p := range pieces {
				got = append(got, frame[prev:p.at]...)
				b := make([]byte, p.file.Size)
				_, err := unix.Pread(p.file.FD, b, p.file.Pos)
				require.NoError(t, err)
				got = append(got, b...)
				prev = p.at
				require.NoError(t, p.file.Close())
			}
			got = append(got, frame[prev:]...)
			require.Equal(t, want, got, "version %d", version)
		}
	}
}

// TestSendfile sends file ranges between encoded bytes over a loopback
// connection, larger than the socket buffers, and reads them back.
func TestSendfile(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	received := make(chan []byte, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			received <- nil
			return
		}
		defer c.Close()
		var buf bytes.Buffer
		buf.ReadFrom(c)
		received <- buf.Bytes()
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	big := make([]byte, 8<<20)
	for i := range big {
		big[i] = byte(i * 7)
	}
	r1, r2 := openRange(t, big), openRange(t, []byte("small"))
	frame := []byte("head|mid|tail")
	w := bufio.NewWriter(c)
	require.NoError(t, writeFrameWithFiles(w, c.(*net.TCPConn), frame, []filePiece{{at: 5, file: r1}, {at: 9, file: r2}}))
	require.NoError(t, w.Flush())
	c.Close()
	want := append(append(append(append([]byte("head|"), big...), "mid|"...), "small"...), "tail"...)
	require.Equal(t, want, <-received)
	r1.Close()
	r2.Close()
}

// TestSendfileShortFile checks that a range past the end of its file (a
// segment truncated under a fetch) fails rather than sending a short frame.
func TestSendfileShortFile(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err == nil {
			defer c.Close()
			var buf bytes.Buffer
			buf.ReadFrom(c)
		}
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	defer c.Close()
	r := openRange(t, []byte("only this"))
	defer r.Close()
	r.Size += 100
	require.ErrorIs(t, sendfile(c.(*net.TCPConn), r), errShortFile)
}

// TestTCPFetchFromFiles has the fake node answer with records in files:
// the client gets the bytes.
func TestTCPFetchFromFiles(t *testing.T) {
	data := bytes.Repeat([]byte("batch bytes "), 100_000)
	h := &fileNode{t: t, data: data}
	_, addr := serve(t, h, ServerOptions{})
	c := dial(t, addr)
	for range 3 {
		resp, err := c.Fetch(context.Background(), &FetchRequest{MaxBytes: 1 << 30, Topics: []FetchTopic{{Topic: "t", Partitions: []FetchPartition{{Partition: 0}, {Partition: 1}}}}})
		require.NoError(t, err)
		require.Equal(t, data, resp.Topics[0].Partitions[0].Records)
		require.Equal(t, []byte("inline"), resp.Topics[0].Partitions[1].Records)
		require.Equal(t, int64(55), resp.Topics[0].Partitions[0].HighWatermark)
	}
}

// fileNode answers fetches with partition 0's records in a file.
type fileNode struct {
	fakeNode
	t    *testing.T
	data []byte
}

func (f *fileNode) Fetch(ctx context.Context, req *FetchRequest) (*FetchResponse, error) {
	if !req.FileRecords {
		return nil, fmt.Errorf("expected a request for file records")
	}
	return &FetchResponse{Topics: []FetchTopicResponse{{Topic: "t", Partitions: []FetchPartitionResponse{
		{Partition: 0, HighWatermark: 55, File: openRange(f.t, f.data)},
		{Partition: 1, HighWatermark: 55, Records: []byte("inline")},
	}}}}, nil
}

// TestEmptyFetchRecordsAreNotNull: a partition with nothing new is
// answered with an empty records field, as Kafka answers it, in both
// encoders (in memory and with sendfile). A null field (length -1) made
// librdkafka log a parse failure for every idle partition, back off, and
// never report the end of a partition (kcat -e hung).
func TestEmptyFetchRecordsAreNotNull(t *testing.T) {
	resp := &FetchResponse{Topics: []FetchTopicResponse{{Topic: "t", Partitions: []FetchPartitionResponse{
		{Partition: 0, HighWatermark: 5, LastStableOffset: 5, LogStartOffset: 0},
	}}}}
	for version := int16(4); version <= 12; version++ {
		for name, frame := range map[string][]byte{
			"kmsg":     appendResponseFrame(nil, 1, fetchResponseToWire(resp, version)),
			"sendfile": func() []byte { f, _ := appendFetchFrame(nil, 1, resp, version); return f }(),
		} {
			flexible := version >= 12
			// The records field ends the partition: its length is the
			// last thing before the partition's tags (flexible) or the
			// frame's end.
			tail := frame[len(frame)-4:]
			if flexible {
				tail = frame[len(frame)-4 : len(frame)-3] // compact length, then partition, topic and response tags
				require.Equal(t, []byte{1}, tail, "%s v%d: compact length 0+1, not 0 (null)", name, version)
				continue
			}
			require.Equal(t, []byte{0, 0, 0, 0}, tail, "%s v%d: length 0, not -1 (null)", name, version)
		}
	}
}
