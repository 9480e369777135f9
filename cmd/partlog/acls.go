package main

// acls.go is 'partlog acls': the cluster's ACLs, added, removed and listed
// as kafka-acls.sh does (CreateAcls, DeleteAcls, DescribeAcls).

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"unicode"

	"github.com/partlog/partlog/auth"
	"github.com/partlog/partlog/transport"
)

const aclsHelp = `Usage: partlog acls <add|remove|list> --bootstrap-server HOST:PORT [--command-config FILE] [flags]

Acls adds, removes and lists the cluster's ACLs, as Kafka's kafka-acls.sh
does. A node checks them when it is served with --acls: every request of a
client is then allowed only as far as an ACL allows its principal, unless
the principal is one of --super-users.

  partlog acls add --bootstrap-server B --allow-principal User:alice --operation Read --topic orders
  partlog acls add --bootstrap-server B --allow-principal User:alice --consumer --topic orders --group billing
  partlog acls add --bootstrap-server B --allow-principal User:alice --producer --topic logs- --resource-pattern-type prefixed
  partlog acls add --bootstrap-server B --deny-principal User:bob --deny-host 10.0.0.9 --operation All --topic orders
  partlog acls list --bootstrap-server B [--topic orders] [--principal User:alice]
  partlog acls remove --bootstrap-server B --allow-principal User:alice --operation Read --topic orders

Resources: --topic, --group and --transactional-id (each may be repeated),
--cluster. Operations (--operation, repeated): Read, Write, Create, Delete,
Alter, Describe, ClusterAction, DescribeConfigs, AlterConfigs,
IdempotentWrite, All. --producer stands for Write, Describe and Create on
the topics (and Write and Describe on --transactional-id, IdempotentWrite
on the cluster with --idempotent); --consumer for Read and Describe on the
topics and Read on the groups. Hosts default to * (every host).

--resource-pattern-type is literal (the default; the name "*" matches every
name) or prefixed (the name is a prefix) for add; list and remove also take
any (the default of list) and match (the ACLs that apply to the name).

List prints the ACLs as kafka-acls.sh does:

  Current ACLs for resource ` + "`ResourcePattern(resourceType=TOPIC, name=orders, patternType=LITERAL)`" + `:
   	(principal=User:alice, host=*, operation=READ, permissionType=ALLOW)

Flags:
`

// aclResource is one resource pattern a command line names.
type aclResource struct {
	rt   auth.ResourceType
	name string
}

func runAcls(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("acls")
	where := addTargetFlags(fs)
	var allowPrincipals, denyPrincipals, allowHosts, denyHosts, operations, topics, groups, txnIDs stringsFlag
	fs.Var(&allowPrincipals, "allow-principal", "a `principal` (User:alice, User:* for everyone) the ACLs allow; may be repeated")
	fs.Var(&denyPrincipals, "deny-principal", "a `principal` the ACLs deny; may be repeated")
	fs.Var(&allowHosts, "allow-host", "a client `address` the allowing ACLs are for; * (every host) by default")
	fs.Var(&denyHosts, "deny-host", "a client `address` the denying ACLs are for; * by default")
	fs.Var(&operations, "operation", "an `operation`: Read, Write, Create, Delete, Alter, Describe, ClusterAction, DescribeConfigs, AlterConfigs, IdempotentWrite or All; may be repeated")
	fs.Var(&topics, "topic", "a topic `name` (or prefix); may be repeated")
	fs.Var(&groups, "group", "a consumer group `name` (or prefix); may be repeated")
	fs.Var(&txnIDs, "transactional-id", "a transactional `id` (or prefix); may be repeated")
	cluster := fs.Bool("cluster", false, "the ACLs are about the cluster (kafka-cluster)")
	patternType := fs.String("resource-pattern-type", "", "how resource names match: literal or prefixed; list and remove also any or match (default literal; list: any)")
	principal := fs.String("principal", "", "list: only the ACLs of this `principal`")
	producer := fs.Bool("producer", false, "add or remove the ACLs of a producer of the topics")
	consumer := fs.Bool("consumer", false, "add or remove the ACLs of a consumer of the topics in the groups")
	idempotent := fs.Bool("idempotent", false, "with --producer: IdempotentWrite on the cluster too")
	fs.Bool("force", false, "accepted, as kafka-acls.sh takes it; partlog asks no confirmation")
	actions := addActionFlags(fs, "acls", "add", "remove", "list")
	operands, err := parseFlags(fs, args, aclsHelp, stdout)
	if err != nil {
		return err
	}
	action, err := actions.only(operands)
	if err != nil {
		return err
	}
	var resources []aclResource
	for _, s := range []struct {
		rt    auth.ResourceType
		names []string
	}{{auth.TopicResource, topics}, {auth.GroupResource, groups}, {auth.TransactionalIDResource, txnIDs}} {
		for _, name := range s.names {
			resources = append(resources, aclResource{s.rt, name})
		}
	}
	if *cluster {
		resources = append(resources, aclResource{auth.ClusterResource, auth.ClusterName})
	}
	pattern := auth.LiteralPattern
	if action == "list" {
		pattern = auth.AnyPattern
	}
	if *patternType != "" {
		if pattern, err = auth.ParsePatternType(*patternType); err != nil {
			return usageErrorf("acls", "--resource-pattern-type: %v", err)
		}
		if action == "add" && pattern != auth.LiteralPattern && pattern != auth.PrefixedPattern {
			return usageErrorf("acls", "add takes --resource-pattern-type literal or prefixed, not %s", *patternType)
		}
	}
	var ops []auth.Operation
	for _, o := range operations {
		op, err := auth.ParseOperation(o)
		if err != nil {
			return usageErrorf("acls", "--operation: %v", err)
		}
		ops = append(ops, op)
	}
	var acls []auth.ACL
	if action != "list" {
		if len(allowPrincipals)+len(denyPrincipals) == 0 {
			return usageErrorf("acls", "%s needs --allow-principal or --deny-principal", action)
		}
		if len(resources) == 0 {
			return usageErrorf("acls", "%s needs a resource: --topic, --group, --transactional-id or --cluster", action)
		}
		if acls, err = aclsToChange(resources, pattern, ops, *producer, *consumer, *idempotent,
			allowPrincipals, denyPrincipals, orWildcard(allowHosts), orWildcard(denyHosts)); err != nil {
			return err
		}
	}
	t, err := openTarget("acls", where, stderr)
	if err != nil {
		return err
	}
	defer t.close()
	admin, ok := t.aclAdmin()
	if !ok {
		return fmt.Errorf("acls: the node does not keep ACLs")
	}
	ctx := context.Background()
	switch action {
	case "add":
		err = addACLs(ctx, admin, acls, stdout)
	case "remove":
		err = removeACLs(ctx, admin, acls, stdout)
	default:
		err = listACLs(ctx, admin, resources, pattern, *principal, stdout)
	}
	if err != nil {
		return fmt.Errorf("acls: %w", err)
	}
	return t.close()
}

// aclAdmin returns the target's ACL calls: the node's own with --dir, or
// the node at --bootstrap-server.
func (t *target) aclAdmin() (transport.ACLAdminClient, bool) {
	if t.node != nil {
		a, ok := t.node.Client().(transport.ACLAdminClient)
		return a, ok
	}
	return t.remote, true
}

func orWildcard(hosts []string) []string {
	if len(hosts) == 0 {
		return []string{auth.WildcardHost}
	}
	return hosts
}

// aclsToChange returns the ACLs that add or remove names: each principal,
// host and operation on each resource, and those --producer and
// --consumer stand for.
func aclsToChange(resources []aclResource, pattern auth.PatternType, ops []auth.Operation, producer, consumer, idempotent bool,
	allowPrincipals, denyPrincipals, allowHosts, denyHosts []string) ([]auth.ACL, error) {
	type grant struct {
		res aclResource
		op  auth.Operation
	}
	var grants []grant
	for _, r := range resources {
		for _, op := range ops {
			grants = append(grants, grant{r, op})
		}
		if producer && r.rt == auth.TopicResource {
			grants = append(grants, grant{r, auth.WriteOperation}, grant{r, auth.DescribeOperation}, grant{r, auth.CreateOperation})
		}
		if producer && r.rt == auth.TransactionalIDResource {
			grants = append(grants, grant{r, auth.WriteOperation}, grant{r, auth.DescribeOperation})
		}
		if consumer && r.rt == auth.TopicResource {
			grants = append(grants, grant{r, auth.ReadOperation}, grant{r, auth.DescribeOperation})
		}
		if consumer && r.rt == auth.GroupResource {
			grants = append(grants, grant{r, auth.ReadOperation})
		}
	}
	if producer && idempotent {
		grants = append(grants, grant{aclResource{auth.ClusterResource, auth.ClusterName}, auth.IdempotentWriteOperation})
	}
	if len(grants) == 0 {
		return nil, usageErrorf("acls", "give --operation, or --producer or --consumer")
	}
	var acls []auth.ACL
	add := func(principals, hosts []string, perm auth.Permission) error {
		for _, p := range principals {
			if _, err := auth.ParsePrincipal(p); err != nil {
				return usageErrorf("acls", "%v", err)
			}
			for _, h := range hosts {
				for _, g := range grants {
					pt := pattern
					if g.res.rt == auth.ClusterResource {
						pt = auth.LiteralPattern
					}
					acl := auth.ACL{ResourceType: g.res.rt, ResourceName: g.res.name, PatternType: pt, Principal: p, Host: h, Operation: g.op, Permission: perm}
					if !slices.Contains(acls, acl) {
						acls = append(acls, acl)
					}
				}
			}
		}
		return nil
	}
	if err := add(allowPrincipals, allowHosts, auth.Allow); err != nil {
		return nil, err
	}
	if err := add(denyPrincipals, denyHosts, auth.Deny); err != nil {
		return nil, err
	}
	return acls, nil
}

func addACLs(ctx context.Context, admin transport.ACLAdminClient, acls []auth.ACL, stdout io.Writer) error {
	errs, err := admin.CreateACLs(ctx, acls)
	if err != nil {
		return err
	}
	var failed error
	for i, e := range errs {
		if e != nil {
			failed = fmt.Errorf("%s: %w", aclEntry(acls[i]), e)
			fmt.Fprintf(stdout, "Error adding %s %s: %v\n", aclPattern(acls[i]), aclEntry(acls[i]), e)
		}
	}
	if failed != nil {
		return failed
	}
	printACLs(stdout, "Adding ACLs for resource", acls)
	return nil
}

func removeACLs(ctx context.Context, admin transport.ACLAdminClient, acls []auth.ACL, stdout io.Writer) error {
	filters := make([]auth.ACLFilter, len(acls))
	for i, a := range acls {
		filters[i] = auth.ACLFilter(a)
	}
	results, err := admin.DeleteACLs(ctx, filters)
	if err != nil {
		return err
	}
	var removed []auth.ACL
	for _, r := range results {
		if r.Err != nil {
			return r.Err
		}
		removed = append(removed, r.Deleted...)
	}
	printACLs(stdout, "Removed ACLs for resource", removed)
	return nil
}

func listACLs(ctx context.Context, admin transport.ACLAdminClient, resources []aclResource, pattern auth.PatternType, principal string, stdout io.Writer) error {
	filters := []auth.ACLFilter{{PatternType: pattern, Principal: principal}}
	if len(resources) > 0 {
		filters = nil
		for _, r := range resources {
			filters = append(filters, auth.ACLFilter{ResourceType: r.rt, ResourceName: r.name, PatternType: pattern, Principal: principal})
		}
	}
	var all []auth.ACL
	for _, f := range filters {
		acls, err := admin.DescribeACLs(ctx, f)
		if err != nil {
			return err
		}
		for _, a := range acls {
			if !slices.Contains(all, a) {
				all = append(all, a)
			}
		}
	}
	printACLs(stdout, "Current ACLs for resource", all)
	return nil
}

// printACLs prints acls grouped by resource pattern, as kafka-acls.sh
// does, each group under its heading.
func printACLs(w io.Writer, heading string, acls []auth.ACL) {
	var order []string
	byPattern := map[string][]auth.ACL{}
	for _, a := range acls {
		p := aclPattern(a)
		if byPattern[p] == nil {
			order = append(order, p)
		}
		byPattern[p] = append(byPattern[p], a)
	}
	for _, p := range order {
		fmt.Fprintf(w, "%s `%s`: \n", heading, p)
		for _, a := range byPattern[p] {
			fmt.Fprintf(w, " \t%s \n", aclEntry(a))
		}
		fmt.Fprintln(w)
	}
}

func aclPattern(a auth.ACL) string {
	return fmt.Sprintf("ResourcePattern(resourceType=%s, name=%s, patternType=%s)", enumName(a.ResourceType.String()), a.ResourceName, a.PatternType)
}

func aclEntry(a auth.ACL) string {
	return fmt.Sprintf("(principal=%s, host=%s, operation=%s, permissionType=%s)", a.Principal, a.Host, enumName(a.Operation.String()), enumName(a.Permission.String()))
}

// enumName writes a name as Kafka's Java enums do: DescribeConfigs is
// DESCRIBE_CONFIGS, TransactionalId TRANSACTIONAL_ID.
func enumName(s string) string {
	var b strings.Builder
	for i, r := range s {
		if i > 0 && unicode.IsUpper(r) {
			b.WriteByte('_')
		}
		b.WriteRune(unicode.ToUpper(r))
	}
	return b.String()
}
