package transport

import (
	"context"

	"github.com/partlog/partlog/auth"
	"github.com/partlog/partlog/kafka"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ACLAdminClient is the optional interface of a handler that keeps the
// cluster's ACLs: Kafka's DescribeAcls, CreateAcls and DeleteAcls (29–31).
// A server answers them only when it checks requests against ACLs
// (ServerOptions.Authorizer); without one they get SECURITY_DISABLED, as
// from a Kafka broker with no authorizer.
type ACLAdminClient interface {
	// DescribeACLs returns the ACLs f selects.
	DescribeACLs(ctx context.Context, f auth.ACLFilter) ([]auth.ACL, error)
	// CreateACLs stores acls and returns, for each, nil or why it was
	// not stored (kafka.ErrInvalidRequest for one auth.ACL.Validate
	// refuses). Storing an ACL the cluster has already is no error.
	CreateACLs(ctx context.Context, acls []auth.ACL) ([]error, error)
	// DeleteACLs deletes the ACLs each filter selects and returns, for
	// each filter, what it deleted.
	DeleteACLs(ctx context.Context, filters []auth.ACLFilter) ([]DeleteACLsResult, error)
}

// DeleteACLsResult is what one filter of a DeleteACLs call deleted.
type DeleteACLsResult struct {
	// Err is nil, or why the filter deleted nothing.
	Err error
	// Deleted are the ACLs it deleted.
	Deleted []auth.ACL
}

func isACLAdminClient(h Client) bool { _, ok := h.(ACLAdminClient); return ok }

// DescribeACLs sends a DescribeAcls request for the ACLs f selects.
func (c *TCPClient) DescribeACLs(ctx context.Context, f auth.ACLFilter) ([]auth.ACL, error) {
	v, err := c.version(29)
	if err != nil {
		return nil, err
	}
	req := versioned(kmsg.NewPtrDescribeACLsRequest(), v)
	req.ResourceType, req.ResourceName, req.ResourcePatternType = kmsg.ACLResourceType(orAny(int8(f.ResourceType))), nullable(f.ResourceName), kmsg.ACLResourcePatternType(orAny(int8(f.PatternType)))
	req.Principal, req.Host = nullable(f.Principal), nullable(f.Host)
	req.Operation, req.PermissionType = kmsg.ACLOperation(orAny(int8(f.Operation))), kmsg.ACLPermissionType(orAny(int8(f.Permission)))
	resp, err := c.send(ctx, connOther, req)
	if err != nil {
		return nil, err
	}
	r := resp.(*kmsg.DescribeACLsResponse)
	if r.ErrorCode != 0 {
		return nil, wireError(r.ErrorCode, r.ErrorMessage)
	}
	var acls []auth.ACL
	for _, res := range r.Resources {
		for _, e := range res.ACLs {
			acls = append(acls, auth.ACL{
				ResourceType: auth.ResourceType(res.ResourceType), ResourceName: res.ResourceName, PatternType: auth.PatternType(res.ResourcePatternType),
				Principal: e.Principal, Host: e.Host, Operation: auth.Operation(e.Operation), Permission: auth.Permission(e.PermissionType),
			})
		}
	}
	return acls, nil
}

// CreateACLs sends a CreateAcls request: one error (or nil) per ACL.
func (c *TCPClient) CreateACLs(ctx context.Context, acls []auth.ACL) ([]error, error) {
	v, err := c.version(30)
	if err != nil {
		return nil, err
	}
	req := versioned(kmsg.NewPtrCreateACLsRequest(), v)
	req.Creations = each(acls, func(a auth.ACL) kmsg.CreateACLsRequestCreation {
		return kmsg.CreateACLsRequestCreation{
			ResourceType: kmsg.ACLResourceType(a.ResourceType), ResourceName: a.ResourceName, ResourcePatternType: kmsg.ACLResourcePatternType(a.PatternType),
			Principal: a.Principal, Host: a.Host, Operation: kmsg.ACLOperation(a.Operation), PermissionType: kmsg.ACLPermissionType(a.Permission),
		}
	})
	resp, err := c.send(ctx, connOther, req)
	if err != nil {
		return nil, err
	}
	return each(resp.(*kmsg.CreateACLsResponse).Results, func(r kmsg.CreateACLsResponseResult) error {
		return wireError(r.ErrorCode, r.ErrorMessage)
	}), nil
}

// DeleteACLs sends a DeleteAcls request: what each filter deleted.
func (c *TCPClient) DeleteACLs(ctx context.Context, filters []auth.ACLFilter) ([]DeleteACLsResult, error) {
	v, err := c.version(31)
	if err != nil {
		return nil, err
	}
	req := versioned(kmsg.NewPtrDeleteACLsRequest(), v)
	req.Filters = each(filters, func(f auth.ACLFilter) kmsg.DeleteACLsRequestFilter {
		return kmsg.DeleteACLsRequestFilter{
			ResourceType: kmsg.ACLResourceType(orAny(int8(f.ResourceType))), ResourceName: nullable(f.ResourceName),
			ResourcePatternType: kmsg.ACLResourcePatternType(orAny(int8(f.PatternType))),
			Principal:           nullable(f.Principal), Host: nullable(f.Host),
			Operation: kmsg.ACLOperation(orAny(int8(f.Operation))), PermissionType: kmsg.ACLPermissionType(orAny(int8(f.Permission))),
		}
	})
	resp, err := c.send(ctx, connOther, req)
	if err != nil {
		return nil, err
	}
	return each(resp.(*kmsg.DeleteACLsResponse).Results, func(r kmsg.DeleteACLsResponseResult) DeleteACLsResult {
		return DeleteACLsResult{
			Err: wireError(r.ErrorCode, r.ErrorMessage),
			Deleted: each(r.MatchingACLs, func(m kmsg.DeleteACLsResponseResultMatchingACL) auth.ACL {
				return auth.ACL{
					ResourceType: auth.ResourceType(m.ResourceType), ResourceName: m.ResourceName, PatternType: auth.PatternType(m.ResourcePatternType),
					Principal: m.Principal, Host: m.Host, Operation: auth.Operation(m.Operation), Permission: auth.Permission(m.PermissionType),
				}
			}),
		}
	}), nil
}

// dispatchACLAdmin answers DescribeAcls, CreateAcls and DeleteAcls with
// h, or reports that req is none of them.
func dispatchACLAdmin(ctx context.Context, h ACLAdminClient, req kmsg.Request, version int16) (kmsg.Response, bool, error) {
	switch req := req.(type) {
	case *kmsg.DescribeACLsRequest:
		resp := versioned(kmsg.NewPtrDescribeACLsResponse(), version)
		acls, err := h.DescribeACLs(ctx, aclFilter(req.ResourceType, req.ResourceName, req.ResourcePatternType, req.Principal, req.Host, req.Operation, req.PermissionType))
		if err != nil {
			resp.ErrorCode, resp.ErrorMessage = kafka.CodeOf(err), errorMessage(err)
			return resp, true, nil
		}
		resp.Resources = describedResources(acls)
		return resp, true, nil
	case *kmsg.CreateACLsRequest:
		acls := each(req.Creations, func(c kmsg.CreateACLsRequestCreation) auth.ACL {
			// Version 0 carries no pattern type: kmsg leaves its default,
			// LITERAL.
			return auth.ACL{
				ResourceType: auth.ResourceType(c.ResourceType), ResourceName: c.ResourceName, PatternType: auth.PatternType(c.ResourcePatternType),
				Principal: c.Principal, Host: c.Host, Operation: auth.Operation(c.Operation), Permission: auth.Permission(c.PermissionType),
			}
		})
		errs, err := h.CreateACLs(ctx, acls)
		if err != nil {
			return nil, true, err
		}
		resp := versioned(kmsg.NewPtrCreateACLsResponse(), version)
		resp.Results = each(errs, func(err error) kmsg.CreateACLsResponseResult {
			r := kmsg.NewCreateACLsResponseResult()
			r.ErrorCode, r.ErrorMessage = kafka.CodeOf(err), errorMessage(err)
			return r
		})
		return resp, true, nil
	case *kmsg.DeleteACLsRequest:
		filters := each(req.Filters, func(f kmsg.DeleteACLsRequestFilter) auth.ACLFilter {
			return aclFilter(f.ResourceType, f.ResourceName, f.ResourcePatternType, f.Principal, f.Host, f.Operation, f.PermissionType)
		})
		results, err := h.DeleteACLs(ctx, filters)
		if err != nil {
			return nil, true, err
		}
		resp := versioned(kmsg.NewPtrDeleteACLsResponse(), version)
		resp.Results = each(results, func(r DeleteACLsResult) kmsg.DeleteACLsResponseResult {
			w := kmsg.NewDeleteACLsResponseResult()
			w.ErrorCode, w.ErrorMessage = kafka.CodeOf(r.Err), errorMessage(r.Err)
			w.MatchingACLs = each(r.Deleted, func(a auth.ACL) kmsg.DeleteACLsResponseResultMatchingACL {
				m := kmsg.NewDeleteACLsResponseResultMatchingACL()
				m.ResourceType, m.ResourceName, m.ResourcePatternType = kmsg.ACLResourceType(a.ResourceType), a.ResourceName, kmsg.ACLResourcePatternType(a.PatternType)
				m.Principal, m.Host, m.Operation, m.PermissionType = a.Principal, a.Host, kmsg.ACLOperation(a.Operation), kmsg.ACLPermissionType(a.Permission)
				return m
			})
			return w
		})
		return resp, true, nil
	}
	return nil, false, nil
}

// isACLRequest reports whether req is DescribeAcls, CreateAcls or
// DeleteAcls.
func isACLRequest(req kmsg.Request) bool {
	switch req.(type) {
	case *kmsg.DescribeACLsRequest, *kmsg.CreateACLsRequest, *kmsg.DeleteACLsRequest:
		return true
	}
	return false
}

// securityDisabled answers an ACL request to a server that checks none.
func securityDisabled(req kmsg.Request, version int16) kmsg.Response {
	code, msg := kafka.ErrSecurityDisabled.Code, errorMessage(kafka.ErrSecurityDisabled)
	switch req := req.(type) {
	case *kmsg.DescribeACLsRequest:
		resp := versioned(kmsg.NewPtrDescribeACLsResponse(), version)
		resp.ErrorCode, resp.ErrorMessage = code, msg
		return resp
	case *kmsg.CreateACLsRequest:
		resp := versioned(kmsg.NewPtrCreateACLsResponse(), version)
		resp.Results = each(req.Creations, func(kmsg.CreateACLsRequestCreation) kmsg.CreateACLsResponseResult {
			return kmsg.CreateACLsResponseResult{ErrorCode: code, ErrorMessage: msg}
		})
		return resp
	case *kmsg.DeleteACLsRequest:
		resp := versioned(kmsg.NewPtrDeleteACLsResponse(), version)
		resp.Results = each(req.Filters, func(kmsg.DeleteACLsRequestFilter) kmsg.DeleteACLsResponseResult {
			return kmsg.DeleteACLsResponseResult{ErrorCode: code, ErrorMessage: msg}
		})
		return resp
	}
	return nil
}

// aclFilter translates a filter from the wire; a null name, principal
// or host matches every one.
func aclFilter(rt kmsg.ACLResourceType, name *string, pattern kmsg.ACLResourcePatternType, principal, host *string, op kmsg.ACLOperation, perm kmsg.ACLPermissionType) auth.ACLFilter {
	return auth.ACLFilter{
		ResourceType: auth.ResourceType(rt), ResourceName: deref(name), PatternType: auth.PatternType(pattern),
		Principal: deref(principal), Host: deref(host), Operation: auth.Operation(op), Permission: auth.Permission(perm),
	}
}

// describedResources groups ACLs by resource pattern, in their order.
func describedResources(acls []auth.ACL) []kmsg.DescribeACLsResponseResource {
	type pattern struct {
		rt   auth.ResourceType
		name string
		pt   auth.PatternType
	}
	var out []kmsg.DescribeACLsResponseResource
	at := map[pattern]int{}
	for _, a := range acls {
		k := pattern{a.ResourceType, a.ResourceName, a.PatternType}
		i, ok := at[k]
		if !ok {
			i = len(out)
			at[k] = i
			r := kmsg.NewDescribeACLsResponseResource()
			r.ResourceType, r.ResourceName, r.ResourcePatternType = kmsg.ACLResourceType(a.ResourceType), a.ResourceName, kmsg.ACLResourcePatternType(a.PatternType)
			out = append(out, r)
		}
		e := kmsg.NewDescribeACLsResponseResourceACL()
		e.Principal, e.Host, e.Operation, e.PermissionType = a.Principal, a.Host, kmsg.ACLOperation(a.Operation), kmsg.ACLPermissionType(a.Permission)
		out[i].ACLs = append(out[i].ACLs, e)
	}
	return out
}

// orAny is a filter field's code on the wire: a zero value is ANY (1).
func orAny(code int8) int8 {
	if code == 0 {
		return 1
	}
	return code
}
