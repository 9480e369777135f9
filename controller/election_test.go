package controller_test

import (
	"slices"
	"testing"

	"github.com/partlog/partlog/controller"
	"github.com/partlog/partlog/replica"
)

// ElectLeader is a pure function: the first live ISR member in assignment
// order, and outside the ISR only with AllowUnclean.
func TestElectLeader(t *testing.T) {
	live := func(ids ...int32) func(int32) bool {
		return func(id int32) bool { return slices.Contains(ids, id) }
	}
	for _, tc := range []struct {
		name             string
		replicas, isr    []int32
		alive            func(int32) bool
		mode             controller.Unclean
		leader           int32
		unclean, electOK bool
	}{
		{"preferred", []int32{1, 2, 3}, []int32{1, 2, 3}, live(1, 2, 3), controller.CleanOnly, 1, false, true},
		{"assignment order, not ISR order", []int32{3, 1, 2}, []int32{1, 2, 3}, live(1, 2, 3), controller.CleanOnly, 3, false, true},
		{"skip dead", []int32{1, 2, 3}, []int32{1, 2, 3}, live(2, 3), controller.CleanOnly, 2, false, true},
		{"skip out of ISR", []int32{1, 2, 3}, []int32{1, 3}, live(2, 3), controller.CleanOnly, 3, false, true},
		{"offline without unclean", []int32{1, 2, 3}, []int32{1}, live(2, 3), controller.CleanOnly, replica.NoLeader, false, false},
		{"unclean opt-in", []int32{1, 2, 3}, []int32{1}, live(2, 3), controller.AllowUnclean, 2, true, true},
		{"clean preferred even with opt-in", []int32{1, 2, 3}, []int32{1, 3}, live(2, 3), controller.AllowUnclean, 3, false, true},
		{"nothing alive", []int32{1, 2, 3}, []int32{1, 2, 3}, live(), controller.AllowUnclean, replica.NoLeader, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			leader, unclean, ok := controller.ElectLeader(tc.replicas, tc.isr, tc.alive, tc.mode)
			if leader != tc.leader || unclean != tc.unclean || ok != tc.electOK {
				t.Fatalf("ElectLeader = %d, %v, %v; want %d, %v, %v", leader, unclean, ok, tc.leader, tc.unclean, tc.electOK)
			}
		})
	}
}
