package controller

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"

	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/quota"
)

// QuotaChange changes one entity's client quotas, as an entry of Kafka's
// AlterClientQuotas does: it sets some keys and removes others.
type QuotaChange struct {
	// Entity is whose quotas change.
	Entity quota.Entity `json:"entity"`
	// Set are the quotas to set, by key (quota.ProducerByteRate, ...).
	Set map[string]float64 `json:"set,omitempty"`
	// Remove are the keys whose quotas to remove.
	Remove []string `json:"remove,omitempty"`
}

// ClientQuota is an entity's client quotas, as the metadata carries them
// to the nodes.
type ClientQuota struct {
	// Entity is whom the quotas are for.
	Entity quota.Entity `json:"entity"`
	// Quotas are its quotas, by key; never empty.
	Quotas map[string]float64 `json:"quotas"`
}

// AlterClientQuotas makes changes, in one commit (none with
// validateOnly), and returns for each nil or why none of its keys
// changed: kafka.ErrInvalidRequest for an entity quota.Entity.Validate
// refuses or whose names are longer than a metadata record holds (4096
// bytes), a value quota.ValidateValue refuses or that is not finite, a
// removed key that is not one of quota.Keys, a key removed twice, or one
// both set and removed. Removing a quota that is not set is no error, as
// in Kafka; neither is setting one to the value it has, which commits
// nothing. Each change sees the quotas the changes before it leave, so a
// later change of the same entity wins. An entity left with no quota
// is forgotten. The error is the commit's: then none of changes was
// made.
func (c *Machine) AlterClientQuotas(changes []QuotaChange, validateOnly bool) ([]error, error) {
	errs := make([]error, len(changes))
	// after holds the quotas of the entities changed so far, as the
	// changes before leave them.
	after := map[quota.Entity]map[string]float64{}
	var recs []Record
	for i, ch := range changes {
		if err := checkQuotaChange(ch); err != nil {
			errs[i] = err
			continue
		}
		q, ok := after[ch.Entity]
		if !ok {
			q = maps.Clone(c.quotas[ch.Entity])
			if q == nil {
				q = map[string]float64{}
			}
			after[ch.Entity] = q
		}
		for _, key := range slices.Sorted(maps.Keys(ch.Set)) {
			v := ch.Set[key]
			if old, ok := q[key]; ok && old == v {
				continue
			}
			q[key] = v
			recs = append(recs, Record{Type: RecordClientQuota, QuotaEntity: ch.Entity, QuotaKey: key, QuotaValue: v})
		}
		for _, key := range ch.Remove {
			if _, ok := q[key]; !ok {
				continue
			}
			delete(q, key)
			recs = append(recs, Record{Type: RecordClientQuota, QuotaEntity: ch.Entity, QuotaKey: key, QuotaRemove: true})
		}
	}
	if validateOnly {
		return errs, nil
	}
	if err := c.commit(recs); err != nil {
		return nil, err
	}
	return errs, nil
}

// checkQuotaChange says why ch cannot be made, wrapping
// kafka.ErrInvalidRequest.
func checkQuotaChange(ch QuotaChange) error {
	e := ch.Entity
	if err := e.Validate(); err != nil {
		return fmt.Errorf("%w: %w", kafka.ErrInvalidRequest, err)
	}
	if len(e.User) > maxMetadataList || len(e.ClientID) > maxMetadataList {
		return fmt.Errorf("%w: a quota entity's user and client id are at most %d bytes", kafka.ErrInvalidRequest, maxMetadataList)
	}
	for _, key := range slices.Sorted(maps.Keys(ch.Set)) {
		v := ch.Set[key]
		if err := quota.ValidateValue(key, v); err != nil {
			return fmt.Errorf("%w: quotas of %s: %w", kafka.ErrInvalidRequest, e, err)
		}
		if !validQuotaValue(v) {
			return fmt.Errorf("%w: quotas of %s: %s must be finite, not %v", kafka.ErrInvalidRequest, e, key, v)
		}
	}
	removed := make(map[string]bool, len(ch.Remove))
	for _, key := range ch.Remove {
		switch {
		case !slices.Contains(quota.Keys, key):
			return fmt.Errorf("%w: quotas of %s: cannot remove unknown quota %q", kafka.ErrInvalidRequest, e, key)
		case removed[key]:
			return fmt.Errorf("%w: quotas of %s: %s removed twice", kafka.ErrInvalidRequest, e, key)
		}
		if _, ok := ch.Set[key]; ok {
			return fmt.Errorf("%w: quotas of %s: %s both set and removed", kafka.ErrInvalidRequest, e, key)
		}
		removed[key] = true
	}
	return nil
}

// validQuotaValue reports whether v can be a quota's value in a record
// and in the metadata's JSON: positive and finite.
func validQuotaValue(v float64) bool { return v > 0 && !math.IsInf(v, 1) }

// quotasInOrder returns the quotas of byEntity by user, then client id;
// nil when there are none. The maps are copies.
func quotasInOrder(byEntity map[quota.Entity]map[string]float64) []ClientQuota {
	if len(byEntity) == 0 {
		return nil
	}
	out := make([]ClientQuota, 0, len(byEntity))
	for _, e := range sortedEntities(byEntity) {
		out = append(out, ClientQuota{Entity: e, Quotas: maps.Clone(byEntity[e])})
	}
	return out
}

// sortedEntities returns the entities of byEntity by user, then client id.
func sortedEntities(byEntity map[quota.Entity]map[string]float64) []quota.Entity {
	return slices.SortedFunc(maps.Keys(byEntity), func(a, b quota.Entity) int {
		return cmp.Or(cmp.Compare(a.User, b.User), cmp.Compare(a.ClientID, b.ClientID))
	})
}

// cloneQuotas returns a deep copy of byEntity, nil when it is empty.
func cloneQuotas(byEntity map[quota.Entity]map[string]float64) map[quota.Entity]map[string]float64 {
	if len(byEntity) == 0 {
		return nil
	}
	out := make(map[quota.Entity]map[string]float64, len(byEntity))
	for e, q := range byEntity {
		out[e] = maps.Clone(q)
	}
	return out
}
