package transport

import (
	"encoding/binary"
	"time"

	"github.com/partlog/partlog/quota"
)

// meter measures one request against the quotas of the client that sent
// it; its zero value, for a server without Quotas, measures nothing.
type meter struct {
	quotas         *quota.Manager
	user, clientID string
	arrived        time.Time
}

// meter starts measuring a request with header h from the connection of
// p: the user is p's principal's name (ANONYMOUS before authentication
// or without it), the client id the header's.
func (s *Server) meter(p *peer, h requestHeader) meter {
	if !s.opts.Quotas.Active() {
		return meter{}
	}
	m := meter{quotas: s.opts.Quotas, user: p.principal.Name, arrived: time.Now()}
	if h.clientID != nil {
		m.clientID = *h.clientID
	}
	return m
}

// waiting are the APIs whose answers wait on others — replication, the
// controller, a group's other members, a long poll — rather than on work
// the node does for the client: Kafka counts a request's time on its
// handler threads, not its time parked in purgatory, so their time is not
// metered as request_percentage (their bytes are, for Produce and Fetch).
var waiting = map[int16]bool{
	0: true, 1: true, 8: true, 11: true, 14: true, 19: true, 20: true, 21: true, 22: true, 24: true, 25: true,
	26: true, 28: true, 30: true, 31: true, 33: true, 37: true, 43: true, 44: true, 45: true, 49: true, 51: true, 64: true,
}

// done records the request of API key as answered: bytes under key (the
// produce request's size, or the fetch answer's), and, for an API that
// does not wait (waiting), the time it took under
// quota.RequestPercentage. It returns the longer throttle of the two.
func (m meter) done(api int16, key string, bytes int) time.Duration {
	if m.quotas == nil {
		return 0
	}
	now := time.Now()
	var throttle time.Duration
	if key != "" {
		throttle = m.quotas.Record(now, m.user, m.clientID, key, float64(bytes))
	}
	if !waiting[api] {
		took := now.Sub(m.arrived).Seconds() * 100 // percent of a core, for a second
		throttle = max(throttle, m.quotas.Record(now, m.user, m.clientID, quota.RequestPercentage, took))
	}
	return throttle
}

// setFetchThrottle writes throttle into the throttle_time_ms of the fetch
// answer frame that begins frame, in version.
func setFetchThrottle(frame []byte, version int16, throttle time.Duration) {
	at := 8 // the frame's length and correlation id
	if version >= 12 {
		at++ // the response header's tags
	}
	binary.BigEndian.PutUint32(frame[at:], uint32(millis(throttle)))
}
