package controller

import (
	"context"
	"fmt"
	"time"

	"github.com/partlog/partlog/auth"
	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/replica"
	"github.com/partlog/partlog/transport"
)

// API is how a node reaches the controller: a *Controller in process, or a
// *Client over TCP. Every call may fail with kafka.ErrCoordinatorNotAvailable
// while the controller is closed or unreachable; the node retries.
type API interface {
	// Register registers node, serving at address (host:port, or "" for
	// a node whose server fills in its own), in a new broker epoch, which
	// it returns; the node's earlier incarnation is fenced (Kafka's
	// BrokerRegistration).
	Register(ctx context.Context, node int32, address string) (brokerEpoch int64, err error)
	// Heartbeat tells the controller a node is alive and answers the
	// metadata when it is newer than the node's (Kafka's
	// BrokerHeartbeat).
	Heartbeat(ctx context.Context, hb Heartbeat) (HeartbeatAnswer, error)
	// Shutdown fences a node at once, in its broker epoch, so that its
	// partitions' leadership moves now (Kafka's controlled shutdown).
	Shutdown(ctx context.Context, node int32, brokerEpoch int64) error
	// AlterPartition asks for the ISR change a partition's leader on node
	// proposed, and answers the partition's state after it (Kafka's
	// AlterPartition).
	AlterPartition(ctx context.Context, node int32, tp kafka.TopicPartition, change replica.ISRChange) (replica.LeaderAndISR, error)
	// CreateTopic creates a topic and assigns its partitions' replicas.
	CreateTopic(ctx context.Context, name string, t NewTopic) (Change, error)
	// DeleteTopic deletes a topic; id, when not empty, is the id of the
	// topic meant (see Machine.DeleteTopic), which makes a retried delete
	// succeed.
	DeleteTopic(ctx context.Context, name, id string) (Change, error)
	// CreatePartitions grows a topic from the from partitions the caller
	// saw to count (see Machine.CreatePartitions: from makes a retried
	// request succeed).
	CreatePartitions(ctx context.Context, name string, from, count int32) (Change, error)
	// AlterConfigs applies a to the configs the controller has for a
	// topic, so that changes made through different nodes at once are
	// not lost.
	AlterConfigs(ctx context.Context, name string, a transport.ConfigAlteration) (Change, error)
	// ElectPreferredLeader makes a partition's preferred replica its
	// leader, if it is in the ISR (kafka.ErrElectionNotNeeded when it
	// leads already); seenEpoch, when not negative, is the leader epoch
	// the caller saw (see Machine.ElectPreferredLeader: it makes a retried
	// election succeed).
	ElectPreferredLeader(ctx context.Context, tp kafka.TopicPartition, seenEpoch int32) (Change, error)
	// ProducerIDs reserves a block of producer ids for node: [start, end).
	ProducerIDs(ctx context.Context, node int32) (start, end int64, err error)
	// ReassignPartition moves a partition's replicas to target (see
	// Machine.ReassignPartition); a nil target cancels the reassignment in
	// progress (Kafka's AlterPartitionReassignments).
	ReassignPartition(ctx context.Context, tp kafka.TopicPartition, target []int32) (Change, error)
	// UnregisterNode removes a node from the cluster, fencing it first if
	// it is live (Kafka's UnregisterBroker).
	UnregisterNode(ctx context.Context, node int32) (Change, error)
	// SetScramCredential gives user cred for a SCRAM mechanism (an
	// upsertion of Kafka's AlterUserScramCredentials).
	SetScramCredential(ctx context.Context, user, mechanism string, cred auth.ScramCredential) (Change, error)
	// DeleteScramCredential deletes user's credential for a mechanism:
	// kafka.ErrResourceNotFound when there is none.
	DeleteScramCredential(ctx context.Context, user, mechanism string) (Change, error)
	// CreateACLs stores acls (Machine.CreateACLs) and returns, for each,
	// nil or why it was not stored: the error's Kafka code, as its
	// sentinel, wrapped with its text. The error is the call's: then
	// none was stored.
	CreateACLs(ctx context.Context, acls []auth.ACL) ([]error, Change, error)
	// DeleteACLs deletes the ACLs filters select (Machine.DeleteACLs)
	// and returns, for each filter, the ACLs it selected.
	DeleteACLs(ctx context.Context, filters []auth.ACLFilter) ([][]auth.ACL, Change, error)
	// AlterClientQuotas makes changes to the client quotas
	// (Machine.AlterClientQuotas; with validateOnly it only checks them)
	// and returns, for each, nil or why none of it was made: the error's
	// Kafka code, as its sentinel, wrapped with its text. The error is
	// the call's: then none was made.
	AlterClientQuotas(ctx context.Context, changes []QuotaChange, validateOnly bool) ([]error, Change, error)
	// AlterGroupConfigs applies a to the configs the controller has for
	// group, which need not exist (Machine.AlterGroupConfigs; with
	// validateOnly it only checks them), so that changes made through
	// different nodes at once are not lost. An invalid change is the
	// call's error: kafka.ErrInvalidConfig, or ErrInvalidRequest.
	AlterGroupConfigs(ctx context.Context, group string, a transport.ConfigAlteration, validateOnly bool) (Change, error)
}

// Change is the answer to a change of the metadata: the metadata version
// that has it, which a node waits for before it answers its client.
type Change struct {
	// Version is the metadata version after the change.
	Version int64
}

// NewTopic describes a topic to create.
type NewTopic struct {
	// Partitions and ReplicationFactor are the partition count and the
	// replicas of each.
	Partitions        int32
	ReplicationFactor int16
	// Configs are the topic's own configs, by Kafka's names.
	Configs map[string]string
	// ID is the topic id the node made up (unpadded URL-safe base64).
	ID string
}

// Heartbeat is a node's heartbeat.
type Heartbeat struct {
	// Node and BrokerEpoch name the node's incarnation.
	Node        int32
	BrokerEpoch int64
	// Address is where the node serves; a restarted controller learns it
	// again from heartbeats.
	Address string
	// KnownVersion is the metadata version the node has: the answer
	// carries the metadata only when the controller's is another.
	KnownVersion int64
	// Wait lets the controller hold the answer up to this long while the
	// metadata is no newer than KnownVersion: a long poll, so that a node
	// learns of a change — a new leader — as it happens rather than at its
	// next heartbeat.
	Wait time.Duration
}

// HeartbeatAnswer answers a Heartbeat.
type HeartbeatAnswer struct {
	// Version is the controller's metadata version.
	Version int64
	// Fenced says the node is fenced (its heartbeat unfences it when it
	// is in its registered broker epoch).
	Fenced bool
	// Metadata is the whole metadata when its version is not the node's
	// KnownVersion, and nil otherwise.
	Metadata *Metadata
}

// The wire form of the calls: one request type, by op, so that the
// in-process and the TCP paths are the same code (Controller.call). Over
// TCP a request travels as JSON under transport.APIController; these
// names and fields are that format, which nodes and controllers of
// different versions share.
const (
	opRegister          = "register"
	opHeartbeat         = "heartbeat"
	opShutdown          = "shutdown"
	opAlterPartition    = "alter_partition"
	opCreateTopic       = "create_topic"
	opDeleteTopic       = "delete_topic"
	opProducerIDs       = "producer_ids"
	opCreatePartitions  = "create_partitions"
	opAlterConfigs      = "alter_configs"
	opElectLeader       = "elect_leader"
	opReassign          = "reassign"
	opUnregister        = "unregister"
	opSetScram          = "set_scram"
	opDeleteScram       = "delete_scram"
	opCreateACLs        = "create_acls"
	opDeleteACLs        = "delete_acls"
	opAlterClientQuotas = "alter_client_quotas"
	opAlterGroupConfigs = "alter_group_configs"
)

type request struct {
	Op           string                      `json:"op"`
	Node         int32                       `json:"node"`
	BrokerEpoch  int64                       `json:"broker_epoch,omitempty"`
	Address      string                      `json:"address,omitempty"`
	KnownVersion int64                       `json:"known_version,omitempty"`
	WaitMs       int64                       `json:"wait_ms,omitempty"`
	Topic        string                      `json:"topic,omitempty"`
	Partition    int32                       `json:"partition,omitempty"`
	Change       *replica.ISRChange          `json:"change,omitempty"`
	NewTopic     *wireNewTopic               `json:"new_topic,omitempty"`
	TopicID      string                      `json:"topic_id,omitempty"`
	From         int32                       `json:"from,omitempty"`
	SeenEpoch    int32                       `json:"seen_epoch,omitempty"`
	Count        int32                       `json:"count,omitempty"`
	Alteration   *transport.ConfigAlteration `json:"alteration,omitempty"`
	Replicas     []int32                     `json:"replicas,omitempty"`
	Cancel       bool                        `json:"cancel,omitempty"`
	User         string                      `json:"user,omitempty"`
	Mechanism    string                      `json:"mechanism,omitempty"`
	Scram        *auth.ScramCredential       `json:"scram,omitempty"`
	ACLs         []auth.ACL                  `json:"acls,omitempty"`
	ACLFilters   []auth.ACLFilter            `json:"acl_filters,omitempty"`
	QuotaChanges []QuotaChange               `json:"quota_changes,omitempty"`
	Group        string                      `json:"group,omitempty"`
	ValidateOnly bool                        `json:"validate_only,omitempty"`
}

type wireNewTopic struct {
	Partitions        int32             `json:"partitions"`
	ReplicationFactor int16             `json:"replication_factor"`
	Configs           map[string]string `json:"configs,omitempty"`
	ID                string            `json:"id"`
}

type response struct {
	BrokerEpoch     int64                 `json:"broker_epoch,omitempty"`
	Fenced          bool                  `json:"fenced,omitempty"`
	Version         int64                 `json:"version"`
	Metadata        *Metadata             `json:"metadata,omitempty"`
	State           *replica.LeaderAndISR `json:"state,omitempty"`
	ProducerIDStart int64                 `json:"producer_id_start,omitempty"`
	ProducerIDEnd   int64                 `json:"producer_id_end,omitempty"`
	// ACLErrors answers CreateACLs: one per ACL, in order.
	ACLErrors []wireError `json:"acl_errors,omitempty"`
	// DeletedACLs answers DeleteACLs: what each filter selected, in order.
	DeletedACLs [][]auth.ACL `json:"deleted_acls,omitempty"`
	// QuotaErrors answers AlterClientQuotas: one per change, in order.
	QuotaErrors []wireError `json:"quota_errors,omitempty"`
}

// wireError is an error in an answer, for the answers that have one per
// item: its Kafka code (kafka.CodeOf; 0 for nil) and its text, as a call's
// own error crosses the network in the internal frame's header. In process
// too the answer holds wireErrors, so that a caller sees the same errors
// either way.
type wireError struct {
	Code    int16  `json:"code,omitempty"`
	Message string `json:"message,omitempty"`
}

// toWireError returns err's wire form.
func toWireError(err error) wireError {
	if err == nil {
		return wireError{}
	}
	return wireError{Code: kafka.CodeOf(err), Message: err.Error()}
}

// err returns the error w stands for: nil for code 0, else the code's
// sentinel wrapped with the text, so that errors.Is works on it.
func (w wireError) err() error {
	err := kafka.ErrorForCode(w.Code)
	if err == nil || w.Message == "" {
		return err
	}
	return fmt.Errorf("%w (%s)", err, w.Message)
}

// caller carries out a request: the Controller, or a Client's round trip.
type caller interface {
	call(ctx context.Context, req *request) (*response, error)
}

// calls implements API over a caller, for Controller and Client alike.
type calls struct{ c caller }

// Register implements API.
func (a calls) Register(ctx context.Context, node int32, address string) (int64, error) {
	resp, err := a.c.call(ctx, &request{Op: opRegister, Node: node, Address: address})
	if err != nil {
		return 0, err
	}
	return resp.BrokerEpoch, nil
}

// Heartbeat implements API.
func (a calls) Heartbeat(ctx context.Context, hb Heartbeat) (HeartbeatAnswer, error) {
	resp, err := a.c.call(ctx, &request{Op: opHeartbeat, Node: hb.Node, BrokerEpoch: hb.BrokerEpoch, Address: hb.Address,
		KnownVersion: hb.KnownVersion, WaitMs: hb.Wait.Milliseconds()})
	if err != nil {
		return HeartbeatAnswer{}, err
	}
	return HeartbeatAnswer{Version: resp.Version, Fenced: resp.Fenced, Metadata: resp.Metadata}, nil
}

// Shutdown implements API.
func (a calls) Shutdown(ctx context.Context, node int32, brokerEpoch int64) error {
	_, err := a.c.call(ctx, &request{Op: opShutdown, Node: node, BrokerEpoch: brokerEpoch})
	return err
}

// AlterPartition implements API.
func (a calls) AlterPartition(ctx context.Context, node int32, tp kafka.TopicPartition, change replica.ISRChange) (replica.LeaderAndISR, error) {
	resp, err := a.c.call(ctx, &request{Op: opAlterPartition, Node: node, Topic: tp.Topic, Partition: tp.Partition, Change: &change})
	switch {
	case err != nil:
		return replica.LeaderAndISR{}, err
	case resp.State == nil:
		return replica.LeaderAndISR{}, fmt.Errorf("%w: AlterPartition answered no state", kafka.ErrCorruptMessage)
	}
	return *resp.State, nil
}

// change carries out a request that changes the metadata.
func (a calls) change(ctx context.Context, req *request) (Change, error) {
	resp, err := a.c.call(ctx, req)
	if err != nil {
		return Change{}, err
	}
	return Change{Version: resp.Version}, nil
}

// CreateTopic implements API.
func (a calls) CreateTopic(ctx context.Context, name string, t NewTopic) (Change, error) {
	return a.change(ctx, &request{Op: opCreateTopic, Topic: name, NewTopic: &wireNewTopic{Partitions: t.Partitions,
		ReplicationFactor: t.ReplicationFactor, Configs: t.Configs, ID: t.ID}})
}

// DeleteTopic implements API.
func (a calls) DeleteTopic(ctx context.Context, name, id string) (Change, error) {
	return a.change(ctx, &request{Op: opDeleteTopic, Topic: name, TopicID: id})
}

// CreatePartitions implements API.
func (a calls) CreatePartitions(ctx context.Context, name string, from, count int32) (Change, error) {
	return a.change(ctx, &request{Op: opCreatePartitions, Topic: name, From: from, Count: count})
}

// AlterConfigs implements API.
func (a calls) AlterConfigs(ctx context.Context, name string, alt transport.ConfigAlteration) (Change, error) {
	return a.change(ctx, &request{Op: opAlterConfigs, Topic: name, Alteration: &alt})
}

// ElectPreferredLeader implements API.
func (a calls) ElectPreferredLeader(ctx context.Context, tp kafka.TopicPartition, seenEpoch int32) (Change, error) {
	return a.change(ctx, &request{Op: opElectLeader, Topic: tp.Topic, Partition: tp.Partition, SeenEpoch: seenEpoch})
}

// ProducerIDs implements API.
func (a calls) ProducerIDs(ctx context.Context, node int32) (int64, int64, error) {
	resp, err := a.c.call(ctx, &request{Op: opProducerIDs, Node: node})
	if err != nil {
		return -1, -1, err
	}
	return resp.ProducerIDStart, resp.ProducerIDEnd, nil
}

// ReassignPartition implements API.
func (a calls) ReassignPartition(ctx context.Context, tp kafka.TopicPartition, target []int32) (Change, error) {
	return a.change(ctx, &request{Op: opReassign, Topic: tp.Topic, Partition: tp.Partition, Replicas: target, Cancel: target == nil})
}

// UnregisterNode implements API.
func (a calls) UnregisterNode(ctx context.Context, node int32) (Change, error) {
	return a.change(ctx, &request{Op: opUnregister, Node: node})
}

// SetScramCredential implements API.
func (a calls) SetScramCredential(ctx context.Context, user, mechanism string, cred auth.ScramCredential) (Change, error) {
	return a.change(ctx, &request{Op: opSetScram, User: user, Mechanism: mechanism, Scram: &cred})
}

// DeleteScramCredential implements API.
func (a calls) DeleteScramCredential(ctx context.Context, user, mechanism string) (Change, error) {
	return a.change(ctx, &request{Op: opDeleteScram, User: user, Mechanism: mechanism})
}

// CreateACLs implements API.
func (a calls) CreateACLs(ctx context.Context, acls []auth.ACL) ([]error, Change, error) {
	resp, err := a.c.call(ctx, &request{Op: opCreateACLs, ACLs: acls})
	switch {
	case err != nil:
		return nil, Change{}, err
	case len(resp.ACLErrors) != len(acls):
		return nil, Change{}, fmt.Errorf("%w: CreateACLs answered %d results for %d ACLs", kafka.ErrCorruptMessage, len(resp.ACLErrors), len(acls))
	}
	errs := make([]error, len(acls))
	for i, w := range resp.ACLErrors {
		errs[i] = w.err()
	}
	return errs, Change{Version: resp.Version}, nil
}

// DeleteACLs implements API.
func (a calls) DeleteACLs(ctx context.Context, filters []auth.ACLFilter) ([][]auth.ACL, Change, error) {
	resp, err := a.c.call(ctx, &request{Op: opDeleteACLs, ACLFilters: filters})
	switch {
	case err != nil:
		return nil, Change{}, err
	case len(resp.DeletedACLs) != len(filters):
		return nil, Change{}, fmt.Errorf("%w: DeleteACLs answered %d results for %d filters", kafka.ErrCorruptMessage, len(resp.DeletedACLs), len(filters))
	}
	return resp.DeletedACLs, Change{Version: resp.Version}, nil
}

// AlterClientQuotas implements API.
func (a calls) AlterClientQuotas(ctx context.Context, changes []QuotaChange, validateOnly bool) ([]error, Change, error) {
	resp, err := a.c.call(ctx, &request{Op: opAlterClientQuotas, QuotaChanges: changes, ValidateOnly: validateOnly})
	switch {
	case err != nil:
		return nil, Change{}, err
	case len(resp.QuotaErrors) != len(changes):
		return nil, Change{}, fmt.Errorf("%w: AlterClientQuotas answered %d results for %d changes", kafka.ErrCorruptMessage, len(resp.QuotaErrors), len(changes))
	}
	errs := make([]error, len(changes))
	for i, w := range resp.QuotaErrors {
		errs[i] = w.err()
	}
	return errs, Change{Version: resp.Version}, nil
}

// AlterGroupConfigs implements API.
func (a calls) AlterGroupConfigs(ctx context.Context, group string, alt transport.ConfigAlteration, validateOnly bool) (Change, error) {
	return a.change(ctx, &request{Op: opAlterGroupConfigs, Group: group, Alteration: &alt, ValidateOnly: validateOnly})
}

var (
	_ API = (*Controller)(nil)
	_ API = (*Client)(nil)
)
