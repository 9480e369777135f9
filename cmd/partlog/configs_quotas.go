package main

// configs_quotas.go is 'partlog configs' of users' and client ids' quotas,
// as kafka-configs.sh manages them (AlterClientQuotas,
// DescribeClientQuotas).

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/partlog/partlog/auth"
	"github.com/partlog/partlog/quota"
	"github.com/partlog/partlog/transport"
)

// entityClients is the entity type of client ids.
const entityClients = "clients"

// quotaFlags are kafka-configs.sh's ways to name a quota entity besides
// --entity-type users|clients: --user, --client and their defaults, which
// may be combined (a user's client id).
type quotaFlags struct {
	entityDefault, userDefaults, clientDefaults *bool
	user, client                                *string
}

func addQuotaFlags(fs interface {
	Bool(name string, value bool, usage string) *bool
	String(name, value, usage string) *string
}) quotaFlags {
	return quotaFlags{
		entityDefault:  fs.Bool("entity-default", false, "with --entity-type users or clients: the default user or client id, whose quotas apply to those without their own"),
		user:           fs.String("user", "", "a user's `name`: the same as --entity-type users --entity-name name; with --client, that user's client id"),
		client:         fs.String("client", "", "a client `id`: the same as --entity-type clients --entity-name id"),
		userDefaults:   fs.Bool("user-defaults", false, "the default user: the same as --entity-type users --entity-default"),
		clientDefaults: fs.Bool("client-defaults", false, "the default client id: the same as --entity-type clients --entity-default"),
	}
}

// entity returns the quota entity the flags name, and whether they name
// one: false for topics and brokers, and for a users entity that may be
// about SCRAM credentials as well (an --entity-name of users).
func (q quotaFlags) entity(entityType, entityName string) (quota.Entity, bool, error) {
	var e quota.Entity
	shorthand := *q.user != "" || *q.client != "" || *q.userDefaults || *q.clientDefaults
	switch {
	case shorthand && (entityType != "" || entityName != "" || *q.entityDefault):
		return e, false, usageErrorf("configs", "--user, --client, --user-defaults and --client-defaults cannot be given with --entity-type, --entity-name or --entity-default")
	case *q.user != "" && *q.userDefaults, *q.client != "" && *q.clientDefaults:
		return e, false, usageErrorf("configs", "a name and the defaults cannot both be given")
	case shorthand:
		e.User, e.ClientID = *q.user, *q.client
		if *q.userDefaults {
			e.User = quota.Default
		}
		if *q.clientDefaults {
			e.ClientID = quota.Default
		}
		return e, true, nil
	case *q.entityDefault && entityName != "":
		return e, false, usageErrorf("configs", "--entity-default and --entity-name cannot both be given")
	case *q.entityDefault && entityType == entityUsers:
		return quota.Entity{User: quota.Default}, true, nil
	case *q.entityDefault && entityType == entityClients:
		return quota.Entity{ClientID: quota.Default}, true, nil
	case *q.entityDefault:
		return e, false, usageErrorf("configs", "--entity-default goes with --entity-type users or clients")
	case entityType == entityClients:
		return quota.Entity{ClientID: entityName}, true, nil
	}
	return e, false, nil
}

// quotaAdmin returns the target's quota calls: the node's own with --dir,
// or the node at --bootstrap-server.
func (t *target) quotaAdmin() (transport.QuotaAdminClient, error) {
	if t.node != nil {
		if a, ok := t.node.Client().(transport.QuotaAdminClient); ok {
			return a, nil
		}
		return nil, fmt.Errorf("the node keeps no quotas")
	}
	return t.remote, nil
}

// alterQuotas sets and removes e's quotas as changes say.
func alterQuotas(ctx context.Context, t *target, e quota.Entity, changes []transport.ConfigChange, stdout io.Writer) error {
	alt := transport.QuotaAlteration{Entity: e, Set: map[string]float64{}}
	for _, c := range changes {
		if !slices.Contains(quota.Keys, c.Name) {
			return usageErrorf("configs", "%q is not a quota: %s", c.Name, strings.Join(quota.Keys, ", "))
		}
		if c.Op == transport.ConfigDelete {
			alt.Remove = append(alt.Remove, c.Name)
			continue
		}
		v, err := strconv.ParseFloat(c.Value, 64)
		if err != nil {
			return usageErrorf("configs", "%s=%s: a quota is a number", c.Name, c.Value)
		}
		alt.Set[c.Name] = v
	}
	admin, err := t.quotaAdmin()
	if err != nil {
		return err
	}
	errs, err := admin.AlterClientQuotas(ctx, []transport.QuotaAlteration{alt}, false)
	if err != nil {
		return err
	}
	if errs[0] != nil {
		return fmt.Errorf("%s: %s", quotaEntityName(e), serverMessage(errs[0]))
	}
	fmt.Fprintf(stdout, "Completed updating config for %s.\n", quotaEntityName(e))
	return nil
}

// describeQuotas prints the quotas of e, or of every entity of e's kind
// whose name e leaves empty, as kafka-configs.sh does:
//
//	Quota configs for user-principal 'alice' are consumer_byte_rate=2048.0, producer_byte_rate=1024.0
func describeQuotas(ctx context.Context, t *target, e quota.Entity, users, clients bool, stdout io.Writer) error {
	var comps []quota.FilterComponent
	add := func(typ, name string, wanted bool) {
		switch {
		case !wanted:
		case name == "":
			comps = append(comps, quota.FilterComponent{EntityType: typ, Match: quota.MatchAny})
		case name == quota.Default:
			comps = append(comps, quota.FilterComponent{EntityType: typ, Match: quota.MatchDefault})
		default:
			comps = append(comps, quota.FilterComponent{EntityType: typ, Match: quota.MatchExact, Name: name})
		}
	}
	add(quota.UserType, e.User, users)
	add(quota.ClientIDType, e.ClientID, clients)
	admin, err := t.quotaAdmin()
	if err != nil {
		return err
	}
	entries, err := admin.DescribeClientQuotas(ctx, comps, true)
	if err != nil {
		return err
	}
	slices.SortFunc(entries, func(a, b transport.EntityQuotas) int {
		return strings.Compare(quotaEntityName(a.Entity), quotaEntityName(b.Entity))
	})
	for _, eq := range entries {
		var values []string
		for _, k := range slices.Sorted(maps.Keys(eq.Quotas)) {
			values = append(values, k+"="+strconv.FormatFloat(eq.Quotas[k], 'f', 1, 64))
		}
		fmt.Fprintf(stdout, "Quota configs for %s are %s\n", quotaEntityName(eq.Entity), strings.Join(values, ", "))
	}
	return nil
}

// quotaEntityName names e as kafka-configs.sh does: "user-principal
// 'alice', client-id 'app'", "the default user-principal".
func quotaEntityName(e quota.Entity) string {
	var parts []string
	for _, p := range []struct{ kind, name string }{{"user-principal", e.User}, {"client-id", e.ClientID}} {
		switch p.name {
		case "":
		case quota.Default:
			parts = append(parts, "the default "+p.kind)
		default:
			parts = append(parts, fmt.Sprintf("%s '%s'", p.kind, p.name))
		}
	}
	return strings.Join(parts, ", ")
}

// alterUserConfigs makes a user's changes: its SCRAM credentials
// (AlterUserScramCredentials) and its quotas (AlterClientQuotas).
func alterUserConfigs(ctx context.Context, t *target, user string, changes []transport.ConfigChange, stdout io.Writer) error {
	var scram, quotas []transport.ConfigChange
	for _, c := range changes {
		if !slices.Contains(quota.Keys, c.Name) && !slices.Contains(auth.ScramMechanisms, c.Name) {
			return usageErrorf("configs", "a user's config is %s or %s, or a quota (%s), not %q",
				auth.MechanismScramSHA256, auth.MechanismScramSHA512, strings.Join(quota.Keys, ", "), c.Name)
		}
		if slices.Contains(quota.Keys, c.Name) {
			quotas = append(quotas, c)
		} else {
			scram = append(scram, c)
		}
	}
	if len(scram) > 0 {
		if err := alterUser(ctx, t, user, scram, stdout); err != nil {
			return err
		}
	}
	if len(quotas) > 0 {
		return alterQuotas(ctx, t, quota.Entity{User: user}, quotas, stdout)
	}
	return nil
}

// describeUserConfigs prints user's quotas, then its SCRAM credentials
// (every user's, for an empty user), as kafka-configs.sh does. A user
// with quotas and no credential is no error.
func describeUserConfigs(ctx context.Context, t *target, user string, stdout io.Writer) error {
	var quotas strings.Builder
	if err := describeQuotas(ctx, t, quota.Entity{User: user}, true, false, &quotas); err != nil {
		return err
	}
	io.WriteString(stdout, quotas.String())
	return describeUsers(ctx, t, user, quotas.Len() > 0, stdout)
}
