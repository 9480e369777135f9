// Package quota holds Kafka's client quotas: limits on the bytes a user
// or client id produces and fetches a second and on the share of a
// node's time its requests take, and the bookkeeping that says how long
// a client that went over its quota is throttled.
//
// A quota is set for an Entity — a user, a client id, or a user's client
// id, each possibly Kafka's <default> — under a key (ProducerByteRate,
// ConsumerByteRate, RequestPercentage). Which quota applies to a request
// is Kafka's order of precedence (Config.Resolve). A Manager meters what
// each entity does against its quota, as a token bucket, and returns the
// time the client must wait: the node answers it with Kafka's
// throttle_time_ms and reads nothing more from the connection until the
// time has passed.
package quota

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
)

// The quota keys, Kafka's names.
const (
	// ProducerByteRate bounds the bytes of produce requests a second.
	ProducerByteRate = "producer_byte_rate"
	// ConsumerByteRate bounds the bytes of fetch answers a second.
	ConsumerByteRate = "consumer_byte_rate"
	// RequestPercentage bounds the time the node spends on the
	// entity's requests, in percent of one core over the window: 100 is
	// one core's whole time.
	RequestPercentage = "request_percentage"
)

// Keys are the keys a quota may be set under.
var Keys = []string{ProducerByteRate, ConsumerByteRate, RequestPercentage}

// Default is the name of a default entity, as Kafka writes it: the
// quota of a user (or client id) with none of its own.
const Default = "<default>"

// The entity types, Kafka's names.
const (
	UserType     = "user"
	ClientIDType = "client-id"
)

// Entity is whom a quota is for: a user, a client id, or a user's client
// id. An empty name leaves that part out; Default is the default.
type Entity struct {
	// User is a user's name (a principal User:name), Default, or "".
	User string
	// ClientID is a client id, Default, or "".
	ClientID string
}

// String writes the entity as kafka-configs.sh names it:
// "user-principal 'alice', client-id 'app'".
func (e Entity) String() string {
	var parts []string
	if e.User != "" {
		parts = append(parts, fmt.Sprintf("user-principal '%s'", e.User))
	}
	if e.ClientID != "" {
		parts = append(parts, fmt.Sprintf("client-id '%s'", e.ClientID))
	}
	return strings.Join(parts, ", ")
}

// Validate says why an entity cannot have quotas: it names neither a
// user nor a client id.
func (e Entity) Validate() error {
	if e.User == "" && e.ClientID == "" {
		return fmt.Errorf("quota: an entity names a user, a client id or both")
	}
	return nil
}

// ValidateValue says why value cannot be the quota of key: an unknown
// key, or a value that is not positive.
func ValidateValue(key string, value float64) error {
	if !slices.Contains(Keys, key) {
		return fmt.Errorf("quota: unknown quota %q: %s", key, strings.Join(Keys, ", "))
	}
	if !(value > 0) || math.IsInf(value, 1) {
		return fmt.Errorf("quota: %s must be positive and finite, not %v", key, value)
	}
	return nil
}

// Config is the quotas in force: a value that never changes once made,
// so that a Manager reads one while it is replaced by a new one.
type Config struct {
	quotas map[Entity]map[string]float64
}

// NewConfig returns the quotas of entities; it keeps its own copy.
func NewConfig(entities map[Entity]map[string]float64) *Config {
	c := &Config{quotas: make(map[Entity]map[string]float64, len(entities))}
	for e, q := range entities {
		if len(q) > 0 {
			c.quotas[e] = maps.Clone(q)
		}
	}
	return c
}

// Entities returns every entity with a quota and its quotas; the maps
// are the caller's.
func (c *Config) Entities() map[Entity]map[string]float64 {
	out := map[Entity]map[string]float64{}
	if c == nil {
		return out
	}
	for e, q := range c.quotas {
		out[e] = maps.Clone(q)
	}
	return out
}

// Resolve returns the quota of key that applies to the requests of user
// with clientID, and the entity whose quota it is with Default replaced
// by the names it stood for: the requests of every user and client id
// that resolve to one entity share one quota. ok is false when no quota
// applies. Kafka's order: user and client id, user and default client
// id, user, default user and client id, default user and default client
// id, default user, client id, default client id.
func (c *Config) Resolve(user, clientID, key string) (limit float64, metered Entity, ok bool) {
	if c == nil || len(c.quotas) == 0 {
		return 0, Entity{}, false
	}
	for _, e := range []Entity{
		{user, clientID}, {user, Default}, {user, ""},
		{Default, clientID}, {Default, Default}, {Default, ""},
		{"", clientID}, {"", Default},
	} {
		if v, found := c.quotas[e][key]; found {
			if e.User == Default {
				e.User = user
			}
			if e.ClientID == Default {
				e.ClientID = clientID
			}
			return v, e, true
		}
	}
	return 0, Entity{}, false
}

// MatchType says how a filter component matches an entity's name.
type MatchType int8

// Match types, as Kafka numbers them.
const (
	// MatchExact matches the name given.
	MatchExact MatchType = 0
	// MatchDefault matches the default entity.
	MatchDefault MatchType = 1
	// MatchAny matches any name, the default too, but not an entity
	// without this part.
	MatchAny MatchType = 2
)

// FilterComponent selects entities by one of their parts, for
// DescribeClientQuotas.
type FilterComponent struct {
	// EntityType is UserType or ClientIDType.
	EntityType string
	// Match says how the part's name is matched.
	Match MatchType
	// Name is the name MatchExact matches.
	Name string
}

// Matches reports whether e is selected by components: each component
// matches its part of e; with strict, e has no part no component names.
func Matches(e Entity, components []FilterComponent, strict bool) bool {
	named := map[string]bool{}
	for _, c := range components {
		var part string
		switch c.EntityType {
		case UserType:
			part = e.User
		case ClientIDType:
			part = e.ClientID
		default:
			return false
		}
		named[c.EntityType] = true
		switch c.Match {
		case MatchExact:
			if part != c.Name || part == Default {
				return false
			}
		case MatchDefault:
			if part != Default {
				return false
			}
		default:
			if part == "" {
				return false
			}
		}
	}
	if strict {
		if e.User != "" && !named[UserType] || e.ClientID != "" && !named[ClientIDType] {
			return false
		}
	}
	return true
}
