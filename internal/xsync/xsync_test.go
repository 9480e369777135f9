package xsync

import (
	"testing"
	"testing/synctest"
	"time"
)

// TestMutexWaitIsDurable: a goroutine waiting for a Mutex held across a
// sleep lets the bubble's clock move on — with a sync.Mutex in its place
// the bubble would deadlock — and the lock excludes: the waiter gets it
// only after the holder's sleep.
func TestMutexWaitIsDurable(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var m Mutex
		m.Lock()
		start := time.Now()
		got := make(chan time.Duration)
		go func() {
			m.Lock()
			got <- time.Since(start)
			m.Unlock()
		}()
		time.Sleep(time.Second)
		m.Unlock()
		if d := <-got; d != time.Second {
			t.Fatalf("the waiter got the lock after %v, not 1s", d)
		}
	})
}

// TestUnlockOfUnlocked panics, as sync.Mutex's does.
func TestUnlockOfUnlocked(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("no panic")
		}
	}()
	var m Mutex
	m.Unlock()
}
