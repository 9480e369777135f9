package auth

import (
	"fmt"
	"strings"
)

// ResourceType is the kind of resource an ACL is about, with Kafka's codes.
type ResourceType int8

// Resource types, as Kafka numbers them. AnyResource matches every type
// in a filter.
const (
	AnyResource             ResourceType = 1
	TopicResource           ResourceType = 2
	GroupResource           ResourceType = 3
	ClusterResource         ResourceType = 4
	TransactionalIDResource ResourceType = 5
)

// ClusterName is the name of the one cluster resource: Kafka's
// "kafka-cluster".
const ClusterName = "kafka-cluster"

// PatternType says how an ACL's resource name matches names.
type PatternType int8

// Pattern types, as Kafka numbers them. AnyPattern and MatchPattern
// appear only in filters: AnyPattern matches ACLs of every pattern type
// with the filter's name; MatchPattern matches the ACLs that would apply
// to a resource of that name (literal, wildcard and prefixes).
const (
	AnyPattern      PatternType = 1
	MatchPattern    PatternType = 2
	LiteralPattern  PatternType = 3
	PrefixedPattern PatternType = 4
)

// Operation is what a request does to a resource, with Kafka's codes.
type Operation int8

// Operations, as Kafka numbers them. AllOperations in an ACL stands for
// every operation; AnyOperation matches every operation in a filter.
const (
	AnyOperation             Operation = 1
	AllOperations            Operation = 2
	ReadOperation            Operation = 3
	WriteOperation           Operation = 4
	CreateOperation          Operation = 5
	DeleteOperation          Operation = 6
	AlterOperation           Operation = 7
	DescribeOperation        Operation = 8
	ClusterActionOperation   Operation = 9
	DescribeConfigsOperation Operation = 10
	AlterConfigsOperation    Operation = 11
	IdempotentWriteOperation Operation = 12
)

// Permission says whether an ACL allows or denies.
type Permission int8

// Permissions, as Kafka numbers them. AnyPermission is for filters.
const (
	AnyPermission Permission = 1
	Deny          Permission = 2
	Allow         Permission = 3
)

// WildcardName is the literal resource name that matches every name, and
// WildcardPrincipal and WildcardHost the ACL principal and host that match
// every principal and host.
const (
	WildcardName      = "*"
	WildcardPrincipal = "User:*"
	WildcardHost      = "*"
)

// ACL is one access rule: Kafka's AclBinding, a resource pattern and an
// access control entry.
type ACL struct {
	// ResourceType is the kind of resource the rule is about.
	ResourceType ResourceType
	// ResourceName is its name, or the prefix of the names it covers
	// with PrefixedPattern; "*" with LiteralPattern covers every name.
	// ClusterName for ClusterResource.
	ResourceName string
	// PatternType is LiteralPattern or PrefixedPattern.
	PatternType PatternType
	// Principal is whom it is about, "User:alice"; WildcardPrincipal
	// is everyone.
	Principal string
	// Host is the client address it is about; WildcardHost is every one.
	Host string
	// Operation is what it allows or denies; AllOperations is every one.
	Operation Operation
	// Permission is Allow or Deny.
	Permission Permission
}

// Validate says why acl cannot be stored, as Kafka's CreateAcls refuses a
// binding: a filter-only value, an empty name, or a cluster resource not
// named kafka-cluster.
func (acl ACL) Validate() error {
	switch {
	case acl.ResourceType < TopicResource || acl.ResourceType > TransactionalIDResource:
		return fmt.Errorf("auth: resource type %s cannot be in an ACL", acl.ResourceType)
	case acl.PatternType != LiteralPattern && acl.PatternType != PrefixedPattern:
		return fmt.Errorf("auth: pattern type %s cannot be in an ACL", acl.PatternType)
	case acl.Operation < AllOperations || acl.Operation > IdempotentWriteOperation:
		return fmt.Errorf("auth: operation %s cannot be in an ACL", acl.Operation)
	case acl.Permission != Allow && acl.Permission != Deny:
		return fmt.Errorf("auth: permission %s cannot be in an ACL", acl.Permission)
	case acl.ResourceName == "":
		return fmt.Errorf("auth: an ACL needs a resource name")
	case acl.ResourceType == ClusterResource && acl.ResourceName != ClusterName:
		return fmt.Errorf("auth: the cluster resource is named %s, not %q", ClusterName, acl.ResourceName)
	case acl.PatternType == PrefixedPattern && acl.ResourceName == WildcardName:
		return fmt.Errorf("auth: a prefixed ACL cannot have the wildcard name")
	case acl.Host == "":
		return fmt.Errorf("auth: an ACL needs a host (%s for any)", WildcardHost)
	}
	if _, err := ParsePrincipal(acl.Principal); err != nil {
		return err
	}
	return nil
}

// String writes acl as kafka-acls.sh lists one.
func (acl ACL) String() string {
	return fmt.Sprintf("(principal=%s, host=%s, operation=%s, permissionType=%s) on %s:%s:%s",
		acl.Principal, acl.Host, acl.Operation, acl.Permission, acl.ResourceType, acl.PatternType, acl.ResourceName)
}

// ACLFilter selects ACLs, for DescribeAcls and DeleteAcls: each field
// matches as Kafka's AclBindingFilter does, a zero or Any value matching
// everything.
type ACLFilter struct {
	// ResourceType is the type to match; AnyResource (or zero) matches all.
	ResourceType ResourceType
	// ResourceName is the name to match; empty matches every name.
	ResourceName string
	// PatternType: AnyPattern (or zero) matches every ACL with this name;
	// MatchPattern the ACLs that apply to a resource named ResourceName;
	// LiteralPattern or PrefixedPattern that type alone.
	PatternType PatternType
	// Principal to match; empty matches every one.
	Principal string
	// Host to match; empty matches every one.
	Host string
	// Operation to match; AnyOperation (or zero) matches every one.
	Operation Operation
	// Permission to match; AnyPermission (or zero) matches both.
	Permission Permission
}

// Matches reports whether f selects acl.
func (f ACLFilter) Matches(acl ACL) bool {
	if f.ResourceType > AnyResource && f.ResourceType != acl.ResourceType {
		return false
	}
	switch f.PatternType {
	case LiteralPattern, PrefixedPattern:
		if acl.PatternType != f.PatternType || (f.ResourceName != "" && acl.ResourceName != f.ResourceName) {
			return false
		}
	case MatchPattern:
		if f.ResourceName != "" && !covers(acl, f.ResourceName) {
			return false
		}
	default:
		if f.ResourceName != "" && acl.ResourceName != f.ResourceName {
			return false
		}
	}
	return (f.Principal == "" || f.Principal == acl.Principal) &&
		(f.Host == "" || f.Host == acl.Host) &&
		(f.Operation <= AnyOperation || f.Operation == acl.Operation) &&
		(f.Permission <= AnyPermission || f.Permission == acl.Permission)
}

// covers reports whether acl's resource pattern applies to the resource
// name: the same literal name, the literal wildcard, or a prefix of it.
func covers(acl ACL, name string) bool {
	switch acl.PatternType {
	case LiteralPattern:
		return acl.ResourceName == name || acl.ResourceName == WildcardName
	case PrefixedPattern:
		return strings.HasPrefix(name, acl.ResourceName)
	}
	return false
}

var resourceTypeNames = map[ResourceType]string{
	AnyResource: "Any", TopicResource: "Topic", GroupResource: "Group",
	ClusterResource: "Cluster", TransactionalIDResource: "TransactionalId",
}

var patternTypeNames = map[PatternType]string{
	AnyPattern: "ANY", MatchPattern: "MATCH", LiteralPattern: "LITERAL", PrefixedPattern: "PREFIXED",
}

var operationNames = map[Operation]string{
	AnyOperation: "Any", AllOperations: "All", ReadOperation: "Read", WriteOperation: "Write",
	CreateOperation: "Create", DeleteOperation: "Delete", AlterOperation: "Alter",
	DescribeOperation: "Describe", ClusterActionOperation: "ClusterAction",
	DescribeConfigsOperation: "DescribeConfigs", AlterConfigsOperation: "AlterConfigs",
	IdempotentWriteOperation: "IdempotentWrite",
}

var permissionNames = map[Permission]string{AnyPermission: "Any", Deny: "Deny", Allow: "Allow"}

// String names the type as kafka-acls.sh writes it: "Topic".
func (t ResourceType) String() string { return nameOf(resourceTypeNames, t) }

// String names the pattern type as Kafka writes it: "LITERAL".
func (t PatternType) String() string { return nameOf(patternTypeNames, t) }

// String names the operation as kafka-acls.sh writes it: "Read".
func (o Operation) String() string { return nameOf(operationNames, o) }

// String names the permission as kafka-acls.sh writes it: "Allow".
func (p Permission) String() string { return nameOf(permissionNames, p) }

func nameOf[K ~int8](names map[K]string, k K) string {
	if s, ok := names[k]; ok {
		return s
	}
	return fmt.Sprintf("Unknown(%d)", k)
}

// ParseOperation reads an operation's name as kafka-acls.sh takes it
// ("Read", "describe-configs" or "DescribeConfigs"; any case).
func ParseOperation(s string) (Operation, error) {
	return parseName(operationNames, s, "operation")
}

// ParsePatternType reads a pattern type's name ("literal", "PREFIXED",
// "match", "any").
func ParsePatternType(s string) (PatternType, error) {
	return parseName(patternTypeNames, s, "resource pattern type")
}

func parseName[K ~int8](names map[K]string, s, what string) (K, error) {
	want := strings.ReplaceAll(strings.ReplaceAll(strings.ToLower(s), "-", ""), "_", "")
	for k, name := range names {
		if strings.ToLower(name) == want {
			return k, nil
		}
	}
	return 0, fmt.Errorf("auth: unknown %s %q", what, s)
}
