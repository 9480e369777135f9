package quota

import (
	"sync"
	"time"
)

// DefaultWindow is the burst a quota allows: a quota's worth of this many
// seconds. Kafka measures rates over quota.window.num (11) samples of
// quota.window.size.seconds (1), at least ten whole ones: a client that
// starts sending at once is throttled after ten seconds' worth, as here.
const DefaultWindow = 10 * time.Second

// Manager meters the bytes and time of each entity's requests against its
// quota and says how long a client over its quota must wait. It is safe
// for concurrent use.
//
// Each metered entity (Config.Resolve) has a bucket per key that fills at
// the quota's rate, up to a quota's worth of Window; a request takes its
// amount out, and a bucket below empty throttles the client until it has
// filled back to empty: Kafka's throttle time, (rate − quota) / quota ×
// window, in the model of KIP-599's token bucket. A bucket owes at most a
// window's worth, as Kafka's rate forgets samples older than its window,
// and one that has filled up again is forgotten.
type Manager struct {
	// Config returns the quotas in force, read for every request; nil,
	// or a nil Config, is none.
	Config func() *Config
	// Window is the burst a quota allows; zero means DefaultWindow.
	Window time.Duration

	mu      sync.Mutex
	buckets map[bucketKey]*bucket
	swept   time.Time // when full buckets were last forgotten
}

type bucketKey struct {
	entity Entity
	key    string
}

type bucket struct {
	tokens float64   // the amount that may still be taken; below 0, owed
	at     time.Time // when tokens was last brought up to date
	limit  float64   // the quota the bucket fills at, a second
}

// Active reports whether any quota is in force: without one, a server
// need not measure its requests.
func (m *Manager) Active() bool {
	if m == nil || m.Config == nil {
		return false
	}
	c := m.Config()
	return c != nil && len(c.quotas) > 0
}

// sweepLocked forgets the buckets that have filled up again by now: a new
// bucket starts full, so nothing changes but the memory they held.
func (m *Manager) sweepLocked(now time.Time, window time.Duration) {
	m.swept = now
	for k, b := range m.buckets {
		if b.tokens+now.Sub(b.at).Seconds()*b.limit >= b.limit*window.Seconds() {
			delete(m.buckets, k)
		}
	}
}

// Record takes amount (bytes, or percent-seconds for RequestPercentage)
// out of the quota of key that applies to user's requests from clientID
// at now, and returns how long the client must wait before its next
// request: zero when it is within its quota, or when none applies.
func (m *Manager) Record(now time.Time, user, clientID, key string, amount float64) time.Duration {
	if m == nil || m.Config == nil {
		return 0
	}
	limit, entity, ok := m.Config().Resolve(user, clientID, key)
	if !ok {
		return 0
	}
	window := m.Window
	if window <= 0 {
		window = DefaultWindow
	}
	burst := limit * window.Seconds()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.buckets == nil {
		m.buckets = map[bucketKey]*bucket{}
	}
	if now.Sub(m.swept) > window {
		m.sweepLocked(now, window)
	}
	k := bucketKey{entity, key}
	b := m.buckets[k]
	if b == nil {
		b = &bucket{tokens: burst, at: now, limit: limit}
		m.buckets[k] = b
	}
	if elapsed := now.Sub(b.at).Seconds(); elapsed > 0 {
		b.tokens += elapsed * b.limit // at the quota in force until now
		b.at = now
	}
	b.limit = limit
	b.tokens = max(-burst, min(burst, b.tokens)-amount)
	if b.tokens >= 0 {
		return 0
	}
	// At most a window, as Kafka bounds a throttle by its quota window.
	return min(window, time.Duration(-b.tokens/limit*float64(time.Second)))
}
