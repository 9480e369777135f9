package transport

import (
	"errors"
	"reflect"
	"slices"

	"github.com/partlog/partlog/auth"
	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/record"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Authorizer decides what the principal of a connection may do:
// *auth.Authorizer, which checks the cluster's ACLs as Kafka's
// StandardAuthorizer does, or a host program's own.
type Authorizer interface {
	// Authorize reports whether p, connected from host, may do op to the
	// resource of type rt named name.
	Authorize(p auth.Principal, host string, op auth.Operation, rt auth.ResourceType, name string) bool
	// AuthorizeAny reports whether p may do op to some resource of type
	// rt.
	AuthorizeAny(p auth.Principal, host string, op auth.Operation, rt auth.ResourceType) bool
}

// authorization is what checking one request against the ACLs decided:
// nothing (the zero value: serve it as it came), an answer that refuses
// it whole, or parts taken out of the request (it was changed in place)
// that merge adds to the handler's answer, refused.
type authorization struct {
	answer kmsg.Response
	merge  func(kmsg.Response)
}

// guard asks the server's Authorizer about one connection's principal.
type guard struct {
	a    Authorizer
	who  auth.Principal
	host string
}

func (g guard) may(op auth.Operation, rt auth.ResourceType, name string) bool {
	return g.a.Authorize(g.who, g.host, op, rt, name)
}

func (g guard) mayCluster(op auth.Operation) bool {
	return g.may(op, auth.ClusterResource, auth.ClusterName)
}

func (g guard) mayTopic(op auth.Operation) func(string) bool {
	return func(topic string) bool { return g.may(op, auth.TopicResource, topic) }
}

// split returns the elements of s whose name allowed accepts, and the
// others.
func split[T any](s []T, name func(T) string, allowed func(string) bool) (kept, refused []T) {
	return splitBy(s, func(x T) bool { return allowed(name(x)) })
}

// splitBy returns the elements of s allowed accepts, and the others.
func splitBy[T any](s []T, allowed func(T) bool) (kept, refused []T) {
	for _, x := range s {
		if allowed(x) {
			kept = append(kept, x)
		} else {
			refused = append(refused, x)
		}
	}
	return kept, refused
}

// partly finishes the authorization of a request some of whose parts
// were refused: merge adds them to the handler's answer, or, when none
// is left for the handler, to an answer of the server's own.
func partly(req kmsg.Request, version int16, left int, merge func(kmsg.Response)) authorization {
	if left > 0 {
		return authorization{merge: merge}
	}
	resp := emptyResponse(req, version)
	merge(resp)
	return authorization{answer: resp}
}

// refuseParts takes the parts of req that allowed refuses out of *parts
// and has answer add each to the handler's answer (or the server's own,
// when none is left): the shape of every request about many topics or
// groups.
func refuseParts[P any, R kmsg.Response](req kmsg.Request, version int16, parts *[]P, allowed func(P) bool, answer func(R, P)) authorization {
	kept, refused := splitBy(*parts, allowed)
	if len(refused) == 0 {
		return authorization{}
	}
	*parts = kept
	return partly(req, version, len(kept), func(r kmsg.Response) {
		resp := r.(R)
		for _, p := range refused {
			answer(resp, p)
		}
	})
}

// emptyResponse is the answer to req with Kafka's defaults and nothing
// in it.
func emptyResponse(req kmsg.Request, version int16) kmsg.Response {
	resp := req.ResponseKind()
	if d, ok := resp.(interface{ Default() }); ok {
		d.Default()
	}
	resp.SetVersion(version)
	return resp
}

// refusedWhole answers req with err in the top-level error code that
// every response to a request about one resource (a group, a
// transactional id, the cluster) has, and its message where the
// version carries one. The requests refused part by part are answered by
// their own code in authorize.
func refusedWhole(req kmsg.Request, version int16, err *kafka.Error) authorization {
	resp := emptyResponse(req, version)
	v := reflect.ValueOf(resp).Elem()
	if f := v.FieldByName("ErrorCode"); f.IsValid() {
		f.SetInt(int64(err.Code))
	}
	if f := v.FieldByName("ErrorMessage"); f.IsValid() && f.Type() == reflect.TypeFor[*string]() {
		msg := err.Error()
		f.Set(reflect.ValueOf(&msg))
	}
	return authorization{answer: resp}
}

// authorize checks req, from the connection of p, against the server's
// Authorizer, as Kafka's request handlers do: a request about one
// resource is refused whole; one about many (topics, groups) is served
// for those the principal may use, and the others are answered with
// TOPIC_AUTHORIZATION_FAILED (or GROUP_, TRANSACTIONAL_ID_,
// CLUSTER_AUTHORIZATION_FAILED); a listing leaves out what the principal
// may not describe.
func (s *Server) authorize(req kmsg.Request, version int16, p *peer) (authorization, error) {
	g := p.guard(s.opts.Authorizer)
	switch req := req.(type) {
	case *kmsg.ProduceRequest:
		return authorizeProduce(g, req, version)
	case *kmsg.ListOffsetsRequest:
		describe := g.mayTopic(auth.DescribeOperation)
		return refuseParts(req, version, &req.Topics, func(t kmsg.ListOffsetsRequestTopic) bool { return describe(t.Topic) },
			func(resp *kmsg.ListOffsetsResponse, t kmsg.ListOffsetsRequestTopic) {
				rt := kmsg.ListOffsetsResponseTopic{Topic: t.Topic}
				for _, p := range t.Partitions {
					rp := kmsg.NewListOffsetsResponseTopicPartition()
					rp.Partition, rp.ErrorCode = p.Partition, kafka.ErrTopicAuthorizationFailed.Code
					rt.Partitions = append(rt.Partitions, rp)
				}
				resp.Topics = append(resp.Topics, rt)
			}), nil
	case *kmsg.MetadataRequest:
		return authorizeMetadata(g, req), nil
	case *kmsg.OffsetForLeaderEpochRequest:
		// CLUSTER_ACTION (a replica's) or DESCRIBE on each topic, as Kafka
		// asks whoever sends it.
		allowed := g.mayTopic(auth.DescribeOperation)
		if g.mayCluster(auth.ClusterActionOperation) {
			allowed = func(string) bool { return true }
		}
		return refuseParts(req, version, &req.Topics, func(t kmsg.OffsetForLeaderEpochRequestTopic) bool { return allowed(t.Topic) },
			func(resp *kmsg.OffsetForLeaderEpochResponse, t kmsg.OffsetForLeaderEpochRequestTopic) {
				rt := kmsg.OffsetForLeaderEpochResponseTopic{Topic: t.Topic}
				for _, p := range t.Partitions {
					rp := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
					rp.Partition, rp.ErrorCode = p.Partition, kafka.ErrTopicAuthorizationFailed.Code
					rt.Partitions = append(rt.Partitions, rp)
				}
				resp.Topics = append(resp.Topics, rt)
			}), nil
	case *kmsg.FindCoordinatorRequest:
		return authorizeFindCoordinator(g, req, version), nil
	case *kmsg.JoinGroupRequest:
		return groupOnly(g, req, version, req.Group, auth.ReadOperation), nil
	case *kmsg.SyncGroupRequest:
		return groupOnly(g, req, version, req.Group, auth.ReadOperation), nil
	case *kmsg.HeartbeatRequest:
		return groupOnly(g, req, version, req.Group, auth.ReadOperation), nil
	case *kmsg.LeaveGroupRequest:
		return groupOnly(g, req, version, req.Group, auth.ReadOperation), nil
	case *kmsg.ConsumerGroupHeartbeatRequest:
		return groupOnly(g, req, version, req.Group, auth.ReadOperation), nil
	case *kmsg.ConsumerGroupDescribeRequest:
		describe := func(group string) bool { return g.may(auth.DescribeOperation, auth.GroupResource, group) }
		return refuseParts(req, version, &req.Groups, describe, func(resp *kmsg.ConsumerGroupDescribeResponse, group string) {
			rg := kmsg.NewConsumerGroupDescribeResponseGroup()
			rg.Group, rg.ErrorCode = group, kafka.ErrGroupAuthorizationFailed.Code
			resp.Groups = append(resp.Groups, rg)
		}), nil
	case *kmsg.ShareGroupHeartbeatRequest:
		return authorizeShareGroupHeartbeat(g, req, version), nil
	case *kmsg.ShareGroupDescribeRequest:
		return authorizeShareGroupDescribe(g, req, version), nil
	case *kmsg.ShareFetchRequest, *kmsg.ShareAcknowledgeRequest:
		return s.authorizeShare(p.ctx, g, req, version)
	case *kmsg.InitializeShareGroupStateRequest, *kmsg.ReadShareGroupStateRequest, *kmsg.WriteShareGroupStateRequest,
		*kmsg.DeleteShareGroupStateRequest:
		return authorizeShareState(g, req, version), nil
	case *kmsg.DescribeShareGroupOffsetsRequest, *kmsg.AlterShareGroupOffsetsRequest, *kmsg.DeleteShareGroupOffsetsRequest:
		return authorizeShareGroupOffsets(g, req, version), nil
	case *kmsg.OffsetCommitRequest:
		return authorizeOffsetCommit(g, req, version), nil
	case *kmsg.OffsetFetchRequest:
		return authorizeOffsetFetch(g, req, version), nil
	case *kmsg.DescribeGroupsRequest, *kmsg.ListGroupsRequest, *kmsg.DeleteGroupsRequest:
		return authorizeGroupAdmin(g, req, version), nil
	case *kmsg.InitProducerIDRequest:
		switch {
		case req.TransactionalID != nil && !g.may(auth.WriteOperation, auth.TransactionalIDResource, *req.TransactionalID):
			return refusedWhole(req, version, kafka.ErrTransactionalIDAuthorizationFailed), nil
		case req.TransactionalID == nil && !g.mayCluster(auth.IdempotentWriteOperation) &&
			!g.a.AuthorizeAny(g.who, g.host, auth.WriteOperation, auth.TopicResource):
			return refusedWhole(req, version, kafka.ErrClusterAuthorizationFailed), nil
		}
		return authorization{}, nil
	case *kmsg.AddPartitionsToTxnRequest, *kmsg.AddOffsetsToTxnRequest, *kmsg.EndTxnRequest, *kmsg.TxnOffsetCommitRequest,
		*kmsg.DescribeTransactionsRequest, *kmsg.ListTransactionsRequest:
		return authorizeTxn(g, req, version), nil
	case *kmsg.WriteTxnMarkersRequest:
		if g.mayCluster(auth.ClusterActionOperation) {
			return authorization{}, nil
		}
		resp := emptyResponse(req, version).(*kmsg.WriteTxnMarkersResponse)
		for _, m := range req.Markers {
			rm := kmsg.WriteTxnMarkersResponseMarker{ProducerID: m.ProducerID}
			for _, t := range m.Topics {
				rt := kmsg.WriteTxnMarkersResponseMarkerTopic{Topic: t.Topic}
				for _, p := range t.Partitions {
					rt.Partitions = append(rt.Partitions, kmsg.WriteTxnMarkersResponseMarkerTopicPartition{Partition: p, ErrorCode: kafka.ErrClusterAuthorizationFailed.Code})
				}
				rm.Topics = append(rm.Topics, rt)
			}
			resp.Markers = append(resp.Markers, rm)
		}
		return authorization{answer: resp}, nil
	case *kmsg.CreateTopicsRequest, *kmsg.DeleteTopicsRequest, *kmsg.CreatePartitionsRequest, *kmsg.DeleteRecordsRequest,
		*kmsg.DescribeProducersRequest:
		return authorizeTopicAdmin(g, req, version), nil
	case *kmsg.DescribeConfigsRequest, *kmsg.AlterConfigsRequest, *kmsg.IncrementalAlterConfigsRequest:
		return authorizeConfigs(g, req, version), nil
	case *kmsg.DescribeACLsRequest, *kmsg.DescribeUserSCRAMCredentialsRequest, *kmsg.ListPartitionReassignmentsRequest,
		*kmsg.DescribeLogDirsRequest:
		return clusterOnly(g, req, version, auth.DescribeOperation), nil
	case *kmsg.DescribeClientQuotasRequest:
		return clusterOnly(g, req, version, auth.DescribeConfigsOperation), nil
	case *kmsg.AlterClientQuotasRequest:
		if g.mayCluster(auth.AlterConfigsOperation) {
			return authorization{}, nil
		}
		resp := emptyResponse(req, version).(*kmsg.AlterClientQuotasResponse)
		for _, e := range req.Entries {
			w := kmsg.NewAlterClientQuotasResponseEntry()
			w.ErrorCode = kafka.ErrClusterAuthorizationFailed.Code
			for _, part := range e.Entity {
				w.Entity = append(w.Entity, kmsg.AlterClientQuotasResponseEntryEntity{Type: part.Type, Name: part.Name})
			}
			resp.Entries = append(resp.Entries, w)
		}
		return authorization{answer: resp}, nil
	case *kmsg.ElectLeadersRequest, *kmsg.AlterPartitionAssignmentsRequest, *kmsg.UnregisterBrokerRequest:
		return clusterOnly(g, req, version, auth.AlterOperation), nil
	case *kmsg.CreateACLsRequest:
		if g.mayCluster(auth.AlterOperation) {
			return authorization{}, nil
		}
		resp := emptyResponse(req, version).(*kmsg.CreateACLsResponse)
		for range req.Creations {
			resp.Results = append(resp.Results, kmsg.CreateACLsResponseResult{ErrorCode: kafka.ErrClusterAuthorizationFailed.Code})
		}
		return authorization{answer: resp}, nil
	case *kmsg.DeleteACLsRequest:
		if g.mayCluster(auth.AlterOperation) {
			return authorization{}, nil
		}
		resp := emptyResponse(req, version).(*kmsg.DeleteACLsResponse)
		for range req.Filters {
			resp.Results = append(resp.Results, kmsg.DeleteACLsResponseResult{ErrorCode: kafka.ErrClusterAuthorizationFailed.Code})
		}
		return authorization{answer: resp}, nil
	case *kmsg.AlterUserSCRAMCredentialsRequest:
		if g.mayCluster(auth.AlterOperation) {
			return authorization{}, nil
		}
		resp := emptyResponse(req, version).(*kmsg.AlterUserSCRAMCredentialsResponse)
		seen := map[string]bool{}
		add := func(user string) {
			if !seen[user] {
				seen[user] = true
				resp.Results = append(resp.Results, kmsg.AlterUserSCRAMCredentialsResponseResult{User: user, ErrorCode: kafka.ErrClusterAuthorizationFailed.Code})
			}
		}
		for _, d := range req.Deletions {
			add(d.Name)
		}
		for _, u := range req.Upsertions {
			add(u.Name)
		}
		return authorization{answer: resp}, nil
	}
	// ApiVersions, the SASL APIs and DescribeCluster need nothing;
	// Fetch and partlog's internal APIs are checked where they are
	// answered.
	return authorization{}, nil
}

// clusterOnly refuses a request about the cluster as a whole unless the
// principal may do op to it.
func clusterOnly(g guard, req kmsg.Request, version int16, op auth.Operation) authorization {
	if g.mayCluster(op) {
		return authorization{}
	}
	return refusedWhole(req, version, kafka.ErrClusterAuthorizationFailed)
}

// groupOnly refuses a request about one group unless the principal may
// do op to it.
func groupOnly(g guard, req kmsg.Request, version int16, group string, op auth.Operation) authorization {
	if g.may(op, auth.GroupResource, group) {
		return authorization{}
	}
	return refusedWhole(req, version, kafka.ErrGroupAuthorizationFailed)
}

// authorizeProduce checks a produce request: WRITE on its transactional
// id, if it has one, then WRITE on each topic.
func authorizeProduce(g guard, req *kmsg.ProduceRequest, version int16) (authorization, error) {
	// Transactional batches need WRITE on the request's transactional
	// id; without an id they are refused, as Kafka refuses them.
	refuseAll := req.TransactionID != nil && !g.may(auth.WriteOperation, auth.TransactionalIDResource, *req.TransactionID) ||
		req.TransactionID == nil && hasTransactionalBatch(req)
	write := g.mayTopic(auth.WriteOperation)
	if !refuseAll && !slices.ContainsFunc(req.Topics, func(t kmsg.ProduceRequestTopic) bool { return !write(t.Topic) }) {
		return authorization{}, nil
	}
	if req.Acks == 0 {
		// No answer to carry the error: Kafka closes the connection.
		return authorization{}, errAcksNoneFailed
	}
	code := kafka.ErrTopicAuthorizationFailed.Code
	if refuseAll {
		code = kafka.ErrTransactionalIDAuthorizationFailed.Code
	}
	return refuseParts(req, version, &req.Topics, func(t kmsg.ProduceRequestTopic) bool { return !refuseAll && write(t.Topic) },
		func(resp *kmsg.ProduceResponse, t kmsg.ProduceRequestTopic) {
			rt := kmsg.ProduceResponseTopic{Topic: t.Topic}
			for _, p := range t.Partitions {
				rp := kmsg.NewProduceResponseTopicPartition()
				rp.Partition, rp.ErrorCode, rp.BaseOffset = p.Partition, code, -1
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}), nil
}

// hasTransactionalBatch reports whether a batch of req is transactional.
// A batch whose header does not parse ends the look at its partition: the
// handler refuses it.
func hasTransactionalBatch(req *kmsg.ProduceRequest) bool {
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			for b := p.Records; len(b) > 0; {
				h, err := record.ParseHeader(b)
				if err != nil || h.Size() > len(b) {
					break
				}
				if h.Attributes.IsTransactional() {
					return true
				}
				b = b[h.Size():]
			}
		}
	}
	return false
}

// authorizeFetch checks a consumer's fetch: READ on each topic; a
// replica's needs CLUSTER_ACTION, without which each topic is refused, as
// Kafka refuses it, TOPIC_AUTHORIZATION_FAILED. The refused topics leave
// r, and the returned function adds them to the answer; nil when none was
// refused.
func authorizeFetch(g guard, r *FetchRequest) func(*FetchResponse) {
	read := g.mayTopic(auth.ReadOperation)
	if r.ReplicaID >= 0 {
		cluster := g.mayCluster(auth.ClusterActionOperation)
		read = func(string) bool { return cluster }
	}
	kept, refused := split(r.Topics, func(t FetchTopic) string { return t.Topic }, read)
	if len(refused) == 0 {
		return nil
	}
	r.Topics = kept
	return func(resp *FetchResponse) {
		for _, t := range refused {
			rt := FetchTopicResponse{Topic: t.Topic}
			for _, p := range t.Partitions {
				rt.Partitions = append(rt.Partitions, FetchPartitionResponse{Partition: p.Partition, Err: kafka.ErrTopicAuthorizationFailed,
					HighWatermark: -1, LastStableOffset: -1, LogStartOffset: -1})
			}
			resp.Topics = append(resp.Topics, rt)
		}
	}
}

// authorizeMetadata checks a metadata request: DESCRIBE on each topic
// named, which are answered TOPIC_AUTHORIZATION_FAILED without it; a
// request for every topic lists only those the principal may describe.
// Whether a topic it names may be created is the dispatch's to ask
// (mayCreate).
func authorizeMetadata(g guard, req *kmsg.MetadataRequest) authorization {
	describe := g.mayTopic(auth.DescribeOperation)
	if req.Topics == nil {
		return authorization{merge: func(r kmsg.Response) {
			resp := r.(*kmsg.MetadataResponse)
			kept, _ := split(resp.Topics, func(t kmsg.MetadataResponseTopic) string { return deref(t.Topic) }, describe)
			resp.Topics = kept
		}}
	}
	kept, refused := split(req.Topics, func(t kmsg.MetadataRequestTopic) string { return deref(t.Topic) }, describe)
	if len(refused) == 0 {
		return authorization{}
	}
	req.Topics = append([]kmsg.MetadataRequestTopic{}, kept...) // not nil: nil asks for every topic
	return authorization{merge: func(r kmsg.Response) {
		resp := r.(*kmsg.MetadataResponse)
		for _, t := range refused {
			rt := kmsg.NewMetadataResponseTopic()
			rt.Topic, rt.TopicID, rt.ErrorCode = t.Topic, t.TopicID, kafka.ErrTopicAuthorizationFailed.Code
			resp.Topics = append(resp.Topics, rt)
		}
	}}
}

// mayCreate reports whether the principal may create topic: CREATE on the
// cluster or on the topic.
func (g guard) mayCreate(topic string) bool {
	return g.mayCluster(auth.CreateOperation) || g.may(auth.CreateOperation, auth.TopicResource, topic)
}

// createRefused answers TOPIC_AUTHORIZATION_FAILED, as Kafka does, for
// each topic a metadata request would have created (auto-creation on)
// that the node did not have and the principal may not create.
func createRefused(resp *MetadataResponse, req *MetadataRequest, g guard) {
	if !req.AllowAutoTopicCreation {
		return
	}
	for i := range resp.Topics {
		t := &resp.Topics[i]
		if errors.Is(t.Err, kafka.ErrUnknownTopicOrPartition) && !g.mayCreate(t.Topic) {
			t.Err = kafka.ErrTopicAuthorizationFailed
		}
	}
}

// authorizeFindCoordinator checks DESCRIBE on each group or
// transactional id asked about, and CLUSTER_ACTION for share partitions.
func authorizeFindCoordinator(g guard, req *kmsg.FindCoordinatorRequest, version int16) authorization {
	rt, failed := auth.GroupResource, kafka.ErrGroupAuthorizationFailed
	if req.CoordinatorType == 1 {
		rt, failed = auth.TransactionalIDResource, kafka.ErrTransactionalIDAuthorizationFailed
	}
	describe := func(key string) bool { return g.may(auth.DescribeOperation, rt, key) }
	if CoordinatorType(req.CoordinatorType) == CoordinatorShare {
		if version < firstShareFindCoordinator {
			return authorization{} // INVALID_REQUEST, before any ACL (findCoordinator)
		}
		// A share partition's coordinator is for brokers to find:
		// CLUSTER_ACTION, as Kafka's getCoordinator asks.
		cluster := g.mayCluster(auth.ClusterActionOperation)
		describe, failed = func(string) bool { return cluster }, kafka.ErrClusterAuthorizationFailed
	}
	if version < 4 {
		if describe(req.CoordinatorKey) {
			return authorization{}
		}
		return refusedWhole(req, version, failed)
	}
	return refuseParts(req, version, &req.CoordinatorKeys, describe, func(resp *kmsg.FindCoordinatorResponse, key string) {
		c := kmsg.NewFindCoordinatorResponseCoordinator()
		c.Key, c.NodeID, c.Port, c.ErrorCode = key, -1, -1, failed.Code
		resp.Coordinators = append(resp.Coordinators, c)
	})
}

// authorizeOffsetCommit checks READ on the group, then READ on each
// topic.
func authorizeOffsetCommit(g guard, req *kmsg.OffsetCommitRequest, version int16) authorization {
	failed, allowed := kafka.ErrTopicAuthorizationFailed, g.mayTopic(auth.ReadOperation)
	if !g.may(auth.ReadOperation, auth.GroupResource, req.Group) {
		failed, allowed = kafka.ErrGroupAuthorizationFailed, func(string) bool { return false }
	}
	return refuseParts(req, version, &req.Topics, func(t kmsg.OffsetCommitRequestTopic) bool { return allowed(t.Topic) },
		func(resp *kmsg.OffsetCommitResponse, t kmsg.OffsetCommitRequestTopic) {
			rt := kmsg.OffsetCommitResponseTopic{Topic: t.Topic}
			for _, p := range t.Partitions {
				rt.Partitions = append(rt.Partitions, kmsg.OffsetCommitResponseTopicPartition{Partition: p.Partition, ErrorCode: failed.Code})
			}
			resp.Topics = append(resp.Topics, rt)
		})
}

// authorizeOffsetFetch checks DESCRIBE on each group, then on each
// topic named; a group's request for all its topics gets those the
// principal may describe.
func authorizeOffsetFetch(g guard, req *kmsg.OffsetFetchRequest, version int16) authorization {
	describeGroup := func(group string) bool { return g.may(auth.DescribeOperation, auth.GroupResource, group) }
	describe := g.mayTopic(auth.DescribeOperation)
	topicName := func(t kmsg.OffsetFetchRequestTopic) string { return t.Topic }
	if version < 8 {
		if !describeGroup(req.Group) {
			return refusedWhole(req, version, kafka.ErrGroupAuthorizationFailed)
		}
		if req.Topics == nil {
			return authorization{merge: func(r kmsg.Response) {
				resp := r.(*kmsg.OffsetFetchResponse)
				resp.Topics, _ = split(resp.Topics, func(t kmsg.OffsetFetchResponseTopic) string { return t.Topic }, describe)
			}}
		}
		kept, refused := split(req.Topics, topicName, describe)
		if len(refused) == 0 {
			return authorization{}
		}
		req.Topics = append([]kmsg.OffsetFetchRequestTopic{}, kept...)
		return authorization{merge: func(r kmsg.Response) {
			resp := r.(*kmsg.OffsetFetchResponse)
			for _, t := range refused {
				rt := kmsg.OffsetFetchResponseTopic{Topic: t.Topic}
				for _, p := range t.Partitions {
					rp := kmsg.NewOffsetFetchResponseTopicPartition()
					rp.Partition, rp.Offset, rp.ErrorCode = p, -1, kafka.ErrTopicAuthorizationFailed.Code
					rt.Partitions = append(rt.Partitions, rp)
				}
				resp.Topics = append(resp.Topics, rt)
			}
		}}
	}
	kept, refusedGroups := split(req.Groups, func(gr kmsg.OffsetFetchRequestGroup) string { return gr.Group }, describeGroup)
	refusedTopics := map[string][]kmsg.OffsetFetchRequestGroupTopic{}
	for i := range kept {
		if kept[i].Topics == nil {
			continue
		}
		var k, r []kmsg.OffsetFetchRequestGroupTopic
		k, r = split(kept[i].Topics, func(t kmsg.OffsetFetchRequestGroupTopic) string { return t.Topic }, describe)
		if len(r) > 0 {
			kept[i].Topics, refusedTopics[kept[i].Group] = append([]kmsg.OffsetFetchRequestGroupTopic{}, k...), r
		}
	}
	allTopics := map[string]bool{}
	for _, gr := range kept {
		allTopics[gr.Group] = gr.Topics == nil
	}
	req.Groups = kept
	return partly(req, version, len(kept), func(r kmsg.Response) {
		resp := r.(*kmsg.OffsetFetchResponse)
		for i := range resp.Groups {
			gr := &resp.Groups[i]
			if allTopics[gr.Group] {
				gr.Topics, _ = split(gr.Topics, func(t kmsg.OffsetFetchResponseGroupTopic) string { return t.Topic }, describe)
			}
			for _, t := range refusedTopics[gr.Group] {
				rt := kmsg.OffsetFetchResponseGroupTopic{Topic: t.Topic}
				for _, p := range t.Partitions {
					rp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
					rp.Partition, rp.Offset, rp.ErrorCode = p, -1, kafka.ErrTopicAuthorizationFailed.Code
					rt.Partitions = append(rt.Partitions, rp)
				}
				gr.Topics = append(gr.Topics, rt)
			}
		}
		for _, gr := range refusedGroups {
			resp.Groups = append(resp.Groups, kmsg.OffsetFetchResponseGroup{Group: gr.Group, ErrorCode: kafka.ErrGroupAuthorizationFailed.Code})
		}
	})
}

// authorizeGroupAdmin checks DescribeGroups (DESCRIBE on each group),
// DeleteGroups (DELETE on each) and ListGroups (the groups the principal
// may describe, or all with DESCRIBE on the cluster).
func authorizeGroupAdmin(g guard, req kmsg.Request, version int16) authorization {
	failed := kafka.ErrGroupAuthorizationFailed.Code
	may := func(op auth.Operation) func(string) bool {
		return func(group string) bool { return g.may(op, auth.GroupResource, group) }
	}
	switch req := req.(type) {
	case *kmsg.DescribeGroupsRequest:
		return refuseParts(req, version, &req.Groups, may(auth.DescribeOperation), func(resp *kmsg.DescribeGroupsResponse, group string) {
			rg := kmsg.NewDescribeGroupsResponseGroup()
			rg.Group, rg.ErrorCode = group, failed
			resp.Groups = append(resp.Groups, rg)
		})
	case *kmsg.DeleteGroupsRequest:
		return refuseParts(req, version, &req.Groups, may(auth.DeleteOperation), func(resp *kmsg.DeleteGroupsResponse, group string) {
			resp.Groups = append(resp.Groups, kmsg.DeleteGroupsResponseGroup{Group: group, ErrorCode: failed})
		})
	case *kmsg.ListGroupsRequest:
		if g.mayCluster(auth.DescribeOperation) {
			return authorization{}
		}
		return authorization{merge: func(r kmsg.Response) {
			resp := r.(*kmsg.ListGroupsResponse)
			resp.Groups, _ = split(resp.Groups, func(gr kmsg.ListGroupsResponseGroup) string { return gr.Group }, may(auth.DescribeOperation))
		}}
	}
	return authorization{}
}

// authorizeTxn checks the transaction coordinator's requests: WRITE on
// the transactional id, and READ on the group of offsets sent in the
// transaction, WRITE on the topics it adds, READ on those it commits
// offsets of; DESCRIBE on the transactional ids described or listed.
func authorizeTxn(g guard, req kmsg.Request, version int16) authorization {
	writeTxn := func(id string) bool { return g.may(auth.WriteOperation, auth.TransactionalIDResource, id) }
	switch req := req.(type) {
	case *kmsg.AddPartitionsToTxnRequest:
		if version >= 4 { // batched: from brokers
			return clusterOnly(g, req, version, auth.ClusterActionOperation)
		}
		code := kafka.ErrTransactionalIDAuthorizationFailed.Code
		kept, refused := req.Topics, req.Topics
		if writeTxn(req.TransactionalID) {
			code = kafka.ErrTopicAuthorizationFailed.Code
			kept, refused = split(req.Topics, func(t kmsg.AddPartitionsToTxnRequestTopic) string { return t.Topic }, g.mayTopic(auth.WriteOperation))
		}
		if len(refused) == 0 {
			return authorization{}
		}
		// Kafka adds none of the partitions when one is refused: the
		// others are OPERATION_NOT_ATTEMPTED.
		resp := emptyResponse(req, version).(*kmsg.AddPartitionsToTxnResponse)
		answer := func(topics []kmsg.AddPartitionsToTxnRequestTopic, code int16) {
			for _, t := range topics {
				rt := kmsg.AddPartitionsToTxnResponseTopic{Topic: t.Topic}
				for _, p := range t.Partitions {
					rt.Partitions = append(rt.Partitions, kmsg.AddPartitionsToTxnResponseTopicPartition{Partition: p, ErrorCode: code})
				}
				resp.Topics = append(resp.Topics, rt)
			}
		}
		if code == kafka.ErrTopicAuthorizationFailed.Code {
			answer(kept, kafka.ErrOperationNotAttempted.Code)
		}
		answer(refused, code)
		return authorization{answer: resp}
	case *kmsg.AddOffsetsToTxnRequest:
		if !writeTxn(req.TransactionalID) {
			return refusedWhole(req, version, kafka.ErrTransactionalIDAuthorizationFailed)
		}
		return groupOnly(g, req, version, req.Group, auth.ReadOperation)
	case *kmsg.EndTxnRequest:
		if !writeTxn(req.TransactionalID) {
			return refusedWhole(req, version, kafka.ErrTransactionalIDAuthorizationFailed)
		}
	case *kmsg.TxnOffsetCommitRequest:
		failed, allowed := kafka.ErrTopicAuthorizationFailed, g.mayTopic(auth.ReadOperation)
		switch {
		case !writeTxn(req.TransactionalID):
			failed, allowed = kafka.ErrTransactionalIDAuthorizationFailed, func(string) bool { return false }
		case !g.may(auth.ReadOperation, auth.GroupResource, req.Group):
			failed, allowed = kafka.ErrGroupAuthorizationFailed, func(string) bool { return false }
		}
		return refuseParts(req, version, &req.Topics, func(t kmsg.TxnOffsetCommitRequestTopic) bool { return allowed(t.Topic) },
			func(resp *kmsg.TxnOffsetCommitResponse, t kmsg.TxnOffsetCommitRequestTopic) {
				rt := kmsg.TxnOffsetCommitResponseTopic{Topic: t.Topic}
				for _, p := range t.Partitions {
					rt.Partitions = append(rt.Partitions, kmsg.TxnOffsetCommitResponseTopicPartition{Partition: p.Partition, ErrorCode: failed.Code})
				}
				resp.Topics = append(resp.Topics, rt)
			})
	case *kmsg.DescribeTransactionsRequest:
		describe := func(id string) bool { return g.may(auth.DescribeOperation, auth.TransactionalIDResource, id) }
		return refuseParts(req, version, &req.TransactionalIDs, describe, func(resp *kmsg.DescribeTransactionsResponse, id string) {
			st := kmsg.NewDescribeTransactionsResponseTransactionState()
			st.TransactionalID, st.ErrorCode = id, kafka.ErrTransactionalIDAuthorizationFailed.Code
			resp.TransactionStates = append(resp.TransactionStates, st)
		})
	case *kmsg.ListTransactionsRequest:
		return authorization{merge: func(r kmsg.Response) {
			resp := r.(*kmsg.ListTransactionsResponse)
			resp.TransactionStates, _ = split(resp.TransactionStates, func(st kmsg.ListTransactionsResponseTransactionState) string { return st.TransactionalID },
				func(id string) bool { return g.may(auth.DescribeOperation, auth.TransactionalIDResource, id) })
		}}
	}
	return authorization{}
}

// authorizeTopicAdmin checks CREATE (on the cluster or the topic),
// DELETE, ALTER (new partitions), DELETE (records) and READ (producers)
// on each topic of the admin requests about topics.
func authorizeTopicAdmin(g guard, req kmsg.Request, version int16) authorization {
	failed := kafka.ErrTopicAuthorizationFailed.Code
	switch req := req.(type) {
	case *kmsg.CreateTopicsRequest:
		create := func(t kmsg.CreateTopicsRequestTopic) bool {
			return g.mayCluster(auth.CreateOperation) || g.may(auth.CreateOperation, auth.TopicResource, t.Topic)
		}
		return refuseParts(req, version, &req.Topics, create, func(resp *kmsg.CreateTopicsResponse, t kmsg.CreateTopicsRequestTopic) {
			rt := kmsg.NewCreateTopicsResponseTopic()
			rt.Topic, rt.ErrorCode = t.Topic, failed
			resp.Topics = append(resp.Topics, rt)
		})
	case *kmsg.DeleteTopicsRequest:
		return refuseParts(req, version, &req.TopicNames, g.mayTopic(auth.DeleteOperation), func(resp *kmsg.DeleteTopicsResponse, topic string) {
			rt := kmsg.NewDeleteTopicsResponseTopic()
			rt.Topic, rt.ErrorCode = kmsg.StringPtr(topic), failed
			resp.Topics = append(resp.Topics, rt)
		})
	case *kmsg.CreatePartitionsRequest:
		alter := g.mayTopic(auth.AlterOperation)
		return refuseParts(req, version, &req.Topics, func(t kmsg.CreatePartitionsRequestTopic) bool { return alter(t.Topic) },
			func(resp *kmsg.CreatePartitionsResponse, t kmsg.CreatePartitionsRequestTopic) {
				resp.Topics = append(resp.Topics, kmsg.CreatePartitionsResponseTopic{Topic: t.Topic, ErrorCode: failed})
			})
	case *kmsg.DeleteRecordsRequest:
		del := g.mayTopic(auth.DeleteOperation)
		return refuseParts(req, version, &req.Topics, func(t kmsg.DeleteRecordsRequestTopic) bool { return del(t.Topic) },
			func(resp *kmsg.DeleteRecordsResponse, t kmsg.DeleteRecordsRequestTopic) {
				rt := kmsg.DeleteRecordsResponseTopic{Topic: t.Topic}
				for _, p := range t.Partitions {
					rt.Partitions = append(rt.Partitions, kmsg.DeleteRecordsResponseTopicPartition{Partition: p.Partition, LowWatermark: -1, ErrorCode: failed})
				}
				resp.Topics = append(resp.Topics, rt)
			})
	case *kmsg.DescribeProducersRequest:
		read := g.mayTopic(auth.ReadOperation)
		return refuseParts(req, version, &req.Topics, func(t kmsg.DescribeProducersRequestTopic) bool { return read(t.Topic) },
			func(resp *kmsg.DescribeProducersResponse, t kmsg.DescribeProducersRequestTopic) {
				rt := kmsg.DescribeProducersResponseTopic{Topic: t.Topic}
				for _, p := range t.Partitions {
					rp := kmsg.NewDescribeProducersResponseTopicPartition()
					rp.Partition, rp.ErrorCode = p, failed
					rt.Partitions = append(rt.Partitions, rp)
				}
				resp.Topics = append(resp.Topics, rt)
			})
	}
	return authorization{}
}

// authorizeConfigs checks DESCRIBE_CONFIGS or ALTER_CONFIGS on each
// resource, as Kafka does: a topic, a group, or a broker (the cluster).
// A refused topic answers TOPIC_AUTHORIZATION_FAILED, a group
// GROUP_AUTHORIZATION_FAILED, a broker CLUSTER_AUTHORIZATION_FAILED.
func authorizeConfigs(g guard, req kmsg.Request, version int16) authorization {
	may := func(op auth.Operation) func(kmsg.ConfigResourceType, string) bool {
		return func(rt kmsg.ConfigResourceType, name string) bool {
			switch rt {
			case kmsg.ConfigResourceTypeTopic:
				return g.may(op, auth.TopicResource, name)
			case kmsg.ConfigResourceTypeGroupConfig:
				return g.may(op, auth.GroupResource, name)
			}
			return g.mayCluster(op)
		}
	}
	failed := func(rt kmsg.ConfigResourceType) (int16, *string) {
		err := kafka.ErrClusterAuthorizationFailed
		switch rt {
		case kmsg.ConfigResourceTypeTopic:
			err = kafka.ErrTopicAuthorizationFailed
		case kmsg.ConfigResourceTypeGroupConfig:
			err = kafka.ErrGroupAuthorizationFailed
		}
		return err.Code, errorMessage(err)
	}
	switch req := req.(type) {
	case *kmsg.DescribeConfigsRequest:
		allowed := may(auth.DescribeConfigsOperation)
		return refuseParts(req, version, &req.Resources, func(r kmsg.DescribeConfigsRequestResource) bool { return allowed(r.ResourceType, r.ResourceName) },
			func(resp *kmsg.DescribeConfigsResponse, r kmsg.DescribeConfigsRequestResource) {
				rr := kmsg.NewDescribeConfigsResponseResource()
				rr.ResourceType, rr.ResourceName = r.ResourceType, r.ResourceName
				rr.ErrorCode, rr.ErrorMessage = failed(r.ResourceType)
				resp.Resources = append(resp.Resources, rr)
			})
	case *kmsg.AlterConfigsRequest:
		allowed := may(auth.AlterConfigsOperation)
		return refuseParts(req, version, &req.Resources, func(r kmsg.AlterConfigsRequestResource) bool { return allowed(r.ResourceType, r.ResourceName) },
			func(resp *kmsg.AlterConfigsResponse, r kmsg.AlterConfigsRequestResource) {
				rr := kmsg.NewAlterConfigsResponseResource()
				rr.ResourceType, rr.ResourceName = r.ResourceType, r.ResourceName
				rr.ErrorCode, rr.ErrorMessage = failed(r.ResourceType)
				resp.Resources = append(resp.Resources, rr)
			})
	case *kmsg.IncrementalAlterConfigsRequest:
		allowed := may(auth.AlterConfigsOperation)
		return refuseParts(req, version, &req.Resources, func(r kmsg.IncrementalAlterConfigsRequestResource) bool {
			return allowed(r.ResourceType, r.ResourceName)
		},
			func(resp *kmsg.IncrementalAlterConfigsResponse, r kmsg.IncrementalAlterConfigsRequestResource) {
				rr := kmsg.NewIncrementalAlterConfigsResponseResource()
				rr.ResourceType, rr.ResourceName = r.ResourceType, r.ResourceName
				rr.ErrorCode, rr.ErrorMessage = failed(r.ResourceType)
				resp.Resources = append(resp.Resources, rr)
			})
	}
	return authorization{}
}
