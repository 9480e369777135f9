package partlog_test

import (
	"context"
	"maps"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/partlog/partlog/controller"
	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/transport"
)

// groupConfigDefaults are Kafka's group configs and their defaults
// (GroupConfig, with GroupCoordinatorConfig's and ShareGroupConfig's
// defaults), as DescribeConfigs answers a group that sets none.
var groupConfigDefaults = map[string]string{
	"consumer.session.timeout.ms":    "45000",
	"consumer.heartbeat.interval.ms": "5000",
	"share.session.timeout.ms":       "45000",
	"share.heartbeat.interval.ms":    "5000",
	"share.record.lock.duration.ms":  "30000",
	"share.auto.offset.reset":        "latest",
	"share.isolation.level":          "read_uncommitted",
}

// TestClusterGroupConfigs sets group configs (resource type GROUP, 32)
// with raw IncrementalAlterConfigs and AlterConfigs through one node of a
// three-node cluster and reads them back with DescribeConfigs through
// another, as franz-go's share group tests do: a group that does not
// exist has every default, and keeps the configs set on it, also after
// the controller restarts from its log; an invalid value is refused with
// INVALID_CONFIG and nothing is stored; validate_only stores nothing.
func TestClusterGroupConfigs(t *testing.T) {
	c := newTCPCluster(t, 1, 2, 3)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.addrs[1], c.addrs[2], c.addrs[3]))
	require.NoError(t, err)
	defer cl.Close()

	// describe asks node for group's configs (those named, or all).
	describe := func(node int32, group string, names ...string) kmsg.DescribeConfigsResponseResource {
		t.Helper()
		req := kmsg.NewPtrDescribeConfigsRequest()
		r := kmsg.NewDescribeConfigsRequestResource()
		r.ResourceType, r.ResourceName, r.ConfigNames = kmsg.ConfigResourceTypeGroupConfig, group, names
		req.Resources = append(req.Resources, r)
		resp, err := req.RequestWith(ctx, cl.Broker(int(node)))
		require.NoError(t, err)
		require.Len(t, resp.Resources, 1)
		return resp.Resources[0]
	}
	// configs returns a described group's values, and those that are
	// its own (source GROUP_CONFIG); every entry is writable, not
	// sensitive, and the source says whether it is the default.
	configs := func(r kmsg.DescribeConfigsResponseResource) (values, own map[string]string) {
		t.Helper()
		require.NoError(t, kerr.ErrorForCode(r.ErrorCode))
		require.Equal(t, kmsg.ConfigResourceTypeGroupConfig, r.ResourceType)
		values, own = map[string]string{}, map[string]string{}
		for _, e := range r.Configs {
			require.NotNil(t, e.Value, e.Name)
			require.False(t, e.ReadOnly || e.IsSensitive, e.Name)
			values[e.Name] = *e.Value
			switch e.Source {
			case kmsg.ConfigSourceGroupConfig:
				own[e.Name] = *e.Value
			case kmsg.ConfigSourceDefaultConfig:
			default:
				t.Fatalf("%s: source %v", e.Name, e.Source)
			}
		}
		return values, own
	}
	// alter changes group's configs through node: set k=v pairs.
	alter := func(node int32, group string, validateOnly bool, kvs ...string) error {
		t.Helper()
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		req.ValidateOnly = validateOnly
		r := kmsg.NewIncrementalAlterConfigsRequestResource()
		r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
		for i := 0; i < len(kvs); i += 2 {
			c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
			c.Name, c.Op, c.Value = kvs[i], kmsg.IncrementalAlterConfigOpSet, kmsg.StringPtr(kvs[i+1])
			r.Configs = append(r.Configs, c)
		}
		req.Resources = append(req.Resources, r)
		resp, err := req.RequestWith(ctx, cl.Broker(int(node)))
		require.NoError(t, err)
		require.Len(t, resp.Resources, 1)
		require.Equal(t, group, resp.Resources[0].ResourceName)
		return kerr.ErrorForCode(resp.Resources[0].ErrorCode)
	}
	everyNode := func(what, group string, wantOwn map[string]string) {
		t.Helper()
		want := maps.Clone(groupConfigDefaults)
		maps.Copy(want, wantOwn)
		for id := int32(1); id <= 3; id++ {
			values, own := configs(describe(id, group))
			require.Equal(t, want, values, "%s: node %d's values", what, id)
			require.Equal(t, wantOwn, own, "%s: node %d's own", what, id)
		}
	}

	// A group nobody made, without configs: every default, no error.
	everyNode("a group without configs", "nobody", map[string]string{})

	// franz-go's share group tests: set the configs of a share group that
	// does not exist yet through one node, then read them through another.
	require.NoError(t, alter(1, "share-g", false, "share.auto.offset.reset", "earliest", "share.record.lock.duration.ms", "15000"))
	_, own := configs(describe(2, "share-g", "share.auto.offset.reset", "share.record.lock.duration.ms"))
	require.Equal(t, map[string]string{"share.auto.offset.reset": "earliest", "share.record.lock.duration.ms": "15000"}, own,
		"node 2 answers the change node 1 took, at once")
	named := describe(3, "share-g", "share.isolation.level")
	require.Len(t, named.Configs, 1, "only the config named")
	require.Equal(t, "read_uncommitted", *named.Configs[0].Value)
	require.Equal(t, kmsg.ConfigSourceDefaultConfig, named.Configs[0].Source, "the default")
	stored := map[string]string{"share.auto.offset.reset": "earliest", "share.record.lock.duration.ms": "15000"}
	everyNode("set through node 1", "share-g", stored)

	// Refused: nothing stored, not even the valid config beside the bad one.
	for name, kvs := range map[string][]string{
		"below the broker's minimum":        {"share.auto.offset.reset", "latest", "share.record.lock.duration.ms", "1000"},
		"not a number":                      {"share.record.lock.duration.ms", "15s"},
		"an unknown reset strategy":         {"share.auto.offset.reset", "none"},
		"a negative duration":               {"share.auto.offset.reset", "by_duration:-PT1H"},
		"an unknown isolation level":        {"share.isolation.level", "serializable"},
		"an unknown config":                 {"share.delivery.count.limit", "5"},
		"a session not above the heartbeat": {"consumer.heartbeat.interval.ms", "15000", "consumer.session.timeout.ms", "15000"},
	} {
		require.ErrorIs(t, alter(3, "share-g", false, kvs...), kerr.InvalidConfig, name)
		require.ErrorIs(t, alter(2, "share-g", true, kvs...), kerr.InvalidConfig, "%s, validate only", name)
	}
	require.ErrorIs(t, alter(2, "", false, "share.auto.offset.reset", "earliest"), kerr.InvalidRequest, "the default group")
	require.NoError(t, alter(2, "share-g", true, "share.auto.offset.reset", "by_duration:P1DT12H"), "validate only")
	require.Equal(t, map[string]map[string]string{"share-g": stored}, c.ctl.State().GroupConfigs, "refusals and validate only stored nothing")
	everyNode("after the refusals", "share-g", stored)

	// Kafka's older AlterConfigs replaces the group's whole set.
	legacy := kmsg.NewPtrAlterConfigsRequest()
	lr := kmsg.NewAlterConfigsRequestResource()
	lr.ResourceType, lr.ResourceName = kmsg.ConfigResourceTypeGroupConfig, "share-g"
	lc := kmsg.NewAlterConfigsRequestResourceConfig()
	lc.Name, lc.Value = "share.isolation.level", kmsg.StringPtr("read_committed")
	lr.Configs = append(lr.Configs, lc)
	legacy.Resources = append(legacy.Resources, lr)
	lresp, err := legacy.RequestWith(ctx, cl.Broker(3))
	require.NoError(t, err)
	require.Len(t, lresp.Resources, 1)
	require.NoError(t, kerr.ErrorForCode(lresp.Resources[0].ErrorCode))
	stored = map[string]string{"share.isolation.level": "read_committed"}
	everyNode("replaced through node 3", "share-g", stored)

	require.NoError(t, c.ctl.Close())
	c.startController(c.ctlAddr)
	require.Equal(t, map[string]map[string]string{"share-g": stored}, c.ctl.State().GroupConfigs, "the restarted controller has them from its log")
	everyNode("after the controller's restart", "share-g", stored)
}

// TestGroupConfigsThroughTheClient alters and describes group configs
// through a node's Client, as partlog's own tools do: a group that does
// not exist keeps its configs, an invalid change is refused with
// INVALID_CONFIG and changes nothing, and a delete brings the default
// back.
func TestGroupConfigsThroughTheClient(t *testing.T) {
	c := newTCPCluster(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	admin := c.nodes[1].Client().(transport.AdminClient)
	g := transport.ConfigResource{Type: transport.ConfigGroup, Name: "g"}
	own := func() map[string]string {
		t.Helper()
		resp, err := admin.DescribeConfigs(ctx, &transport.DescribeConfigsRequest{Resources: []transport.ConfigResource{g}})
		require.NoError(t, err)
		require.NoError(t, resp.Resources[0].Err)
		require.Len(t, resp.Resources[0].Configs, len(groupConfigDefaults))
		set := map[string]string{}
		for _, e := range resp.Resources[0].Configs {
			if !e.IsDefault {
				set[e.Name] = e.Value
			} else {
				require.Equal(t, groupConfigDefaults[e.Name], e.Value, e.Name)
			}
		}
		return set
	}
	alter := func(changes ...transport.ConfigChange) error {
		t.Helper()
		resp, err := admin.AlterConfigs(ctx, &transport.AlterConfigsRequest{Resources: []transport.ConfigAlteration{{ConfigResource: g, Changes: changes}}})
		require.NoError(t, err)
		return resp.Resources[0].Err
	}
	require.Empty(t, own())
	require.NoError(t, alter(transport.ConfigChange{Name: controller.GroupShareAutoOffsetReset, Value: "by_duration:PT1H"},
		transport.ConfigChange{Name: controller.GroupConsumerSessionTimeoutMs, Value: "60000"}))
	require.Equal(t, map[string]string{"share.auto.offset.reset": "by_duration:PT1H", "consumer.session.timeout.ms": "60000"}, own())
	require.ErrorIs(t, alter(transport.ConfigChange{Name: controller.GroupConsumerSessionTimeoutMs, Value: "60001"}), kafka.ErrInvalidConfig)
	require.ErrorIs(t, alter(transport.ConfigChange{Name: controller.GroupShareIsolationLevel, Op: transport.ConfigAppend, Value: "read_committed"}), kafka.ErrInvalidConfig)
	require.NoError(t, alter(transport.ConfigChange{Name: controller.GroupShareAutoOffsetReset, Op: transport.ConfigDelete}))
	require.Equal(t, map[string]string{"consumer.session.timeout.ms": "60000"}, own())
}
