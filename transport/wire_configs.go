package transport

// wire_configs.go translates DescribeConfigs, AlterConfigs and
// IncrementalAlterConfigs to and from Kafka's wire protocol.

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

func describeConfigsToWire(r *DescribeConfigsRequest, version int16) *kmsg.DescribeConfigsRequest {
	w := kmsg.NewPtrDescribeConfigsRequest()
	w.Version = version
	for _, res := range r.Resources {
		wr := kmsg.NewDescribeConfigsRequestResource()
		wr.ResourceType, wr.ResourceName = kmsg.ConfigResourceType(res.Type), res.Name
		w.Resources = append(w.Resources, wr)
	}
	return w
}

func describeConfigsFromWire(w *kmsg.DescribeConfigsRequest) *DescribeConfigsRequest {
	r := &DescribeConfigsRequest{}
	for _, res := range w.Resources {
		r.Resources = append(r.Resources, ConfigResource{Type: ConfigResourceType(res.ResourceType), Name: res.ResourceName})
	}
	return r
}

// describeConfigsResponseToWire answers in the request's order; when a
// request names config keys, only those are answered.
func describeConfigsResponseToWire(req *kmsg.DescribeConfigsRequest, r *DescribeConfigsResponse, version int16) *kmsg.DescribeConfigsResponse {
	w := kmsg.NewPtrDescribeConfigsResponse()
	w.Version = version
	for i, res := range r.Resources {
		wr := kmsg.NewDescribeConfigsResponseResource()
		wr.ResourceType, wr.ResourceName = kmsg.ConfigResourceType(res.Type), res.Name
		wr.ErrorCode, wr.ErrorMessage = CodeOf(res.Err), errorMessage(res.Err)
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
	}
	return kmsg.ConfigSourceDynamicTopicConfig
}

func describeConfigsResponseFromWire(w *kmsg.DescribeConfigsResponse) *DescribeConfigsResponse {
	r := &DescribeConfigsResponse{}
	for _, wr := range w.Resources {
		res := ResourceConfigs{ConfigResource: ConfigResource{Type: ConfigResourceType(wr.ResourceType), Name: wr.ResourceName},
			Err: wireError(wr.ErrorCode, wr.ErrorMessage)}
		for _, wc := range wr.Configs {
			c := ConfigEntry{Name: wc.Name, ReadOnly: wc.ReadOnly,
				IsDefault: wc.Source == kmsg.ConfigSourceDefaultConfig || (w.Version < 1 && wc.IsDefault)}
			if wc.Value != nil {
				c.Value = *wc.Value
			}
			res.Configs = append(res.Configs, c)
		}
		r.Resources = append(r.Resources, res)
	}
	return r
}

// incrementalAlterConfigsToWire sends the changes of r; a Replace
// alteration has no incremental form and goes as AlterConfigs instead
// (see TCPClient.AlterConfigs).
func incrementalAlterConfigsToWire(r *AlterConfigsRequest, version int16) *kmsg.IncrementalAlterConfigsRequest {
	w := kmsg.NewPtrIncrementalAlterConfigsRequest()
	w.Version, w.ValidateOnly = version, r.ValidateOnly
	for _, res := range r.Resources {
		wr := kmsg.NewIncrementalAlterConfigsRequestResource()
		wr.ResourceType, wr.ResourceName = kmsg.ConfigResourceType(res.Type), res.Name
		for _, c := range res.Changes {
			wc := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
			wc.Name, wc.Op = c.Name, kmsg.IncrementalAlterConfigOp(c.Op)
			if c.Op != ConfigDelete {
				wc.Value = kmsg.StringPtr(c.Value)
			}
			wr.Configs = append(wr.Configs, wc)
		}
		w.Resources = append(w.Resources, wr)
	}
	return w
}

func incrementalAlterConfigsFromWire(w *kmsg.IncrementalAlterConfigsRequest) *AlterConfigsRequest {
	r := &AlterConfigsRequest{ValidateOnly: w.ValidateOnly}
	for _, wr := range w.Resources {
		res := ConfigAlteration{ConfigResource: ConfigResource{Type: ConfigResourceType(wr.ResourceType), Name: wr.ResourceName}}
		for _, wc := range wr.Configs {
			c := ConfigChange{Name: wc.Name, Op: ConfigOp(wc.Op)}
			if wc.Value != nil {
				c.Value = *wc.Value
			}
			res.Changes = append(res.Changes, c)
		}
		r.Resources = append(r.Resources, res)
	}
	return r
}

// alterConfigsToWire sends r as Kafka's older AlterConfigs, which sets a
// resource's whole set: only ConfigSet changes are expressible.
func alterConfigsToWire(r *AlterConfigsRequest, version int16) *kmsg.AlterConfigsRequest {
	w := kmsg.NewPtrAlterConfigsRequest()
	w.Version, w.ValidateOnly = version, r.ValidateOnly
	for _, res := range r.Resources {
		wr := kmsg.NewAlterConfigsRequestResource()
		wr.ResourceType, wr.ResourceName = kmsg.ConfigResourceType(res.Type), res.Name
		for _, c := range res.Changes {
			wc := kmsg.NewAlterConfigsRequestResourceConfig()
			wc.Name, wc.Value = c.Name, kmsg.StringPtr(c.Value)
			wr.Configs = append(wr.Configs, wc)
		}
		w.Resources = append(w.Resources, wr)
	}
	return w
}

// alterConfigsFromWire reads Kafka's AlterConfigs: each resource's configs
// replace its own set.
func alterConfigsFromWire(w *kmsg.AlterConfigsRequest) *AlterConfigsRequest {
	r := &AlterConfigsRequest{ValidateOnly: w.ValidateOnly}
	for _, wr := range w.Resources {
		res := ConfigAlteration{ConfigResource: ConfigResource{Type: ConfigResourceType(wr.ResourceType), Name: wr.ResourceName}, Replace: true}
		for _, wc := range wr.Configs {
			c := ConfigChange{Name: wc.Name, Op: ConfigSet}
			if wc.Value == nil {
				c.Op = ConfigDelete
			} else {
				c.Value = *wc.Value
			}
			res.Changes = append(res.Changes, c)
		}
		r.Resources = append(r.Resources, res)
	}
	return r
}

func incrementalAlterConfigsResponseToWire(r *AlterConfigsResponse, version int16) *kmsg.IncrementalAlterConfigsResponse {
	w := kmsg.NewPtrIncrementalAlterConfigsResponse()
	w.Version = version
	for _, res := range r.Resources {
		wr := kmsg.NewIncrementalAlterConfigsResponseResource()
		wr.ResourceType, wr.ResourceName = kmsg.ConfigResourceType(res.Type), res.Name
		wr.ErrorCode, wr.ErrorMessage = CodeOf(res.Err), errorMessage(res.Err)
		w.Resources = append(w.Resources, wr)
	}
	return w
}

func alterConfigsResponseToWire(r *AlterConfigsResponse, version int16) *kmsg.AlterConfigsResponse {
	w := kmsg.NewPtrAlterConfigsResponse()
	w.Version = version
	for _, res := range r.Resources {
		wr := kmsg.NewAlterConfigsResponseResource()
		wr.ResourceType, wr.ResourceName = kmsg.ConfigResourceType(res.Type), res.Name
		wr.ErrorCode, wr.ErrorMessage = CodeOf(res.Err), errorMessage(res.Err)
		w.Resources = append(w.Resources, wr)
	}
	return w
}

func incrementalAlterConfigsResponseFromWire(w *kmsg.IncrementalAlterConfigsResponse) *AlterConfigsResponse {
	r := &AlterConfigsResponse{}
	for _, wr := range w.Resources {
		r.Resources = append(r.Resources, ConfigResult{ConfigResource: ConfigResource{Type: ConfigResourceType(wr.ResourceType), Name: wr.ResourceName},
			Err: wireError(wr.ErrorCode, wr.ErrorMessage)})
	}
	return r
}

func alterConfigsResponseFromWire(w *kmsg.AlterConfigsResponse) *AlterConfigsResponse {
	r := &AlterConfigsResponse{}
	for _, wr := range w.Resources {
		r.Resources = append(r.Resources, ConfigResult{ConfigResource: ConfigResource{Type: ConfigResourceType(wr.ResourceType), Name: wr.ResourceName},
			Err: wireError(wr.ErrorCode, wr.ErrorMessage)})
	}
	return r
}
