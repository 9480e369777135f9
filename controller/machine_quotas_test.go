package controller_test

import (
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
	"github.com/partlog/partlog/quota"
)

// The entities of the tests below.
var (
	alice         = quota.Entity{User: "alice"}
	defaultUser   = quota.Entity{User: quota.Default}
	aliceApp      = quota.Entity{User: "alice", ClientID: "app"}
	defaultClient = quota.Entity{ClientID: quota.Default}
)

// The quota keys, short.
const (
	produce = quota.ProducerByteRate
	consume = quota.ConsumerByteRate
	request = quota.RequestPercentage
)

// TestMachineAlterClientQuotas sets, changes and removes client quotas,
// each call in one commit of a record per key changed: invalid changes
// get INVALID_REQUEST and change nothing while the valid ones beside
// them are made, removing a quota that is not set is no error, an entity
// with no quota left is gone, validateOnly commits nothing, and a machine
// replaying the store and one applying the snapshot have the same quotas.
func TestMachineAlterClientQuotas(t *testing.T) {
	store := &countingStore{}
	m, err := controller.NewMachine(store, controller.Options{})
	if err != nil {
		t.Fatal(err)
	}
	type quotas = map[quota.Entity]map[string]float64
	for _, step := range []struct {
		name    string
		changes []controller.QuotaChange
		invalid []bool // for each change: refused with INVALID_REQUEST
		records int    // in the call's one commit; 0 is no commit
		want    quotas
	}{{
		name: "a user's, the default user's and a user's client id's",
		changes: []controller.QuotaChange{
			{Entity: alice, Set: map[string]float64{produce: 1024, consume: 2048}},
			{Entity: defaultUser, Set: map[string]float64{produce: 512}},
			{Entity: aliceApp, Set: map[string]float64{request: 50}},
		},
		invalid: []bool{false, false, false},
		records: 4,
		want:    quotas{alice: {produce: 1024, consume: 2048}, defaultUser: {produce: 512}, aliceApp: {request: 50}},
	}, {
		name: "one changed, one removed, one removed that is not set, one set to its value",
		changes: []controller.QuotaChange{
			{Entity: alice, Set: map[string]float64{produce: 4096}, Remove: []string{consume}},
			{Entity: defaultUser, Remove: []string{request}},
			{Entity: aliceApp, Set: map[string]float64{request: 50}},
		},
		invalid: []bool{false, false, false},
		records: 2,
		want:    quotas{alice: {produce: 4096}, defaultUser: {produce: 512}, aliceApp: {request: 50}},
	}, {
		name: "invalid changes change nothing; the valid one beside them is made",
		changes: []controller.QuotaChange{
			{Entity: quota.Entity{}, Set: map[string]float64{produce: 1}},
			{Entity: alice, Set: map[string]float64{"fetch_rate": 1}},
			{Entity: alice, Set: map[string]float64{produce: 0, consume: 1}},
			{Entity: alice, Set: map[string]float64{produce: -1}},
			{Entity: alice, Set: map[string]float64{produce: math.Inf(1)}},
			{Entity: alice, Set: map[string]float64{produce: math.NaN()}},
			{Entity: alice, Remove: []string{"fetch_rate"}},
			{Entity: alice, Set: map[string]float64{produce: 1, consume: 1}, Remove: []string{produce}},
			{Entity: alice, Remove: []string{produce, produce}},
			{Entity: quota.Entity{User: strings.Repeat("u", 4097)}, Set: map[string]float64{produce: 1}},
			{Entity: defaultClient, Set: map[string]float64{consume: 100}},
		},
		invalid: []bool{true, true, true, true, true, true, true, true, true, true, false},
		records: 1,
		want:    quotas{alice: {produce: 4096}, defaultUser: {produce: 512}, aliceApp: {request: 50}, defaultClient: {consume: 100}},
	}, {
		name: "an entity's last quota removed; each change sees those before it",
		changes: []controller.QuotaChange{
			{Entity: aliceApp, Remove: []string{request}},
			{Entity: alice, Set: map[string]float64{produce: 1}},
			{Entity: alice, Set: map[string]float64{produce: 2}},
			{Entity: defaultClient, Set: map[string]float64{produce: 5}},
			{Entity: defaultClient, Remove: []string{produce}},
			{Entity: defaultClient, Remove: []string{produce}},
		},
		invalid: []bool{false, false, false, false, false, false},
		records: 5,
		want:    quotas{alice: {produce: 2}, defaultUser: {produce: 512}, defaultClient: {consume: 100}},
	}} {
		before, commits, records := m.State().Quotas, store.appends, store.Len()
		checkErrs := func(how string, errs []error) {
			t.Helper()
			if len(errs) != len(step.changes) {
				t.Fatalf("%s%s: %d errors for %d changes", step.name, how, len(errs), len(step.changes))
			}
			for i, err := range errs {
				if got := errors.Is(err, kafka.ErrInvalidRequest); got != step.invalid[i] || (!got && err != nil) {
					t.Errorf("%s%s: change %d: %v, want invalid %v", step.name, how, i, err, step.invalid[i])
				}
			}
		}
		errs, err := m.AlterClientQuotas(step.changes, true)
		if err != nil {
			t.Fatalf("%s, validate only: %v", step.name, err)
		}
		checkErrs(", validate only", errs)
		if store.appends != commits || !reflect.DeepEqual(m.State().Quotas, before) {
			t.Fatalf("%s: validate only committed %d records: quotas %v, were %v", step.name, store.Len()-records, m.State().Quotas, before)
		}

		errs, err = m.AlterClientQuotas(step.changes, false)
		if err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		checkErrs("", errs)
		switch {
		case step.records == 0 && store.appends != commits:
			t.Fatalf("%s: changing nothing committed %d records", step.name, store.Len()-records)
		case step.records > 0 && (store.appends != commits+1 || store.Len() != records+step.records):
			t.Fatalf("%s: %d commits of %d records, want 1 of %d", step.name, store.appends-commits, store.Len()-records, step.records)
		}
		if got := m.State().Quotas; !reflect.DeepEqual(got, step.want) {
			t.Fatalf("%s: quotas %v, want %v", step.name, got, step.want)
		}
	}
	if errs, err := m.AlterClientQuotas(nil, false); err != nil || len(errs) != 0 {
		t.Fatalf("no changes: %v %v", errs, err)
	}
	s := m.State()
	s.Quotas[alice][produce] = 99
	if got := m.State().Quotas[alice][produce]; got != 2 {
		t.Fatalf("changing the state's copy changed the machine's quota to %v", got)
	}

	want := m.State().Quotas
	replayed, restored := replayAndRestore(t, m, &store.MemStore)
	if got := replayed.State().Quotas; !reflect.DeepEqual(got, want) {
		t.Fatalf("replayed quotas %v, want %v", got, want)
	}
	if got := restored.State().Quotas; !reflect.DeepEqual(got, want) {
		t.Fatalf("quotas from the snapshot %v, want %v", got, want)
	}

	// Each goes on from the quotas it has: removing them all leaves none.
	for _, c := range []*controller.Machine{m, replayed, restored} {
		errs, err := c.AlterClientQuotas([]controller.QuotaChange{
			{Entity: alice, Remove: []string{produce}},
			{Entity: defaultUser, Remove: quota.Keys},
			{Entity: defaultClient, Remove: []string{consume}},
		}, false)
		if err != nil || !reflect.DeepEqual(errs, []error{nil, nil, nil}) {
			t.Fatalf("removing every quota: %v %v", errs, err)
		}
		if got := c.State().Quotas; got != nil {
			t.Fatalf("quotas left: %v", got)
		}
	}
}

// TestControllerClientQuotasOverTCP alters client quotas through a
// Client: the per-change errors cross the network as their Kafka codes,
// so that errors.Is works on them, validateOnly changes nothing, and the
// metadata nodes get carries the quotas in order.
func TestControllerClientQuotasOverTCP(t *testing.T) {
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

	changes := []controller.QuotaChange{
		{Entity: aliceApp, Set: map[string]float64{request: 25.5}},
		{Entity: alice, Set: map[string]float64{produce: -5}},
		{Entity: defaultUser, Set: map[string]float64{produce: 1 << 20, consume: 2 << 20}},
	}
	errs, _, err := client.AlterClientQuotas(ctx, changes, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(errs) != 3 || errs[0] != nil || !errors.Is(errs[1], kafka.ErrInvalidRequest) || errs[2] != nil {
		t.Fatalf("validate only: errors %v, want nil, INVALID_REQUEST, nil", errs)
	}
	if got := c.State().Quotas; got != nil {
		t.Fatalf("validate only stored %v", got)
	}

	errs, change, err := client.AlterClientQuotas(ctx, changes, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(errs) != 3 || errs[0] != nil || !errors.Is(errs[1], kafka.ErrInvalidRequest) || errs[2] != nil {
		t.Fatalf("errors %v, want nil, INVALID_REQUEST, nil", errs)
	}
	if !strings.Contains(errs[1].Error(), "must be positive") {
		t.Errorf("the error %q does not say why", errs[1])
	}
	epoch, err := client.Register(ctx, 1, "n1:9092")
	if err != nil {
		t.Fatal(err)
	}
	hb, err := client.Heartbeat(ctx, controller.Heartbeat{Node: 1, BrokerEpoch: epoch, KnownVersion: -1})
	if err != nil {
		t.Fatal(err)
	}
	want := []controller.ClientQuota{
		{Entity: defaultUser, Quotas: map[string]float64{produce: 1 << 20, consume: 2 << 20}},
		{Entity: aliceApp, Quotas: map[string]float64{request: 25.5}},
	}
	if hb.Metadata == nil || hb.Metadata.Version < change.Version || !reflect.DeepEqual(hb.Metadata.Quotas, want) {
		t.Fatalf("metadata %+v, want version %d or later with the quotas %v", hb.Metadata, change.Version, want)
	}
}
