package transport

// wire_admin.go translates the admin requests to and from Kafka's wire
// protocol.

import (
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func createTopicsToWire(r *CreateTopicsRequest, version int16) *kmsg.CreateTopicsRequest {
	w := kmsg.NewPtrCreateTopicsRequest()
	w.Version = version
	w.TimeoutMillis = millis(r.Timeout)
	w.ValidateOnly = r.ValidateOnly
	for _, t := range r.Topics {
		wt := kmsg.NewCreateTopicsRequestTopic()
		wt.Topic, wt.NumPartitions, wt.ReplicationFactor = t.Name, t.Partitions, t.ReplicationFactor
		for k, v := range t.Configs {
			c := kmsg.NewCreateTopicsRequestTopicConfig()
			c.Name, c.Value = k, kmsg.StringPtr(v)
			wt.Configs = append(wt.Configs, c)
		}
		w.Topics = append(w.Topics, wt)
	}
	return w
}

func createTopicsFromWire(w *kmsg.CreateTopicsRequest) *CreateTopicsRequest {
	r := &CreateTopicsRequest{Timeout: time.Duration(w.TimeoutMillis) * time.Millisecond, ValidateOnly: w.ValidateOnly}
	for _, wt := range w.Topics {
		t := CreatableTopic{Name: wt.Topic, Partitions: wt.NumPartitions, ReplicationFactor: wt.ReplicationFactor}
		if len(wt.Configs) > 0 {
			t.Configs = map[string]string{}
			for _, c := range wt.Configs {
				if c.Value != nil {
					t.Configs[c.Name] = *c.Value
				}
			}
		}
		r.Topics = append(r.Topics, t)
	}
	return r
}

func createTopicsResponseToWire(r *CreateTopicsResponse, version int16) *kmsg.CreateTopicsResponse {
	w := kmsg.NewPtrCreateTopicsResponse()
	w.Version = version
	for _, t := range r.Topics {
		wt := kmsg.NewCreateTopicsResponseTopic()
		wt.Topic, wt.ErrorCode, wt.ErrorMessage = t.Name, CodeOf(t.Err), errorMessage(t.Err)
		w.Topics = append(w.Topics, wt)
	}
	return w
}

func createTopicsResponseFromWire(w *kmsg.CreateTopicsResponse) *CreateTopicsResponse {
	r := &CreateTopicsResponse{}
	for _, wt := range w.Topics {
		r.Topics = append(r.Topics, TopicResult{Name: wt.Topic, Err: wireError(wt.ErrorCode, wt.ErrorMessage)})
	}
	return r
}

func deleteTopicsToWire(r *DeleteTopicsRequest, version int16) *kmsg.DeleteTopicsRequest {
	w := kmsg.NewPtrDeleteTopicsRequest()
	w.Version = version
	w.TimeoutMillis = millis(r.Timeout)
	w.TopicNames = append([]string(nil), r.Topics...)
	return w
}

func deleteTopicsFromWire(w *kmsg.DeleteTopicsRequest) *DeleteTopicsRequest {
	return &DeleteTopicsRequest{Topics: w.TopicNames, Timeout: time.Duration(w.TimeoutMillis) * time.Millisecond}
}

func deleteTopicsResponseToWire(r *DeleteTopicsResponse, version int16) *kmsg.DeleteTopicsResponse {
	w := kmsg.NewPtrDeleteTopicsResponse()
	w.Version = version
	for _, t := range r.Topics {
		wt := kmsg.NewDeleteTopicsResponseTopic()
		wt.Topic, wt.ErrorCode, wt.ErrorMessage = kmsg.StringPtr(t.Name), CodeOf(t.Err), errorMessage(t.Err)
		w.Topics = append(w.Topics, wt)
	}
	return w
}

func deleteTopicsResponseFromWire(w *kmsg.DeleteTopicsResponse) *DeleteTopicsResponse {
	r := &DeleteTopicsResponse{}
	for _, wt := range w.Topics {
		res := TopicResult{Err: wireError(wt.ErrorCode, wt.ErrorMessage)}
		if wt.Topic != nil {
			res.Name = *wt.Topic
		}
		r.Topics = append(r.Topics, res)
	}
	return r
}

func describeConfigsToWire(r *DescribeConfigsRequest, version int16) *kmsg.DescribeConfigsRequest {
	w := kmsg.NewPtrDescribeConfigsRequest()
	w.Version = version
	for _, name := range r.Topics {
		res := kmsg.NewDescribeConfigsRequestResource()
		res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeTopic, name
		w.Resources = append(w.Resources, res)
	}
	return w
}

// describeConfigsFromWire takes the TOPIC resources of a request; the
// server answers the others with INVALID_REQUEST.
func describeConfigsFromWire(w *kmsg.DescribeConfigsRequest) *DescribeConfigsRequest {
	r := &DescribeConfigsRequest{}
	for _, res := range w.Resources {
		if res.ResourceType == kmsg.ConfigResourceTypeTopic {
			r.Topics = append(r.Topics, res.ResourceName)
		}
	}
	return r
}

func describeConfigsResponseToWire(req *kmsg.DescribeConfigsRequest, r *DescribeConfigsResponse, version int16) *kmsg.DescribeConfigsResponse {
	w := kmsg.NewPtrDescribeConfigsResponse()
	w.Version = version
	answers := map[string]TopicConfigs{}
	for _, t := range r.Topics {
		answers[t.Name] = t
	}
	for _, res := range req.Resources {
		wr := kmsg.NewDescribeConfigsResponseResource()
		wr.ResourceType, wr.ResourceName = res.ResourceType, res.ResourceName
		t, ok := answers[res.ResourceName]
		if res.ResourceType != kmsg.ConfigResourceTypeTopic || !ok {
			wr.ErrorCode = ErrInvalidRequest.Code
			wr.ErrorMessage = kmsg.StringPtr("partlog describes the configs of topics only")
			w.Resources = append(w.Resources, wr)
			continue
		}
		wr.ErrorCode, wr.ErrorMessage = CodeOf(t.Err), errorMessage(t.Err)
		for _, c := range t.Configs {
			wc := kmsg.NewDescribeConfigsResponseResourceConfig()
			wc.Name, wc.Value, wc.IsDefault = c.Name, kmsg.StringPtr(c.Value), c.IsDefault
			wc.Source = kmsg.ConfigSourceDynamicTopicConfig
			if c.IsDefault {
				wc.Source = kmsg.ConfigSourceDefaultConfig
			}
			wr.Configs = append(wr.Configs, wc)
		}
		w.Resources = append(w.Resources, wr)
	}
	return w
}

func describeConfigsResponseFromWire(w *kmsg.DescribeConfigsResponse) *DescribeConfigsResponse {
	r := &DescribeConfigsResponse{}
	for _, wr := range w.Resources {
		t := TopicConfigs{Name: wr.ResourceName, Err: wireError(wr.ErrorCode, wr.ErrorMessage)}
		for _, wc := range wr.Configs {
			c := ConfigEntry{Name: wc.Name, IsDefault: wc.Source == kmsg.ConfigSourceDefaultConfig || (w.Version < 1 && wc.IsDefault)}
			if wc.Value != nil {
				c.Value = *wc.Value
			}
			t.Configs = append(t.Configs, c)
		}
		r.Topics = append(r.Topics, t)
	}
	return r
}
