package controller

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"

	"github.com/partlog/partlog/auth"
	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/replica"
	"github.com/partlog/partlog/transport"
)

// Metadata is what a node learns of the cluster from the controller. Its
// JSON is the controller calls' wire form.
type Metadata struct {
	// Version grows with every change; a node takes metadata only when it
	// is newer than the one it has.
	Version int64 `json:"version"`
	// Nodes are the registered nodes, by id.
	Nodes map[int32]NodeInfo `json:"nodes"`
	// Topics are the topics, by name, with each partition's state.
	Topics map[string]TopicState `json:"topics"`
	// Users are the users' SCRAM credentials, by user and mechanism,
	// with which every node authenticates clients on its SASL listeners.
	Users map[string]map[string]auth.ScramCredential `json:"users,omitempty"`
	// ACLs are the cluster's ACLs, in the order the controller stored
	// them (by id), against which nodes authorize requests.
	ACLs []auth.ACL `json:"acls,omitempty"`
	// Quotas are the cluster's client quotas, by user and then client id,
	// which nodes enforce.
	Quotas []ClientQuota `json:"quotas,omitempty"`
	// GroupConfigs are the configs groups set themselves, by group id and
	// then name (Kafka's group configs); a config a group does not set
	// has its default (GroupConfigDefaults).
	GroupConfigs map[string]map[string]string `json:"group_configs,omitempty"`
}

// NodeInfo is what the metadata says of a node.
type NodeInfo struct {
	// BrokerEpoch is the node's current incarnation.
	BrokerEpoch int64 `json:"broker_epoch"`
	// Fenced says the node is fenced: no leader, no ISR member.
	Fenced bool `json:"fenced"`
	// Address is where it serves (host:port), or "" when it said none.
	Address string `json:"address,omitempty"`
}

// TopicIDBytes decodes a topic id as nodes write them (unpadded URL-safe
// base64) into Kafka's 16 bytes; an id that does not decode is zeros.
func TopicIDBytes(id string) [16]byte {
	var out [16]byte
	if b, err := base64.RawURLEncoding.DecodeString(id); err == nil {
		copy(out[:], b)
	}
	return out
}

// Response answers a Metadata request from the metadata: the live nodes
// with their addresses, and the topics named (every topic when nil).
func (md *Metadata) Response(topics []string, controllerID int32) *transport.MetadataResponse {
	resp := &transport.MetadataResponse{ControllerID: controllerID}
	ids := slices.Sorted(maps.Keys(md.Nodes))
	for _, id := range ids {
		n := md.Nodes[id]
		if n.Fenced {
			continue
		}
		b := transport.Broker{NodeID: id}
		if host, port, ok := HostPort(n.Address); ok {
			b.Host, b.Port = host, port
		}
		resp.Brokers = append(resp.Brokers, b)
	}
	if topics == nil {
		topics = slices.Sorted(maps.Keys(md.Topics))
	}
	for _, name := range topics {
		t, ok := md.Topics[name]
		tm := transport.TopicMetadata{Topic: name}
		if !ok {
			tm.Err = fmt.Errorf("%w: %q", kafka.ErrUnknownTopicOrPartition, name)
			resp.Topics = append(resp.Topics, tm)
			continue
		}
		tm.TopicID = TopicIDBytes(t.ID)
		tm.Internal = strings.HasPrefix(name, "__") // __consumer_offsets
		for p, s := range t.Partitions {
			pm := transport.PartitionMetadata{Partition: int32(p), Leader: s.Leader, LeaderEpoch: s.LeaderEpoch,
				Replicas: slices.Clone(s.Replicas), ISR: slices.Clone(s.ISR)}
			if s.Leader == replica.NoLeader {
				pm.Err = fmt.Errorf("%w: %s-%d has no leader", kafka.ErrLeaderNotAvailable, name, p)
			}
			for _, r := range s.Replicas {
				if n, ok := md.Nodes[r]; !ok || n.Fenced {
					pm.Offline = append(pm.Offline, r)
				}
			}
			tm.Partitions = append(tm.Partitions, pm)
		}
		resp.Topics = append(resp.Topics, tm)
	}
	return resp
}

// HostPort splits host:port for a Metadata answer; ok is false for an
// address that is not one.
func HostPort(addr string) (string, int32, bool) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, false
	}
	p, err := strconv.ParseInt(port, 10, 32)
	if err != nil {
		return "", 0, false
	}
	return host, int32(p), true
}

// stepRaftBody steps the Raft messages encoded in body, as another
// controller of the quorum sent them (encodeRaftMessages).
func (c *Controller) stepRaftBody(body []byte) error {
	msgs, err := decodeRaftMessages(body)
	if err != nil {
		return err
	}
	for _, m := range msgs {
		c.StepRaft(m)
	}
	return nil
}

// HandleInternal answers controller calls that arrive over TCP
// (transport.APIController), and steps the Raft messages of the other
// controllers of its quorum (transport.APIControllerRaft); it makes the
// Controller a transport.InternalHandler.
func (c *Controller) HandleInternal(ctx context.Context, key int16, body []byte) ([]byte, error) {
	switch key {
	case transport.APIControllerRaft:
		return nil, c.stepRaftBody(body)
	case transport.APIController:
	default:
		return nil, fmt.Errorf("%w: the controller answers only controller calls", kafka.ErrInvalidRequest)
	}
	req := &request{}
	if err := json.Unmarshal(body, req); err != nil {
		return nil, fmt.Errorf("%w: controller call: %v", kafka.ErrInvalidRequest, err)
	}
	resp, err := c.call(ctx, req)
	if err != nil {
		return nil, err
	}
	return json.Marshal(resp)
}

// Serve answers controller calls from nodes, and Metadata from clients
// (which then find each partition's leader), on ln until Close or until ln
// fails.
func (c *Controller) Serve(ln net.Listener) error {
	s := transport.NewServer(handler{c}, transport.ServerOptions{Logger: c.logger, TLS: c.tls})
	go func() {
		<-c.stop
		s.Close()
	}()
	err := s.Serve(ln)
	if errors.Is(err, transport.ErrServerClosed) {
		return nil
	}
	return err
}

// handler is a Controller as a TCP server's handler: it answers
// controller calls and Metadata; it hosts no partitions.
type handler struct{ c *Controller }

func (h handler) HandleInternal(ctx context.Context, key int16, body []byte) ([]byte, error) {
	return h.c.HandleInternal(ctx, key, body)
}

func (h handler) Metadata(ctx context.Context, req *transport.MetadataRequest) (*transport.MetadataResponse, error) {
	return h.c.metadata().Response(req.Topics, -1), nil
}

var errNoPartitions = fmt.Errorf("%w: a controller hosts no partitions", kafka.ErrNotLeaderOrFollower)

func (handler) Produce(context.Context, *transport.ProduceRequest) (*transport.ProduceResponse, error) {
	return nil, errNoPartitions
}

func (handler) Fetch(context.Context, *transport.FetchRequest) (*transport.FetchResponse, error) {
	return nil, errNoPartitions
}

func (handler) ListOffsets(context.Context, *transport.ListOffsetsRequest) (*transport.ListOffsetsResponse, error) {
	return nil, errNoPartitions
}
