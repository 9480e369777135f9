package controller_test

import (
	"errors"
	"reflect"
	"testing"

	"github.com/partlog/partlog/auth"
	"github.com/partlog/partlog/controller"
	"github.com/partlog/partlog/kafka"
)

// TestMachineScramCredentials sets and deletes users' SCRAM credentials:
// the state has them, a machine replaying the store and one applying the
// snapshot have the same, and wrong changes get Kafka's errors.
func TestMachineScramCredentials(t *testing.T) {
	store := &controller.MemStore{}
	m, err := controller.NewMachine(store, controller.Options{})
	if err != nil {
		t.Fatal(err)
	}
	alice, err := auth.NewScramCredential(auth.MechanismScramSHA256, "alice-secret", 8192)
	if err != nil {
		t.Fatal(err)
	}
	bob, err := auth.NewScramCredential(auth.MechanismScramSHA512, "bob-secret", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		user, mechanism string
		cred            auth.ScramCredential
	}{{"alice", auth.MechanismScramSHA256, alice}, {"bob", auth.MechanismScramSHA512, bob}, {"bob", auth.MechanismScramSHA256, alice}} {
		if err := m.SetScramCredential(c.user, c.mechanism, c.cred); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.DeleteScramCredential("bob", auth.MechanismScramSHA256); err != nil {
		t.Fatal(err)
	}
	want := map[string]map[string]auth.ScramCredential{"alice": {auth.MechanismScramSHA256: alice}, "bob": {auth.MechanismScramSHA512: bob}}
	if got := m.State().Users; !reflect.DeepEqual(got, want) {
		t.Fatalf("users %v, want %v", got, want)
	}
	replayed, restored := replayAndRestore(t, m, store)
	if got := replayed.State().Users; !reflect.DeepEqual(got, want) {
		t.Fatalf("replayed users %v, want %v", got, want)
	}
	if got := restored.State().Users; !reflect.DeepEqual(got, want) {
		t.Fatalf("users from the snapshot %v, want %v", got, want)
	}

	for _, bad := range []struct {
		user, mechanism string
		cred            auth.ScramCredential
		want            error
	}{
		{"carol", "PLAIN", alice, kafka.ErrUnsupportedSaslMechanism},
		{"", auth.MechanismScramSHA256, alice, kafka.ErrUnacceptableCredential},
		{"carol", auth.MechanismScramSHA256, auth.ScramCredential{Iterations: 4096}, kafka.ErrUnacceptableCredential},
		{"carol", auth.MechanismScramSHA256, auth.ScramCredential{Salt: []byte("s"), Iterations: 20000, StoredKey: []byte("k"), ServerKey: []byte("k")}, kafka.ErrUnacceptableCredential},
	} {
		if err := m.SetScramCredential(bad.user, bad.mechanism, bad.cred); !errors.Is(err, bad.want) {
			t.Errorf("SetScramCredential(%q, %q): %v, want %v", bad.user, bad.mechanism, err, bad.want)
		}
	}
	if err := m.DeleteScramCredential("alice", auth.MechanismScramSHA512); !errors.Is(err, kafka.ErrResourceNotFound) {
		t.Errorf("deleting a credential alice does not have: %v", err)
	}
}
