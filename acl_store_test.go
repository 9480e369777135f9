package partlog_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/partlog/partlog"
	"github.com/partlog/partlog/auth"
	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/partlogtest"
)

// TestClusterACLs creates ACLs through one node of a cluster whose
// controller is reached over TCP: an invalid one gets INVALID_REQUEST
// across the controller's API, and every node has the others — in its
// ACLs, which authorize as they say, and in DescribeACLs — also after
// the controller restarts from its log. A change of the metadata that
// leaves the ACLs alone keeps the set a node hands out. ACLs deleted
// through another node are gone from every node.
func TestClusterACLs(t *testing.T) {
	c := newTCPCluster(t, 1, 2, 3)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	readOrders := auth.ACL{ResourceType: auth.TopicResource, ResourceName: "orders", PatternType: auth.LiteralPattern,
		Principal: "User:alice", Host: auth.WildcardHost, Operation: auth.ReadOperation, Permission: auth.Allow}
	writePay := auth.ACL{ResourceType: auth.TopicResource, ResourceName: "pay", PatternType: auth.PrefixedPattern,
		Principal: "User:alice", Host: auth.WildcardHost, Operation: auth.WriteOperation, Permission: auth.Allow}
	invalid := readOrders
	invalid.ResourceType = auth.AnyResource
	alice, err := auth.ParsePrincipal("User:alice")
	require.NoError(t, err)

	errs, err := c.nodes[1].Client().CreateACLs(ctx, []auth.ACL{readOrders, invalid, writePay, readOrders})
	require.NoError(t, err)
	require.Len(t, errs, 4)
	require.NoError(t, errs[0])
	require.ErrorIs(t, errs[1], kafka.ErrInvalidRequest)
	require.NoError(t, errs[2])
	require.NoError(t, errs[3], "an ACL named twice is stored once, without an error")

	everyNode := func(what string, want []auth.ACL) {
		t.Helper()
		for id := int32(1); id <= 3; id++ {
			n := c.nodes[id]
			require.NoError(t, partlogtest.SyncMetadata(ctx, n), "node %d catches up with the controller", id)
			require.Equal(t, len(want), n.ACLs().Len(), "%s: node %d's ACLs", what, id)
			got, err := n.Client().DescribeACLs(ctx, auth.ACLFilter{})
			require.NoError(t, err)
			require.Equal(t, want, got, "%s: node %d describes", what, id)
			a := &auth.Authorizer{ACLs: n.ACLs}
			require.Equal(t, len(want) > 0, a.Authorize(alice, "10.0.0.1", auth.WriteOperation, auth.TopicResource, "payments"),
				"%s: node %d authorizes alice's writes to payments by the prefixed ACL", what, id)
		}
	}
	everyNode("created through node 1", []auth.ACL{readOrders, writePay})
	got, err := c.nodes[2].Client().DescribeACLs(ctx, auth.ACLFilter{ResourceType: auth.TopicResource, ResourceName: "payments", PatternType: auth.MatchPattern})
	require.NoError(t, err)
	require.Equal(t, []auth.ACL{writePay}, got, "a MATCH filter describes the ACLs that apply to a name")
	_, err = c.nodes[2].Client().DescribeACLs(ctx, auth.ACLFilter{Operation: 42})
	require.ErrorIs(t, err, kafka.ErrInvalidRequest, "a filter with an unknown operation")

	set := c.nodes[3].ACLs()
	require.NoError(t, c.nodes[1].CreateTopic(ctx, partlog.NewTopic{Name: "orders", Partitions: 1, ReplicationFactor: 3}))
	require.NoError(t, partlogtest.SyncMetadata(ctx, c.nodes[3]))
	require.Same(t, set, c.nodes[3].ACLs(), "the set is made again only when the ACLs change")

	require.NoError(t, c.ctl.Close())
	c.startController(c.ctlAddr)
	require.Len(t, c.ctl.State().ACLs, 2, "the restarted controller has the ACLs from its log")
	everyNode("after the controller's restart", []auth.ACL{readOrders, writePay})

	results, err := c.nodes[3].Client().DeleteACLs(ctx, []auth.ACLFilter{
		{ResourceType: auth.TopicResource, PatternType: auth.PrefixedPattern},
		{Principal: "User:alice"},
		{Permission: 9},
	})
	require.NoError(t, err)
	require.Len(t, results, 3)
	require.NoError(t, results[0].Err)
	require.Equal(t, []auth.ACL{writePay}, results[0].Deleted)
	require.NoError(t, results[1].Err)
	require.Equal(t, []auth.ACL{readOrders, writePay}, results[1].Deleted, "an ACL two filters select is reported by both")
	require.ErrorIs(t, results[2].Err, kafka.ErrInvalidRequest, "a filter with an unknown permission")
	everyNode("deleted through node 3", nil)
}
