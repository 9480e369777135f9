package quota

import (
	"fmt"
	"testing"
	"time"
)

func TestResolve(t *testing.T) {
	c := NewConfig(map[Entity]map[string]float64{
		{User: "alice", ClientID: "app"}:   {ProducerByteRate: 1},
		{User: "alice"}:                    {ProducerByteRate: 2, ConsumerByteRate: 20},
		{User: Default, ClientID: Default}: {ProducerByteRate: 3},
		{User: Default}:                    {ConsumerByteRate: 30},
		{ClientID: "batch"}:                {ProducerByteRate: 4, RequestPercentage: 50},
		{ClientID: Default}:                {RequestPercentage: 60},
	})
	for _, tc := range []struct {
		user, client, key string
		want              float64
		metered           Entity
		ok                bool
	}{
		{"alice", "app", ProducerByteRate, 1, Entity{"alice", "app"}, true},
		{"alice", "other", ProducerByteRate, 2, Entity{User: "alice"}, true},
		{"alice", "app", ConsumerByteRate, 20, Entity{User: "alice"}, true},
		{"bob", "x", ProducerByteRate, 3, Entity{"bob", "x"}, true}, // defaults stand for bob and x
		{"bob", "x", ConsumerByteRate, 30, Entity{User: "bob"}, true},
		{"bob", "batch", RequestPercentage, 50, Entity{ClientID: "batch"}, true},
		{"bob", "y", RequestPercentage, 60, Entity{ClientID: "y"}, true},
	} {
		got, metered, ok := c.Resolve(tc.user, tc.client, tc.key)
		if got != tc.want || metered != tc.metered || ok != tc.ok {
			t.Errorf("Resolve(%s, %s, %s) = %v, %+v, %t; want %v, %+v, %t", tc.user, tc.client, tc.key, got, metered, ok, tc.want, tc.metered, tc.ok)
		}
	}
	if _, _, ok := NewConfig(nil).Resolve("a", "b", ProducerByteRate); ok {
		t.Error("an empty config resolved a quota")
	}
}

func TestManagerThrottles(t *testing.T) {
	t0 := time.Unix(1000, 0)
	m := &Manager{Window: time.Second, Config: func() *Config {
		return NewConfig(map[Entity]map[string]float64{{User: Default}: {ProducerByteRate: 1000}})
	}}
	// A second's worth goes through at once; then each byte over is owed.
	if d := m.Record(t0, "alice", "c", ProducerByteRate, 1000); d != 0 {
		t.Fatalf("within the burst: throttled %v", d)
	}
	if d := m.Record(t0, "alice", "c", ProducerByteRate, 500); d != 500*time.Millisecond {
		t.Fatalf("500 bytes over 1000/s: throttled %v, want 500ms", d)
	}
	// bob has a bucket of his own under the default quota.
	if d := m.Record(t0, "bob", "c", ProducerByteRate, 1000); d != 0 {
		t.Fatalf("bob throttled %v for alice's bytes", d)
	}
	// After the throttle the bucket is back at empty; after two seconds,
	// full again (and no fuller).
	if d := m.Record(t0.Add(500*time.Millisecond), "alice", "c", ProducerByteRate, 0); d != 0 {
		t.Fatalf("after waiting: throttled %v", d)
	}
	if d := m.Record(t0.Add(3*time.Second), "alice", "c", ProducerByteRate, 1500); d != 500*time.Millisecond {
		t.Fatalf("after a long wait, 1500 bytes: throttled %v, want 500ms (the burst is one second's)", d)
	}
	// A rate held at the quota for long is not throttled; above it is.
	m2 := &Manager{Window: time.Second, Config: m.Config}
	now := t0
	var throttled time.Duration
	for range 100 {
		now = now.Add(100 * time.Millisecond)
		throttled += m2.Record(now, "carol", "c", ProducerByteRate, 100)
	}
	if throttled != 0 {
		t.Fatalf("at the quota: throttled %v", throttled)
	}
	for range 100 {
		now = now.Add(100 * time.Millisecond)
		throttled = m2.Record(now, "carol", "c", ProducerByteRate, 200)
	}
	if throttled != time.Second {
		t.Fatalf("at twice the quota for 10 s: throttled %v, want the window (1s), the most a throttle is", throttled)
	}
	// No quota, no throttle.
	if d := m.Record(t0, "alice", "c", ConsumerByteRate, 1e9); d != 0 {
		t.Fatalf("no consumer quota: throttled %v", d)
	}
}

func TestMatches(t *testing.T) {
	alice := Entity{User: "alice"}
	aliceApp := Entity{User: "alice", ClientID: "app"}
	defUser := Entity{User: Default}
	app := Entity{ClientID: "app"}
	user := func(m MatchType, name string) FilterComponent {
		return FilterComponent{EntityType: UserType, Match: m, Name: name}
	}
	for _, tc := range []struct {
		name   string
		comps  []FilterComponent
		strict bool
		want   map[Entity]bool
	}{
		{"exact user", []FilterComponent{user(MatchExact, "alice")}, false, map[Entity]bool{alice: true, aliceApp: true}},
		{"exact user, strict", []FilterComponent{user(MatchExact, "alice")}, true, map[Entity]bool{alice: true}},
		{"default user", []FilterComponent{user(MatchDefault, "")}, false, map[Entity]bool{defUser: true}},
		{"any user", []FilterComponent{user(MatchAny, "")}, true, map[Entity]bool{alice: true, defUser: true}},
		{"nothing, not strict", nil, false, map[Entity]bool{alice: true, aliceApp: true, defUser: true, app: true}},
	} {
		for _, e := range []Entity{alice, aliceApp, defUser, app} {
			if got := Matches(e, tc.comps, tc.strict); got != tc.want[e] {
				t.Errorf("%s: Matches(%v) = %t", tc.name, e, got)
			}
		}
	}
}

// TestManagerForgets: a client that once went far over its quota owes at
// most a window's worth (Kafka's rate forgets older samples), and the
// buckets of clients that have filled up again are dropped.
func TestManagerForgets(t *testing.T) {
	t0 := time.Unix(1000, 0)
	m := &Manager{Window: time.Second, Config: func() *Config {
		return NewConfig(map[Entity]map[string]float64{{ClientID: Default}: {ProducerByteRate: 1000}})
	}}
	if d := m.Record(t0, "u", "big", ProducerByteRate, 1e9); d != time.Second {
		t.Fatalf("a gigabyte at 1000/s: throttled %v, want the window", d)
	}
	// Two windows later the debt (at most a window's) is paid.
	if d := m.Record(t0.Add(2*time.Second), "u", "big", ProducerByteRate, 1); d != 0 {
		t.Fatalf("two windows after: still throttled %v", d)
	}
	for i := range 100 {
		m.Record(t0.Add(2*time.Second), "u", fmt.Sprintf("client-%d", i), ProducerByteRate, 10)
	}
	if len(m.buckets) != 101 {
		t.Fatalf("%d buckets, want 101", len(m.buckets))
	}
	m.Record(t0.Add(10*time.Second), "u", "late", ProducerByteRate, 10)
	if len(m.buckets) != 1 {
		t.Fatalf("after the clients filled up again: %d buckets, want only the late one's", len(m.buckets))
	}
}
