package broker

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"path"
	"strconv"

	"github.com/partlog/partlog/internal/props"
	"github.com/partlog/partlog/vfs"
)

// MetaPropertiesFileName is the file that names a data directory's node and
// cluster, as in Kafka.
const MetaPropertiesFileName = "meta.properties"

// metaProperties is meta.properties: which node this directory belongs to,
// in which cluster.
type metaProperties struct {
	NodeID      int32
	ClusterID   string
	DirectoryID string
}

// newUUID returns a random Kafka-style id: 16 bytes in unpadded URL-safe
// base64.
func newUUID() string {
	var b [16]byte
	rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// loadOrCreateMeta reads meta.properties, or, when mayCreate, writes a new
// one for nodeID in a new cluster (clusterID, or a random id when empty).
// A directory that belongs to another node id is an error, and so is a
// missing file that may not be created (ErrMetaPropertiesMissing).
func loadOrCreateMeta(fsys vfs.FS, dir string, nodeID int32, clusterID string, mayCreate bool) (metaProperties, error) {
	name := path.Join(dir, MetaPropertiesFileName)
	kv, err := props.Read(fsys, name)
	if err != nil {
		return metaProperties{}, err
	}
	if kv == nil && !mayCreate {
		return metaProperties{}, fmt.Errorf("%w: %s: restore it, or open with partlog.WriteMissingMeta (partlog serve --write-missing-meta) to write a new one in a new cluster",
			ErrMetaPropertiesMissing, name)
	}
	if kv == nil {
		m := metaProperties{NodeID: nodeID, ClusterID: clusterID, DirectoryID: newUUID()}
		if m.ClusterID == "" {
			m.ClusterID = newUUID()
		}
		return m, props.WriteAtomic(fsys, name, m.format())
	}
	m, err := metaFromProperties(kv)
	if err != nil {
		return m, fmt.Errorf("partlog: %s: %w", name, err)
	}
	if m.NodeID != nodeID {
		return m, fmt.Errorf("%w: %s belongs to node %d, not node %d", ErrInconsistentNode, dir, m.NodeID, nodeID)
	}
	if clusterID != "" && clusterID != m.ClusterID {
		return m, fmt.Errorf("%w: %s belongs to cluster %s, not %s", ErrInconsistentNode, dir, m.ClusterID, clusterID)
	}
	return m, nil
}

func (m metaProperties) format() []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "#\n#written by partlog\n")
	fmt.Fprintf(&b, "cluster.id=%s\n", m.ClusterID)
	fmt.Fprintf(&b, "directory.id=%s\n", m.DirectoryID)
	fmt.Fprintf(&b, "node.id=%d\n", m.NodeID)
	fmt.Fprintf(&b, "version=1\n")
	return b.Bytes()
}

// metaFromProperties reads meta.properties' fields.
func metaFromProperties(props map[string]string) (metaProperties, error) {
	var m metaProperties
	id, err := strconv.ParseInt(props["node.id"], 10, 32)
	if err != nil {
		return m, fmt.Errorf("node.id %q is not a number", props["node.id"])
	}
	if props["cluster.id"] == "" {
		return m, fmt.Errorf("no cluster.id")
	}
	m.NodeID, m.ClusterID, m.DirectoryID = int32(id), props["cluster.id"], props["directory.id"]
	return m, nil
}
