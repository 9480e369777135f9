package partlog_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/partlog/partlog"
	"github.com/partlog/partlog/internal/integrity"
	"github.com/partlog/partlog/log"
	"github.com/partlog/partlog/producer"
)

// smallFilesystem mounts a tmpfs of size bytes for the test and returns
// its path, or skips the test, saying why, where it cannot (not root, or
// no mount permission in the sandbox).
func smallFilesystem(t *testing.T, size int) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounting a small filesystem needs root; run the suite as root (as .ci/run does) to cover a real full disk")
	}
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, fmt.Sprintf("size=%d", size)); err != nil {
		t.Skipf("cannot mount a tmpfs at %s (%v); the in-memory filesystem's tests cover a full disk", dir, err)
	}
	t.Cleanup(func() { syscall.Unmount(dir, syscall.MNT_DETACH) })
	return dir
}

// TestFullDiskOnARealFilesystem fills a real (tmpfs) filesystem while a
// producer writes, frees space, produces again, and reopens the directory
// after a clean close and after what a crash leaves (no clean-shutdown
// marker): the directory opens each time, the producer's acknowledged
// records are all there, byte for byte, and nothing else is.
func TestFullDiskOnARealFilesystem(t *testing.T) {
	mnt := smallFilesystem(t, 24<<20)
	dir := filepath.Join(mnt, "data")
	n, err := partlog.Open(dir)
	require.NoError(t, err)
	ctx := context.Background()
	r := integrityRun{partitions: 2}
	require.NoError(t, n.CreateTopic(ctx, partlog.NewTopic{Name: "t", Partitions: 2}))

	// A balloon takes most of the room; producing fills the rest.
	balloon := filepath.Join(mnt, "balloon")
	var st syscall.Statfs_t
	require.NoError(t, syscall.Statfs(mnt, &st))
	free := int64(st.Bavail) * st.Bsize
	require.NoError(t, os.WriteFile(balloon, make([]byte, free-2<<20), 0o644))

	l := integrity.NewLedger()
	w := integrity.Workload{Seed: integrity.NewSeed(), Producers: 1, Records: 1 << 30, MaxValue: 2000, Keyed: true}
	produceUntil := func(stop func(failed int) bool, from int) int {
		p, err := producer.New(n.Client(), producer.DeliveryTimeout(time.Second), producer.RequestTimeout(900*time.Millisecond),
			producer.Linger(0), producer.RetryBackoff(50*time.Millisecond))
		require.NoError(t, err)
		defer p.Close()
		failed, i := 0, from
		for ; !stop(failed); i++ {
			want := w.Record(0, i)
			rec := &producer.Record{Topic: "t", Key: want.Key, Value: want.Value}
			res, err := p.ProduceSync(ctx, rec).First()
			if err != nil {
				if failed++; failed == 1 {
					t.Logf("the first failure: %v", err)
				}
				continue
			}
			want.Partition, want.Offset, want.Timestamp = res.Partition, res.Offset, res.Timestamp.UnixMilli()
			l.Ack(want)
		}
		return i
	}
	next := produceUntil(func(failed int) bool { return failed >= 3 }, 0)
	require.Greater(t, l.Len(), 100, "records fit before the disk filled")
	t.Logf("%d records acknowledged before the disk filled", l.Len())

	require.NoError(t, os.Remove(balloon))
	before := l.Len()
	produceUntil(func(int) bool { return l.Len() >= before+200 }, next)
	require.NoError(t, n.Close())

	acked, err := l.Records()
	require.NoError(t, err)
	check := func(what string) {
		t.Helper()
		n, err := partlog.Open(dir)
		require.NoError(t, err, "%s: the directory opens", what)
		consumed := consumeAcked(t, n.Client(), "t", acked, false)
		require.NoError(t, integrity.Compare(what+": the consumer", acked, consumed))
		require.NoError(t, n.Close())
		require.NoError(t, integrity.Compare(what+": the segment files", acked, readDisk(t, dir, r)))
	}
	check("after a clean close")
	require.NoError(t, os.Remove(filepath.Join(dir, log.CleanShutdownFileName)))
	check("after a crash")
}
