package transport

// wire_admin.go translates the admin requests to and from Kafka's wire
// protocol.

import (
	"github.com/partlog/partlog/kafka"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// groupTopics turns partitions of several topics, in any order, into a
// wire message's topics: one for each topic, in the order each first
// appears, with its partitions in order. part translates a partition and
// names its topic; newTopic makes a topic of its name and partitions.
// Nil gives nil (every partition, where a request allows it).
func groupTopics[T, WP, WT any](items []T, part func(T) (string, WP), newTopic func(string, []WP) WT) []WT {
	if items == nil {
		return nil
	}
	var topics []string
	groups := map[string][]WP{}
	for _, it := range items {
		t, wp := part(it)
		if _, ok := groups[t]; !ok {
			topics = append(topics, t)
		}
		groups[t] = append(groups[t], wp)
	}
	return each(orEmpty(topics), func(t string) WT { return newTopic(t, groups[t]) })
}

// flattenTopics turns a wire message's topics into partitions of several
// topics, topic by topic; nil when there are none. parts gives a topic's
// name and partitions, and item translates one partition of a topic.
func flattenTopics[WT, WP, T any](ws []WT, parts func(WT) (string, []WP), item func(string, WP) T) []T {
	var items []T
	for _, w := range ws {
		topic, wps := parts(w)
		for _, wp := range wps {
			items = append(items, item(topic, wp))
		}
	}
	return items
}

// topicPartitionsToWire turns partitions into a wire request's topics, nil
// for nil (every partition, where a request allows it).
func topicPartitionsToWire[WT any](tps []kafka.TopicPartition, newTopic func(topic string, partitions []int32) WT) []WT {
	return groupTopics(tps, func(tp kafka.TopicPartition) (string, int32) { return tp.Topic, tp.Partition }, newTopic)
}

// topicPartitionsFromWire flattens a wire request's topics, nil for a nil
// list (every partition).
func topicPartitionsFromWire[WT any](ws []WT, parts func(WT) (string, []int32)) []kafka.TopicPartition {
	if ws == nil {
		return nil
	}
	return orEmpty(flattenTopics(ws, parts, func(topic string, id int32) kafka.TopicPartition {
		return kafka.TopicPartition{Topic: topic, Partition: id}
	}))
}

func createTopicsToWire(r *CreateTopicsRequest, version int16) *kmsg.CreateTopicsRequest {
	w := versioned(kmsg.NewPtrCreateTopicsRequest(), version)
	w.TimeoutMillis, w.ValidateOnly = millis(r.Timeout), r.ValidateOnly
	w.Topics = each(r.Topics, func(t CreatableTopic) kmsg.CreateTopicsRequestTopic {
		wt := kmsg.NewCreateTopicsRequestTopic()
		wt.Topic, wt.NumPartitions, wt.ReplicationFactor = t.Name, t.Partitions, t.ReplicationFactor
		for k, v := range t.Configs {
			c := kmsg.NewCreateTopicsRequestTopicConfig()
			c.Name, c.Value = k, kmsg.StringPtr(v)
			wt.Configs = append(wt.Configs, c)
		}
		return wt
	})
	return w
}

func createTopicsFromWire(w *kmsg.CreateTopicsRequest) *CreateTopicsRequest {
	return &CreateTopicsRequest{Timeout: fromMillis(w.TimeoutMillis), ValidateOnly: w.ValidateOnly,
		Topics: each(w.Topics, func(wt kmsg.CreateTopicsRequestTopic) CreatableTopic {
			t := CreatableTopic{Name: wt.Topic, Partitions: wt.NumPartitions, ReplicationFactor: wt.ReplicationFactor}
			if len(wt.Configs) > 0 {
				t.Configs = map[string]string{}
				for _, c := range wt.Configs {
					if c.Value != nil {
						t.Configs[c.Name] = *c.Value
					}
				}
			}
			return t
		})}
}

func createTopicsResponseToWire(r *CreateTopicsResponse, version int16) *kmsg.CreateTopicsResponse {
	w := versioned(kmsg.NewPtrCreateTopicsResponse(), version)
	w.Topics = each(r.Topics, func(t TopicResult) kmsg.CreateTopicsResponseTopic {
		wt := kmsg.NewCreateTopicsResponseTopic()
		wt.Topic, wt.ErrorCode, wt.ErrorMessage = t.Name, kafka.CodeOf(t.Err), errorMessage(t.Err)
		return wt
	})
	return w
}

func createTopicsResponseFromWire(w *kmsg.CreateTopicsResponse) *CreateTopicsResponse {
	return &CreateTopicsResponse{Topics: each(w.Topics, func(wt kmsg.CreateTopicsResponseTopic) TopicResult {
		return TopicResult{Name: wt.Topic, Err: wireError(wt.ErrorCode, wt.ErrorMessage)}
	})}
}

func deleteTopicsToWire(r *DeleteTopicsRequest, version int16) *kmsg.DeleteTopicsRequest {
	w := versioned(kmsg.NewPtrDeleteTopicsRequest(), version)
	w.TimeoutMillis, w.TopicNames = millis(r.Timeout), append([]string(nil), r.Topics...)
	return w
}

func deleteTopicsFromWire(w *kmsg.DeleteTopicsRequest) *DeleteTopicsRequest {
	return &DeleteTopicsRequest{Topics: w.TopicNames, Timeout: fromMillis(w.TimeoutMillis)}
}

func deleteTopicsResponseToWire(r *DeleteTopicsResponse, version int16) *kmsg.DeleteTopicsResponse {
	w := versioned(kmsg.NewPtrDeleteTopicsResponse(), version)
	w.Topics = each(r.Topics, func(t TopicResult) kmsg.DeleteTopicsResponseTopic {
		wt := kmsg.NewDeleteTopicsResponseTopic()
		wt.Topic, wt.ErrorCode, wt.ErrorMessage = kmsg.StringPtr(t.Name), kafka.CodeOf(t.Err), errorMessage(t.Err)
		return wt
	})
	return w
}

func deleteTopicsResponseFromWire(w *kmsg.DeleteTopicsResponse) *DeleteTopicsResponse {
	return &DeleteTopicsResponse{Topics: each(w.Topics, func(wt kmsg.DeleteTopicsResponseTopic) TopicResult {
		return TopicResult{Name: deref(wt.Topic), Err: wireError(wt.ErrorCode, wt.ErrorMessage)}
	})}
}

func createPartitionsToWire(r *CreatePartitionsRequest, version int16) *kmsg.CreatePartitionsRequest {
	w := versioned(kmsg.NewPtrCreatePartitionsRequest(), version)
	w.TimeoutMillis, w.ValidateOnly = millis(r.Timeout), r.ValidateOnly
	w.Topics = each(r.Topics, func(t PartitionCount) kmsg.CreatePartitionsRequestTopic {
		wt := kmsg.NewCreatePartitionsRequestTopic()
		wt.Topic, wt.Count = t.Topic, t.Count
		return wt
	})
	return w
}

// createPartitionsFromWire reads a CreatePartitions request. A manual
// assignment is refused by the caller (see Server.dispatchAdmin): partlog
// places new partitions itself.
func createPartitionsFromWire(w *kmsg.CreatePartitionsRequest) *CreatePartitionsRequest {
	return &CreatePartitionsRequest{Timeout: fromMillis(w.TimeoutMillis), ValidateOnly: w.ValidateOnly,
		Topics: each(w.Topics, func(wt kmsg.CreatePartitionsRequestTopic) PartitionCount {
			return PartitionCount{Topic: wt.Topic, Count: wt.Count}
		})}
}

func createPartitionsResponseToWire(r *CreatePartitionsResponse, version int16) *kmsg.CreatePartitionsResponse {
	w := versioned(kmsg.NewPtrCreatePartitionsResponse(), version)
	w.Topics = each(r.Topics, func(t TopicResult) kmsg.CreatePartitionsResponseTopic {
		wt := kmsg.NewCreatePartitionsResponseTopic()
		wt.Topic, wt.ErrorCode, wt.ErrorMessage = t.Name, kafka.CodeOf(t.Err), errorMessage(t.Err)
		return wt
	})
	return w
}

func createPartitionsResponseFromWire(w *kmsg.CreatePartitionsResponse) *CreatePartitionsResponse {
	return &CreatePartitionsResponse{Topics: each(w.Topics, func(wt kmsg.CreatePartitionsResponseTopic) TopicResult {
		return TopicResult{Name: wt.Topic, Err: wireError(wt.ErrorCode, wt.ErrorMessage)}
	})}
}

func deleteRecordsToWire(r *DeleteRecordsRequest, version int16) *kmsg.DeleteRecordsRequest {
	w := versioned(kmsg.NewPtrDeleteRecordsRequest(), version)
	w.TimeoutMillis = millis(r.Timeout)
	w.Topics = groupTopics(r.Partitions,
		func(p DeleteRecordsPartition) (string, kmsg.DeleteRecordsRequestTopicPartition) {
			wp := kmsg.NewDeleteRecordsRequestTopicPartition()
			wp.Partition, wp.Offset = p.Partition, p.Offset
			return p.Topic, wp
		},
		func(topic string, wps []kmsg.DeleteRecordsRequestTopicPartition) kmsg.DeleteRecordsRequestTopic {
			return kmsg.DeleteRecordsRequestTopic{Topic: topic, Partitions: wps}
		})
	return w
}

func deleteRecordsFromWire(w *kmsg.DeleteRecordsRequest) *DeleteRecordsRequest {
	return &DeleteRecordsRequest{Timeout: fromMillis(w.TimeoutMillis),
		Partitions: flattenTopics(w.Topics,
			func(wt kmsg.DeleteRecordsRequestTopic) (string, []kmsg.DeleteRecordsRequestTopicPartition) {
				return wt.Topic, wt.Partitions
			},
			func(topic string, wp kmsg.DeleteRecordsRequestTopicPartition) DeleteRecordsPartition {
				return DeleteRecordsPartition{kafka.TopicPartition{Topic: topic, Partition: wp.Partition}, wp.Offset}
			})}
}

func deleteRecordsResponseToWire(r *DeleteRecordsResponse, version int16) *kmsg.DeleteRecordsResponse {
	w := versioned(kmsg.NewPtrDeleteRecordsResponse(), version)
	w.Topics = groupTopics(r.Partitions,
		func(p DeleteRecordsResult) (string, kmsg.DeleteRecordsResponseTopicPartition) {
			wp := kmsg.NewDeleteRecordsResponseTopicPartition()
			wp.Partition, wp.LowWatermark, wp.ErrorCode = p.Partition, p.LowWatermark, kafka.CodeOf(p.Err)
			return p.Topic, wp
		},
		func(topic string, wps []kmsg.DeleteRecordsResponseTopicPartition) kmsg.DeleteRecordsResponseTopic {
			return kmsg.DeleteRecordsResponseTopic{Topic: topic, Partitions: wps}
		})
	return w
}

func deleteRecordsResponseFromWire(w *kmsg.DeleteRecordsResponse) *DeleteRecordsResponse {
	return &DeleteRecordsResponse{Partitions: flattenTopics(w.Topics,
		func(wt kmsg.DeleteRecordsResponseTopic) (string, []kmsg.DeleteRecordsResponseTopicPartition) {
			return wt.Topic, wt.Partitions
		},
		func(topic string, wp kmsg.DeleteRecordsResponseTopicPartition) DeleteRecordsResult {
			return DeleteRecordsResult{TopicPartition: kafka.TopicPartition{Topic: topic, Partition: wp.Partition},
				LowWatermark: wp.LowWatermark, Err: kafka.ErrorForCode(wp.ErrorCode)}
		})}
}

func describeLogDirsToWire(r *DescribeLogDirsRequest, version int16) *kmsg.DescribeLogDirsRequest {
	w := versioned(kmsg.NewPtrDescribeLogDirsRequest(), version)
	w.Topics = topicPartitionsToWire(r.Partitions, func(topic string, ids []int32) kmsg.DescribeLogDirsRequestTopic {
		return kmsg.DescribeLogDirsRequestTopic{Topic: topic, Partitions: ids}
	})
	return w
}

func describeLogDirsFromWire(w *kmsg.DescribeLogDirsRequest) *DescribeLogDirsRequest {
	return &DescribeLogDirsRequest{Partitions: topicPartitionsFromWire(w.Topics, func(wt kmsg.DescribeLogDirsRequestTopic) (string, []int32) {
		return wt.Topic, wt.Partitions
	})}
}

func describeLogDirsResponseToWire(r *DescribeLogDirsResponse, version int16) *kmsg.DescribeLogDirsResponse {
	w := versioned(kmsg.NewPtrDescribeLogDirsResponse(), version)
	w.Dirs = each(r.Dirs, func(d LogDir) kmsg.DescribeLogDirsResponseDir {
		wd := kmsg.NewDescribeLogDirsResponseDir()
		wd.Dir, wd.ErrorCode, wd.TotalBytes, wd.UsableBytes = d.Path, kafka.CodeOf(d.Err), d.TotalBytes, d.UsableBytes
		wd.Topics = groupTopics(d.Partitions,
			func(p LogDirPartition) (string, kmsg.DescribeLogDirsResponseDirTopicPartition) {
				wp := kmsg.NewDescribeLogDirsResponseDirTopicPartition()
				wp.Partition, wp.Size, wp.OffsetLag = p.Partition, p.Size, p.OffsetLag
				return p.Topic, wp
			},
			func(topic string, wps []kmsg.DescribeLogDirsResponseDirTopicPartition) kmsg.DescribeLogDirsResponseDirTopic {
				return kmsg.DescribeLogDirsResponseDirTopic{Topic: topic, Partitions: wps}
			})
		return wd
	})
	return w
}

func describeLogDirsResponseFromWire(w *kmsg.DescribeLogDirsResponse) *DescribeLogDirsResponse {
	return &DescribeLogDirsResponse{Dirs: each(w.Dirs, func(wd kmsg.DescribeLogDirsResponseDir) LogDir {
		d := LogDir{Path: wd.Dir, Err: kafka.ErrorForCode(wd.ErrorCode), TotalBytes: wd.TotalBytes, UsableBytes: wd.UsableBytes}
		if w.Version < 4 {
			d.TotalBytes, d.UsableBytes = -1, -1
		}
		d.Partitions = flattenTopics(wd.Topics,
			func(wt kmsg.DescribeLogDirsResponseDirTopic) (string, []kmsg.DescribeLogDirsResponseDirTopicPartition) {
				return wt.Topic, wt.Partitions
			},
			func(topic string, wp kmsg.DescribeLogDirsResponseDirTopicPartition) LogDirPartition {
				return LogDirPartition{TopicPartition: kafka.TopicPartition{Topic: topic, Partition: wp.Partition},
					Size: wp.Size, OffsetLag: wp.OffsetLag}
			})
		return d
	})}
}

func electLeadersToWire(r *ElectLeadersRequest, version int16) *kmsg.ElectLeadersRequest {
	w := versioned(kmsg.NewPtrElectLeadersRequest(), version)
	w.ElectionType, w.TimeoutMillis = int8(r.Type), millis(r.Timeout)
	w.Topics = topicPartitionsToWire(r.Partitions, func(topic string, ids []int32) kmsg.ElectLeadersRequestTopic {
		return kmsg.ElectLeadersRequestTopic{Topic: topic, Partitions: ids}
	})
	return w
}

func electLeadersFromWire(w *kmsg.ElectLeadersRequest) *ElectLeadersRequest {
	r := &ElectLeadersRequest{Type: ElectionType(w.ElectionType), Timeout: fromMillis(w.TimeoutMillis)}
	if w.Version == 0 {
		r.Type = PreferredElection
	}
	r.Partitions = topicPartitionsFromWire(w.Topics, func(wt kmsg.ElectLeadersRequestTopic) (string, []int32) {
		return wt.Topic, wt.Partitions
	})
	return r
}

func electLeadersResponseToWire(r *ElectLeadersResponse, version int16) *kmsg.ElectLeadersResponse {
	w := versioned(kmsg.NewPtrElectLeadersResponse(), version)
	w.Topics = groupTopics(r.Partitions,
		func(p ElectionResult) (string, kmsg.ElectLeadersResponseTopicPartition) {
			wp := kmsg.NewElectLeadersResponseTopicPartition()
			wp.Partition, wp.ErrorCode, wp.ErrorMessage = p.Partition, kafka.CodeOf(p.Err), errorMessage(p.Err)
			return p.Topic, wp
		},
		func(topic string, wps []kmsg.ElectLeadersResponseTopicPartition) kmsg.ElectLeadersResponseTopic {
			return kmsg.ElectLeadersResponseTopic{Topic: topic, Partitions: wps}
		})
	return w
}

func electLeadersResponseFromWire(w *kmsg.ElectLeadersResponse) *ElectLeadersResponse {
	return &ElectLeadersResponse{Partitions: flattenTopics(w.Topics,
		func(wt kmsg.ElectLeadersResponseTopic) (string, []kmsg.ElectLeadersResponseTopicPartition) {
			return wt.Topic, wt.Partitions
		},
		func(topic string, wp kmsg.ElectLeadersResponseTopicPartition) ElectionResult {
			return ElectionResult{kafka.TopicPartition{Topic: topic, Partition: wp.Partition}, wireError(wp.ErrorCode, wp.ErrorMessage)}
		})}
}

func describeProducersToWire(r *DescribeProducersRequest, version int16) *kmsg.DescribeProducersRequest {
	w := versioned(kmsg.NewPtrDescribeProducersRequest(), version)
	w.Topics = topicPartitionsToWire(r.Partitions, func(topic string, ids []int32) kmsg.DescribeProducersRequestTopic {
		return kmsg.DescribeProducersRequestTopic{Topic: topic, Partitions: ids}
	})
	return w
}

func describeProducersFromWire(w *kmsg.DescribeProducersRequest) *DescribeProducersRequest {
	tps := topicPartitionsFromWire(w.Topics, func(wt kmsg.DescribeProducersRequestTopic) (string, []int32) {
		return wt.Topic, wt.Partitions
	})
	return &DescribeProducersRequest{Partitions: orEmpty(tps)}
}

func describeProducersResponseToWire(r *DescribeProducersResponse, version int16) *kmsg.DescribeProducersResponse {
	w := versioned(kmsg.NewPtrDescribeProducersResponse(), version)
	w.Topics = groupTopics(r.Partitions,
		func(p PartitionProducers) (string, kmsg.DescribeProducersResponseTopicPartition) {
			wp := kmsg.NewDescribeProducersResponseTopicPartition()
			wp.Partition, wp.ErrorCode, wp.ErrorMessage = p.Partition, kafka.CodeOf(p.Err), errorMessage(p.Err)
			wp.ActiveProducers = each(p.Producers, func(s ProducerState) kmsg.DescribeProducersResponseTopicPartitionActiveProducer {
				ws := kmsg.NewDescribeProducersResponseTopicPartitionActiveProducer()
				ws.ProducerID, ws.ProducerEpoch, ws.LastSequence = s.ProducerID, int32(s.ProducerEpoch), s.LastSequence
				ws.LastTimestamp, ws.CoordinatorEpoch, ws.CurrentTxnStartOffset = s.LastTimestamp, -1, s.CurrentTxnStartOffset
				return ws
			})
			return p.Topic, wp
		},
		func(topic string, wps []kmsg.DescribeProducersResponseTopicPartition) kmsg.DescribeProducersResponseTopic {
			return kmsg.DescribeProducersResponseTopic{Topic: topic, Partitions: wps}
		})
	return w
}

func describeProducersResponseFromWire(w *kmsg.DescribeProducersResponse) *DescribeProducersResponse {
	return &DescribeProducersResponse{Partitions: flattenTopics(w.Topics,
		func(wt kmsg.DescribeProducersResponseTopic) (string, []kmsg.DescribeProducersResponseTopicPartition) {
			return wt.Topic, wt.Partitions
		},
		func(topic string, wp kmsg.DescribeProducersResponseTopicPartition) PartitionProducers {
			return PartitionProducers{TopicPartition: kafka.TopicPartition{Topic: topic, Partition: wp.Partition},
				Err: wireError(wp.ErrorCode, wp.ErrorMessage),
				Producers: each(wp.ActiveProducers, func(ws kmsg.DescribeProducersResponseTopicPartitionActiveProducer) ProducerState {
					return ProducerState{ProducerID: ws.ProducerID, ProducerEpoch: int16(ws.ProducerEpoch), LastSequence: ws.LastSequence,
						LastTimestamp: ws.LastTimestamp, CurrentTxnStartOffset: ws.CurrentTxnStartOffset}
				})}
		})}
}

func offsetsForLeaderEpochToWire(r *kafka.OffsetsForLeaderEpochRequest, version int16) *kmsg.OffsetForLeaderEpochRequest {
	w := versioned(kmsg.NewPtrOffsetForLeaderEpochRequest(), version)
	w.ReplicaID = r.ReplicaID
	w.Topics = groupTopics(r.Partitions,
		func(p kafka.OffsetForLeaderEpochPartition) (string, kmsg.OffsetForLeaderEpochRequestTopicPartition) {
			wp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
			wp.Partition, wp.CurrentLeaderEpoch, wp.LeaderEpoch = p.Partition, p.CurrentLeaderEpoch, p.LeaderEpoch
			return p.Topic, wp
		},
		func(topic string, wps []kmsg.OffsetForLeaderEpochRequestTopicPartition) kmsg.OffsetForLeaderEpochRequestTopic {
			return kmsg.OffsetForLeaderEpochRequestTopic{Topic: topic, Partitions: wps}
		})
	return w
}

func offsetsForLeaderEpochFromWire(w *kmsg.OffsetForLeaderEpochRequest) *kafka.OffsetsForLeaderEpochRequest {
	r := &kafka.OffsetsForLeaderEpochRequest{ReplicaID: w.ReplicaID}
	if w.Version < 3 {
		r.ReplicaID = kafka.ConsumerReplicaID
	}
	r.Partitions = flattenTopics(w.Topics,
		func(wt kmsg.OffsetForLeaderEpochRequestTopic) (string, []kmsg.OffsetForLeaderEpochRequestTopicPartition) {
			return wt.Topic, wt.Partitions
		},
		func(topic string, wp kmsg.OffsetForLeaderEpochRequestTopicPartition) kafka.OffsetForLeaderEpochPartition {
			p := kafka.OffsetForLeaderEpochPartition{Topic: topic, Partition: wp.Partition,
				CurrentLeaderEpoch: wp.CurrentLeaderEpoch, LeaderEpoch: wp.LeaderEpoch}
			if w.Version < 2 {
				p.CurrentLeaderEpoch = -1
			}
			return p
		})
	return r
}

func offsetsForLeaderEpochResponseToWire(r *kafka.OffsetsForLeaderEpochResponse, version int16) *kmsg.OffsetForLeaderEpochResponse {
	w := versioned(kmsg.NewPtrOffsetForLeaderEpochResponse(), version)
	w.Topics = groupTopics(r.Partitions,
		func(p kafka.OffsetForLeaderEpochPartitionResponse) (string, kmsg.OffsetForLeaderEpochResponseTopicPartition) {
			wp := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
			wp.Partition, wp.ErrorCode, wp.LeaderEpoch, wp.EndOffset = p.Partition, kafka.CodeOf(p.Err), p.LeaderEpoch, p.EndOffset
			return p.Topic, wp
		},
		func(topic string, wps []kmsg.OffsetForLeaderEpochResponseTopicPartition) kmsg.OffsetForLeaderEpochResponseTopic {
			return kmsg.OffsetForLeaderEpochResponseTopic{Topic: topic, Partitions: wps}
		})
	return w
}

func offsetsForLeaderEpochResponseFromWire(w *kmsg.OffsetForLeaderEpochResponse) *kafka.OffsetsForLeaderEpochResponse {
	return &kafka.OffsetsForLeaderEpochResponse{Partitions: flattenTopics(w.Topics,
		func(wt kmsg.OffsetForLeaderEpochResponseTopic) (string, []kmsg.OffsetForLeaderEpochResponseTopicPartition) {
			return wt.Topic, wt.Partitions
		},
		func(topic string, wp kmsg.OffsetForLeaderEpochResponseTopicPartition) kafka.OffsetForLeaderEpochPartitionResponse {
			return kafka.OffsetForLeaderEpochPartitionResponse{Topic: topic, Partition: wp.Partition,
				Err: kafka.ErrorForCode(wp.ErrorCode), EpochEndOffset: kafka.EpochEndOffset{LeaderEpoch: wp.LeaderEpoch, EndOffset: wp.EndOffset}}
		})}
}

// describeClusterResponse answers DescribeCluster from a Metadata answer:
// the same brokers, cluster id and controller.
func describeClusterResponse(md *MetadataResponse, version int16) *kmsg.DescribeClusterResponse {
	w := versioned(kmsg.NewPtrDescribeClusterResponse(), version)
	w.ClusterID, w.ControllerID = md.ClusterID, md.ControllerID
	w.ClusterAuthorizedOperations = -2147483648 // not asked for, or not known (Kafka's INT32_MIN)
	w.Brokers = each(md.Brokers, func(b Broker) kmsg.DescribeClusterResponseBroker {
		wb := kmsg.NewDescribeClusterResponseBroker()
		wb.NodeID, wb.Host, wb.Port = b.NodeID, b.Host, b.Port
		return wb
	})
	return w
}
