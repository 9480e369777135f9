package auth

import "testing"

func allow(rt ResourceType, name string, pt PatternType, who string, op Operation) ACL {
	return ACL{ResourceType: rt, ResourceName: name, PatternType: pt, Principal: who, Host: WildcardHost, Operation: op, Permission: Allow}
}

func deny(rt ResourceType, name string, pt PatternType, who string, op Operation) ACL {
	a := allow(rt, name, pt, who, op)
	a.Permission = Deny
	return a
}

func TestAuthorize(t *testing.T) {
	alice, bob, admin := User("alice"), User("bob"), User("admin")
	acls := []ACL{
		allow(TopicResource, "orders", LiteralPattern, "User:alice", ReadOperation),
		allow(TopicResource, "logs-", PrefixedPattern, "User:alice", WriteOperation),
		deny(TopicResource, "logs-secret", LiteralPattern, "User:alice", AllOperations),
		allow(TopicResource, "public", LiteralPattern, WildcardPrincipal, AllOperations),
		allow(GroupResource, "*", LiteralPattern, "User:bob", ReadOperation),
		allow(TopicResource, "cfg", LiteralPattern, "User:bob", AlterConfigsOperation),
		{ResourceType: TopicResource, ResourceName: "hosted", PatternType: LiteralPattern, Principal: "User:bob", Host: "10.0.0.1", Operation: ReadOperation, Permission: Allow},
	}
	a := &Authorizer{ACLs: func() *ACLs { return NewACLs(acls) }, SuperUsers: []Principal{admin}}
	for _, c := range []struct {
		who  Principal
		host string
		op   Operation
		rt   ResourceType
		name string
		want bool
	}{
		{alice, "1.2.3.4", ReadOperation, TopicResource, "orders", true},
		{alice, "1.2.3.4", DescribeOperation, TopicResource, "orders", true}, // implied by Read
		{alice, "1.2.3.4", WriteOperation, TopicResource, "orders", false},
		{bob, "1.2.3.4", ReadOperation, TopicResource, "orders", false},
		{alice, "1.2.3.4", WriteOperation, TopicResource, "logs-app", true},     // prefix
		{alice, "1.2.3.4", WriteOperation, TopicResource, "logs-secret", false}, // deny wins
		{alice, "1.2.3.4", WriteOperation, TopicResource, "log", false},
		{bob, "1.2.3.4", DeleteOperation, TopicResource, "public", true},  // User:* and All
		{bob, "1.2.3.4", ReadOperation, GroupResource, "any-group", true}, // literal wildcard name
		{alice, "1.2.3.4", ReadOperation, GroupResource, "any-group", false},
		{bob, "1.2.3.4", DescribeConfigsOperation, TopicResource, "cfg", true}, // implied by AlterConfigs
		{bob, "1.2.3.4", DescribeOperation, TopicResource, "cfg", false},
		{bob, "10.0.0.1", ReadOperation, TopicResource, "hosted", true},
		{bob, "10.0.0.2", ReadOperation, TopicResource, "hosted", false},
		{alice, "1.2.3.4", ReadOperation, TopicResource, "uncovered", false}, // no ACL: closed
		{admin, "1.2.3.4", AlterOperation, ClusterResource, ClusterName, true},
	} {
		if got := a.Authorize(c.who, c.host, c.op, c.rt, c.name); got != c.want {
			t.Errorf("Authorize(%s from %s, %s, %s %q) = %t, want %t", c.who, c.host, c.op, c.rt, c.name, got, c.want)
		}
	}

	open := &Authorizer{ACLs: a.ACLs, AllowEveryoneIfNoACLFound: true}
	if !open.Authorize(alice, "h", WriteOperation, TopicResource, "uncovered") {
		t.Error("allow.everyone.if.no.acl.found: a topic no ACL covers is closed")
	}
	if open.Authorize(bob, "h", ReadOperation, TopicResource, "orders") {
		t.Error("allow.everyone.if.no.acl.found opened a topic that ACLs cover")
	}
	none := &Authorizer{}
	if none.Authorize(alice, "h", ReadOperation, TopicResource, "t") {
		t.Error("no ACLs, allow.everyone false: allowed")
	}
}

func TestAuthorizeAny(t *testing.T) {
	alice := User("alice")
	for _, c := range []struct {
		name string
		acls []ACL
		want bool
	}{
		{"none", nil, false},
		{"literal write", []ACL{allow(TopicResource, "t", LiteralPattern, "User:alice", WriteOperation)}, true},
		{"read only", []ACL{allow(TopicResource, "t", LiteralPattern, "User:alice", ReadOperation)}, false},
		{"someone else", []ACL{allow(TopicResource, "t", LiteralPattern, "User:bob", WriteOperation)}, false},
		{"denied by wildcard", []ACL{
			allow(TopicResource, "t", LiteralPattern, "User:alice", WriteOperation),
			deny(TopicResource, "*", LiteralPattern, "User:alice", WriteOperation)}, false},
		{"denied by shorter prefix", []ACL{
			allow(TopicResource, "logs-a", PrefixedPattern, "User:alice", WriteOperation),
			deny(TopicResource, "logs-", PrefixedPattern, "User:alice", WriteOperation)}, false},
		{"literal deny leaves a prefix", []ACL{
			allow(TopicResource, "logs-", PrefixedPattern, "User:alice", WriteOperation),
			deny(TopicResource, "logs-", LiteralPattern, "User:alice", WriteOperation)}, true},
	} {
		a := &Authorizer{ACLs: func() *ACLs { return NewACLs(c.acls) }}
		if got := a.AuthorizeAny(alice, "h", WriteOperation, TopicResource); got != c.want {
			t.Errorf("%s: AuthorizeAny = %t, want %t", c.name, got, c.want)
		}
	}
}

func TestACLFilter(t *testing.T) {
	lit := allow(TopicResource, "orders", LiteralPattern, "User:alice", ReadOperation)
	wild := allow(TopicResource, "*", LiteralPattern, "User:bob", WriteOperation)
	pre := allow(TopicResource, "ord", PrefixedPattern, "User:alice", ReadOperation)
	grp := allow(GroupResource, "orders", LiteralPattern, "User:alice", ReadOperation)
	all := []ACL{lit, wild, pre, grp}
	for _, c := range []struct {
		name string
		f    ACLFilter
		want []ACL
	}{
		{"everything", ACLFilter{}, all},
		{"topics", ACLFilter{ResourceType: TopicResource}, []ACL{lit, wild, pre}},
		{"name any pattern", ACLFilter{ResourceName: "orders"}, []ACL{lit, grp}},
		{"literal only", ACLFilter{ResourceType: TopicResource, PatternType: LiteralPattern}, []ACL{lit, wild}},
		{"prefixed only", ACLFilter{PatternType: PrefixedPattern}, []ACL{pre}},
		{"match", ACLFilter{ResourceType: TopicResource, ResourceName: "orders", PatternType: MatchPattern}, []ACL{lit, wild, pre}},
		{"principal", ACLFilter{Principal: "User:bob"}, []ACL{wild}},
		{"operation", ACLFilter{Operation: WriteOperation}, []ACL{wild}},
		{"permission", ACLFilter{Permission: Deny}, nil},
	} {
		var got []ACL
		for _, a := range all {
			if c.f.Matches(a) {
				got = append(got, a)
			}
		}
		if len(got) != len(c.want) {
			t.Errorf("%s: matched %v, want %v", c.name, got, c.want)
			continue
		}
		for i := range got {
			if got[i] != c.want[i] {
				t.Errorf("%s: matched %v, want %v", c.name, got, c.want)
				break
			}
		}
	}
}

func TestACLValidate(t *testing.T) {
	good := allow(TopicResource, "t", LiteralPattern, "User:alice", ReadOperation)
	if err := good.Validate(); err != nil {
		t.Fatal(err)
	}
	for name, mutate := range map[string]func(*ACL){
		"any type":          func(a *ACL) { a.ResourceType = AnyResource },
		"match pattern":     func(a *ACL) { a.PatternType = MatchPattern },
		"any operation":     func(a *ACL) { a.Operation = AnyOperation },
		"any permission":    func(a *ACL) { a.Permission = AnyPermission },
		"empty name":        func(a *ACL) { a.ResourceName = "" },
		"cluster misnamed":  func(a *ACL) { a.ResourceType = ClusterResource },
		"prefixed wildcard": func(a *ACL) { a.ResourceName, a.PatternType = "*", PrefixedPattern },
		"no host":           func(a *ACL) { a.Host = "" },
		"bad principal":     func(a *ACL) { a.Principal = "alice" },
	} {
		a := good
		mutate(&a)
		if a.Validate() == nil {
			t.Errorf("%s: %v validated", name, a)
		}
	}
	for in, want := range map[string]Operation{"Read": ReadOperation, "describe-configs": DescribeConfigsOperation, "IDEMPOTENTWRITE": IdempotentWriteOperation, "all": AllOperations} {
		if got, err := ParseOperation(in); err != nil || got != want {
			t.Errorf("ParseOperation(%q) = %v, %v", in, got, err)
		}
	}
	if _, err := ParseOperation("fly"); err == nil {
		t.Error("ParseOperation(fly) succeeded")
	}
}
