package partlog_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/partlog/partlog"
	"github.com/partlog/partlog/consumer"
	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/transport"
)

// shareLedger is what a share group's members did with each record,
// "partition/offset" keyed: how often it was delivered, the delivery
// counts seen, who had an acceptance confirmed, and the value read.
type shareLedger struct {
	mu         sync.Mutex
	deliveries map[string]int
	maxCount   map[string]int16
	// confirmed counts, per member, the acknowledgements the node
	// confirmed (the callback does not say of which type); released the
	// releases each member made: what is left over are acceptances.
	confirmed map[string]map[string]int
	released  map[string]map[string]int
	values    map[string]string
	wrong     []string
	history   map[string][]string // who got it, who acknowledged it how
	// unknown are records whose acknowledgement went down with the
	// killed member's connection: the node may or may not have applied
	// it.
	unknown map[string]bool
}

// accepted returns the members whose acceptance of record k the node
// confirmed, a member once per acceptance. Called with mu held.
func (l *shareLedger) accepted(k string) []string {
	var out []string
	for m, n := range l.confirmed[k] {
		for range n - l.released[k][m] {
			out = append(out, m)
		}
	}
	return out
}

func newShareLedger() *shareLedger {
	return &shareLedger{deliveries: map[string]int{}, maxCount: map[string]int16{}, confirmed: map[string]map[string]int{}, released: map[string]map[string]int{}, values: map[string]string{}, history: map[string][]string{}, unknown: map[string]bool{}}
}

// TestShareConsumersUnderKills runs three of partlog's share consumers
// (consumer.NewShare, each over a TCP client of its own) on two
// partitions while one of them is killed — its connection cut with
// records acquired and unacknowledged — another releases every third
// record it gets, and every member releases a poison record: every record
// is delivered at least once and accepted exactly once (the node confirms
// one acceptance per record, never two), the records the killed member
// held come back once their locks expire, no record is delivered beyond
// the delivery limit (the poison record exactly five times, then
// archived), and every value reads back as produced.
func TestShareConsumersUnderKills(t *testing.T) {
	const records, limit = 240, 5
	n, err := partlog.Open(t.TempDir(), partlog.OffsetsTopicPartitions(3), partlog.ShareStateTopicPartitions(3),
		partlog.ShareRecordLockDuration(500*time.Millisecond), partlog.ShareDeliveryCountLimit(limit))
	require.NoError(t, err)
	defer n.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	require.NoError(t, n.CreateTopic(ctx, partlog.NewTopic{Name: "jobs", Partitions: 2}))
	addr := serveWith(t, n.Client(), transport.ServerOptions{})
	ledger := newShareLedger()

	type member struct {
		name   string
		cl     *transport.TCPClient
		c      *consumer.ShareConsumer
		stop   chan struct{}
		done   chan struct{}
		polled chan struct{} // closed after its first Poll with partitions
	}
	start := func(name string, release func(i int, r *consumer.ShareRecord) bool) *member {
		cl, err := transport.Dial(ctx, addr, transport.DialOptions{ClientID: name})
		require.NoError(t, err)
		m := &member{name: name, cl: cl, stop: make(chan struct{}), done: make(chan struct{}), polled: make(chan struct{})}
		m.c, err = consumer.NewShare(cl, consumer.ShareGroup("workers"), consumer.Topics("jobs"), consumer.FetchMaxWait(50*time.Millisecond),
			consumer.MaxPollRecords(20),
			consumer.OnShareAcknowledged(func(topic string, partition int32, offsets []int64, err error) {
				ledger.mu.Lock()
				defer ledger.mu.Unlock()
				for _, o := range offsets {
					k := fmt.Sprintf("%d/%d", partition, o)
					ledger.history[k] = append(ledger.history[k], fmt.Sprintf("%s acked: %v", name, err))
				}
				if err != nil {
					if !errors.As(err, new(*kafka.Error)) {
						for _, o := range offsets {
							ledger.unknown[fmt.Sprintf("%d/%d", partition, o)] = true
						}
					}
					return // refused (a lock that expired first), or unknown
				}
				for _, o := range offsets {
					k := fmt.Sprintf("%d/%d", partition, o)
					if ledger.confirmed[k] == nil {
						ledger.confirmed[k] = map[string]int{}
					}
					ledger.confirmed[k][name]++
				}
			}))
		require.NoError(t, err)
		go func() {
			defer close(m.done)
			seen, polled := 0, m.polled
			for {
				select {
				case <-m.stop:
					return
				default:
				}
				recs, err := m.c.Poll(ctx, 50*time.Millisecond)
				if err != nil {
					return
				}
				if polled != nil && len(m.c.Assignment()) > 0 {
					close(polled)
					polled = nil
				}
				for _, r := range recs {
					seen++
					k := fmt.Sprintf("%d/%d", r.Partition, r.Offset)
					ledger.mu.Lock()
					ledger.deliveries[k]++
					ledger.history[k] = append(ledger.history[k], fmt.Sprintf("%s got count %d", name, r.DeliveryCount))
					ledger.maxCount[k] = max(ledger.maxCount[k], r.DeliveryCount)
					if v, ok := ledger.values[k]; ok && v != string(r.Value) {
						ledger.wrong = append(ledger.wrong, k)
					}
					ledger.values[k] = string(r.Value)
					ledger.mu.Unlock()
					if string(r.Value) == "poison" || release(seen, r) {
						m.c.Acknowledge(r, consumer.AckRelease)
						ledger.mu.Lock()
						if ledger.released[k] == nil {
							ledger.released[k] = map[string]int{}
						}
						ledger.released[k][name]++
						ledger.mu.Unlock()
					}
				}
			}
		}()
		return m
	}
	never := func(int, *consumer.ShareRecord) bool { return false }
	a := start("a", never)
	// b releases every third record it gets, on its first delivery only:
	// a rule that could hit the same record every time would make it a
	// poison record too.
	b := start("b", func(i int, r *consumer.ShareRecord) bool { return i%3 == 0 && r.DeliveryCount == 1 })
	victim := start("victim", never)
	// The members share the two partitions (each partition goes to two of
	// the three); once each has fetched, both share partitions started at
	// the end of the log (share.auto.offset.reset=latest).
	covered := map[int32]bool{}
	for _, m := range []*member{a, b, victim} {
		select {
		case <-m.polled:
		case <-ctx.Done():
			t.Fatalf("%s never got partitions", m.name)
		}
		for _, tp := range m.c.Assignment() {
			covered[tp.Partition] = true
		}
	}
	require.Len(t, covered, 2, "every partition has members")
	// Acceptances are confirmed through the acknowledgement callback; a
	// record with acceptances only for a member that stopped is one
	// released by its session closing.
	produced := map[string]string{}
	for i := range records {
		p := int32(i % 2)
		v := fmt.Sprintf("job-%d", i)
		if i == records/2 {
			v = "poison"
		}
		r := produce(t, n, "jobs", p, v)
		require.NoError(t, r.Err)
		produced[fmt.Sprintf("%d/%d", p, r.BaseOffset)] = v
		if i == records/3 {
			// victim is killed mid-stream: its connection cut, its
			// acquired records neither acknowledged nor released.
			victim.cl.Close()
			close(victim.stop)
		}
	}

	// Every record but the poison one is accepted; the poison one is
	// delivered the limit's worth of times.
	done := func() bool {
		ledger.mu.Lock()
		defer ledger.mu.Unlock()
		for k, v := range produced {
			if v == "poison" {
				if ledger.deliveries[k] < limit {
					return false
				}
				continue
			}
			if len(ledger.accepted(k)) == 0 && !ledger.unknown[k] {
				return false
			}
		}
		return true
	}
	// A record whose acceptance died with the killed member's connection
	// may have been accepted, or may come back when its lock expires and
	// be accepted by another member: the members go on until the node
	// says every share partition starts past every record.
	starts := map[int32]int64{}
	finished := func() bool {
		desc, err := n.Client().DescribeShareGroupOffsets(ctx, &transport.DescribeShareGroupOffsetsRequest{
			Groups: []transport.DescribeShareGroupOffsetsGroup{{Group: "workers"}}})
		if err != nil || desc.Groups[0].Err != nil {
			return false
		}
		for _, tr := range desc.Groups[0].Topics {
			for _, p := range tr.Partitions {
				if p.Err == nil {
					starts[p.Partition] = p.StartOffset
				}
			}
		}
		return starts[0] == records/2 && starts[1] == records/2
	}
	for !done() || !finished() {
		select {
		case <-ctx.Done():
			ledger.mu.Lock()
			var missing []string
			for k, v := range produced {
				if v != "poison" && len(ledger.accepted(k)) == 0 && !ledger.unknown[k] {
					missing = append(missing, fmt.Sprintf("%s (%s: %v)", k, v, ledger.history[k]))
				}
			}
			ledger.mu.Unlock()
			d, _ := n.Client().ShareGroupDescribe(context.Background(), &transport.ShareGroupDescribeRequest{Groups: []string{"workers"}})
			for _, m := range d.Groups[0].Members {
				t.Logf("member %s %s: %v", m.MemberID, m.ClientID, m.Assignment)
			}
			t.Logf("a %v, b %v", a.c.Assignment(), b.c.Assignment())
			t.Fatalf("never accepted: %v; the share partitions start at %v, want %d each", missing, starts, records/2)
		case <-time.After(20 * time.Millisecond):
		}
	}
	for _, m := range []*member{a, b} {
		close(m.stop)
		<-m.done
		require.NoError(t, m.c.Close())
	}
	<-victim.done
	victim.c.Close()

	// Nothing is left to deliver: a new member gets no record, so every
	// record was acknowledged or archived — those whose acknowledgement
	// died with the killed member's connection included.
	cl, err := transport.Dial(ctx, addr, transport.DialOptions{ClientID: "late"})
	require.NoError(t, err)
	defer cl.Close()
	late, err := consumer.NewShare(cl, consumer.ShareGroup("workers"), consumer.Topics("jobs"), consumer.FetchMaxWait(50*time.Millisecond))
	require.NoError(t, err)
	for len(late.Assignment()) == 0 {
		recs, err := late.Poll(ctx, 50*time.Millisecond)
		require.NoError(t, err)
		require.Empty(t, recs, "a record left unfinished")
		require.NoError(t, ctx.Err(), "the late member never got partitions")
	}
	for range 5 {
		recs, err := late.Poll(ctx, 100*time.Millisecond)
		require.NoError(t, err)
		require.Empty(t, recs, "a record left unfinished")
	}
	require.NoError(t, late.Close())
	// And the node says so: each share partition starts past every
	// record.
	desc, err := n.Client().DescribeShareGroupOffsets(ctx, &transport.DescribeShareGroupOffsetsRequest{
		Groups: []transport.DescribeShareGroupOffsetsGroup{{Group: "workers"}}})
	require.NoError(t, err)
	require.NoError(t, desc.Groups[0].Err)
	starts = map[int32]int64{}
	for _, tr := range desc.Groups[0].Topics {
		for _, p := range tr.Partitions {
			require.NoError(t, p.Err)
			starts[p.Partition] = p.StartOffset
		}
	}
	require.Equal(t, map[int32]int64{0: records / 2, 1: records / 2}, starts, "records left unfinished")

	ledger.mu.Lock()
	defer ledger.mu.Unlock()
	require.Empty(t, ledger.wrong, "a record read back with another value")
	unknown := 0
	for k, v := range produced {
		require.Equal(t, v, ledger.values[k], "record %s", k)
		require.LessOrEqual(t, ledger.maxCount[k], int16(limit), "record %s delivered beyond the limit", k)
		if v == "poison" {
			require.Equal(t, limit, ledger.deliveries[k], "the poison record is delivered exactly the limit's worth of times")
			require.Empty(t, ledger.accepted(k))
			continue
		}
		if ledger.unknown[k] && len(ledger.accepted(k)) == 0 {
			unknown++
			// Its last word is the killed member's acknowledgement that
			// failed: of a record its last Poll returned, or of one
			// fetched and never returned, released by its Close.
			require.Contains(t, ledger.history[k][len(ledger.history[k])-1], "victim acked", "record %s: only the killed member's last records may go unconfirmed: %v", k, ledger.history[k])
			continue
		}
		require.Len(t, ledger.accepted(k), 1, "record %s accepted by %v", k, ledger.accepted(k))
	}
	require.LessOrEqual(t, unknown, 20, "more unconfirmed records than the killed member's last Poll held")
	t.Logf("deliveries beyond the first: %d", func() int {
		extra := 0
		for _, d := range ledger.deliveries {
			extra += d - 1
		}
		return extra
	}())
}
