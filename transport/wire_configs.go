package transport

// wire_configs.go translates DescribeConfigs, AlterConfigs and
// IncrementalAlterConfigs to and from Kafka's wire protocol.

import (
	"github.com/partlog/partlog/kafka"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// wireResource is the config resource a wire message names.
func wireResource(t kmsg.ConfigResourceType, name string) ConfigResource {
	return ConfigResource{Type: ConfigResourceType(t), Name: name}
}

func describeConfigsToWire(r *DescribeConfigsRequest, version int16) *kmsg.DescribeConfigsRequest {
	w := versioned(kmsg.NewPtrDescribeConfigsRequest(), version)
	w.Resources = each(r.Resources, func(res ConfigResource) kmsg.DescribeConfigsRequestResource {
		wr := kmsg.NewDescribeConfigsRequestResource()
		wr.ResourceType, wr.ResourceName = kmsg.ConfigResourceType(res.Type), res.Name
		return wr
	})
	return w
}

func describeConfigsFromWire(w *kmsg.DescribeConfigsRequest) *DescribeConfigsRequest {
	return &DescribeConfigsRequest{Resources: each(w.Resources, func(wr kmsg.DescribeConfigsRequestResource) ConfigResource {
		return wireResource(wr.ResourceType, wr.ResourceName)
	})}
}

// describeConfigsResponseToWire answers in the request's order; when a
// request names config keys, only those are answered.
func describeConfigsResponseToWire(req *kmsg.DescribeConfigsRequest, r *DescribeConfigsResponse, version int16) *kmsg.DescribeConfigsResponse {
	w := versioned(kmsg.NewPtrDescribeConfigsResponse(), version)
	for i, res := range r.Resources {
		wr := kmsg.NewDescribeConfigsResponseResource()
		wr.ResourceType, wr.ResourceName = kmsg.ConfigResourceType(res.Type), res.Name
		wr.ErrorCode, wr.ErrorMessage = kafka.CodeOf(res.Err), errorMessage(res.Err)
		var keys map[string]bool
		if i < len(req.Resources) && req.Resources[i].ConfigNames != nil {
			keys = map[string]bool{}
			for _, k := range req.Resources[i].ConfigNames {
				keys[k] = true
			}
		}
		for _, c := range res.Configs {
			if keys != nil && !keys[c.Name] {
				continue
			}
			wc := kmsg.NewDescribeConfigsResponseResourceConfig()
			wc.Name, wc.Value, wc.IsDefault, wc.ReadOnly = c.Name, kmsg.StringPtr(c.Value), c.IsDefault, c.ReadOnly
			wc.Source = configSource(res.Type, c)
			wr.Configs = append(wr.Configs, wc)
		}
		w.Resources = append(w.Resources, wr)
	}
	return w
}

// configSource is where Kafka would say a config's value comes from.
func configSource(t ConfigResourceType, c ConfigEntry) kmsg.ConfigSource {
	switch {
	case c.IsDefault:
		return kmsg.ConfigSourceDefaultConfig
	case t == ConfigBroker && c.ReadOnly:
		return kmsg.ConfigSourceStaticBrokerConfig
	case t == ConfigBroker:
		return kmsg.ConfigSourceDynamicBrokerConfig
	case t == ConfigGroup:
		return kmsg.ConfigSourceGroupConfig
	}
	return kmsg.ConfigSourceDynamicTopicConfig
}

func describeConfigsResponseFromWire(w *kmsg.DescribeConfigsResponse) *DescribeConfigsResponse {
	return &DescribeConfigsResponse{Resources: each(w.Resources, func(wr kmsg.DescribeConfigsResponseResource) ResourceConfigs {
		return ResourceConfigs{ConfigResource: wireResource(wr.ResourceType, wr.ResourceName), Err: wireError(wr.ErrorCode, wr.ErrorMessage),
			Configs: each(wr.Configs, func(wc kmsg.DescribeConfigsResponseResourceConfig) ConfigEntry {
				return ConfigEntry{Name: wc.Name, Value: deref(wc.Value), ReadOnly: wc.ReadOnly,
					IsDefault: wc.Source == kmsg.ConfigSourceDefaultConfig || (w.Version < 1 && wc.IsDefault)}
			})}
	})}
}

// incrementalAlterConfigsToWire sends the changes of r; a Replace
// alteration has no incremental form and goes as AlterConfigs instead
// (see TCPClient.AlterConfigs).
func incrementalAlterConfigsToWire(r *AlterConfigsRequest, version int16) *kmsg.IncrementalAlterConfigsRequest {
	w := versioned(kmsg.NewPtrIncrementalAlterConfigsRequest(), version)
	w.ValidateOnly = r.ValidateOnly
	w.Resources = each(r.Resources, func(res ConfigAlteration) kmsg.IncrementalAlterConfigsRequestResource {
		wr := kmsg.NewIncrementalAlterConfigsRequestResource()
		wr.ResourceType, wr.ResourceName = kmsg.ConfigResourceType(res.Type), res.Name
		wr.Configs = each(res.Changes, func(c ConfigChange) kmsg.IncrementalAlterConfigsRequestResourceConfig {
			wc := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
			wc.Name, wc.Op = c.Name, kmsg.IncrementalAlterConfigOp(c.Op)
			if c.Op != ConfigDelete {
				wc.Value = kmsg.StringPtr(c.Value)
			}
			return wc
		})
		return wr
	})
	return w
}

func incrementalAlterConfigsFromWire(w *kmsg.IncrementalAlterConfigsRequest) *AlterConfigsRequest {
	return &AlterConfigsRequest{ValidateOnly: w.ValidateOnly,
		Resources: each(w.Resources, func(wr kmsg.IncrementalAlterConfigsRequestResource) ConfigAlteration {
			return ConfigAlteration{ConfigResource: wireResource(wr.ResourceType, wr.ResourceName),
				Changes: each(wr.Configs, func(wc kmsg.IncrementalAlterConfigsRequestResourceConfig) ConfigChange {
					return ConfigChange{Name: wc.Name, Op: ConfigOp(wc.Op), Value: deref(wc.Value)}
				})}
		})}
}

// alterConfigsToWire sends r as Kafka's older AlterConfigs, which sets a
// resource's whole set: only ConfigSet changes are expressible.
func alterConfigsToWire(r *AlterConfigsRequest, version int16) *kmsg.AlterConfigsRequest {
	w := versioned(kmsg.NewPtrAlterConfigsRequest(), version)
	w.ValidateOnly = r.ValidateOnly
	w.Resources = each(r.Resources, func(res ConfigAlteration) kmsg.AlterConfigsRequestResource {
		wr := kmsg.NewAlterConfigsRequestResource()
		wr.ResourceType, wr.ResourceName = kmsg.ConfigResourceType(res.Type), res.Name
		wr.Configs = each(res.Changes, func(c ConfigChange) kmsg.AlterConfigsRequestResourceConfig {
			wc := kmsg.NewAlterConfigsRequestResourceConfig()
			wc.Name, wc.Value = c.Name, kmsg.StringPtr(c.Value)
			return wc
		})
		return wr
	})
	return w
}

// alterConfigsFromWire reads Kafka's AlterConfigs: each resource's configs
// replace its own set.
func alterConfigsFromWire(w *kmsg.AlterConfigsRequest) *AlterConfigsRequest {
	return &AlterConfigsRequest{ValidateOnly: w.ValidateOnly,
		Resources: each(w.Resources, func(wr kmsg.AlterConfigsRequestResource) ConfigAlteration {
			return ConfigAlteration{ConfigResource: wireResource(wr.ResourceType, wr.ResourceName), Replace: true,
				Changes: each(wr.Configs, func(wc kmsg.AlterConfigsRequestResourceConfig) ConfigChange {
					if wc.Value == nil {
						return ConfigChange{Name: wc.Name, Op: ConfigDelete}
					}
					return ConfigChange{Name: wc.Name, Op: ConfigSet, Value: *wc.Value}
				})}
		})}
}

func incrementalAlterConfigsResponseToWire(r *AlterConfigsResponse, version int16) *kmsg.IncrementalAlterConfigsResponse {
	w := versioned(kmsg.NewPtrIncrementalAlterConfigsResponse(), version)
	w.Resources = each(r.Resources, func(res ConfigResult) kmsg.IncrementalAlterConfigsResponseResource {
		wr := kmsg.NewIncrementalAlterConfigsResponseResource()
		wr.ResourceType, wr.ResourceName = kmsg.ConfigResourceType(res.Type), res.Name
		wr.ErrorCode, wr.ErrorMessage = kafka.CodeOf(res.Err), errorMessage(res.Err)
		return wr
	})
	return w
}

func alterConfigsResponseToWire(r *AlterConfigsResponse, version int16) *kmsg.AlterConfigsResponse {
	w := versioned(kmsg.NewPtrAlterConfigsResponse(), version)
	w.Resources = each(r.Resources, func(res ConfigResult) kmsg.AlterConfigsResponseResource {
		wr := kmsg.NewAlterConfigsResponseResource()
		wr.ResourceType, wr.ResourceName = kmsg.ConfigResourceType(res.Type), res.Name
		wr.ErrorCode, wr.ErrorMessage = kafka.CodeOf(res.Err), errorMessage(res.Err)
		return wr
	})
	return w
}

func incrementalAlterConfigsResponseFromWire(w *kmsg.IncrementalAlterConfigsResponse) *AlterConfigsResponse {
	return &AlterConfigsResponse{Resources: each(w.Resources, func(wr kmsg.IncrementalAlterConfigsResponseResource) ConfigResult {
		return ConfigResult{ConfigResource: wireResource(wr.ResourceType, wr.ResourceName), Err: wireError(wr.ErrorCode, wr.ErrorMessage)}
	})}
}

func alterConfigsResponseFromWire(w *kmsg.AlterConfigsResponse) *AlterConfigsResponse {
	return &AlterConfigsResponse{Resources: each(w.Resources, func(wr kmsg.AlterConfigsResponseResource) ConfigResult {
		return ConfigResult{ConfigResource: wireResource(wr.ResourceType, wr.ResourceName), Err: wireError(wr.ErrorCode, wr.ErrorMessage)}
	})}
}
