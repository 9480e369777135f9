package broker

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/partlog/partlog/controller"
	"github.com/partlog/partlog/group"
	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/partition"
	"github.com/partlog/partlog/share"
	"github.com/partlog/partlog/sharecoord"
	"github.com/partlog/partlog/transport"
)

// The Broker serves share groups (KIP-932): their membership at the
// group's coordinator, their records at each partition's leader.
var _ transport.ShareGroupClient = (*Broker)(nil)

// defaultShareMaxRecords is how many records a ShareFetch acquires when
// it does not say (Kafka's max.poll.records).
const defaultShareMaxRecords = 500

// ShareGroupHeartbeat handles a share group member's heartbeat at the
// group's coordinator. Partitions the group is to be given whose share
// state was never initialized are initialized at their share coordinators
// first (Kafka's InitializeShareGroupState), and the member's answer
// carries them.
func (n *Broker) ShareGroupHeartbeat(ctx context.Context, req *transport.ShareGroupHeartbeatRequest) (*transport.ShareGroupHeartbeatResponse, error) {
	if err := n.begin(); err != nil {
		return nil, err
	}
	defer n.end()
	c, err := n.coordinatorOf(ctx, req.Group)
	if err != nil {
		return &transport.ShareGroupHeartbeatResponse{Err: err, MemberID: req.MemberID}, nil
	}
	greq := &group.ShareGroupHeartbeatRequest{Group: req.Group, MemberID: req.MemberID, MemberEpoch: req.MemberEpoch,
		RackID: req.RackID, SubscribedTopicNames: req.SubscribedTopicNames, ClientID: req.ClientID, ClientHost: req.ClientHost}
	ans := c.ShareHeartbeat(greq)
	if ans.Err == nil && len(ans.InitializeState) > 0 && n.initializeShareState(ctx, c, req.Group, ans) {
		// The group has the partitions now: the member gets them with
		// this answer rather than at its next heartbeat.
		again := c.ShareHeartbeat(&group.ShareGroupHeartbeatRequest{Group: req.Group, MemberID: req.MemberID,
			MemberEpoch: ans.MemberEpoch, ClientID: req.ClientID, ClientHost: req.ClientHost})
		if again.Err == nil {
			if again.Assignment == nil {
				again.Assignment = ans.Assignment
			}
			ans = again
		}
	}
	return &transport.ShareGroupHeartbeatResponse{Err: ans.Err, MemberID: ans.MemberID, MemberEpoch: ans.MemberEpoch,
		HeartbeatIntervalMillis: ans.HeartbeatIntervalMillis, Assignment: ans.Assignment}, nil
}

// initializeShareState initializes the share state of the partitions a
// heartbeat's answer lists at their share coordinators, and tells the
// group coordinator how it went. It reports whether every one was.
func (n *Broker) initializeShareState(ctx context.Context, c *group.Coordinator, groupID string, ans *group.ShareGroupHeartbeatResponse) bool {
	pers := n.sharePersister()
	for _, t := range ans.InitializeState {
		for _, p := range t.Partitions {
			key := sharecoord.SharePartition{Group: groupID, TopicID: t.TopicID, Partition: p}
			if err := pers.initialize(ctx, key, ans.StateEpoch, -1); err != nil {
				n.logger.Warn("initializing share state failed", "group", groupID, "partition", p, "err", err)
				c.ShareStateInitializeFailed(groupID, ans.InitializeState)
				return false
			}
		}
	}
	if err := c.ShareStateInitialized(groupID, ans.InitializeState); err != nil {
		n.logger.Warn("recording initialized share state failed", "group", groupID, "err", err)
		return false
	}
	return true
}

// ShareGroupDescribe describes the share groups the node coordinates; the
// others are answered NOT_COORDINATOR.
func (n *Broker) ShareGroupDescribe(ctx context.Context, req *transport.ShareGroupDescribeRequest) (*transport.ShareGroupDescribeResponse, error) {
	if err := n.begin(); err != nil {
		return nil, err
	}
	defer n.end()
	resp := &transport.ShareGroupDescribeResponse{}
	for _, id := range req.Groups {
		c, err := n.coordinatorOf(ctx, id)
		if err != nil {
			resp.Groups = append(resp.Groups, transport.ShareGroupDescription{Group: id, Err: err})
			continue
		}
		for _, g := range c.ShareDescribe(&group.ShareGroupDescribeRequest{Groups: []string{id}}).Groups {
			d := transport.ShareGroupDescription{Group: g.Group, Err: g.Err, State: g.State, Epoch: g.Epoch,
				AssignmentEpoch: g.AssignmentEpoch, AssignorName: g.AssignorName}
			for _, m := range g.Members {
				md := transport.ShareGroupMemberDescription{MemberID: m.MemberID, RackID: m.RackID, MemberEpoch: m.MemberEpoch,
					ClientID: m.ClientID, ClientHost: m.ClientHost, SubscribedTopicNames: m.SubscribedTopicNames}
				for _, a := range m.Assignment {
					md.Assignment = append(md.Assignment, transport.NamedTopicIDPartitions{TopicID: a.TopicID, Topic: a.TopicName, Partitions: a.Partitions})
				}
				d.Members = append(d.Members, md)
			}
			resp.Groups = append(resp.Groups, d)
		}
	}
	return resp, nil
}

// topicIDs returns the id of each topic of the node's metadata by its
// name, and the name of each by its id.
func (n *Broker) topicIDs() (byName map[string][16]byte, byID map[[16]byte]string) {
	md, _ := n.member.metadata()
	byName, byID = make(map[string][16]byte, len(md.Topics)), make(map[[16]byte]string, len(md.Topics))
	for name, t := range md.Topics {
		id := controller.TopicIDBytes(t.ID)
		byName[name], byID[id] = id, name
	}
	return byName, byID
}

// shareAnswer builds the partitions of a ShareFetch or ShareAcknowledge
// answer, each once, in the order they are first named.
type shareAnswer struct {
	topics []transport.ShareFetchTopicResponse
}

// partition returns the answer's entry for a partition, added if need be.
func (a *shareAnswer) partition(topicID [16]byte, p int32) *transport.ShareFetchPartitionResponse {
	for i := range a.topics {
		t := &a.topics[i]
		if t.TopicID != topicID {
			continue
		}
		for j := range t.Partitions {
			if t.Partitions[j].Partition == p {
				return &t.Partitions[j]
			}
		}
		t.Partitions = append(t.Partitions, transport.ShareFetchPartitionResponse{Partition: p, CurrentLeader: transport.LeaderIDAndEpoch{LeaderID: -1, LeaderEpoch: -1}})
		return &t.Partitions[len(t.Partitions)-1]
	}
	a.topics = append(a.topics, transport.ShareFetchTopicResponse{TopicID: topicID,
		Partitions: []transport.ShareFetchPartitionResponse{{Partition: p, CurrentLeader: transport.LeaderIDAndEpoch{LeaderID: -1, LeaderEpoch: -1}}}})
	return &a.topics[len(a.topics)-1].Partitions[0]
}

// sharePartitionOf returns the partition a share session names by topic
// id and the node's share partition of group on it: the node must lead
// it. mayRead, when set, says whether the principal may read the topic.
func (n *Broker) sharePartitionOf(groupID string, names map[[16]byte]string, topicID [16]byte, p int32, mayRead func(string) bool) (*partition.Partition, *sharePartition, error) {
	name, ok := names[topicID]
	if !ok {
		return nil, nil, fmt.Errorf("%w: no topic has id %x", kafka.ErrUnknownTopicID, topicID)
	}
	if mayRead != nil && !mayRead(name) {
		return nil, nil, fmt.Errorf("%w: %s", kafka.ErrTopicAuthorizationFailed, name)
	}
	part, err := n.readablePartition(name, p)
	if err != nil {
		return nil, nil, err
	}
	return part, n.shares.get(groupID, kafka.TopicPartition{Topic: name, Partition: p}, topicID), nil
}

// acknowledgeShare applies one partition's acknowledgements of a member.
// A renewal (RENEW) is only taken from a request that says it carries
// renewals (IsRenewAck, version 2 on), as Kafka's validation does.
func (n *Broker) acknowledgeShare(ctx context.Context, groupID, member string, names map[[16]byte]string, topicID [16]byte, p int32, batches []transport.AcknowledgementBatch, renew bool, mayRead func(string) bool) error {
	if !renew {
		for _, b := range batches {
			if slices.Contains(b.AcknowledgeTypes, transport.AcknowledgeRenew) {
				return fmt.Errorf("%w: a RENEW acknowledgement in a request without IsRenewAck", kafka.ErrInvalidRequest)
			}
		}
	}
	part, sp, err := n.sharePartitionOf(groupID, names, topicID, p, mayRead)
	if err != nil {
		return err
	}
	return n.shares.acknowledge(ctx, sp, part, member, batches, n.opts.Now())
}

// releaseShares gives back what member holds in the partitions of a
// share session that closed.
func (n *Broker) releaseShares(ctx context.Context, groupID, member string, names map[[16]byte]string, parts []shareSessionPartition) {
	for _, ssp := range parts {
		if _, sp, err := n.sharePartitionOf(groupID, names, ssp.topicID, ssp.partition, nil); err == nil {
			if err := n.shares.release(ctx, sp, member, n.opts.Now()); err != nil {
				n.logger.Warn("releasing a closed share session's records failed", "group", groupID, "member", member, "err", err)
			}
		}
	}
}

// ShareFetch answers a share group member's fetch: it applies the
// acknowledgements it carries, then acquires records for the member from
// the partitions of its share session this node leads — waiting up to
// MaxWait for some when there are none — each acquisition written to the
// share partition's coordinator before the answer.
func (n *Broker) ShareFetch(ctx context.Context, req *transport.ShareFetchRequest) (*transport.ShareFetchResponse, error) {
	if err := n.begin(); err != nil {
		return nil, err
	}
	defer n.end()
	h := n.shares
	resp := &transport.ShareFetchResponse{AcquisitionLockTimeout: h.configOf(req.Group).RecordLockDuration}
	switch {
	case req.ShareAcquireMode != transport.ShareAcquireBatchOptimized && req.ShareAcquireMode != transport.ShareAcquireRecordLimit:
		resp.Err = fmt.Errorf("%w: share acquire mode %d", kafka.ErrInvalidRequest, req.ShareAcquireMode)
		return resp, nil
	case req.IsRenewAck && (req.MaxBytes != 0 || req.MinBytes != 0 || req.MaxRecords != 0 || req.MaxWait != 0):
		// A fetch that renews locks fetches nothing, lest it outlast
		// the locks it renews (KIP-1222).
		resp.Err = fmt.Errorf("%w: a ShareFetch with IsRenewAck asks for records", kafka.ErrInvalidRequest)
		return resp, nil
	}
	step, err := h.stepSession(req.Group, req.MemberID, req.ShareSessionEpoch, true, req.Topics, req.ForgottenTopics, n.opts.Now())
	if err != nil {
		resp.Err = err
		return resp, nil
	}
	_, names := n.topicIDs()
	if req.ShareSessionEpoch == 0 {
		for _, ssp := range step.parts {
			if _, sp, err := n.sharePartitionOf(req.Group, names, ssp.topicID, ssp.partition, nil); err == nil {
				h.refreshIfIdle(sp)
			}
		}
	}
	var out shareAnswer
	acked := false
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			pr := out.partition(t.TopicID, p.Partition)
			if len(p.AcknowledgementBatches) > 0 {
				acked = true
				pr.AcknowledgeErr = n.acknowledgeShare(ctx, req.Group, req.MemberID, names, t.TopicID, p.Partition, p.AcknowledgementBatches, req.IsRenewAck, req.MayRead)
			}
		}
	}
	n.releaseShares(ctx, req.Group, req.MemberID, names, step.closed)
	if !step.final && !req.IsRenewAck {
		n.acquireShares(ctx, req, step.parts, names, &out, acked)
	}
	resp.Topics = out.topics
	return resp, nil
}

// acquireShares acquires records for a ShareFetch from its session's
// partitions, long-polling up to MaxWait when none were had and the
// request acknowledged nothing.
func (n *Broker) acquireShares(ctx context.Context, req *transport.ShareFetchRequest, parts []shareSessionPartition, names map[[16]byte]string, out *shareAnswer, acked bool) {
	maxRecords := int(req.MaxRecords)
	if maxRecords <= 0 {
		maxRecords = defaultShareMaxRecords
	}
	maxBytes := int(req.MaxBytes)
	if maxBytes <= 0 {
		maxBytes = 50 << 20 // fetch.max.bytes
	}
	var (
		wake     chan struct{}
		watching []*partition.Partition
		timer    *time.Timer
	)
	defer func() {
		for _, p := range watching {
			p.Stop(wake)
		}
		if timer != nil {
			timer.Stop()
		}
	}()
	deadline := time.Now().Add(req.MaxWait)
	for {
		freed := n.shares.freedSignal() // taken before the look, so no release after it goes unnoticed
		got, bytes := 0, 0
		var led []*partition.Partition
		var sps []*sharePartition
		for _, ssp := range parts {
			if got >= maxRecords || bytes >= maxBytes {
				break
			}
			part, sp, err := n.sharePartitionOf(req.Group, names, ssp.topicID, ssp.partition, req.MayRead)
			if err != nil {
				out.partition(ssp.topicID, ssp.partition).Err = err
				continue
			}
			led, sps = append(led, part), append(sps, sp)
			records, acquired, err := n.shares.acquire(ctx, sp, part, req.MemberID, maxRecords-got, maxBytes-bytes, share.AcquireMode(req.ShareAcquireMode), n.opts.Now())
			if err != nil {
				out.partition(ssp.topicID, ssp.partition).Err = err
				continue
			}
			if len(acquired) > 0 {
				pr := out.partition(ssp.topicID, ssp.partition)
				pr.Err = nil // an error of an earlier round of the long poll: the records stand
				pr.Records = append(pr.Records, records...)
				pr.AcquiredRecords = append(pr.AcquiredRecords, acquired...)
				pr.CurrentLeader = transport.LeaderIDAndEpoch{LeaderID: n.meta.NodeID, LeaderEpoch: part.LeaderEpoch()}
				for _, a := range acquired {
					got += int(a.LastOffset - a.FirstOffset + 1)
				}
				bytes += len(records)
			}
		}
		if got > 0 || acked || req.MaxWait <= 0 || len(led) == 0 || n.closing.Load() {
			return
		}
		if wake == nil {
			// Watch, then look once more, so that no append between the
			// look and the wait goes unnoticed.
			wake = make(chan struct{}, 1)
			for _, p := range led {
				p.Notify(wake)
				watching = append(watching, p)
			}
			continue
		}
		// Wait for new records, or for a lock to expire, which makes
		// records available again, until MaxWait.
		wait := time.Until(deadline)
		if wait <= 0 {
			return
		}
		if next, ok := n.shares.nextDeadline(sps); ok {
			wait = min(wait, max(next.Sub(n.opts.Now()), time.Millisecond))
		}
		if timer == nil {
			timer = time.NewTimer(wait)
		} else {
			timer.Reset(wait)
		}
		select {
		case <-wake:
			timer.Stop()
		case <-freed:
			timer.Stop()
		case <-timer.C:
		case <-ctx.Done():
			return
		}
	}
}

// ShareAcknowledge applies a share group member's acknowledgements, in
// its share session; epoch -1 closes the session, giving back what the
// member still holds.
func (n *Broker) ShareAcknowledge(ctx context.Context, req *transport.ShareAcknowledgeRequest) (*transport.ShareAcknowledgeResponse, error) {
	if err := n.begin(); err != nil {
		return nil, err
	}
	defer n.end()
	resp := &transport.ShareAcknowledgeResponse{AcquisitionLockTimeout: n.shares.configOf(req.Group).RecordLockDuration}
	step, err := n.shares.stepSession(req.Group, req.MemberID, req.ShareSessionEpoch, false, nil, nil, n.opts.Now())
	if err != nil {
		resp.Err = err
		return resp, nil
	}
	_, names := n.topicIDs()
	for _, t := range req.Topics {
		tr := transport.ShareAcknowledgeTopicResponse{TopicID: t.TopicID}
		for _, p := range t.Partitions {
			err := n.acknowledgeShare(ctx, req.Group, req.MemberID, names, t.TopicID, p.Partition, p.AcknowledgementBatches, req.IsRenewAck, nil)
			tr.Partitions = append(tr.Partitions, transport.ShareAcknowledgePartitionResponse{Partition: p.Partition, Err: err,
				CurrentLeader: transport.LeaderIDAndEpoch{LeaderID: -1, LeaderEpoch: -1}})
		}
		resp.Topics = append(resp.Topics, tr)
	}
	n.releaseShares(ctx, req.Group, req.MemberID, names, step.closed)
	return resp, nil
}
