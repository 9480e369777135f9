package transport

import (
	"testing"

	"github.com/partlog/partlog/auth"
	"github.com/partlog/partlog/kafka"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// configsOfGroupG allows ALTER_CONFIGS and DESCRIBE_CONFIGS on group g
// only: not on other groups, topics or the cluster.
type configsOfGroupG struct{}

func (configsOfGroupG) Authorize(_ auth.Principal, _ string, op auth.Operation, rt auth.ResourceType, name string) bool {
	return rt == auth.GroupResource && name == "g" && (op == auth.AlterConfigsOperation || op == auth.DescribeConfigsOperation)
}
func (configsOfGroupG) AuthorizeAny(auth.Principal, string, auth.Operation, auth.ResourceType) bool {
	return false
}

// TestAuthorizeGroupConfigs: a GROUP config resource is authorized as
// Kafka authorizes it, by ALTER_CONFIGS or DESCRIBE_CONFIGS on the group
// named — not on the cluster — and a refused one is answered
// GROUP_AUTHORIZATION_FAILED, beside a topic's TOPIC_ and a broker's
// CLUSTER_AUTHORIZATION_FAILED.
func TestAuthorizeGroupConfigs(t *testing.T) {
	g := guard{a: configsOfGroupG{}, who: auth.User("alice")}
	resources := []struct {
		rt   kmsg.ConfigResourceType
		name string
		want *kafka.Error // nil: allowed
	}{
		{kmsg.ConfigResourceTypeGroupConfig, "g", nil},
		{kmsg.ConfigResourceTypeGroupConfig, "h", kafka.ErrGroupAuthorizationFailed},
		{kmsg.ConfigResourceTypeTopic, "g", kafka.ErrTopicAuthorizationFailed},
		{kmsg.ConfigResourceTypeBroker, "1", kafka.ErrClusterAuthorizationFailed},
	}
	check := func(what string, kept []string, refused map[string]int16) {
		t.Helper()
		if len(kept) != 1 || kept[0] != "GROUP/g" {
			t.Errorf("%s: kept %v, want only group g", what, kept)
		}
		for _, r := range resources[1:] {
			if got := refused[ConfigResourceType(r.rt).String()+"/"+r.name]; got != r.want.Code {
				t.Errorf("%s: %s %s answered %d, want %s", what, ConfigResourceType(r.rt), r.name, got, r.want.Name)
			}
		}
	}

	alter := kmsg.NewPtrIncrementalAlterConfigsRequest()
	legacy := kmsg.NewPtrAlterConfigsRequest()
	describe := kmsg.NewPtrDescribeConfigsRequest()
	for _, r := range resources {
		a := kmsg.NewIncrementalAlterConfigsRequestResource()
		a.ResourceType, a.ResourceName = r.rt, r.name
		alter.Resources = append(alter.Resources, a)
		l := kmsg.NewAlterConfigsRequestResource()
		l.ResourceType, l.ResourceName = r.rt, r.name
		legacy.Resources = append(legacy.Resources, l)
		d := kmsg.NewDescribeConfigsRequestResource()
		d.ResourceType, d.ResourceName = r.rt, r.name
		describe.Resources = append(describe.Resources, d)
	}

	authz := authorizeConfigs(g, alter, 1)
	resp := kmsg.NewPtrIncrementalAlterConfigsResponse()
	authz.merge(resp)
	var kept []string
	for _, r := range alter.Resources {
		kept = append(kept, ConfigResourceType(r.ResourceType).String()+"/"+r.ResourceName)
	}
	refused := map[string]int16{}
	for _, r := range resp.Resources {
		refused[ConfigResourceType(r.ResourceType).String()+"/"+r.ResourceName] = r.ErrorCode
	}
	check("IncrementalAlterConfigs", kept, refused)

	authz = authorizeConfigs(g, legacy, 1)
	lresp := kmsg.NewPtrAlterConfigsResponse()
	authz.merge(lresp)
	kept, refused = nil, map[string]int16{}
	for _, r := range legacy.Resources {
		kept = append(kept, ConfigResourceType(r.ResourceType).String()+"/"+r.ResourceName)
	}
	for _, r := range lresp.Resources {
		refused[ConfigResourceType(r.ResourceType).String()+"/"+r.ResourceName] = r.ErrorCode
	}
	check("AlterConfigs", kept, refused)

	authz = authorizeConfigs(g, describe, 4)
	dresp := kmsg.NewPtrDescribeConfigsResponse()
	authz.merge(dresp)
	kept, refused = nil, map[string]int16{}
	for _, r := range describe.Resources {
		kept = append(kept, ConfigResourceType(r.ResourceType).String()+"/"+r.ResourceName)
	}
	for _, r := range dresp.Resources {
		refused[ConfigResourceType(r.ResourceType).String()+"/"+r.ResourceName] = r.ErrorCode
	}
	check("DescribeConfigs", kept, refused)
	if s := ConfigGroup.String(); s != "GROUP" {
		t.Errorf("ConfigGroup.String() = %q", s)
	}
}
