package transport

// wire_admin.go translates the admin requests to and from Kafka's wire
// protocol.

import (
	"time"

	"github.com/partlog/partlog/kafka"
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
		wt.Topic, wt.ErrorCode, wt.ErrorMessage = t.Name, kafka.CodeOf(t.Err), errorMessage(t.Err)
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
		wt.Topic, wt.ErrorCode, wt.ErrorMessage = kmsg.StringPtr(t.Name), kafka.CodeOf(t.Err), errorMessage(t.Err)
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

// byTopic groups items by topic in the order each topic first appears.
func byTopic[T any](items []T, topicOf func(T) string) (topics []string, groups map[string][]T) {
	groups = map[string][]T{}
	for _, it := range items {
		t := topicOf(it)
		if _, ok := groups[t]; !ok {
			topics = append(topics, t)
		}
		groups[t] = append(groups[t], it)
	}
	return topics, groups
}

// topicPartitionsToWire turns partitions into a wire request's topics, nil
// for nil (every partition, where a request allows it).
func topicPartitionsToWire[W any](tps []kafka.TopicPartition, newTopic func(topic string, partitions []int32) W) []W {
	if tps == nil {
		return nil
	}
	topics, groups := byTopic(tps, func(tp kafka.TopicPartition) string { return tp.Topic })
	ws := make([]W, 0, len(topics))
	for _, t := range topics {
		ids := make([]int32, 0, len(groups[t]))
		for _, tp := range groups[t] {
			ids = append(ids, tp.Partition)
		}
		ws = append(ws, newTopic(t, ids))
	}
	return ws
}

// topicPartitionsFromWire flattens a wire request's topics, nil for a nil
// list (every partition).
func topicPartitionsFromWire[W any](ws []W, parts func(W) (string, []int32)) []kafka.TopicPartition {
	if ws == nil {
		return nil
	}
	tps := []kafka.TopicPartition{}
	for _, w := range ws {
		topic, ids := parts(w)
		for _, id := range ids {
			tps = append(tps, kafka.TopicPartition{Topic: topic, Partition: id})
		}
	}
	return tps
}

func createPartitionsToWire(r *CreatePartitionsRequest, version int16) *kmsg.CreatePartitionsRequest {
	w := kmsg.NewPtrCreatePartitionsRequest()
	w.Version, w.TimeoutMillis, w.ValidateOnly = version, millis(r.Timeout), r.ValidateOnly
	for _, t := range r.Topics {
		wt := kmsg.NewCreatePartitionsRequestTopic()
		wt.Topic, wt.Count = t.Topic, t.Count
		w.Topics = append(w.Topics, wt)
	}
	return w
}

// createPartitionsFromWire reads a CreatePartitions request. A manual
// assignment is refused by the caller (see Server.dispatchAdmin): partlog
// places new partitions itself.
func createPartitionsFromWire(w *kmsg.CreatePartitionsRequest) *CreatePartitionsRequest {
	r := &CreatePartitionsRequest{Timeout: time.Duration(w.TimeoutMillis) * time.Millisecond, ValidateOnly: w.ValidateOnly}
	for _, wt := range w.Topics {
		r.Topics = append(r.Topics, PartitionCount{Topic: wt.Topic, Count: wt.Count})
	}
	return r
}

func createPartitionsResponseToWire(r *CreatePartitionsResponse, version int16) *kmsg.CreatePartitionsResponse {
	w := kmsg.NewPtrCreatePartitionsResponse()
	w.Version = version
	for _, t := range r.Topics {
		wt := kmsg.NewCreatePartitionsResponseTopic()
		wt.Topic, wt.ErrorCode, wt.ErrorMessage = t.Name, kafka.CodeOf(t.Err), errorMessage(t.Err)
		w.Topics = append(w.Topics, wt)
	}
	return w
}

func createPartitionsResponseFromWire(w *kmsg.CreatePartitionsResponse) *CreatePartitionsResponse {
	r := &CreatePartitionsResponse{}
	for _, wt := range w.Topics {
		r.Topics = append(r.Topics, TopicResult{Name: wt.Topic, Err: wireError(wt.ErrorCode, wt.ErrorMessage)})
	}
	return r
}

func deleteRecordsToWire(r *DeleteRecordsRequest, version int16) *kmsg.DeleteRecordsRequest {
	w := kmsg.NewPtrDeleteRecordsRequest()
	w.Version, w.TimeoutMillis = version, millis(r.Timeout)
	topics, groups := byTopic(r.Partitions, func(p DeleteRecordsPartition) string { return p.Topic })
	for _, t := range topics {
		wt := kmsg.NewDeleteRecordsRequestTopic()
		wt.Topic = t
		for _, p := range groups[t] {
			wp := kmsg.NewDeleteRecordsRequestTopicPartition()
			wp.Partition, wp.Offset = p.Partition, p.Offset
			wt.Partitions = append(wt.Partitions, wp)
		}
		w.Topics = append(w.Topics, wt)
	}
	return w
}

func deleteRecordsFromWire(w *kmsg.DeleteRecordsRequest) *DeleteRecordsRequest {
	r := &DeleteRecordsRequest{Timeout: time.Duration(w.TimeoutMillis) * time.Millisecond}
	for _, wt := range w.Topics {
		for _, wp := range wt.Partitions {
			r.Partitions = append(r.Partitions, DeleteRecordsPartition{kafka.TopicPartition{Topic: wt.Topic, Partition: wp.Partition}, wp.Offset})
		}
	}
	return r
}

func deleteRecordsResponseToWire(r *DeleteRecordsResponse, version int16) *kmsg.DeleteRecordsResponse {
	w := kmsg.NewPtrDeleteRecordsResponse()
	w.Version = version
	topics, groups := byTopic(r.Partitions, func(p DeleteRecordsResult) string { return p.Topic })
	for _, t := range topics {
		wt := kmsg.NewDeleteRecordsResponseTopic()
		wt.Topic = t
		for _, p := range groups[t] {
			wp := kmsg.NewDeleteRecordsResponseTopicPartition()
			wp.Partition, wp.LowWatermark, wp.ErrorCode = p.Partition, p.LowWatermark, kafka.CodeOf(p.Err)
			wt.Partitions = append(wt.Partitions, wp)
		}
		w.Topics = append(w.Topics, wt)
	}
	return w
}

func deleteRecordsResponseFromWire(w *kmsg.DeleteRecordsResponse) *DeleteRecordsResponse {
	r := &DeleteRecordsResponse{}
	for _, wt := range w.Topics {
		for _, wp := range wt.Partitions {
			r.Partitions = append(r.Partitions, DeleteRecordsResult{TopicPartition: kafka.TopicPartition{Topic: wt.Topic, Partition: wp.Partition},
				LowWatermark: wp.LowWatermark, Err: kafka.ErrorForCode(wp.ErrorCode)})
		}
	}
	return r
}

func describeLogDirsToWire(r *DescribeLogDirsRequest, version int16) *kmsg.DescribeLogDirsRequest {
	w := kmsg.NewPtrDescribeLogDirsRequest()
	w.Version = version
	w.Topics = topicPartitionsToWire(r.Partitions, func(topic string, ids []int32) kmsg.DescribeLogDirsRequestTopic {
		wt := kmsg.NewDescribeLogDirsRequestTopic()
		wt.Topic, wt.Partitions = topic, ids
		return wt
	})
	return w
}

func describeLogDirsFromWire(w *kmsg.DescribeLogDirsRequest) *DescribeLogDirsRequest {
	return &DescribeLogDirsRequest{Partitions: topicPartitionsFromWire(w.Topics, func(wt kmsg.DescribeLogDirsRequestTopic) (string, []int32) {
		return wt.Topic, wt.Partitions
	})}
}

func describeLogDirsResponseToWire(r *DescribeLogDirsResponse, version int16) *kmsg.DescribeLogDirsResponse {
	w := kmsg.NewPtrDescribeLogDirsResponse()
	w.Version = version
	for _, d := range r.Dirs {
		wd := kmsg.NewDescribeLogDirsResponseDir()
		wd.Dir, wd.ErrorCode, wd.TotalBytes, wd.UsableBytes = d.Path, kafka.CodeOf(d.Err), d.TotalBytes, d.UsableBytes
		topics, groups := byTopic(d.Partitions, func(p LogDirPartition) string { return p.Topic })
		for _, t := range topics {
			wt := kmsg.NewDescribeLogDirsResponseDirTopic()
			wt.Topic = t
			for _, p := range groups[t] {
				wp := kmsg.NewDescribeLogDirsResponseDirTopicPartition()
				wp.Partition, wp.Size, wp.OffsetLag = p.Partition, p.Size, p.OffsetLag
				wt.Partitions = append(wt.Partitions, wp)
			}
			wd.Topics = append(wd.Topics, wt)
		}
		w.Dirs = append(w.Dirs, wd)
	}
	return w
}

func describeLogDirsResponseFromWire(w *kmsg.DescribeLogDirsResponse) *DescribeLogDirsResponse {
	r := &DescribeLogDirsResponse{}
	for _, wd := range w.Dirs {
		d := LogDir{Path: wd.Dir, Err: kafka.ErrorForCode(wd.ErrorCode), TotalBytes: wd.TotalBytes, UsableBytes: wd.UsableBytes}
		if w.Version < 4 {
			d.TotalBytes, d.UsableBytes = -1, -1
		}
		for _, wt := range wd.Topics {
			for _, wp := range wt.Partitions {
				d.Partitions = append(d.Partitions, LogDirPartition{TopicPartition: kafka.TopicPartition{Topic: wt.Topic, Partition: wp.Partition},
					Size: wp.Size, OffsetLag: wp.OffsetLag})
			}
		}
		r.Dirs = append(r.Dirs, d)
	}
	return r
}

func electLeadersToWire(r *ElectLeadersRequest, version int16) *kmsg.ElectLeadersRequest {
	w := kmsg.NewPtrElectLeadersRequest()
	w.Version, w.ElectionType, w.TimeoutMillis = version, int8(r.Type), millis(r.Timeout)
	w.Topics = topicPartitionsToWire(r.Partitions, func(topic string, ids []int32) kmsg.ElectLeadersRequestTopic {
		wt := kmsg.NewElectLeadersRequestTopic()
		wt.Topic, wt.Partitions = topic, ids
		return wt
	})
	return w
}

func electLeadersFromWire(w *kmsg.ElectLeadersRequest) *ElectLeadersRequest {
	r := &ElectLeadersRequest{Type: ElectionType(w.ElectionType), Timeout: time.Duration(w.TimeoutMillis) * time.Millisecond}
	if w.Version == 0 {
		r.Type = PreferredElection
	}
	r.Partitions = topicPartitionsFromWire(w.Topics, func(wt kmsg.ElectLeadersRequestTopic) (string, []int32) {
		return wt.Topic, wt.Partitions
	})
	return r
}

func electLeadersResponseToWire(r *ElectLeadersResponse, version int16) *kmsg.ElectLeadersResponse {
	w := kmsg.NewPtrElectLeadersResponse()
	w.Version = version
	topics, groups := byTopic(r.Partitions, func(p ElectionResult) string { return p.Topic })
	for _, t := range topics {
		wt := kmsg.NewElectLeadersResponseTopic()
		wt.Topic = t
		for _, p := range groups[t] {
			wp := kmsg.NewElectLeadersResponseTopicPartition()
			wp.Partition, wp.ErrorCode, wp.ErrorMessage = p.Partition, kafka.CodeOf(p.Err), errorMessage(p.Err)
			wt.Partitions = append(wt.Partitions, wp)
		}
		w.Topics = append(w.Topics, wt)
	}
	return w
}

func electLeadersResponseFromWire(w *kmsg.ElectLeadersResponse) *ElectLeadersResponse {
	r := &ElectLeadersResponse{}
	for _, wt := range w.Topics {
		for _, wp := range wt.Partitions {
			r.Partitions = append(r.Partitions, ElectionResult{kafka.TopicPartition{Topic: wt.Topic, Partition: wp.Partition}, wireError(wp.ErrorCode, wp.ErrorMessage)})
		}
	}
	return r
}

func describeProducersToWire(r *DescribeProducersRequest, version int16) *kmsg.DescribeProducersRequest {
	w := kmsg.NewPtrDescribeProducersRequest()
	w.Version = version
	w.Topics = topicPartitionsToWire(r.Partitions, func(topic string, ids []int32) kmsg.DescribeProducersRequestTopic {
		wt := kmsg.NewDescribeProducersRequestTopic()
		wt.Topic, wt.Partitions = topic, ids
		return wt
	})
	return w
}

func describeProducersFromWire(w *kmsg.DescribeProducersRequest) *DescribeProducersRequest {
	r := &DescribeProducersRequest{Partitions: topicPartitionsFromWire(w.Topics, func(wt kmsg.DescribeProducersRequestTopic) (string, []int32) {
		return wt.Topic, wt.Partitions
	})}
	if r.Partitions == nil {
		r.Partitions = []kafka.TopicPartition{}
	}
	return r
}

func describeProducersResponseToWire(r *DescribeProducersResponse, version int16) *kmsg.DescribeProducersResponse {
	w := kmsg.NewPtrDescribeProducersResponse()
	w.Version = version
	topics, groups := byTopic(r.Partitions, func(p PartitionProducers) string { return p.Topic })
	for _, t := range topics {
		wt := kmsg.NewDescribeProducersResponseTopic()
		wt.Topic = t
		for _, p := range groups[t] {
			wp := kmsg.NewDescribeProducersResponseTopicPartition()
			wp.Partition, wp.ErrorCode, wp.ErrorMessage = p.Partition, kafka.CodeOf(p.Err), errorMessage(p.Err)
			for _, s := range p.Producers {
				ws := kmsg.NewDescribeProducersResponseTopicPartitionActiveProducer()
				ws.ProducerID, ws.ProducerEpoch, ws.LastSequence = s.ProducerID, int32(s.ProducerEpoch), s.LastSequence
				ws.LastTimestamp, ws.CoordinatorEpoch, ws.CurrentTxnStartOffset = s.LastTimestamp, -1, s.CurrentTxnStartOffset
				wp.ActiveProducers = append(wp.ActiveProducers, ws)
			}
			wt.Partitions = append(wt.Partitions, wp)
		}
		w.Topics = append(w.Topics, wt)
	}
	return w
}

func describeProducersResponseFromWire(w *kmsg.DescribeProducersResponse) *DescribeProducersResponse {
	r := &DescribeProducersResponse{}
	for _, wt := range w.Topics {
		for _, wp := range wt.Partitions {
			p := PartitionProducers{TopicPartition: kafka.TopicPartition{Topic: wt.Topic, Partition: wp.Partition}, Err: wireError(wp.ErrorCode, wp.ErrorMessage)}
			for _, ws := range wp.ActiveProducers {
				p.Producers = append(p.Producers, ProducerState{ProducerID: ws.ProducerID, ProducerEpoch: int16(ws.ProducerEpoch),
					LastSequence: ws.LastSequence, LastTimestamp: ws.LastTimestamp, CurrentTxnStartOffset: ws.CurrentTxnStartOffset})
			}
			r.Partitions = append(r.Partitions, p)
		}
	}
	return r
}

func offsetsForLeaderEpochToWire(r *kafka.OffsetsForLeaderEpochRequest, version int16) *kmsg.OffsetForLeaderEpochRequest {
	w := kmsg.NewPtrOffsetForLeaderEpochRequest()
	w.Version, w.ReplicaID = version, r.ReplicaID
	topics, groups := byTopic(r.Partitions, func(p kafka.OffsetForLeaderEpochPartition) string { return p.Topic })
	for _, t := range topics {
		wt := kmsg.NewOffsetForLeaderEpochRequestTopic()
		wt.Topic = t
		for _, p := range groups[t] {
			wp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
			wp.Partition, wp.CurrentLeaderEpoch, wp.LeaderEpoch = p.Partition, p.CurrentLeaderEpoch, p.LeaderEpoch
			wt.Partitions = append(wt.Partitions, wp)
		}
		w.Topics = append(w.Topics, wt)
	}
	return w
}

func offsetsForLeaderEpochFromWire(w *kmsg.OffsetForLeaderEpochRequest) *kafka.OffsetsForLeaderEpochRequest {
	r := &kafka.OffsetsForLeaderEpochRequest{ReplicaID: w.ReplicaID}
	if w.Version < 3 {
		r.ReplicaID = kafka.ConsumerReplicaID
	}
	for _, wt := range w.Topics {
		for _, wp := range wt.Partitions {
			cur := wp.CurrentLeaderEpoch
			if w.Version < 2 {
				cur = -1
			}
			r.Partitions = append(r.Partitions, kafka.OffsetForLeaderEpochPartition{Topic: wt.Topic, Partition: wp.Partition,
				CurrentLeaderEpoch: cur, LeaderEpoch: wp.LeaderEpoch})
		}
	}
	return r
}

func offsetsForLeaderEpochResponseToWire(r *kafka.OffsetsForLeaderEpochResponse, version int16) *kmsg.OffsetForLeaderEpochResponse {
	w := kmsg.NewPtrOffsetForLeaderEpochResponse()
	w.Version = version
	topics, groups := byTopic(r.Partitions, func(p kafka.OffsetForLeaderEpochPartitionResponse) string { return p.Topic })
	for _, t := range topics {
		wt := kmsg.NewOffsetForLeaderEpochResponseTopic()
		wt.Topic = t
		for _, p := range groups[t] {
			wp := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
			wp.Partition, wp.ErrorCode, wp.LeaderEpoch, wp.EndOffset = p.Partition, kafka.CodeOf(p.Err), p.LeaderEpoch, p.EndOffset
			wt.Partitions = append(wt.Partitions, wp)
		}
		w.Topics = append(w.Topics, wt)
	}
	return w
}

func offsetsForLeaderEpochResponseFromWire(w *kmsg.OffsetForLeaderEpochResponse) *kafka.OffsetsForLeaderEpochResponse {
	r := &kafka.OffsetsForLeaderEpochResponse{}
	for _, wt := range w.Topics {
		for _, wp := range wt.Partitions {
			r.Partitions = append(r.Partitions, kafka.OffsetForLeaderEpochPartitionResponse{Topic: wt.Topic, Partition: wp.Partition,
				Err: kafka.ErrorForCode(wp.ErrorCode), EpochEndOffset: kafka.EpochEndOffset{LeaderEpoch: wp.LeaderEpoch, EndOffset: wp.EndOffset}})
		}
	}
	return r
}

// describeClusterResponse answers DescribeCluster from a Metadata answer:
// the same brokers, cluster id and controller.
func describeClusterResponse(md *MetadataResponse, version int16) *kmsg.DescribeClusterResponse {
	w := kmsg.NewPtrDescribeClusterResponse()
	w.Version = version
	w.ClusterID, w.ControllerID = md.ClusterID, md.ControllerID
	w.ClusterAuthorizedOperations = -2147483648 // not asked for, or not known (Kafka's INT32_MIN)
	for _, b := range md.Brokers {
		wb := kmsg.NewDescribeClusterResponseBroker()
		wb.NodeID, wb.Host, wb.Port = b.NodeID, b.Host, b.Port
		w.Brokers = append(w.Brokers, wb)
	}
	return w
}
