package controller_test

import (
	"context"
	"io"
	"path"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/partlog/partlog/controller"
	"github.com/partlog/partlog/log"
	"github.com/partlog/partlog/vfs"
)

// writeLogStoreDir writes, in dir, what a single controller wrote before
// the quorum: a metadata log of LogStore batches with node 1 registered
// and the topic "orders", and its controller-epoch file at epoch 3.
func writeLogStoreDir(t *testing.T, fsys vfs.FS, dir string) (brokerEpoch int64) {
	t.Helper()
	require.NoError(t, vfs.MkdirAllDurable(fsys, dir, 0o755))
	logs, err := log.OpenDir(dir, log.DirOptions{FS: fsys})
	require.NoError(t, err)
	l, err := logs.Open(controller.Topic, log.Options{RetentionMs: -1})
	require.NoError(t, err)
	m, err := controller.NewMachine(controller.NewLogStore(l), controller.Options{})
	require.NoError(t, err)
	brokerEpoch, err = m.RegisterNode(1, "")
	require.NoError(t, err)
	require.NoError(t, m.Heartbeat(1, brokerEpoch))
	require.NoError(t, m.CreateTopic("orders", 2, 1, controller.TopicConfig{ID: "b3JkZXJzb3JkZXJzMDE"}))
	require.NoError(t, logs.Close())
	require.NoError(t, vfs.WriteFileAtomic(fsys, path.Join(dir, controller.EpochFileName), []byte("version=0\nepoch=3\n")))
	return brokerEpoch
}

// TestControllerMigratesLogStore: a metadata log a single controller wrote
// before the quorum becomes the Raft log of a quorum of one, holding the
// same metadata, at versions above every one the old controller handed
// out (which started at its epoch times 2^32), so that a node that knows
// one still takes the next; the metadata survives a restart.
func TestControllerMigratesLogStore(t *testing.T) {
	fsys := vfs.NewMem()
	dir := "/ctl"
	brokerEpoch := writeLogStoreDir(t, fsys, dir)
	c := checkMigrated(t, fsys, dir, brokerEpoch)
	ctx := context.Background()
	_, err := c.CreateTopic(ctx, "payments", controller.NewTopic{Partitions: 1, ReplicationFactor: 1, ID: "cGF5bWVudHNwYXltZW50"})
	require.NoError(t, err)
	require.NoError(t, c.Close())

	c, err = controller.Open(dir, controller.Options{FS: fsys, NodeID: 1})
	require.NoError(t, err)
	st := c.State()
	require.Contains(t, st.Topics, "orders")
	require.Contains(t, st.Topics, "payments")
	require.Equal(t, "n1:9092", st.Nodes[1].Address)
	require.NoError(t, c.Close())
}

// TestControllerMigrationCrash: a crash part way through the migration —
// the snapshot's checkpoint written, the old log not yet replaced — is
// finished at the next start.
func TestControllerMigrationCrash(t *testing.T) {
	fsys := vfs.NewMem()
	dir := "/ctl"
	writeLogStoreDir(t, fsys, dir)
	c, err := controller.Open(dir, controller.Options{FS: fsys, NodeID: 1})
	require.NoError(t, err)
	require.NoError(t, c.Close())
	checkpoint := path.Join(dir, controller.Topic.String(), migratedCheckpoint)
	data := readFile(t, fsys, checkpoint)

	crashed := vfs.NewMem()
	brokerEpoch := writeLogStoreDir(t, crashed, dir)
	require.NoError(t, vfs.WriteFileAtomic(crashed, checkpoint, data))
	require.NoError(t, checkMigrated(t, crashed, dir, brokerEpoch).Close())
}

// migratedCheckpoint is the snapshot a log of epoch 3 migrates to: at
// index 4 × 2^32, in term 1.
const migratedCheckpoint = "00000000017179869184-0000000001.checkpoint"

// checkMigrated opens the controller of dir, which writeLogStoreDir wrote,
// and checks it holds the metadata at versions above the old ones.
func checkMigrated(t *testing.T, fsys vfs.FS, dir string, brokerEpoch int64) *controller.Controller {
	t.Helper()
	c, err := controller.Open(dir, controller.Options{FS: fsys, NodeID: 1})
	require.NoError(t, err)
	st := c.State()
	require.Equal(t, brokerEpoch, st.Nodes[1].BrokerEpoch)
	require.Len(t, st.Topics["orders"].Partitions, 2)
	require.Equal(t, "b3JkZXJzb3JkZXJzMDE", st.Topics["orders"].ID)

	oldVersions := int64(4) << 32 // epoch 3 handed out versions below 4 × 2^32
	hb, err := c.Heartbeat(context.Background(), controller.Heartbeat{Node: 1, BrokerEpoch: brokerEpoch,
		KnownVersion: oldVersions - 1, Address: "n1:9092"})
	require.NoError(t, err)
	require.Greater(t, hb.Version, oldVersions)
	require.NotNil(t, hb.Metadata, "a node that knows an old version takes the new metadata")
	require.Equal(t, "n1:9092", hb.Metadata.Nodes[1].Address)
	names, err := fsys.List(path.Join(dir, controller.Topic.String()))
	require.NoError(t, err)
	require.Contains(t, names, migratedCheckpoint)
	return c
}

func readFile(t *testing.T, fsys vfs.FS, name string) []byte {
	t.Helper()
	f, err := fsys.Open(name)
	require.NoError(t, err)
	defer f.Close()
	data, err := io.ReadAll(f)
	require.NoError(t, err)
	return data
}
