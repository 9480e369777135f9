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
	"github.com/partlog/partlog/vfs"
)

// call answers one request: the controller's side of every path. A change
// is answered once the quorum committed it. A heartbeat that may wait
// (WaitMs) and finds nothing new waits for the next change.
func (c *Controller) call(ctx context.Context, req *request) (*response, error) {
	c.mu.Lock()
	closed := c.closed
	c.mu.Unlock()
	if closed {
		return nil, fmt.Errorf("%w: the controller is closed", kafka.ErrCoordinatorNotAvailable)
	}
	resp := &response{}
	version, err := c.quorum.Do(ctx, func(m *Machine) error { return answer(m, req, resp, &c.pids, c.fs, c.dir) })
	if err != nil {
		return nil, err
	}
	resp.Version = version
	if req.Op != opHeartbeat {
		return resp, nil
	}
	committed, changed := c.quorum.Version()
	if committed == req.KnownVersion && req.WaitMs > 0 {
		t := time.NewTimer(time.Duration(req.WaitMs) * time.Millisecond)
		defer t.Stop()
		select {
		case <-changed:
		case <-t.C:
		case <-ctx.Done():
		case <-c.stop:
		}
	}
	// The whole metadata only for a node that does not have it: most
	// heartbeats find nothing new.
	if committed, _ = c.quorum.Version(); committed != req.KnownVersion {
		resp.Metadata = c.metadata()
		committed = resp.Metadata.Version
	}
	resp.Version = committed
	return resp, nil
}

// answer carries out req on the active controller's machine m, filling in
// resp.
func answer(m *Machine, req *request, resp *response, pids *producerIDFloor, fsys vfs.FS, dir string) error {
	var err error
	switch req.Op {
	case opRegister:
		resp.BrokerEpoch, err = m.RegisterNode(req.Node, req.Address)
	case opHeartbeat:
		if err = m.Heartbeat(req.Node, req.BrokerEpoch); err == nil {
			err = m.UpdateAddress(req.Node, req.BrokerEpoch, req.Address)
		}
		n, _ := m.Node(req.Node)
		resp.Fenced = n.Fenced
	case opShutdown:
		err = m.ShutdownNode(req.Node, req.BrokerEpoch)
	case opAlterPartition:
		if req.Change == nil {
			return fmt.Errorf("%w: AlterPartition without a change", kafka.ErrInvalidRequest)
		}
		var s replica.LeaderAndISR
		s, err = m.AlterPartition(req.Node, kafka.TopicPartition{Topic: req.Topic, Partition: req.Partition}, *req.Change)
		resp.State = &s
	case opCreateTopic:
		nt := req.NewTopic
		if nt == nil {
			return fmt.Errorf("%w: CreateTopic without a topic", kafka.ErrInvalidRequest)
		}
		unclean, _ := strconv.ParseBool(nt.Configs[topicconfig.UncleanLeaderElects])
		err = m.CreateTopic(req.Topic, int(nt.Partitions), int(nt.ReplicationFactor),
			TopicConfig{Unclean: Unclean(unclean), Configs: maps.Clone(nt.Configs), ID: nt.ID})
	case opDeleteTopic:
		err = m.DeleteTopic(req.Topic, req.TopicID)
	case opCreatePartitions:
		err = m.CreatePartitions(req.Topic, int(req.From), int(req.Count))
	case opAlterConfigs:
		configs, ok := m.TopicConfigs(req.Topic)
		switch {
		case req.Alteration == nil:
			return fmt.Errorf("%w: AlterConfigs without changes", kafka.ErrInvalidRequest)
		case !ok:
			return fmt.Errorf("%w: %q", kafka.ErrUnknownTopicOrPartition, req.Topic)
		}
		var next map[string]string
		if next, err = topicconfig.Apply(configs, *req.Alteration); err == nil {
			unclean, _ := strconv.ParseBool(next[topicconfig.UncleanLeaderElects])
			err = m.AlterTopicConfig(req.Topic, TopicConfig{Unclean: Unclean(unclean), Configs: next})
		}
	case opElectLeader:
		err = m.ElectPreferredLeader(kafka.TopicPartition{Topic: req.Topic, Partition: req.Partition}, req.SeenEpoch)
	case opProducerIDs:
		var floor int64
		if floor, err = pids.get(fsys, path.Join(dir, ProducerIDsFileName)); err == nil {
			resp.ProducerIDStart, err = m.AllocateProducerIDs(req.Node, producerIDBlock, floor)
			resp.ProducerIDEnd = resp.ProducerIDStart + producerIDBlock
		}
	case opReassign:
		target := req.Replicas
		switch {
		case req.Cancel:
			target = nil
		case target == nil:
			target = []int32{} // refused: no target replicas
		}
		err = m.ReassignPartition(kafka.TopicPartition{Topic: req.Topic, Partition: req.Partition}, target)
	case opUnregister:
		err = m.UnregisterNode(req.Node)
	case opSetScram:
		if req.Scram == nil {
			return fmt.Errorf("%w: SetScramCredential without a credential", kafka.ErrInvalidRequest)
		}
		err = m.SetScramCredential(req.User, req.Mechanism, *req.Scram)
	case opDeleteScram:
		err = m.DeleteScramCredential(req.User, req.Mechanism)
	case opCreateACLs:
		var errs []error
		if errs, err = m.CreateACLs(req.ACLs); err == nil {
			resp.ACLErrors = make([]wireError, len(errs))
			for i, e := range errs {
				resp.ACLErrors[i] = toWireError(e)
			}
		}
	case opDeleteACLs:
		resp.DeletedACLs, err = m.DeleteACLs(req.ACLFilters)
	case opAlterClientQuotas:
		var errs []error
		if errs, err = m.AlterClientQuotas(req.QuotaChanges, req.ValidateOnly); err == nil {
			resp.QuotaErrors = make([]wireError, len(errs))
			for i, e := range errs {
				resp.QuotaErrors[i] = toWireError(e)
			}
		}
	case opAlterGroupConfigs:
		if req.Alteration == nil {
			return fmt.Errorf("%w: AlterGroupConfigs without changes", kafka.ErrInvalidRequest)
		}
		err = m.AlterGroupConfigs(req.Group, *req.Alteration, req.ValidateOnly)
	default:
		return fmt.Errorf("%w: unknown controller call %q", kafka.ErrInvalidRequest, req.Op)
	}
	return err
}
