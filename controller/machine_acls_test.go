package controller_test

import (
	"context"
	"errors"
	"net"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/partlog/partlog/auth"
	"github.com/partlog/partlog/controller"
	"github.com/partlog/partlog/kafka"
)

// countingStore is a MemStore that counts its Appends: one per commit.
type countingStore struct {
	controller.MemStore
	appends int
}

func (s *countingStore) Append(records []controller.Record) error {
	s.appends++
	return s.MemStore.Append(records)
}

// The ACLs of the tests below.
var (
	aliceReadsOrders = auth.ACL{ResourceType: auth.TopicResource, ResourceName: "orders", PatternType: auth.LiteralPattern,
		Principal: "User:alice", Host: auth.WildcardHost, Operation: auth.ReadOperation, Permission: auth.Allow}
	aliceWritesOrd = auth.ACL{ResourceType: auth.TopicResource, ResourceName: "ord", PatternType: auth.PrefixedPattern,
		Principal: "User:alice", Host: auth.WildcardHost, Operation: auth.WriteOperation, Permission: auth.Allow}
	bobDescribesAll = auth.ACL{ResourceType: auth.TopicResource, ResourceName: auth.WildcardName, PatternType: auth.LiteralPattern,
		Principal: "User:bob", Host: auth.WildcardHost, Operation: auth.DescribeOperation, Permission: auth.Allow}
	aliceReadsBilling = auth.ACL{ResourceType: auth.GroupResource, ResourceName: "billing", PatternType: auth.LiteralPattern,
		Principal: "User:alice", Host: auth.WildcardHost, Operation: auth.ReadOperation, Permission: auth.Allow}
	adminDeniedAlter = auth.ACL{ResourceType: auth.ClusterResource, ResourceName: auth.ClusterName, PatternType: auth.LiteralPattern,
		Principal: "User:admin", Host: auth.WildcardHost, Operation: auth.AlterOperation, Permission: auth.Deny}
	bobDeniedPayments = auth.ACL{ResourceType: auth.TopicResource, ResourceName: "payments", PatternType: auth.LiteralPattern,
		Principal: "User:bob", Host: "10.0.0.1", Operation: auth.ReadOperation, Permission: auth.Deny}
)

// aclsOf returns the ACLs of a state's ACLs in id order.
func aclsOf(s controller.ClusterState) []auth.ACL {
	var out []auth.ACL
	for id := uint64(1); len(out) < len(s.ACLs); id++ {
		if acl, ok := s.ACLs[id]; ok {
			out = append(out, acl)
		}
	}
	return out
}

// TestMachineCreateACLs stores ACLs in one commit: invalid ones get
// INVALID_REQUEST, one stored already or named twice is stored once
// without an error, and a machine replaying the store and one applying
// the snapshot have the same ACLs under the same ids.
func TestMachineCreateACLs(t *testing.T) {
	store := &countingStore{}
	m, err := controller.NewMachine(store, controller.Options{})
	if err != nil {
		t.Fatal(err)
	}
	noHost := aliceReadsOrders
	noHost.Host = ""
	anyType := aliceReadsOrders
	anyType.ResourceType = auth.AnyResource
	matching := aliceReadsOrders
	matching.PatternType = auth.MatchPattern
	otherCluster := adminDeniedAlter
	otherCluster.ResourceName = "cluster"
	badPrincipal := aliceReadsOrders
	badPrincipal.Principal = "alice"
	longName := aliceReadsOrders
	longName.ResourceName = strings.Repeat("n", 4097)

	errs, err := m.CreateACLs([]auth.ACL{aliceReadsOrders, noHost, aliceWritesOrd, anyType, aliceReadsOrders,
		matching, otherCluster, badPrincipal, longName, adminDeniedAlter})
	if err != nil {
		t.Fatal(err)
	}
	wantInvalid := []bool{false, true, false, true, false, true, true, true, true, false}
	for i, err := range errs {
		if got := errors.Is(err, kafka.ErrInvalidRequest); got != wantInvalid[i] || (!got && err != nil) {
			t.Errorf("ACL %d: %v, want invalid %v", i, err, wantInvalid[i])
		}
	}
	if store.appends != 1 || store.Len() != 3 {
		t.Fatalf("%d commits of %d records, want 1 of 3", store.appends, store.Len())
	}
	errs, err = m.CreateACLs([]auth.ACL{aliceWritesOrd, bobDescribesAll})
	if err != nil || !reflect.DeepEqual(errs, []error{nil, nil}) {
		t.Fatalf("again: %v %v", errs, err)
	}
	if store.Len() != 4 {
		t.Fatalf("%d records after storing one ACL again and one new, want 4", store.Len())
	}
	want := map[uint64]auth.ACL{1: aliceReadsOrders, 2: aliceWritesOrd, 3: adminDeniedAlter, 4: bobDescribesAll}
	if got := m.State().ACLs; !reflect.DeepEqual(got, want) {
		t.Fatalf("ACLs %v, want %v", got, want)
	}

	replayed, restored := replayAndRestore(t, m, &store.MemStore)
	if got := replayed.State().ACLs; !reflect.DeepEqual(got, want) {
		t.Fatalf("replayed ACLs %v, want %v", got, want)
	}
	if got := restored.State().ACLs; !reflect.DeepEqual(got, want) {
		t.Fatalf("ACLs from the snapshot %v, want %v", got, want)
	}
	// Each goes on numbering after the ids it has.
	for _, c := range []*controller.Machine{m, replayed, restored} {
		if _, err := c.CreateACLs([]auth.ACL{aliceReadsBilling}); err != nil {
			t.Fatal(err)
		}
		if got := c.State().ACLs[5]; got != aliceReadsBilling {
			t.Fatalf("ACL 5 is %v, want %v", got, aliceReadsBilling)
		}
	}
}

// TestMachineDeleteACLs deletes the ACLs filters select, in one commit:
// literal, prefixed, MATCH and ANY filters select as Kafka's do, an ACL
// two filters select is deleted once and reported by both, and the ACLs
// left are the same after a replay and from a snapshot.
func TestMachineDeleteACLs(t *testing.T) {
	store := &countingStore{}
	m, err := controller.NewMachine(store, controller.Options{})
	if err != nil {
		t.Fatal(err)
	}
	all := []auth.ACL{aliceReadsOrders, aliceWritesOrd, bobDescribesAll, aliceReadsBilling, adminDeniedAlter, bobDeniedPayments}
	if _, err := m.CreateACLs(all); err != nil {
		t.Fatal(err)
	}
	for _, step := range []struct {
		name    string
		filters []auth.ACLFilter
		deleted [][]auth.ACL
		left    []auth.ACL
	}{{
		name: "prefixed selects the prefixed ACL only; literal the literal one",
		filters: []auth.ACLFilter{
			{ResourceType: auth.TopicResource, ResourceName: "orders", PatternType: auth.PrefixedPattern},
			{ResourceType: auth.GroupResource, ResourceName: "billing", PatternType: auth.LiteralPattern},
		},
		deleted: [][]auth.ACL{nil, {aliceReadsBilling}},
		left:    []auth.ACL{aliceReadsOrders, aliceWritesOrd, bobDescribesAll, adminDeniedAlter, bobDeniedPayments},
	}, {
		name: "MATCH selects the literal name, the wildcard and prefixes; ANY alice's topics",
		filters: []auth.ACLFilter{
			{ResourceType: auth.TopicResource, ResourceName: "orders", PatternType: auth.MatchPattern},
			{ResourceType: auth.AnyResource, PatternType: auth.AnyPattern, Principal: "User:alice"},
		},
		deleted: [][]auth.ACL{{aliceReadsOrders, aliceWritesOrd, bobDescribesAll}, {aliceReadsOrders, aliceWritesOrd}},
		left:    []auth.ACL{adminDeniedAlter, bobDeniedPayments},
	}, {
		name:    "none left to select",
		filters: []auth.ACLFilter{{ResourceType: auth.TopicResource, ResourceName: "ord", PatternType: auth.PrefixedPattern}},
		deleted: [][]auth.ACL{nil},
		left:    []auth.ACL{adminDeniedAlter, bobDeniedPayments},
	}, {
		name:    "the zero filter with a host selects every ACL for it",
		filters: []auth.ACLFilter{{Host: "10.0.0.1"}},
		deleted: [][]auth.ACL{{bobDeniedPayments}},
		left:    []auth.ACL{adminDeniedAlter},
	}} {
		commits, records := store.appends, store.Len()
		deleted, err := m.DeleteACLs(step.filters)
		if err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		if !reflect.DeepEqual(deleted, step.deleted) {
			t.Fatalf("%s: deleted %v, want %v", step.name, deleted, step.deleted)
		}
		if got := aclsOf(m.State()); !reflect.DeepEqual(got, step.left) {
			t.Fatalf("%s: left %v, want %v", step.name, got, step.left)
		}
		removed := len(all) - len(step.left)
		all = step.left
		switch {
		case removed == 0 && (store.appends != commits || store.Len() != records):
			t.Fatalf("%s: deleting nothing committed %d records", step.name, store.Len()-records)
		case removed > 0 && (store.appends != commits+1 || store.Len() != records+removed):
			t.Fatalf("%s: %d commits of %d records, want 1 of %d", step.name, store.appends-commits, store.Len()-records, removed)
		}
	}

	want := m.State().ACLs
	replayed, restored := replayAndRestore(t, m, &store.MemStore)
	if got := replayed.State().ACLs; !reflect.DeepEqual(got, want) {
		t.Fatalf("replayed ACLs %v, want %v", got, want)
	}
	if got := restored.State().ACLs; !reflect.DeepEqual(got, want) {
		t.Fatalf("ACLs from the snapshot %v, want %v", got, want)
	}
	if deleted, err := m.DeleteACLs([]auth.ACLFilter{{}}); err != nil || !reflect.DeepEqual(deleted, [][]auth.ACL{{adminDeniedAlter}}) {
		t.Fatalf("deleting the last: %v %v", deleted, err)
	}
	if s := m.State(); s.ACLs != nil {
		t.Fatalf("ACLs left: %v", s.ACLs)
	}
}

// TestControllerACLsOverTCP creates and deletes ACLs through a Client:
// the per-ACL errors cross the network as their Kafka codes, so that
// errors.Is works on them, and the metadata nodes get carries the ACLs.
func TestControllerACLsOverTCP(t *testing.T) {
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

	invalid := aliceReadsOrders
	invalid.PatternType = auth.MatchPattern
	errs, change, err := client.CreateACLs(ctx, []auth.ACL{aliceReadsOrders, invalid, aliceWritesOrd})
	if err != nil {
		t.Fatal(err)
	}
	if len(errs) != 3 || errs[0] != nil || !errors.Is(errs[1], kafka.ErrInvalidRequest) || errs[2] != nil {
		t.Fatalf("errors %v, want nil, INVALID_REQUEST, nil", errs)
	}
	if !strings.Contains(errs[1].Error(), "pattern type MATCH") {
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
	if hb.Metadata == nil || hb.Metadata.Version < change.Version ||
		!reflect.DeepEqual(hb.Metadata.ACLs, []auth.ACL{aliceReadsOrders, aliceWritesOrd}) {
		t.Fatalf("metadata %+v, want version %d or later with the ACLs", hb.Metadata, change.Version)
	}

	deleted, _, err := client.DeleteACLs(ctx, []auth.ACLFilter{{PatternType: auth.PrefixedPattern}, {Principal: "User:carol"}})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(deleted, [][]auth.ACL{{aliceWritesOrd}, nil}) {
		t.Fatalf("deleted %v", deleted)
	}
	if got := c.State().ACLs; !reflect.DeepEqual(got, map[uint64]auth.ACL{1: aliceReadsOrders}) {
		t.Fatalf("ACLs left %v", got)
	}
}
