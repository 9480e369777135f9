package transport

import (
	"context"
	"fmt"

	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/quota"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// QuotaAdminClient is the optional interface of a handler that keeps the
// cluster's client quotas: Kafka's DescribeClientQuotas and
// AlterClientQuotas (48, 49; KIP-546).
type QuotaAdminClient interface {
	// DescribeClientQuotas returns the quotas of the entities the
	// components select (quota.Matches).
	DescribeClientQuotas(ctx context.Context, components []quota.FilterComponent, strict bool) ([]EntityQuotas, error)
	// AlterClientQuotas sets and removes quotas, and returns for each
	// alteration nil or why none of its changes was made
	// (kafka.ErrInvalidRequest for an entity or value quota refuses). With
	// validateOnly nothing is changed.
	AlterClientQuotas(ctx context.Context, alterations []QuotaAlteration, validateOnly bool) ([]error, error)
}

// EntityQuotas is an entity's quotas, by key.
type EntityQuotas struct {
	// Entity is whom the quotas are for.
	Entity quota.Entity
	// Quotas are its quotas, by key (quota.ProducerByteRate, ...).
	Quotas map[string]float64
}

// QuotaAlteration changes an entity's quotas.
type QuotaAlteration struct {
	// Entity is whose quotas change.
	Entity quota.Entity
	// Set are the quotas to set, by key.
	Set map[string]float64
	// Remove are the keys whose quotas to remove.
	Remove []string
}

func isQuotaAdminClient(h Client) bool { _, ok := h.(QuotaAdminClient); return ok }

// DescribeClientQuotas sends a DescribeClientQuotas request.
func (c *TCPClient) DescribeClientQuotas(ctx context.Context, components []quota.FilterComponent, strict bool) ([]EntityQuotas, error) {
	v, err := c.version(48)
	if err != nil {
		return nil, err
	}
	req := versioned(kmsg.NewPtrDescribeClientQuotasRequest(), v)
	req.Strict = strict
	req.Components = each(components, func(fc quota.FilterComponent) kmsg.DescribeClientQuotasRequestComponent {
		w := kmsg.NewDescribeClientQuotasRequestComponent()
		w.EntityType, w.MatchType = fc.EntityType, kmsg.QuotasMatchType(fc.Match)
		if fc.Match == quota.MatchExact {
			w.Match = kmsg.StringPtr(fc.Name)
		}
		return w
	})
	resp, err := c.send(ctx, connOther, req)
	if err != nil {
		return nil, err
	}
	r := resp.(*kmsg.DescribeClientQuotasResponse)
	if r.ErrorCode != 0 {
		return nil, wireError(r.ErrorCode, r.ErrorMessage)
	}
	out := make([]EntityQuotas, 0, len(r.Entries))
	for _, e := range r.Entries {
		eq := EntityQuotas{Quotas: map[string]float64{}}
		for _, part := range e.Entity {
			if err := setEntityPart(&eq.Entity, part.Type, part.Name); err != nil {
				return nil, err
			}
		}
		for _, v := range e.Values {
			eq.Quotas[v.Key] = v.Value
		}
		out = append(out, eq)
	}
	return out, nil
}

// AlterClientQuotas sends an AlterClientQuotas request.
func (c *TCPClient) AlterClientQuotas(ctx context.Context, alterations []QuotaAlteration, validateOnly bool) ([]error, error) {
	v, err := c.version(49)
	if err != nil {
		return nil, err
	}
	req := versioned(kmsg.NewPtrAlterClientQuotasRequest(), v)
	req.ValidateOnly = validateOnly
	for _, a := range alterations {
		e := kmsg.NewAlterClientQuotasRequestEntry()
		for _, part := range entityParts(a.Entity) {
			e.Entity = append(e.Entity, kmsg.AlterClientQuotasRequestEntryEntity{Type: part.typ, Name: part.name})
		}
		for k, v := range a.Set {
			e.Ops = append(e.Ops, kmsg.AlterClientQuotasRequestEntryOp{Key: k, Value: v})
		}
		for _, k := range a.Remove {
			e.Ops = append(e.Ops, kmsg.AlterClientQuotasRequestEntryOp{Key: k, Remove: true})
		}
		req.Entries = append(req.Entries, e)
	}
	resp, err := c.send(ctx, connOther, req)
	if err != nil {
		return nil, err
	}
	r := resp.(*kmsg.AlterClientQuotasResponse)
	if len(r.Entries) != len(alterations) {
		return nil, fmt.Errorf("%w: AlterClientQuotas answered %d entries for %d", kafka.ErrCorruptMessage, len(r.Entries), len(alterations))
	}
	return each(r.Entries, func(e kmsg.AlterClientQuotasResponseEntry) error { return wireError(e.ErrorCode, e.ErrorMessage) }), nil
}

// entityPart is one part of an entity on the wire: a null name is the
// default.
type entityPart struct {
	typ  string
	name *string
}

func entityParts(e quota.Entity) []entityPart {
	var parts []entityPart
	add := func(typ, name string) {
		switch name {
		case "":
		case quota.Default:
			parts = append(parts, entityPart{typ, nil})
		default:
			parts = append(parts, entityPart{typ, kmsg.StringPtr(name)})
		}
	}
	add(quota.UserType, e.User)
	add(quota.ClientIDType, e.ClientID)
	return parts
}

// setEntityPart sets the part of e of type typ from the wire.
func setEntityPart(e *quota.Entity, typ string, name *string) error {
	n := quota.Default
	if name != nil {
		n = *name
	}
	switch typ {
	case quota.UserType:
		e.User = n
	case quota.ClientIDType:
		e.ClientID = n
	default:
		return fmt.Errorf("%w: quota entity type %q: partlog keeps quotas of %s and %s", kafka.ErrInvalidRequest, typ, quota.UserType, quota.ClientIDType)
	}
	return nil
}

// dispatchQuotaAdmin answers DescribeClientQuotas and AlterClientQuotas
// with h, or reports that req is neither.
func dispatchQuotaAdmin(ctx context.Context, h QuotaAdminClient, req kmsg.Request, version int16) (kmsg.Response, bool, error) {
	switch req := req.(type) {
	case *kmsg.DescribeClientQuotasRequest:
		resp := versioned(kmsg.NewPtrDescribeClientQuotasResponse(), version)
		comps := each(req.Components, func(c kmsg.DescribeClientQuotasRequestComponent) quota.FilterComponent {
			fc := quota.FilterComponent{EntityType: c.EntityType, Match: quota.MatchType(c.MatchType)}
			if c.Match != nil {
				fc.Name = *c.Match
			}
			return fc
		})
		entries, err := h.DescribeClientQuotas(ctx, comps, req.Strict)
		if err != nil {
			resp.ErrorCode, resp.ErrorMessage = kafka.CodeOf(err), errorMessage(err)
			return resp, true, nil
		}
		for _, eq := range entries {
			e := kmsg.NewDescribeClientQuotasResponseEntry()
			for _, part := range entityParts(eq.Entity) {
				e.Entity = append(e.Entity, kmsg.DescribeClientQuotasResponseEntryEntity{Type: part.typ, Name: part.name})
			}
			for _, k := range quota.Keys {
				if v, ok := eq.Quotas[k]; ok {
					e.Values = append(e.Values, kmsg.DescribeClientQuotasResponseEntryValue{Key: k, Value: v})
				}
			}
			resp.Entries = append(resp.Entries, e)
		}
		return resp, true, nil
	case *kmsg.AlterClientQuotasRequest:
		resp := versioned(kmsg.NewPtrAlterClientQuotasResponse(), version)
		alterations := make([]QuotaAlteration, len(req.Entries))
		refused := make([]error, len(req.Entries))
		for i, e := range req.Entries {
			a := QuotaAlteration{Set: map[string]float64{}}
			for _, part := range e.Entity {
				if err := setEntityPart(&a.Entity, part.Type, part.Name); err != nil {
					refused[i] = err
				}
			}
			for _, op := range e.Ops {
				if op.Remove {
					a.Remove = append(a.Remove, op.Key)
				} else {
					a.Set[op.Key] = op.Value
				}
			}
			alterations[i] = a
		}
		var asked []QuotaAlteration
		for i, a := range alterations {
			if refused[i] == nil {
				asked = append(asked, a)
			}
		}
		errs, err := h.AlterClientQuotas(ctx, asked, req.ValidateOnly)
		if err != nil {
			return nil, true, err
		}
		j := 0
		for i, e := range req.Entries {
			err := refused[i]
			if err == nil {
				err, j = errs[j], j+1
			}
			w := kmsg.NewAlterClientQuotasResponseEntry()
			w.ErrorCode, w.ErrorMessage = kafka.CodeOf(err), errorMessage(err)
			for _, part := range e.Entity {
				w.Entity = append(w.Entity, kmsg.AlterClientQuotasResponseEntryEntity{Type: part.Type, Name: part.Name})
			}
			resp.Entries = append(resp.Entries, w)
		}
		return resp, true, nil
	}
	return nil, false, nil
}
