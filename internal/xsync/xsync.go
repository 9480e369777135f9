// Package xsync has a mutual exclusion lock whose waiters are durably
// blocked, as testing/synctest counts them: a bubble whose goroutines all
// wait on it, or on timers, moves its clock on, where a sync.Mutex waiter
// would stop the clock for good. Use it for a lock that is held across a
// wait for time to pass — a replicated write with a timeout, say — in
// code tests run in a bubble. franz-go's internal/xsync does the same.
package xsync

import "sync"

// Mutex is a mutual exclusion lock, as sync.Mutex, built on a channel.
// The zero value is an unlocked Mutex; a Mutex must not be copied after
// first use.
type Mutex struct {
	init sync.Once
	ch   chan struct{}
}

func (m *Mutex) sem() chan struct{} {
	m.init.Do(func() { m.ch = make(chan struct{}, 1) })
	return m.ch
}

// Lock locks m, waiting until it is unlocked.
func (m *Mutex) Lock() { m.sem() <- struct{}{} }

// TryLock locks m if it is unlocked, and reports whether it did.
func (m *Mutex) TryLock() bool {
	select {
	case m.sem() <- struct{}{}:
		return true
	default:
		return false
	}
}

// Unlock unlocks m. It panics if m is not locked.
func (m *Mutex) Unlock() {
	select {
	case <-m.sem():
	default:
		panic("xsync: unlock of unlocked Mutex")
	}
}
