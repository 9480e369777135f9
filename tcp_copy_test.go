package partlog_test

import (
	"context"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/partlog/partlog"
	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/producer"
	"github.com/partlog/partlog/record"
	"github.com/partlog/partlog/transport"
	"github.com/partlog/partlog/vfs"
)

// readCountingFS is the OS filesystem, counting the bytes its files copy
// into user space through ReadAt and Read. Its files keep their
// descriptors (Fd), so the node can still send them with sendfile.
type readCountingFS struct {
	vfs.FS
	read *atomic.Int64
}

func (f readCountingFS) wrap(file vfs.File, err error) (vfs.File, error) {
	if err != nil {
		return nil, err
	}
	return readCountingFile{file, f.read}, nil
}

func (f readCountingFS) Create(name string) (vfs.File, error) { return f.wrap(f.FS.Create(name)) }
func (f readCountingFS) Open(name string) (vfs.File, error)   { return f.wrap(f.FS.Open(name)) }
func (f readCountingFS) OpenReadWrite(name string) (vfs.File, error) {
	return f.wrap(f.FS.OpenReadWrite(name))
}

type readCountingFile struct {
	vfs.File
	read *atomic.Int64
}

func (f readCountingFile) ReadAt(p []byte, off int64) (int, error) {
	n, err := f.File.ReadAt(p, off)
	f.read.Add(int64(n))
	return n, err
}

func (f readCountingFile) Read(p []byte) (int, error) {
	n, err := f.File.Read(p)
	f.read.Add(int64(n))
	return n, err
}

func (f readCountingFile) Fd() uintptr { return f.File.(interface{ Fd() uintptr }).Fd() }

// TestTCPFetchCopiesNoRecordBytes measures the bytes the node copies into
// user space per byte of records it serves over TCP: with sendfile it reads
// only batch headers (to find where a fetch's range ends), so the ratio is
// near 0; sending from memory (ServerOptions.CopyRecords) it is at least 1.
func TestTCPFetchCopiesNoRecordBytes(t *testing.T) {
	var read atomic.Int64
	n, err := partlog.Open(t.TempDir(), partlog.Filesystem(readCountingFS{vfs.Default, &read}))
	require.NoError(t, err)
	defer n.Close()
	ctx := context.Background()
	require.NoError(t, n.CreateTopic(ctx, partlog.NewTopic{Name: "t", Partitions: 1,
		Configs: map[string]string{partlog.ConfigFlushMessages: "9223372036854775807"}}))
	// Full batches (a long linger), as a busy producer sends them.
	p, err := producer.New(n.Client(), producer.Acks(kafka.AcksLeader), producer.BatchSize(256<<10), producer.Linger(time.Second))
	require.NoError(t, err)
	const records, size = 20_000, 1024
	value := make([]byte, size)
	for range records {
		p.Produce(ctx, &producer.Record{Topic: "t", Value: value}, nil)
	}
	require.NoError(t, p.Close())

	for _, copyRecords := range []bool{false, true} {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		s := transport.NewServer(n.Client(), transport.ServerOptions{CopyRecords: copyRecords})
		go s.Serve(ln)
		c, err := transport.Dial(ctx, ln.Addr().String(), transport.DialOptions{})
		require.NoError(t, err)
		read.Store(0)
		served := int64(0)
		for off := int64(0); off < records; {
			resp, err := c.Fetch(ctx, &transport.FetchRequest{ReplicaID: -1, MaxBytes: 1 << 20, Topics: []transport.FetchTopic{{Topic: "t",
				Partitions: []transport.FetchPartition{{FetchOffset: off, MaxBytes: 1 << 20}}}}})
			require.NoError(t, err)
			pr := resp.Topics[0].Partitions[0]
			require.NoError(t, pr.Err)
			require.NotEmpty(t, pr.Records)
			served += int64(len(pr.Records))
			for data := pr.Records; len(data) > 0; {
				h, err := record.ParseHeader(data)
				require.NoError(t, err)
				_, err = record.Validate(data[:h.Size()])
				require.NoError(t, err, "the bytes sent are whole, sound batches")
				off = h.NextOffset()
				data = data[h.Size():]
			}
		}
		ratio := float64(read.Load()) / float64(served)
		t.Logf("copyRecords=%v: served %d bytes of records, read %d bytes into user space: %.5f bytes copied per byte served", copyRecords, served, read.Load(), ratio)
		if copyRecords {
			require.GreaterOrEqual(t, ratio, 1.0)
		} else {
			require.Less(t, ratio, 0.01)
		}
		c.Close()
		s.Close()
	}
}
