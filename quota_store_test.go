package partlog_test

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/partlog/partlog"
	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/partlogtest"
	"github.com/partlog/partlog/quota"
	"github.com/partlog/partlog/transport"
)

// TestClusterQuotas sets client quotas through one node of a cluster
// whose controller is reached over TCP: an invalid alteration gets
// INVALID_REQUEST — from the node for a value that cannot cross to the
// controller, across the controller's API for an entity it refuses — and
// every node has the others, in its ClientQuotas, which resolve as
// Kafka's precedence says, and in DescribeClientQuotas, also after the
// controller restarts from its log. validateOnly changes nothing; a change
// of the metadata that leaves the quotas alone keeps the Config a node
// hands out. Quotas removed through another node are gone from every
// node.
func TestClusterQuotas(t *testing.T) {
	c := newTCPCluster(t, 1, 2, 3)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const produce, consume = quota.ProducerByteRate, quota.ConsumerByteRate
	alice := quota.Entity{User: "alice"}
	defaultUser := quota.Entity{User: quota.Default}
	aliceApp := quota.Entity{User: "alice", ClientID: "app"}

	errs, err := c.nodes[1].Client().AlterClientQuotas(ctx, []transport.QuotaAlteration{
		{Entity: alice, Set: map[string]float64{produce: 1024, consume: 4096}},
		{Entity: alice, Set: map[string]float64{produce: math.Inf(1)}},
		{Entity: defaultUser, Set: map[string]float64{produce: 512}},
		{Entity: aliceApp, Set: map[string]float64{produce: 2048}, Remove: []string{consume}},
		{Entity: quota.Entity{}, Set: map[string]float64{produce: 1}},
	}, false)
	require.NoError(t, err)
	require.Len(t, errs, 5)
	require.NoError(t, errs[0])
	require.ErrorIs(t, errs[1], kafka.ErrInvalidRequest, "an infinite quota")
	require.NoError(t, errs[2])
	require.NoError(t, errs[3], "removing a quota that is not set is no error")
	require.ErrorIs(t, errs[4], kafka.ErrInvalidRequest, "an entity with neither a user nor a client id")

	errs, err = c.nodes[2].Client().AlterClientQuotas(ctx, []transport.QuotaAlteration{
		{Entity: alice, Remove: []string{produce, consume}},
		{Entity: alice, Set: map[string]float64{"fetch_rate": 1}},
	}, true)
	require.NoError(t, err)
	require.Len(t, errs, 2)
	require.NoError(t, errs[0])
	require.ErrorIs(t, errs[1], kafka.ErrInvalidRequest, "validate only checks the alterations all the same")

	// resolves is what ClientQuotas resolves for a user and client id.
	type resolves struct {
		user, clientID, key string
		limit               float64
		metered             quota.Entity
		ok                  bool
	}
	everyNode := func(what string, want []transport.EntityQuotas, resolve []resolves) {
		t.Helper()
		byEntity := map[quota.Entity]map[string]float64{}
		for _, eq := range want {
			byEntity[eq.Entity] = eq.Quotas
		}
		for id := int32(1); id <= 3; id++ {
			n := c.nodes[id]
			require.NoError(t, partlogtest.SyncMetadata(ctx, n), "node %d catches up with the controller", id)
			q := n.ClientQuotas()
			require.Equal(t, byEntity, q.Entities(), "%s: node %d's quotas", what, id)
			for _, r := range resolve {
				limit, metered, ok := q.Resolve(r.user, r.clientID, r.key)
				require.Equal(t, r, resolves{r.user, r.clientID, r.key, limit, metered, ok},
					"%s: node %d resolves %s of user %q client id %q", what, id, r.key, r.user, r.clientID)
			}
			got, err := n.Client().DescribeClientQuotas(ctx, nil, false)
			require.NoError(t, err)
			require.Equal(t, want, got, "%s: node %d describes", what, id)
		}
	}
	set := []transport.EntityQuotas{
		{Entity: defaultUser, Quotas: map[string]float64{produce: 512}},
		{Entity: alice, Quotas: map[string]float64{produce: 1024, consume: 4096}},
		{Entity: aliceApp, Quotas: map[string]float64{produce: 2048}},
	}
	resolveSet := []resolves{
		{user: "alice", clientID: "app", key: produce, limit: 2048, metered: aliceApp, ok: true},
		{user: "alice", clientID: "app", key: consume, limit: 4096, metered: alice, ok: true},
		{user: "alice", clientID: "other", key: produce, limit: 1024, metered: alice, ok: true},
		{user: "bob", clientID: "app", key: produce, limit: 512, metered: quota.Entity{User: "bob"}, ok: true},
		{user: "bob", clientID: "app", key: consume},
	}
	everyNode("set through node 1", set, resolveSet)

	for _, f := range []struct {
		name       string
		components []quota.FilterComponent
		strict     bool
		want       []transport.EntityQuotas
	}{
		{"user alice", []quota.FilterComponent{{EntityType: quota.UserType, Name: "alice"}}, false, set[1:]},
		{"user alice, strict", []quota.FilterComponent{{EntityType: quota.UserType, Name: "alice"}}, true, set[1:2]},
		{"the default user", []quota.FilterComponent{{EntityType: quota.UserType, Match: quota.MatchDefault}}, false, set[:1]},
		{"any client id", []quota.FilterComponent{{EntityType: quota.ClientIDType, Match: quota.MatchAny}}, false, set[2:]},
		{"client id other", []quota.FilterComponent{{EntityType: quota.ClientIDType, Name: "other"}}, false, nil},
	} {
		got, err := c.nodes[2].Client().DescribeClientQuotas(ctx, f.components, f.strict)
		require.NoError(t, err, f.name)
		require.Equal(t, f.want, got, f.name)
	}
	for name, components := range map[string][]quota.FilterComponent{
		"an entity type partlog does not keep": {{EntityType: "ip", Match: quota.MatchAny}},
		"an unknown match type":                {{EntityType: quota.UserType, Match: 3}},
		"an exact match without a name":        {{EntityType: quota.UserType}},
		"an entity type twice":                 {{EntityType: quota.UserType, Match: quota.MatchAny}, {EntityType: quota.UserType, Name: "alice"}},
	} {
		_, err := c.nodes[2].Client().DescribeClientQuotas(ctx, components, false)
		require.ErrorIs(t, err, kafka.ErrInvalidRequest, name)
	}

	config := c.nodes[3].ClientQuotas()
	require.NoError(t, c.nodes[1].CreateTopic(ctx, partlog.NewTopic{Name: "orders", Partitions: 1, ReplicationFactor: 3}))
	require.NoError(t, partlogtest.SyncMetadata(ctx, c.nodes[3]))
	require.Same(t, config, c.nodes[3].ClientQuotas(), "the Config is made again only when the quotas change")

	require.NoError(t, c.ctl.Close())
	c.startController(c.ctlAddr)
	require.Len(t, c.ctl.State().Quotas, 3, "the restarted controller has the quotas from its log")
	everyNode("after the controller's restart", set, resolveSet)

	errs, err = c.nodes[3].Client().AlterClientQuotas(ctx, []transport.QuotaAlteration{
		{Entity: alice, Remove: []string{produce, consume}},
		{Entity: defaultUser, Remove: []string{produce}},
	}, false)
	require.NoError(t, err)
	require.Equal(t, []error{nil, nil}, errs)
	everyNode("removed through node 3", set[2:], []resolves{
		{user: "alice", clientID: "app", key: produce, limit: 2048, metered: aliceApp, ok: true},
		{user: "alice", clientID: "other", key: produce},
		{user: "bob", clientID: "app", key: produce},
	})

	errs, err = c.nodes[2].Client().AlterClientQuotas(ctx, []transport.QuotaAlteration{{Entity: aliceApp, Remove: quota.Keys}}, false)
	require.NoError(t, err)
	require.Equal(t, []error{nil}, errs)
	everyNode("the last removed through node 2", nil, []resolves{{user: "alice", clientID: "app", key: produce}})
}
