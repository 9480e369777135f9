package share

import (
	"errors"
	"testing"
)

// stateFrom builds a state's batches from data, four bytes a batch: the
// gap after the previous batch (less 2, so batches may overlap), the
// length less 1, the state and the delivery count (less 1, so it may be
// negative). States may be malformed on purpose.
func stateFrom(start int64, data []byte) []StateBatch {
	var bs []StateBatch
	next := start
	for ; len(data) >= 4; data = data[4:] {
		first := next + int64(data[0]%16) - 2
		b := StateBatch{
			FirstOffset:   first,
			LastOffset:    first + int64(data[1]%32) - 1,
			DeliveryState: RecordState(data[2] % 6),
			DeliveryCount: int16(data[3]%8) - 1,
		}
		bs = append(bs, b)
		next = b.LastOffset + 1
	}
	return bs
}

// FuzzRestore restores states built from random bytes and applies random
// updates to them: New and Apply either refuse them with ErrInvalidState
// or give a partition whose invariants hold and whose State restores to
// itself.
func FuzzRestore(f *testing.F) {
	f.Add(int64(0), []byte{2, 4, 0, 1, 2, 3, 2, 2}, int64(-1), []byte{3, 1, 4, 1})
	f.Add(int64(5), []byte{2, 9, 1, 3, 0, 2, 4, 0}, int64(9), []byte{})
	f.Add(int64(3), []byte{1, 4, 2, 1}, int64(2), []byte{2, 30, 0, 2, 1, 1, 2, 1})
	f.Fuzz(func(t *testing.T, start int64, data []byte, newStart int64, upd []byte) {
		start %= 1 << 40
		state := State{StartOffset: start, StateBatches: stateFrom(start, data)}
		config := Config{DeliveryCountLimit: 3, MaxInFlightRecords: 50}
		p, err := New(config, state)
		if err != nil {
			if !errors.Is(err, ErrInvalidState) {
				t.Fatalf("New: %v", err)
			}
			return
		}
		checkInvariants(t, p)
		again := newPartition(t, config, p.State())
		if !equalStates(again.State(), p.State()) {
			t.Fatalf("State does not restore to itself:\n%+v\n%+v", p.State(), again.State())
		}

		u := Update{StartOffset: max(-1, newStart%(1<<40)), StateBatches: stateFrom(start, upd)}
		got, err := state.Apply(u)
		if err != nil {
			if !errors.Is(err, ErrInvalidState) {
				t.Fatalf("Apply: %v", err)
			}
			return
		}
		if err := validateBatches(got.StateBatches, got.StartOffset); err != nil {
			t.Fatalf("Apply gave a malformed state %+v: %v", got, err)
		}
		for i := 1; i < len(got.StateBatches); i++ {
			a, b := got.StateBatches[i-1], got.StateBatches[i]
			if a.LastOffset+1 == b.FirstOffset && a.DeliveryState == b.DeliveryState && a.DeliveryCount == b.DeliveryCount {
				t.Fatalf("Apply left mergeable batches %v and %v", a, b)
			}
		}
		// Every offset of the update at or above the start offset has the
		// update's state; every other one the old state's.
		stateAt := func(bs []StateBatch, off int64) (StateBatch, bool) {
			for _, b := range bs {
				if b.FirstOffset <= off && off <= b.LastOffset {
					return b, true
				}
			}
			return StateBatch{}, false
		}
		for off := got.StartOffset; off < got.StartOffset+80; off++ {
			want, ok := stateAt(u.StateBatches, off)
			if !ok {
				want, ok = stateAt(state.StateBatches, off)
			}
			have, hok := stateAt(got.StateBatches, off)
			if ok != hok || ok && (want.DeliveryState != have.DeliveryState || want.DeliveryCount != have.DeliveryCount) {
				t.Fatalf("offset %d: got %v (%v), want %v (%v)", off, have, hok, want, ok)
			}
		}
	})
}
