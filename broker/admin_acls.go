package broker

import (
	"context"
	"fmt"

	"github.com/partlog/partlog/auth"
	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/transport"
)

var _ transport.ACLAdminClient = (*Broker)(nil)

// CreateACLs stores acls in the cluster's metadata through the controller,
// and answers once this node has them: every node then authorizes
// requests with them (ACLs). It returns, for each ACL, nil or why it was
// not stored: kafka.ErrInvalidRequest for one auth.ACL.Validate refuses;
// the controller's error, for each, when the controller could not be
// reached; kafka.ErrRequestTimedOut when this node did not get the
// change before ctx ended. Storing an ACL the cluster has already is no
// error. The error is ErrClosed, once the node is closed.
func (n *Broker) CreateACLs(ctx context.Context, acls []auth.ACL) ([]error, error) {
	if err := n.begin(); err != nil {
		return nil, err
	}
	defer n.end()
	if len(acls) == 0 {
		return nil, nil
	}
	errs, change, err := n.member.ctl.CreateACLs(ctx, acls)
	if err != nil {
		errs = make([]error, len(acls))
		for i := range errs {
			errs[i] = err
		}
		return errs, nil
	}
	if err := n.awaitChange(ctx)(change, nil); err != nil {
		for i := range errs {
			if errs[i] == nil {
				errs[i] = err
			}
		}
	}
	return errs, nil
}

// DeleteACLs deletes the ACLs each filter selects from the cluster's
// metadata, through the controller, and answers once this node has the
// change. It returns, for each filter, the ACLs it deleted — an ACL two
// filters select is deleted once and reported by both, as in Kafka — or
// why it deleted none: kafka.ErrInvalidRequest for a filter with a code
// Kafka does not know, or the controller's error. A filter whose ACLs
// were deleted but did not reach this node before ctx ended has them
// with kafka.ErrRequestTimedOut. The error is ErrClosed, once the node is
// closed.
func (n *Broker) DeleteACLs(ctx context.Context, filters []auth.ACLFilter) ([]transport.DeleteACLsResult, error) {
	if err := n.begin(); err != nil {
		return nil, err
	}
	defer n.end()
	results := make([]transport.DeleteACLsResult, len(filters))
	var valid []auth.ACLFilter
	var at []int // the index in filters of each of valid
	for i, f := range filters {
		if err := checkACLFilter(f); err != nil {
			results[i].Err = err
			continue
		}
		valid = append(valid, f)
		at = append(at, i)
	}
	if len(valid) == 0 {
		return results, nil
	}
	deleted, change, err := n.member.ctl.DeleteACLs(ctx, valid)
	if err == nil {
		err = n.awaitChange(ctx)(change, nil)
	}
	for j, i := range at {
		results[i].Err = err
		if deleted != nil {
			results[i].Deleted = deleted[j]
		}
	}
	return results, nil
}

// DescribeACLs returns the ACLs f selects from the metadata this node
// has, in the order the controller stored them; kafka.ErrInvalidRequest
// for a filter with a code Kafka does not know. The slice is the
// caller's.
func (n *Broker) DescribeACLs(ctx context.Context, f auth.ACLFilter) ([]auth.ACL, error) {
	if err := n.begin(); err != nil {
		return nil, err
	}
	defer n.end()
	if err := checkACLFilter(f); err != nil {
		return nil, err
	}
	md, _ := n.member.metadata()
	var out []auth.ACL
	for _, acl := range md.ACLs {
		if f.Matches(acl) {
			out = append(out, acl)
		}
	}
	return out, nil
}

// ACLs returns the ACLs the cluster's metadata holds, as this node has
// them: what a transport.Server serving the node authorizes requests
// with (its auth.Authorizer's ACLs). The set is made once per change of
// the metadata's ACLs, so a call is as cheap as an atomic load; it is
// never nil, and never changes once returned.
func (n *Broker) ACLs() *auth.ACLs { return n.member.acls.Load() }

// checkACLFilter refuses a filter with a code Kafka does not know, which
// Kafka answers with INVALID_REQUEST; zero is any, as in auth.ACLFilter.
func checkACLFilter(f auth.ACLFilter) error {
	switch {
	case f.ResourceType < 0 || f.ResourceType > auth.TransactionalIDResource:
	case f.PatternType < 0 || f.PatternType > auth.PrefixedPattern:
	case f.Operation < 0 || f.Operation > auth.IdempotentWriteOperation:
	case f.Permission < 0 || f.Permission > auth.Allow:
	default:
		return nil
	}
	return fmt.Errorf("%w: an ACL filter with an unknown code: resource type %s, pattern type %s, operation %s, permission %s",
		kafka.ErrInvalidRequest, f.ResourceType, f.PatternType, f.Operation, f.Permission)
}
