package controller_test

import (
	"bytes"
	"context"
	"errors"
	"math"
	"net"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/partlog/partlog/controller"
	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/transport"
)

// setGroupConfigs returns an incremental alteration that sets configs k1, v1, k2,
// v2, ...
func setGroupConfigs(kvs ...string) transport.ConfigAlteration {
	var a transport.ConfigAlteration
	for i := 0; i < len(kvs); i += 2 {
		a.Changes = append(a.Changes, transport.ConfigChange{Name: kvs[i], Op: transport.ConfigSet, Value: kvs[i+1]})
	}
	return a
}

// TestMachineAlterGroupConfigs sets, changes and deletes the configs of
// groups that exist nowhere else, each change in one commit of one
// record: invalid changes are refused with INVALID_CONFIG (or
// INVALID_REQUEST) and change nothing, validateOnly and changes that
// leave the configs as they are commit nothing, values are stored as
// Kafka's DescribeConfigs shows them, a group whose last config is
// deleted is forgotten, and a machine replaying the store and one
// applying the snapshot have the same configs.
func TestMachineAlterGroupConfigs(t *testing.T) {
	store := &countingStore{}
	m, err := controller.NewMachine(store, controller.Options{})
	if err != nil {
		t.Fatal(err)
	}
	type configs = map[string]map[string]string
	for _, step := range []struct {
		name    string
		group   string
		alter   transport.ConfigAlteration
		refused error // nil, kafka.ErrInvalidConfig or ErrInvalidRequest
		commit  bool
		want    configs
	}{{
		name: "franz-go's share group test's configs", group: "share-g",
		alter:  setGroupConfigs("share.auto.offset.reset", "earliest", "share.record.lock.duration.ms", "15000"),
		commit: true,
		want:   configs{"share-g": {"share.auto.offset.reset": "earliest", "share.record.lock.duration.ms": "15000"}},
	}, {
		name: "another group, values trimmed and in decimal as Kafka shows them", group: "consumer-g",
		alter:  setGroupConfigs("consumer.session.timeout.ms", " +60000 ", "share.isolation.level", "read_committed", "share.auto.offset.reset", "by_duration:PT1H30M"),
		commit: true,
		want: configs{"share-g": {"share.auto.offset.reset": "earliest", "share.record.lock.duration.ms": "15000"},
			"consumer-g": {"consumer.session.timeout.ms": "60000", "share.isolation.level": "read_committed", "share.auto.offset.reset": "by_duration:PT1H30M"}},
	}, {
		name: "setting the values it has commits nothing", group: "share-g",
		alter: setGroupConfigs("share.record.lock.duration.ms", "15000"),
		want: configs{"share-g": {"share.auto.offset.reset": "earliest", "share.record.lock.duration.ms": "15000"},
			"consumer-g": {"consumer.session.timeout.ms": "60000", "share.isolation.level": "read_committed", "share.auto.offset.reset": "by_duration:PT1H30M"}},
	}, {
		name: "one changed, one deleted, one deleted that is not set", group: "share-g",
		alter: transport.ConfigAlteration{Changes: []transport.ConfigChange{
			{Name: "share.record.lock.duration.ms", Op: transport.ConfigSet, Value: "60000"},
			{Name: "share.auto.offset.reset", Op: transport.ConfigDelete},
			{Name: "share.heartbeat.interval.ms", Op: transport.ConfigDelete},
		}},
		commit: true,
		want: configs{"share-g": {"share.record.lock.duration.ms": "60000"},
			"consumer-g": {"consumer.session.timeout.ms": "60000", "share.isolation.level": "read_committed", "share.auto.offset.reset": "by_duration:PT1H30M"}},
	}, {
		name: "AlterConfigs replaces the whole set", group: "consumer-g",
		alter:  transport.ConfigAlteration{Replace: true, Changes: setGroupConfigs("consumer.heartbeat.interval.ms", "6000").Changes},
		commit: true,
		want:   configs{"share-g": {"share.record.lock.duration.ms": "60000"}, "consumer-g": {"consumer.heartbeat.interval.ms": "6000"}},
	}, {
		name: "the last config deleted forgets the group", group: "consumer-g",
		alter:  transport.ConfigAlteration{Changes: []transport.ConfigChange{{Name: "consumer.heartbeat.interval.ms", Op: transport.ConfigDelete}}},
		commit: true,
		want:   configs{"share-g": {"share.record.lock.duration.ms": "60000"}},
	}} {
		commits, records := store.appends, store.Len()
		before := m.State().GroupConfigs
		if err := m.AlterGroupConfigs(step.group, step.alter, true); err != nil {
			t.Fatalf("%s, validate only: %v", step.name, err)
		}
		if store.appends != commits || !reflect.DeepEqual(m.State().GroupConfigs, before) {
			t.Fatalf("%s: validate only committed", step.name)
		}
		if err := m.AlterGroupConfigs(step.group, step.alter, false); err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		switch {
		case step.commit && (store.appends != commits+1 || store.Len() != records+1):
			t.Fatalf("%s: %d commits of %d records, want 1 of 1", step.name, store.appends-commits, store.Len()-records)
		case !step.commit && store.appends != commits:
			t.Fatalf("%s: committed %d records", step.name, store.Len()-records)
		}
		if got := m.State().GroupConfigs; !reflect.DeepEqual(got, step.want) {
			t.Fatalf("%s: configs %v, want %v", step.name, got, step.want)
		}
	}
	if got := m.GroupConfigs("share-g"); !reflect.DeepEqual(got, map[string]string{"share.record.lock.duration.ms": "60000"}) {
		t.Fatalf("GroupConfigs(share-g) = %v", got)
	}
	if got := m.GroupConfigs("no-such-group"); got != nil {
		t.Fatalf("GroupConfigs of a group without configs = %v, want nil", got)
	}

	// Refused changes change nothing.
	want := m.State().GroupConfigs
	commits := store.appends
	for name, c := range map[string]struct {
		group   string
		alter   transport.ConfigAlteration
		refused error
	}{
		"an unknown config":              {"share-g", setGroupConfigs("share.delivery.count.limit", "5"), kafka.ErrInvalidConfig},
		"a streams config":               {"share-g", setGroupConfigs("streams.session.timeout.ms", "45000"), kafka.ErrInvalidConfig},
		"a topic config":                 {"share-g", setGroupConfigs("retention.ms", "1000"), kafka.ErrInvalidConfig},
		"not a number":                   {"share-g", setGroupConfigs("share.record.lock.duration.ms", "15s"), kafka.ErrInvalidConfig},
		"not an INT":                     {"share-g", setGroupConfigs("share.record.lock.duration.ms", "3000000000"), kafka.ErrInvalidConfig},
		"below GroupConfig's floor":      {"share-g", setGroupConfigs("share.record.lock.duration.ms", "999"), kafka.ErrInvalidConfig},
		"below the broker's minimum":     {"share-g", setGroupConfigs("share.record.lock.duration.ms", "14999"), kafka.ErrInvalidConfig},
		"above the broker's maximum":     {"share-g", setGroupConfigs("share.record.lock.duration.ms", "60001"), kafka.ErrInvalidConfig},
		"a session timeout too short":    {"g", setGroupConfigs("consumer.session.timeout.ms", "44999"), kafka.ErrInvalidConfig},
		"a session timeout too long":     {"g", setGroupConfigs("share.session.timeout.ms", "60001"), kafka.ErrInvalidConfig},
		"a heartbeat interval too short": {"g", setGroupConfigs("share.heartbeat.interval.ms", "4999"), kafka.ErrInvalidConfig},
		"a heartbeat interval too long":  {"g", setGroupConfigs("consumer.heartbeat.interval.ms", "15001"), kafka.ErrInvalidConfig},
		"zero":                           {"g", setGroupConfigs("consumer.heartbeat.interval.ms", "0"), kafka.ErrInvalidConfig},
		"an empty value":                 {"g", setGroupConfigs("share.auto.offset.reset", ""), kafka.ErrInvalidConfig},
		"reset none":                     {"g", setGroupConfigs("share.auto.offset.reset", "none"), kafka.ErrInvalidConfig},
		"reset in capitals":              {"g", setGroupConfigs("share.auto.offset.reset", "EARLIEST"), kafka.ErrInvalidConfig},
		"a negative duration":            {"g", setGroupConfigs("share.auto.offset.reset", "by_duration:-PT1H"), kafka.ErrInvalidConfig},
		"an isolation level unknown":     {"g", setGroupConfigs("share.isolation.level", "READ_COMMITTED"), kafka.ErrInvalidConfig},
		"one bad value among good ones":  {"g", setGroupConfigs("share.auto.offset.reset", "earliest", "share.session.timeout.ms", "1"), kafka.ErrInvalidConfig},
		"APPEND":                         {"g", transport.ConfigAlteration{Changes: []transport.ConfigChange{{Name: "share.isolation.level", Op: transport.ConfigAppend, Value: "read_committed"}}}, kafka.ErrInvalidConfig},
		"a config named twice":           {"g", setGroupConfigs("share.auto.offset.reset", "earliest", "share.auto.offset.reset", "latest"), kafka.ErrInvalidRequest},
		"an unknown operation":           {"g", transport.ConfigAlteration{Changes: []transport.ConfigChange{{Name: "share.isolation.level", Op: 9}}}, kafka.ErrInvalidRequest},
		"the default group":              {"", setGroupConfigs("share.auto.offset.reset", "earliest"), kafka.ErrInvalidRequest},
		"a group id too long":            {strings.Repeat("g", 4097), setGroupConfigs("share.auto.offset.reset", "earliest"), kafka.ErrInvalidRequest},
	} {
		for _, validateOnly := range []bool{true, false} {
			if err := m.AlterGroupConfigs(c.group, c.alter, validateOnly); !errors.Is(err, c.refused) {
				t.Errorf("%s (validate only %v): %v, want %v", name, validateOnly, err, c.refused)
			}
		}
	}
	if store.appends != commits || !reflect.DeepEqual(m.State().GroupConfigs, want) {
		t.Fatalf("refused changes committed: configs %v, want %v", m.State().GroupConfigs, want)
	}

	replayed, restored := replayAndRestore(t, m, &store.MemStore)
	for name, c := range map[string]*controller.Machine{"replayed": replayed, "from the snapshot": restored} {
		if got := c.State().GroupConfigs; !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: configs %v, want %v", name, got, want)
		}
		// Each goes on from the configs it has.
		if err := c.AlterGroupConfigs("share-g", transport.ConfigAlteration{Changes: []transport.ConfigChange{
			{Name: "share.record.lock.duration.ms", Op: transport.ConfigDelete}}}, false); err != nil {
			t.Fatal(err)
		}
		if got := c.State().GroupConfigs; got != nil {
			t.Fatalf("%s: configs left: %v", name, got)
		}
	}
}

// TestRecordGroupConfig: a group's configs go through AppendRecord and
// DecodeRecord, an empty set too; cut short, with a byte more, or without
// a group id, the record does not decode.
func TestRecordGroupConfig(t *testing.T) {
	for _, r := range []controller.Record{
		{Type: controller.RecordGroupConfig, Group: "share-g", Configs: map[string]string{
			"share.auto.offset.reset": "earliest", "share.record.lock.duration.ms": "15000"}},
		{Type: controller.RecordGroupConfig, Group: "forgotten"},
	} {
		b := controller.AppendRecord(nil, r)
		got, err := controller.DecodeRecord(b)
		if err != nil || !reflect.DeepEqual(got, r) {
			t.Fatalf("decoded %+v, %v; want %+v", got, err, r)
		}
		for n := range len(b) {
			if _, err := controller.DecodeRecord(b[:n]); !errors.Is(err, controller.ErrCorruptMetadata) {
				t.Fatalf("cut to %d bytes: %v", n, err)
			}
		}
		if _, err := controller.DecodeRecord(append(bytes.Clone(b), 0)); !errors.Is(err, controller.ErrCorruptMetadata) {
			t.Fatalf("with a byte more: %v", err)
		}
	}
	if r := controller.RecordGroupConfig.String(); r != "GroupConfig" {
		t.Fatalf("String() = %q", r)
	}
	noGroup := controller.AppendRecord(nil, controller.Record{Type: controller.RecordGroupConfig, Configs: map[string]string{"share.isolation.level": "read_committed"}})
	if _, err := controller.DecodeRecord(noGroup); !errors.Is(err, controller.ErrCorruptMetadata) {
		t.Fatalf("without a group id: %v", err)
	}
}

// TestParseShareAutoOffsetReset reads share.auto.offset.reset as Kafka's
// ShareGroupAutoOffsetResetStrategy does, durations as Java's
// Duration.parse reads them.
func TestParseShareAutoOffsetReset(t *testing.T) {
	byDuration := func(d time.Duration) controller.ShareAutoOffsetReset {
		return controller.ShareAutoOffsetReset{Strategy: controller.ShareResetByDuration, Duration: d}
	}
	for value, want := range map[string]controller.ShareAutoOffsetReset{
		"latest":                     {Strategy: controller.ShareResetLatest},
		"earliest":                   {Strategy: controller.ShareResetEarliest},
		"by_duration:PT1H":           byDuration(time.Hour),
		"by_duration:P2D":            byDuration(48 * time.Hour),
		"by_duration:P1DT2H3M4.5S":   byDuration(26*time.Hour + 3*time.Minute + 4500*time.Millisecond),
		"by_duration:pt15m":          byDuration(15 * time.Minute),
		"by_duration:PT0S":           byDuration(0),
		"by_duration:PT0,000000001S": byDuration(1),
		"by_duration:PT1H-30M":       byDuration(30 * time.Minute),
		"by_duration:-PT-1H":         byDuration(time.Hour),
		"by_duration:+PT1S":          byDuration(time.Second),
		"by_duration:P100000000D":    byDuration(math.MaxInt64),
	} {
		got, err := controller.ParseShareAutoOffsetReset(value)
		if err != nil || got != want {
			t.Errorf("%q: %+v, %v; want %+v", value, got, err, want)
		}
	}
	for _, value := range []string{"", "none", "LATEST", "Earliest", "by_duration", "by_duration:", "by_duration:invalid",
		"by_duration:-PT1H", "by_duration:PT-0.5S", "by_duration:P", "by_duration:PT", "by_duration:P1DT", "by_duration:P1W",
		"by_duration:P1Y", "by_duration:PT1.0000000001S", "by_duration:P106751991167301D", "BY_DURATION:PT1H", "by_duration: PT1H",
		"by_duration:PT9223372036854775808S"} {
		if got, err := controller.ParseShareAutoOffsetReset(value); !errors.Is(err, kafka.ErrInvalidConfig) {
			t.Errorf("%q: %+v, %v; want INVALID_CONFIG", value, got, err)
		}
	}
	if d := controller.GroupConfigDefaults(); d["share.auto.offset.reset"] != "latest" || len(d) != 7 {
		t.Fatalf("defaults %v", d)
	}
}

// TestControllerGroupConfigsOverTCP alters a group's configs through a
// Client: a refusal crosses the network as its Kafka code, validateOnly
// changes nothing, and the metadata a node gets carries the configs.
func TestControllerGroupConfigsOverTCP(t *testing.T) {
	c, err := controller.Open(t.TempDir(), controller.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go c.Serve(ln)
	client := controller.Dial(ln.Addr().String())
	defer client.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	if _, err := client.AlterGroupConfigs(ctx, "g", setGroupConfigs("share.record.lock.duration.ms", "1000"), false); !errors.Is(err, kafka.ErrInvalidConfig) ||
		!strings.Contains(err.Error(), "group.share.min.record.lock.duration.ms") {
		t.Fatalf("out of range: %v, want INVALID_CONFIG naming the bound", err)
	}
	if _, err := client.AlterGroupConfigs(ctx, "g", setGroupConfigs("share.auto.offset.reset", "earliest"), true); err != nil {
		t.Fatal(err)
	}
	if got := c.State().GroupConfigs; got != nil {
		t.Fatalf("validate only stored %v", got)
	}
	change, err := client.AlterGroupConfigs(ctx, "g", setGroupConfigs("share.auto.offset.reset", "earliest"), false)
	if err != nil {
		t.Fatal(err)
	}
	epoch, err := client.Register(ctx, 1, "n1:9092")
	if err != nil {
		t.Fatal(err)
	}
	hb, err := client.Heartbeat(ctx, controller.Heartbeat{Node: 1, BrokerEpoch: epoch, KnownVersion: -1})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]map[string]string{"g": {"share.auto.offset.reset": "earliest"}}
	if hb.Metadata == nil || hb.Metadata.Version < change.Version || !reflect.DeepEqual(hb.Metadata.GroupConfigs, want) {
		t.Fatalf("metadata %+v, want version %d or later with the group configs %v", hb.Metadata, change.Version, want)
	}
}
