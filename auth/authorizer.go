package auth

import "slices"

// ACLs is a set of ACLs, grouped for deciding: a value that never changes
// once made, so that an Authorizer may read one while the set in force is
// replaced by a new one.
type ACLs struct {
	byType map[ResourceType][]ACL
	n      int
}

// NewACLs returns the set holding acls; it keeps its own copy.
func NewACLs(acls []ACL) *ACLs {
	s := &ACLs{byType: map[ResourceType][]ACL{}, n: len(acls)}
	for _, acl := range acls {
		s.byType[acl.ResourceType] = append(s.byType[acl.ResourceType], acl)
	}
	return s
}

// Len is the number of ACLs in the set.
func (s *ACLs) Len() int {
	if s == nil {
		return 0
	}
	return s.n
}

// Authorizer decides whether a principal may do an operation on a
// resource, as Kafka's StandardAuthorizer does:
//
//  1. a super user may do anything;
//  2. a resource no ACL covers is open to everyone if
//     AllowEveryoneIfNoACLFound, and closed otherwise;
//  3. a DENY ACL matching the principal, host and operation wins;
//  4. then an ALLOW ACL matching them allows — Describe is allowed by an
//     ALLOW of Read, Write, Delete or Alter too, and DescribeConfigs by
//     one of AlterConfigs;
//  5. anything else is denied.
//
// An ACL covers a resource with its literal name, the literal wildcard
// "*", or a prefix of the name (PrefixedPattern); it matches a principal
// named in it or User:*, and a host named in it or "*".
type Authorizer struct {
	// ACLs returns the rules in force, read for every decision; nil, or
	// a nil set, is none.
	ACLs func() *ACLs
	// SuperUsers may do anything: Kafka's super.users.
	SuperUsers []Principal
	// AllowEveryoneIfNoACLFound opens resources no ACL covers:
	// allow.everyone.if.no.acl.found, false by default as in Kafka.
	AllowEveryoneIfNoACLFound bool
}

// Authorize reports whether p, connected from host, may do op to the
// resource of type rt named name.
func (a *Authorizer) Authorize(p Principal, host string, op Operation, rt ResourceType, name string) bool {
	if slices.Contains(a.SuperUsers, p) {
		return true
	}
	who := p.String()
	covered, allowed := false, false
	for _, acl := range a.current().byType[rt] {
		if !covers(acl, name) {
			continue
		}
		covered = true
		if !matchesWho(acl, who, host) {
			continue
		}
		switch acl.Permission {
		case Deny:
			if denies(acl.Operation, op) {
				return false // a DENY wins, wherever it stands
			}
		case Allow:
			allowed = allowed || grants(acl.Operation, op)
		}
	}
	if !covered {
		return a.AllowEveryoneIfNoACLFound
	}
	return allowed
}

// AuthorizeAny reports whether p may do op to at least one resource of
// type rt: Kafka's authorizeByResourceType, with which an idempotent
// producer needs WRITE on some topic (or IdempotentWrite on the cluster).
// It is true when an ALLOW ACL for p grants op on a pattern that no DENY
// ACL for p takes back whole (the wildcard, or the same or a shorter
// prefix).
func (a *Authorizer) AuthorizeAny(p Principal, host string, op Operation, rt ResourceType) bool {
	if slices.Contains(a.SuperUsers, p) {
		return true
	}
	acls := a.current().byType[rt]
	if len(acls) == 0 {
		return a.AllowEveryoneIfNoACLFound
	}
	who := p.String()
	for _, allow := range acls {
		if allow.Permission != Allow || !matchesWho(allow, who, host) || !grants(allow.Operation, op) {
			continue
		}
		denied := false
		for _, deny := range acls {
			if deny.Permission == Deny && matchesWho(deny, who, host) && denies(deny.Operation, op) && covers(deny, allow.ResourceName) &&
				(deny.PatternType == PrefixedPattern || deny.ResourceName == WildcardName || allow.PatternType == LiteralPattern) {
				denied = true
				break
			}
		}
		if !denied {
			return true
		}
	}
	return false
}

func (a *Authorizer) current() *ACLs {
	if a.ACLs == nil {
		return &ACLs{}
	}
	if s := a.ACLs(); s != nil {
		return s
	}
	return &ACLs{}
}

func matchesWho(acl ACL, who, host string) bool {
	return (acl.Principal == who || acl.Principal == WildcardPrincipal) &&
		(acl.Host == host || acl.Host == WildcardHost)
}

// denies reports whether a DENY of aclOp covers op: the same operation,
// or All.
func denies(aclOp, op Operation) bool { return aclOp == op || aclOp == AllOperations }

// grants reports whether an ALLOW of aclOp covers op, with Kafka's
// implied operations.
func grants(aclOp, op Operation) bool {
	if aclOp == op || aclOp == AllOperations {
		return true
	}
	switch op {
	case DescribeOperation:
		return aclOp == ReadOperation || aclOp == WriteOperation || aclOp == DeleteOperation || aclOp == AlterOperation
	case DescribeConfigsOperation:
		return aclOp == AlterConfigsOperation
	}
	return false
}
