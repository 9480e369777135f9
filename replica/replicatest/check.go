package replicatest

import (
	"slices"

	"github.com/partlog/partlog/controller"
	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/log"
	"github.com/partlog/partlog/record"
	"github.com/partlog/partlog/replica"
)

// The checks a Cluster runs on its nodes' logs: the committed lineage as it
// runs, and Check's history checks on demand.

// checkCommitted compares the batches below a newly published high
// watermark with the committed lineage, extending it when n leads.
func (c *Cluster) checkCommitted(n *Broker, hw int64) {
	c.T.Helper()
	if c.Cfg.Unclean == controller.AllowUnclean || c.truncToHW {
		return // lineages may legitimately fork; tests check what they expect
	}
	batches, err := ReadBatches(n.Log, 0, hw)
	if err != nil {
		c.Fatalf("node %d read: %v", n.ID, err)
	}
	leads := n.Replica.Role() == replica.RoleLeader
	for _, b := range batches {
		if b.LastOffset >= hw {
			break
		}
		want, ok := c.Committed[b.BaseOffset]
		switch {
		case ok && (want.CRC != b.CRC || want.LastOffset != b.LastOffset):
			c.Fatalf("node %d: committed batch at %d differs: %+v, committed %+v", n.ID, b.BaseOffset, b, want)
		case !ok && b.BaseOffset < c.CommittedEnd:
			c.Fatalf("node %d: batch at %d below committed end %d is not in the committed lineage", n.ID, b.BaseOffset, c.CommittedEnd)
		case !ok && leads:
			c.Committed[b.BaseOffset] = b
		}
	}
	if leads {
		c.CommittedEnd = max(c.CommittedEnd, hw)
	}
}

// ForgetCommitted drops the committed lineage from offset on: the test
// destroyed committed records on purpose (cut a log file, as Kafka's
// KIP-101 tests do), and the checks start over from there.
func (c *Cluster) ForgetCommitted(offset int64) {
	for base := range c.Committed {
		if base >= offset {
			delete(c.Committed, base)
		}
	}
	c.CommittedEnd = min(c.CommittedEnd, offset)
	c.lossAt = offset
}

// ReadBatches returns the batches of l from offset from up to (not
// including) offset to, decoded.
func ReadBatches(l *log.Log, from, to int64) ([]Batch, error) {
	var out []Batch
	from = max(from, l.LogStartOffset())
	for from < min(to, l.LogEndOffset()) {
		buf, err := l.Read(nil, from, to, 1<<20)
		if err != nil {
			return out, err
		}
		if len(buf) == 0 {
			break
		}
		for len(buf) > 0 {
			h, err := record.ParseHeader(buf)
			if err != nil {
				return out, err
			}
			b, err := record.Decode(buf[:h.Size()])
			if err != nil {
				return out, err
			}
			vals := make([]string, len(b.Records))
			for i, r := range b.Records {
				vals[i] = string(r.Value)
			}
			out = append(out, Batch{BaseOffset: h.BaseOffset, LastOffset: h.LastOffset(), Epoch: h.PartitionLeaderEpoch, CRC: h.CRC, Values: vals})
			buf = buf[h.Size():]
			from = h.NextOffset()
		}
	}
	return out, nil
}

// Check verifies, on every running node: the log's offsets strictly
// increase, its leader epochs never decrease, and everything below its high
// watermark is the committed lineage; and every acked acks=all produce is
// in the log of every running node in the ISR, at its offset, with its
// values.
func (c *Cluster) Check() {
	c.T.Helper()
	for _, id := range c.Cfg.Replicas {
		n := c.Nodes[id]
		if !n.Up() {
			continue
		}
		batches, err := ReadBatches(n.Log, 0, n.Log.LogEndOffset())
		if err != nil {
			c.Fatalf("node %d read: %v", id, err)
		}
		next, epoch := int64(-1), int32(-1)
		byBase := map[int64]Batch{}
		for _, b := range batches {
			if b.BaseOffset < next {
				c.Fatalf("node %d: offsets go backwards: batch at %d after %d", id, b.BaseOffset, next)
			}
			if b.Epoch < epoch {
				c.Fatalf("node %d: leader epoch goes back from %d to %d at %d", id, epoch, b.Epoch, b.BaseOffset)
			}
			next, epoch = b.LastOffset+1, b.Epoch
			byBase[b.BaseOffset] = b
			if want, ok := c.Committed[b.BaseOffset]; ok && b.LastOffset < n.Replica.HighWatermark() && want.CRC != b.CRC {
				c.Fatalf("node %d: committed batch at %d differs", id, b.BaseOffset)
			}
		}
		if !slices.Contains(c.State.ISR, id) {
			continue
		}
		for _, p := range c.Produced {
			if p.Acks != kafka.AcksAll || !p.Acked() {
				continue
			}
			b, ok := byBase[p.BaseOffset]
			if !ok || !slices.Equal(b.Values, p.Values) {
				c.Fatalf("node %d (ISR %v, leader %d): acked produce %d at offset %d lost: have %+v", id, c.State.ISR, c.State.Leader, p.Token, p.BaseOffset, b)
			}
		}
	}
}
