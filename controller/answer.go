package controller

import (
	"context"
	"fmt"
	"maps"
	"path"
	"strconv"
	"time"

	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/replica"
	"github.com/partlog/partlog/topicconfig"
)

// producerIDBlock is how many producer ids a node gets at once, as
// Kafka's controller hands brokers blocks of 1000.
const producerIDBlock = 1000

// call answers one request: the controller's side of every path. A
// heartbeat that may wait (WaitMs) and finds nothing new waits for the
// next change, without holding the controller.
func (c *Controller) call(ctx context.Context, req *request) (*response, error) {
	resp, changed, err := c.callLocked(req)
	if err != nil || req.Op != opHeartbeat || req.WaitMs <= 0 || resp.Metadata != nil {
		return resp, err
	}
	t := time.NewTimer(time.Duration(req.WaitMs) * time.Millisecond)
	defer t.Stop()
	select {
	case <-changed:
	case <-t.C:
		return resp, nil
	case <-ctx.Done():
		return resp, nil
	case <-c.stop:
		return resp, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if req.KnownVersion != c.version {
		resp.Metadata = c.metadataLocked()
	}
	resp.Version = c.version
	return resp, nil
}

// callLocked answers req under the controller's lock, and returns the
// channel its next change closes.
func (c *Controller) callLocked(req *request) (*response, <-chan struct{}, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	resp, err := c.answerLocked(req)
	return resp, c.changed, err
}

// answerLocked carries out one request. The caller holds mu.
func (c *Controller) answerLocked(req *request) (*response, error) {
	if c.closed {
		return nil, fmt.Errorf("%w: the controller is closed", kafka.ErrCoordinatorNotAvailable)
	}
	resp := &response{}
	var err error
	c.cause = req.Op
	switch req.Op {
	case opRegister:
		if resp.BrokerEpoch, err = c.machine.RegisterNode(req.Node); err == nil && c.addrs[req.Node] != req.Address {
			c.addrs[req.Node] = req.Address
			c.bumpLocked()
		}
	case opHeartbeat:
		if err = c.machine.Heartbeat(req.Node, req.BrokerEpoch); err == nil {
			if req.Address != "" && c.addrs[req.Node] != req.Address {
				c.addrs[req.Node] = req.Address // a restarted controller learns it again
				c.bumpLocked()
			}
			resp.Fenced = c.machine.State().Nodes[req.Node].Fenced
			if req.KnownVersion != c.version {
				resp.Metadata = c.metadataLocked()
			}
		}
	case opShutdown:
		err = c.machine.ShutdownNode(req.Node, req.BrokerEpoch)
	case opAlterPartition:
		if req.Change == nil {
			return nil, fmt.Errorf("%w: AlterPartition without a change", kafka.ErrInvalidRequest)
		}
		var s replica.LeaderAndISR
		s, err = c.machine.AlterPartition(req.Node, kafka.TopicPartition{Topic: req.Topic, Partition: req.Partition}, *req.Change)
		resp.State = &s
	case opCreateTopic:
		nt := req.NewTopic
		if nt == nil {
			return nil, fmt.Errorf("%w: CreateTopic without a topic", kafka.ErrInvalidRequest)
		}
		unclean, _ := strconv.ParseBool(nt.Configs[topicconfig.UncleanLeaderElects])
		err = c.machine.CreateTopic(req.Topic, int(nt.Partitions), int(nt.ReplicationFactor),
			TopicConfig{Unclean: Unclean(unclean), Configs: maps.Clone(nt.Configs), ID: nt.ID})
	case opDeleteTopic:
		err = c.machine.DeleteTopic(req.Topic)
	case opCreatePartitions:
		err = c.machine.CreatePartitions(req.Topic, int(req.Count))
	case opAlterConfigs:
		t, ok := c.machine.State().Topics[req.Topic]
		switch {
		case req.Alteration == nil:
			return nil, fmt.Errorf("%w: AlterConfigs without changes", kafka.ErrInvalidRequest)
		case !ok:
			return nil, fmt.Errorf("%w: %q", kafka.ErrUnknownTopicOrPartition, req.Topic)
		}
		var next map[string]string
		if next, err = topicconfig.Apply(t.Configs, *req.Alteration); err == nil {
			unclean, _ := strconv.ParseBool(next[topicconfig.UncleanLeaderElects])
			err = c.machine.AlterTopicConfig(req.Topic, TopicConfig{Unclean: Unclean(unclean), Configs: next})
		}
	case opElectLeader:
		err = c.machine.ElectPreferredLeader(kafka.TopicPartition{Topic: req.Topic, Partition: req.Partition})
	case opProducerIDs:
		resp.ProducerIDStart, err = c.pids.allocateBlock(c.fs, path.Join(c.dir, ProducerIDsFileName), producerIDBlock)
		resp.ProducerIDEnd = resp.ProducerIDStart + producerIDBlock
	default:
		return nil, fmt.Errorf("%w: unknown controller call %q", kafka.ErrInvalidRequest, req.Op)
	}
	if err != nil {
		return nil, err
	}
	resp.Version = c.version
	return resp, nil
}
