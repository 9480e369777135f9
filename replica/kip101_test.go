package replica_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/log"
	"github.com/partlog/partlog/replica"
	"github.com/partlog/partlog/replica/replicatest"
)

// protocols are the two truncation rules: leader epochs (what replica
// does) and the follower's own high watermark (before KIP-101, kept behind
// a test-only switch to show that each test catches its loss).
var protocols = []struct {
	name string
	wrap func(replica.Options) replica.Options
}{
	{"epoch", nil},
	{"high-watermark", replica.TruncateToHighWatermark},
}

// kip101Scenario1 runs KIP-101's first scenario and returns the acked
// values the new leader lost: A (1) leads, B (2) follows, min ISR 1,
// acks=all. m1 and m2 are written; B holds m2 but the answer that would tell
// it the high watermark is 2 is lost. B restarts, A dies before B fetches
// again, and B is elected.
func kip101Scenario1(t *testing.T, wrap func(replica.Options) replica.Options) (lost []string) {
	c := replicatest.NewCluster(t, replicatest.Config{Seed: 11, Replicas: []int32{1, 2}, Options: testOptions(1),
		TruncateToHighWatermark: wrap})
	c.Stabilize()
	m1 := produce(t, c, kafka.AcksAll, "m1")
	c.Stabilize()
	c.RunTicks(1)
	if !m1.Acked() || c.Nodes[2].Replica.HighWatermark() != 1 {
		c.Fatalf("m1 %+v, B's high watermark %d; want acked and 1", m1, c.Nodes[2].Replica.HighWatermark())
	}
	c.Net.SetFilter(func(m replica.Message) replicatest.Verdict {
		if r := m.FetchResponse; r != nil && m.To == 2 && r.HighWatermark == 2 {
			return replicatest.Drop
		}
		return replicatest.Pass
	})
	m2 := produce(t, c, kafka.AcksAll, "m2")
	c.Stabilize()
	if !m2.Acked() || c.Nodes[2].Replica.HighWatermark() != 1 || c.Nodes[2].Log.LogEndOffset() != 2 {
		c.Fatalf("m2 %+v; B high watermark %d, log end %d; want acked, 1, 2", m2,
			c.Nodes[2].Replica.HighWatermark(), c.Nodes[2].Log.LogEndOffset())
	}
	c.Net.SetFilter(nil)
	// B restarts with its checkpointed high watermark of 1 and cannot
	// reach A; then A dies, and B, still in the ISR, is elected.
	c.Net.Cut(2, 1)
	c.Bounce(2)
	c.Stabilize()
	c.Crash(1, false)
	c.Net.HealAll()
	c.Stabilize()
	if c.Leader() != 2 {
		c.Fatalf("leader %d after A died, want B (2)", c.Leader())
	}
	got := values(t, c, 2)
	for _, p := range []*replicatest.Produced{m1, m2} {
		if !slices.Contains(got, p.Values[0]) {
			lost = append(lost, p.Values[0])
		}
	}
	return lost
}

// Test 11 (KIP-101 scenario 1): a restarted follower that truncated to its
// stale high watermark and is then elected loses an acknowledged write;
// truncating by leader epoch keeps it.
func TestKIP101HighWatermarkTruncationThenElection(t *testing.T) {
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			lost := kip101Scenario1(t, p.wrap)
			switch {
			case p.wrap == nil && len(lost) > 0:
				t.Fatalf("leader-epoch protocol lost acked %v", lost)
			case p.wrap != nil && !slices.Equal(lost, []string{"m2"}):
				t.Fatalf("truncate-to-HW protocol lost %v; the scenario must show m2 lost", lost)
			}
		})
	}
}

// kip101Scenario2 runs KIP-101's second scenario (Kafka's
// shouldNotAllowDivergentLogs) and returns the batch CRC sequences of A and
// B: ten single-record batches on both; both stop, follower first; the
// leader's last five records are cut (an unflushed tail lost); the leader
// restarts, takes ten more, and then the follower restarts.
func kip101Scenario2(t *testing.T, wrap func(replica.Options) replica.Options, first, second []int) (a, b []string, writeErr error) {
	c := replicatest.NewCluster(t, replicatest.Config{Seed: 12, Replicas: []int32{1, 2}, Options: testOptions(1),
		TruncateToHighWatermark: wrap, OnWriteError: func(_ int32, err error) { writeErr = err }})
	c.Stabilize()
	total := 0
	for i, n := range first {
		p := produce(t, c, kafka.AcksAll, vals(fmt.Sprintf("old%d-", i), n)...)
		c.Stabilize()
		if !p.Acked() {
			c.Fatalf("first write %d not acked: %+v", i, p)
		}
		total += n
	}
	c.RunTicks(1)
	c.Crash(2, false)
	c.Crash(1, false)
	// Cut the leader's log as if its last records never reached the disk.
	cut := int64(total / 2)
	l, err := log.Open("/data/"+c.TP.String(), log.Options{FS: c.Nodes[1].FS, SegmentBytes: 16 << 10, MaxIndexBytes: 4096})
	if err != nil {
		c.Fatalf("open leader log: %v", err)
	}
	if err := l.TruncateTo(cut); err != nil {
		c.Fatalf("cut leader log: %v", err)
	}
	l.Close()
	c.ForgetCommitted(cut)
	c.Restart(1)
	c.Stabilize()
	if c.Leader() != 1 {
		c.Fatalf("leader %d, want 1", c.Leader())
	}
	for i, n := range second {
		p := produce(t, c, kafka.AcksAll, vals(fmt.Sprintf("new%d-", i), n)...)
		c.Stabilize()
		if !p.Acked() {
			c.Fatalf("second write %d not acked: %+v", i, p)
		}
	}
	c.Restart(2)
	c.RunTicks(10)
	if !c.Nodes[2].Up() {
		return crcs(t, c, 1), nil, writeErr
	}
	return crcs(t, c, 1), crcs(t, c, 2), writeErr
}

func ones(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = 1
	}
	return s
}

// Test 12 (KIP-101 scenario 2): after both replicas stop and the leader
// loses its tail, the follower truncates to the divergence point and the
// two logs end identical, batch for batch. Truncating to the follower's
// high watermark leaves them diverged.
func TestKIP101DivergenceAfterHardFailures(t *testing.T) {
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			a, b, err := kip101Scenario2(t, p.wrap, ones(10), ones(10))
			if err != nil {
				t.Fatalf("write error: %v", err)
			}
			if len(a) != 15 {
				t.Fatalf("leader holds %d batches, want 15: %v", len(a), a)
			}
			same := slices.Equal(a, b)
			if p.wrap == nil && !same {
				t.Fatalf("logs diverged:\nleader   %v\nfollower %v", a, b)
			}
			if p.wrap != nil && same {
				t.Fatalf("truncate-to-HW protocol kept the logs identical; the scenario must show them diverge")
			}
		})
	}
}

// Test 13 (KIP-101, offsetsShouldNotGoBackwards): as test 12 with large
// batches, so that the follower's log end falls inside the leader's new
// batch. Offsets on the follower strictly increase and both logs end
// identical. The old protocol appends the straddling batch as it is, which
// our log refuses (offsets would go backwards).
func TestKIP101OffsetsNeverGoBackwards(t *testing.T) {
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			// Four batches of 5 (offsets 0-19); the leader keeps 0-9 and
			// then writes one batch of 20 (10-29), straddling 20.
			a, b, err := kip101Scenario2(t, p.wrap, []int{5, 5, 5, 5}, []int{20})
			if p.wrap != nil {
				if !errors.Is(err, log.ErrUnexpectedAppendOffset) {
					t.Fatalf("old protocol: write error %v, want the log to refuse offsets going backwards", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("write error: %v", err)
			}
			if !slices.Equal(a, b) || len(a) != 3 {
				t.Fatalf("logs differ or wrong length:\nleader   %v\nfollower %v", a, b)
			}
		})
	}
}
