package partlog_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/partlog/partlog"
	"github.com/partlog/partlog/vfs"
)

// TestMissingMetaProperties: a data directory that holds partitions but
// has lost its meta.properties is refused with ErrMetaPropertiesMissing,
// as Kafka refuses an unformatted log directory; it used to get a new one
// silently, with a new cluster id. WriteMissingMeta writes one, and the
// partitions' records are all there.
func TestMissingMetaProperties(t *testing.T) {
	dir := t.TempDir()
	n, err := partlog.Open(dir)
	require.NoError(t, err)
	require.NoError(t, n.CreateTopic(context.Background(), partlog.NewTopic{Name: "t"}))
	produce(t, n, "t", 0, "a", "b")
	require.NoError(t, n.Close())
	require.NoError(t, vfs.Default.Remove(filepath.Join(dir, partlog.MetaPropertiesFileName)))

	_, err = partlog.Open(dir)
	require.ErrorIs(t, err, partlog.ErrMetaPropertiesMissing)
	require.ErrorContains(t, err, "WriteMissingMeta")

	n, err = partlog.Open(dir, partlog.WriteMissingMeta())
	require.NoError(t, err)
	defer n.Close()
	require.Equal(t, []string{"a", "b"}, fetchAll(t, n, "t", 0, 0))

	empty := t.TempDir()
	n2, err := partlog.Open(empty)
	require.NoError(t, err, "a directory without partitions is formatted")
	require.NoError(t, n2.Close())
}
