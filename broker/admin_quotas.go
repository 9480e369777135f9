package broker

import (
	"context"
	"fmt"
	"maps"
	"math"
	"slices"

	"github.com/partlog/partlog/controller"
	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/quota"
	"github.com/partlog/partlog/transport"
)

var _ transport.QuotaAdminClient = (*Broker)(nil)

// DescribeClientQuotas returns the quotas of the entities components
// select (quota.Matches; with strict, only entities with no part the
// components leave out) from the metadata this node has, by user and then
// client id. It fails with kafka.ErrInvalidRequest for a component of an
// entity type other than quota.UserType and quota.ClientIDType, of a match
// type Kafka does not know, MatchExact without a name, or a second
// component of the same entity type, as Kafka does. The slice and maps
// are the caller's. The error is ErrClosed, once the node is closed.
func (n *Broker) DescribeClientQuotas(ctx context.Context, components []quota.FilterComponent, strict bool) ([]transport.EntityQuotas, error) {
	if err := n.begin(); err != nil {
		return nil, err
	}
	defer n.end()
	if err := checkQuotaFilter(components); err != nil {
		return nil, err
	}
	md, _ := n.member.metadata()
	var out []transport.EntityQuotas
	for _, q := range md.Quotas {
		if quota.Matches(q.Entity, components, strict) {
			out = append(out, transport.EntityQuotas{Entity: q.Entity, Quotas: maps.Clone(q.Quotas)})
		}
	}
	return out, nil
}

// AlterClientQuotas sets and removes client quotas in the cluster's
// metadata through the controller (controller.Machine.AlterClientQuotas),
// and answers once this node has the change: every node then enforces
// the quotas (ClientQuotas). It returns, for each alteration, nil or why
// none of its changes was made: kafka.ErrInvalidRequest for an entity,
// key or value the controller refuses, or a value that is not finite;
// the controller's error, for each, when the controller could not be
// reached; kafka.ErrRequestTimedOut when this node did not get the
// change before ctx ended. Removing a quota that is not set is no error.
// With validateOnly the alterations are only checked. The error is
// ErrClosed, once the node is closed.
func (n *Broker) AlterClientQuotas(ctx context.Context, alterations []transport.QuotaAlteration, validateOnly bool) ([]error, error) {
	if err := n.begin(); err != nil {
		return nil, err
	}
	defer n.end()
	errs := make([]error, len(alterations))
	var changes []controller.QuotaChange
	var at []int // the index in alterations of each of changes
	for i, a := range alterations {
		// A value that is not a number or infinite cannot cross to the
		// controller (JSON has none); the controller would refuse it.
		if k := nonFinite(a.Set); k != "" {
			errs[i] = fmt.Errorf("%w: quotas of %s: %s must be a finite number, not %v", kafka.ErrInvalidRequest, a.Entity, k, a.Set[k])
			continue
		}
		changes = append(changes, controller.QuotaChange{Entity: a.Entity, Set: a.Set, Remove: a.Remove})
		at = append(at, i)
	}
	if len(changes) == 0 {
		return errs, nil
	}
	asked, change, err := n.member.ctl.AlterClientQuotas(ctx, changes, validateOnly)
	if err == nil && !validateOnly {
		if werr := n.awaitChange(ctx)(change, nil); werr != nil {
			for j := range asked {
				if asked[j] == nil {
					asked[j] = werr
				}
			}
		}
	}
	for j, i := range at {
		if err != nil {
			errs[i] = err
		} else {
			errs[i] = asked[j]
		}
	}
	return errs, nil
}

// ClientQuotas returns the client quotas the cluster's metadata holds, as
// this node has them: the Config of a quota.Manager metering the clients
// of a transport.Server serving the node. The Config is made once per
// change of the metadata's quotas, so a call is as cheap as an atomic
// load; it is never nil, and never changes once returned.
func (n *Broker) ClientQuotas() *quota.Config { return n.member.quotas.Load() }

// quotaConfig returns the metadata's quotas as a quota.Config.
func quotaConfig(quotas []controller.ClientQuota) *quota.Config {
	byEntity := make(map[quota.Entity]map[string]float64, len(quotas))
	for _, q := range quotas {
		byEntity[q.Entity] = q.Quotas
	}
	return quota.NewConfig(byEntity)
}

// sameQuotas reports whether a and b hold the same quotas in the same
// order.
func sameQuotas(a, b []controller.ClientQuota) bool {
	return slices.EqualFunc(a, b, func(x, y controller.ClientQuota) bool {
		return x.Entity == y.Entity && maps.Equal(x.Quotas, y.Quotas)
	})
}

// nonFinite returns a key of set whose value is NaN or infinite, or "".
func nonFinite(set map[string]float64) string {
	for _, k := range slices.Sorted(maps.Keys(set)) {
		if v := set[k]; math.IsNaN(v) || math.IsInf(v, 0) {
			return k
		}
	}
	return ""
}

// checkQuotaFilter refuses components Kafka answers with INVALID_REQUEST:
// an unknown entity type or match type, an exact match without a name,
// or an entity type named twice.
func checkQuotaFilter(components []quota.FilterComponent) error {
	seen := map[string]bool{}
	for _, c := range components {
		switch {
		case c.EntityType != quota.UserType && c.EntityType != quota.ClientIDType:
			return fmt.Errorf("%w: quota filter on entity type %q: partlog keeps quotas of %s and %s",
				kafka.ErrInvalidRequest, c.EntityType, quota.UserType, quota.ClientIDType)
		case c.Match < quota.MatchExact || c.Match > quota.MatchAny:
			return fmt.Errorf("%w: quota filter on %s with unknown match type %d", kafka.ErrInvalidRequest, c.EntityType, c.Match)
		case c.Match == quota.MatchExact && c.Name == "":
			return fmt.Errorf("%w: quota filter on %s: an exact match needs a name", kafka.ErrInvalidRequest, c.EntityType)
		case seen[c.EntityType]:
			return fmt.Errorf("%w: quota filter names entity type %s twice", kafka.ErrInvalidRequest, c.EntityType)
		}
		seen[c.EntityType] = true
	}
	return nil
}
