package controller_test

import (
	"errors"
	"maps"
	"reflect"
	"strings"
	"testing"

	"github.com/partlog/partlog/controller"
	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/log"
	"github.com/partlog/partlog/record"
	"github.com/partlog/partlog/replica"
	"github.com/partlog/partlog/vfs"
)

// metadataStores opens a controller's store twice over: the second
// opening is the store a restarted controller finds. The log store's
// restart comes after a crash keeping only synced bytes.
var metadataStores = []struct {
	name string
	open func(t *testing.T) (first, restarted func() controller.Store)
}{
	{"MemStore", func(t *testing.T) (func() controller.Store, func() controller.Store) {
		s := &controller.MemStore{}
		return func() controller.Store { return s }, func() controller.Store { return s }
	}},
	{"LogStore", func(t *testing.T) (func() controller.Store, func() controller.Store) {
		fs := vfs.NewMem()
		open := func() controller.Store {
			l, err := log.Open("/meta/__cluster_metadata-0", log.Options{FS: fs})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { l.Close() })
			return controller.NewLogStore(l)
		}
		restart := func() controller.Store {
			// The old log's disk is gone; the cleanup closes the log.
			fs = fs.CrashClone(vfs.CrashOptions{Seed: 1, KeepUnsynced: vfs.KeepNone})
			return open()
		}
		return open, restart
	}},
}

// A topic's id and configs are in the controller's state as created — a
// copy of the caller's map, not the map — and a controller restarted from
// its store has them too.
func TestMachineTopicConfigsRestart(t *testing.T) {
	for _, st := range metadataStores {
		t.Run(st.name, func(t *testing.T) {
			first, restarted := st.open(t)
			c := newController(t, first(), 3)
			configs := map[string]string{"retention.ms": "604800000", "min.insync.replicas": "2", "cleanup.policy": "delete"}
			want := maps.Clone(configs)
			if err := c.CreateTopic("orders", 2, 3, controller.TopicConfig{ID: "5f2c1b7e-0d3a-4c8e-9f61-2a7b3c4d5e6f", Configs: configs}); err != nil {
				t.Fatal(err)
			}
			configs["retention.ms"] = "1" // the controller kept a copy
			if err := c.CreateTopic("plain", 1, 1, controller.TopicConfig{Configs: map[string]string{}}); err != nil {
				t.Fatal(err)
			}
			check := func(c *controller.Machine, when string) {
				t.Helper()
				s := c.State()
				orders, plain := s.Topics["orders"], s.Topics["plain"]
				if orders.ID != "5f2c1b7e-0d3a-4c8e-9f61-2a7b3c4d5e6f" || !reflect.DeepEqual(orders.Configs, want) {
					t.Fatalf("%s: orders has id %q, configs %v; want %v", when, orders.ID, orders.Configs, want)
				}
				if plain.ID != "" || plain.Configs != nil {
					t.Fatalf("%s: plain has id %q, configs %#v; want none", when, plain.ID, plain.Configs)
				}
				orders.Configs["retention.ms"] = "2" // State returns a copy
				if got := c.State().Topics["orders"].Configs; !reflect.DeepEqual(got, want) {
					t.Fatalf("%s: changing State's map changed the controller's: %v", when, got)
				}
			}
			check(c, "created")
			before := c.State()

			r, err := controller.NewMachine(restarted(), ctlOptions)
			if err != nil {
				t.Fatal(err)
			}
			check(r, "restarted")
			if got := r.State(); !reflect.DeepEqual(got, before) {
				t.Fatalf("restarted with\n%+v\nwant\n%+v", got, before)
			}
		})
	}
}

// CreateTopic refuses an id another topic has and configs a record cannot
// hold, writing nothing; a deleted topic's id is free again.
func TestMachineTopicConfigsRefused(t *testing.T) {
	store := &controller.MemStore{}
	c := newController(t, store, 1)
	const id = "5f2c1b7e-0d3a-4c8e-9f61-2a7b3c4d5e6f"
	if err := c.CreateTopic("a", 1, 1, controller.TopicConfig{ID: id}); err != nil {
		t.Fatal(err)
	}
	many := map[string]string{}
	for i := range 4097 {
		many[strings.Repeat("k", i+1)] = ""
	}
	for _, tc := range []struct {
		name string
		cfg  controller.TopicConfig
		want error
	}{
		{"another topic's id", controller.TopicConfig{ID: id}, kafka.ErrInvalidRequest},
		{"an id of 4097 bytes", controller.TopicConfig{ID: strings.Repeat("x", 4097)}, kafka.ErrInvalidRequest},
		{"an empty key", controller.TopicConfig{Configs: map[string]string{"": "x"}}, kafka.ErrInvalidConfig},
		{"a key of 4097 bytes", controller.TopicConfig{Configs: map[string]string{strings.Repeat("k", 4097): "x"}}, kafka.ErrInvalidConfig},
		{"a value of 4097 bytes", controller.TopicConfig{Configs: map[string]string{"k": strings.Repeat("v", 4097)}}, kafka.ErrInvalidConfig},
		{"4097 configs", controller.TopicConfig{Configs: many}, kafka.ErrInvalidConfig},
	} {
		records := store.Len()
		if err := c.CreateTopic("b", 1, 1, tc.cfg); !errors.Is(err, tc.want) {
			t.Fatalf("%s: %v, want %v", tc.name, err, tc.want)
		}
		if store.Len() != records {
			t.Fatalf("%s: refused topic wrote %d records", tc.name, store.Len()-records)
		}
	}
	// The largest configs allowed go through the store.
	big := controller.TopicConfig{ID: strings.Repeat("i", 4096), Configs: map[string]string{strings.Repeat("k", 4096): strings.Repeat("v", 4096)}}
	if err := c.CreateTopic("big", 1, 1, big); err != nil {
		t.Fatal(err)
	}
	if err := c.DeleteTopic("a", ""); err != nil {
		t.Fatal(err)
	}
	if err := c.CreateTopic("b", 1, 1, controller.TopicConfig{ID: id}); err != nil {
		t.Fatalf("id of a deleted topic: %v", err)
	}
	r, err := controller.NewMachine(store, ctlOptions)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := r.State(), c.State(); !reflect.DeepEqual(got, want) {
		t.Fatalf("restarted with\n%+v\nwant\n%+v", got, want)
	}
}

// A metadata log version 0 wrote replays: its topics come back without id
// or configs, and the controller goes on writing version 1 after them.
func TestMachineReplaysVersion0Log(t *testing.T) {
	fs := vfs.NewMem()
	l, err := log.Open("/meta/__cluster_metadata-0", log.Options{FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	v0 := [][]byte{
		{0, byte(controller.RecordRegisterNode), 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1},
		{0, byte(controller.RecordTopic), 0, 1, 'a', 0, 0, 0, 1, 1},
		{0, byte(controller.RecordPartition), 0, 1, 'a', 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
			0, 1, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0},
	}
	b := record.NewBuilder(record.DefaultBatchOptions())
	for _, v := range v0 {
		b.Append(record.Record{Value: v})
	}
	if _, err := l.Append(b.Build()); err != nil {
		t.Fatal(err)
	}
	c, err := controller.NewMachine(controller.NewLogStore(l), ctlOptions)
	if err != nil {
		t.Fatal(err)
	}
	want := controller.TopicState{Unclean: controller.AllowUnclean, Partitions: []replica.LeaderAndISR{{Replicas: []int32{0}, ISR: []int32{0}}}}
	if got := c.State().Topics["a"]; !reflect.DeepEqual(got, want) {
		t.Fatalf("version 0 topic replayed as %+v, want %+v", got, want)
	}
	if err := c.CreateTopic("b", 1, 1, controller.TopicConfig{ID: "id-b", Configs: map[string]string{"retention.ms": "1000"}}); err != nil {
		t.Fatal(err)
	}
	before := c.State()
	r, err := controller.NewMachine(controller.NewLogStore(l), ctlOptions)
	if err != nil {
		t.Fatal(err)
	}
	if got := r.State(); !reflect.DeepEqual(got, before) {
		t.Fatalf("mixed-version log replayed as\n%+v\nwant\n%+v", got, before)
	}
}
