package consumer

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/transport"
)

// A share group member's membership, as Kafka's share consumer runs it:
// a goroutine heartbeats (ShareGroupHeartbeat) every interval the
// coordinator gives. The first heartbeat joins, with epoch 0 and the
// subscription; the next ones carry only the member's epoch, unless one
// went unanswered, after which the next says everything again. An answer
// may carry a new assignment, topics by id, which the goroutine keeps as
// the target and wakes Poll for; Poll names the topics (reading metadata
// for ids it does not know) and moves the share session to it. There is
// nothing to revoke or commit: the coordinator may give a partition to
// several members at once, and the partitions' leaders hand each record
// to one of them. A fenced member (FENCED_MEMBER_EPOCH,
// UNKNOWN_MEMBER_ID) loses its assignment and rejoins with epoch 0 and
// the same member id.

// notifyLocked wakes a Poll waiting for the membership to change.
func (c *ShareConsumer) notifyLocked() {
	close(c.changed)
	c.changed = make(chan struct{})
}

// heartbeat sends one heartbeat, handles its answer and returns when the
// next one is due.
func (c *ShareConsumer) heartbeat(r *retry) time.Duration {
	c.mu.Lock()
	if c.leaving || c.fatal != nil {
		c.mu.Unlock()
		return heartbeatIdle
	}
	req := &transport.ShareGroupHeartbeatRequest{
		Group: c.scfg.group, MemberID: c.memberID, MemberEpoch: c.memberEpoch,
		// A served node takes the request header's client id instead.
		ClientID: c.cfg.grp.clientID,
	}
	if c.memberEpoch == 0 || c.fullHeartbeat {
		req.SubscribedTopicNames = slices.Clone(c.cfg.topics)
	}
	c.mu.Unlock()

	resp, err := c.coord.ShareGroupHeartbeat(c.hbCtx, req)
	if err == nil {
		err = resp.Err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.leaving {
		return heartbeatIdle
	}
	switch {
	case err == nil:
		r.failures = 0
		c.fullHeartbeat = false
		c.memberEpoch = resp.MemberEpoch
		if resp.Assignment != nil {
			c.target = resp.Assignment
			c.targetVersion++
			c.notifyLocked()
		}
		return max(time.Duration(resp.HeartbeatIntervalMillis)*time.Millisecond, time.Millisecond)
	case errors.Is(err, kafka.ErrFencedMemberEpoch), errors.Is(err, kafka.ErrUnknownMemberID):
		c.memberEpoch = 0
		c.target = nil
		c.targetVersion++
		c.notifyLocked()
		return 0
	case kafka.IsRetriable(err) || !errors.As(err, new(*kafka.Error)):
		// The coordinator moved, loads, or cannot be reached: the next
		// heartbeat, after the backoff, says everything again, since
		// this one may or may not have been applied.
		c.fullHeartbeat = true
		r.fail(&c.cfg, time.Now(), false)
		return time.Until(r.until)
	default:
		// GROUP_AUTHORIZATION_FAILED, GROUP_MAX_SIZE_REACHED,
		// INVALID_REQUEST, ...: Poll reports it.
		c.fatal = fmt.Errorf("consumer: share group %q refused the member: %w", c.scfg.group, err)
		c.notifyLocked()
		return heartbeatIdle
	}
}

// reconcileLocked moves the consumer to the member's last assignment,
// naming its topics: with the ids it knows, else with a Metadata request
// for the subscribed topics, tried again after RetryBackoff for ids it
// still cannot name. Records fetched for partitions no longer assigned
// are released, never returned.
func (c *ShareConsumer) reconcileLocked(ctx context.Context) {
	s := &c.st
	c.mu.Lock()
	target, version := c.target, c.targetVersion
	c.mu.Unlock()
	if version == s.assignedVersion && (!s.unresolved || time.Now().Before(s.resolveAt)) {
		return
	}
	known := true
	for _, t := range target {
		if _, ok := s.topicNames[t.TopicID]; !ok {
			known = false
		}
	}
	if !known {
		md, err := c.client.Metadata(ctx, &transport.MetadataRequest{Topics: c.cfg.topics})
		if err == nil {
			for _, t := range md.Topics {
				if t.Err == nil && t.TopicID != ([16]byte{}) {
					s.topicNames[t.TopicID], s.topicIDs[t.Topic] = t.Topic, t.TopicID
				}
			}
		}
	}
	var assigned []kafka.TopicPartition
	s.unresolved = false
	for _, t := range target {
		name, ok := s.topicNames[t.TopicID]
		if !ok {
			s.unresolved = true
			continue
		}
		for _, p := range t.Partitions {
			assigned = append(assigned, kafka.TopicPartition{Topic: name, Partition: p})
		}
	}
	if s.unresolved {
		s.resolveAt = time.Now().Add(c.cfg.retryBackoff)
	}
	sortTPs(assigned)
	s.assigned, s.assignedVersion = slices.Compact(assigned), version
	s.releaseBufferedLocked(func(r *ShareRecord) bool { return !s.isAssigned(r.TopicPartition()) })
}
