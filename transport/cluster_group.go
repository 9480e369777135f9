package transport

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"

	"github.com/partlog/partlog/kafka"
)

// A ClusterClient is a GroupClient as a Kafka client is: FindCoordinator
// goes to any node, and every other group request to the coordinator of
// its group, which the client finds with FindCoordinator and remembers per
// group id. When the coordinator answers that it no longer is one
// (NOT_COORDINATOR), is not available or still loading, or cannot be
// reached, the client forgets it; the caller retries after its backoff (a
// consumer does), and the retry asks FindCoordinator again.
var _ GroupClient = (*ClusterClient)(nil)

// FindCoordinator asks any node which node coordinates a group or a
// transactional id.
func (c *ClusterClient) FindCoordinator(ctx context.Context, req *FindCoordinatorRequest) (*FindCoordinatorResponse, error) {
	var resp *FindCoordinatorResponse
	err := c.anyNode(ctx, func(n NodeClient) error {
		var err error
		resp, err = n.FindCoordinator(ctx, req)
		return err
	})
	if err != nil {
		return nil, err
	}
	return resp, nil
}

// coordKey names what a coordinator coordinates: a group, or a
// transactional id.
type coordKey struct {
	typ CoordinatorType
	key string
}

func groupKey(group string) coordKey { return coordKey{CoordinatorGroup, group} }
func txnKey(id string) coordKey      { return coordKey{CoordinatorTransaction, id} }

// String names the key in errors: group "g", transactional id "tx".
func (k coordKey) String() string {
	if k.typ == CoordinatorTransaction {
		return fmt.Sprintf("transactional id %q", k.key)
	}
	return fmt.Sprintf("group %q", k.key)
}

// coordinator returns the client of the coordinator of k and its
// address, asking FindCoordinator when the client knows none.
func (c *ClusterClient) coordinator(ctx context.Context, k coordKey) (NodeClient, string, error) {
	c.mu.Lock()
	addr, ok := c.coords[k]
	c.mu.Unlock()
	if !ok {
		resp, err := c.FindCoordinator(ctx, &FindCoordinatorRequest{Key: k.key, KeyType: k.typ})
		if err != nil {
			return nil, "", err
		}
		if resp.Err != nil {
			return nil, "", resp.Err
		}
		c.mu.Lock()
		if resp.Host != "" {
			addr = net.JoinHostPort(resp.Host, strconv.Itoa(int(resp.Port)))
		} else {
			addr = c.addrs[resp.NodeID] // a node on its own names no address
		}
		if addr != "" {
			if c.coords == nil {
				c.coords = map[coordKey]string{}
			}
			c.coords[k] = addr
		}
		c.mu.Unlock()
		if addr == "" {
			return nil, "", fmt.Errorf("%w: the coordinator of %s is node %d, whose address the client does not know",
				kafka.ErrCoordinatorNotAvailable, k, resp.NodeID)
		}
	}
	n, err := c.node(ctx, addr)
	if err != nil {
		c.forgetCoordinator(k, addr)
		return nil, "", err
	}
	return n, addr, nil
}

// forgetCoordinator forgets that the node at addr coordinates k.
func (c *ClusterClient) forgetCoordinator(k coordKey, addr string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.coords[k] == addr {
		delete(c.coords, k)
	}
}

// coordinatorMoved reports whether err says that a coordinator is not (or
// not yet) where the client thought.
func coordinatorMoved(err error) bool {
	return errors.Is(err, kafka.ErrNotCoordinator) || errors.Is(err, kafka.ErrCoordinatorNotAvailable) || errors.Is(err, kafka.ErrCoordinatorLoadInProgress)
}

// toCoordinator sends a request to the coordinator of k with call, and
// forgets the coordinator when the call fails or an error of the answer
// (errs) says it moved.
func toCoordinator[R any](ctx context.Context, c *ClusterClient, k coordKey, call func(NodeClient) (R, error), errs func(R) []error) (R, error) {
	var zero R
	n, addr, err := c.coordinator(ctx, k)
	if err != nil {
		return zero, err
	}
	r, err := call(n)
	if err != nil {
		c.forgetCoordinator(k, addr)
		return zero, err
	}
	if slices.ContainsFunc(errs(r), coordinatorMoved) {
		c.forgetCoordinator(k, addr)
	}
	return r, nil
}

// JoinGroup sends a JoinGroup to the group's coordinator.
func (c *ClusterClient) JoinGroup(ctx context.Context, req *JoinGroupRequest) (*JoinGroupResponse, error) {
	return toCoordinator(ctx, c, groupKey(req.Group), func(n NodeClient) (*JoinGroupResponse, error) { return n.JoinGroup(ctx, req) },
		func(r *JoinGroupResponse) []error { return []error{r.Err} })
}

// SyncGroup sends a SyncGroup to the group's coordinator.
func (c *ClusterClient) SyncGroup(ctx context.Context, req *SyncGroupRequest) (*SyncGroupResponse, error) {
	return toCoordinator(ctx, c, groupKey(req.Group), func(n NodeClient) (*SyncGroupResponse, error) { return n.SyncGroup(ctx, req) },
		func(r *SyncGroupResponse) []error { return []error{r.Err} })
}

// Heartbeat sends a Heartbeat to the group's coordinator.
func (c *ClusterClient) Heartbeat(ctx context.Context, req *HeartbeatRequest) (*HeartbeatResponse, error) {
	return toCoordinator(ctx, c, groupKey(req.Group), func(n NodeClient) (*HeartbeatResponse, error) { return n.Heartbeat(ctx, req) },
		func(r *HeartbeatResponse) []error { return []error{r.Err} })
}

// LeaveGroup sends a LeaveGroup to the group's coordinator.
func (c *ClusterClient) LeaveGroup(ctx context.Context, req *LeaveGroupRequest) (*LeaveGroupResponse, error) {
	return toCoordinator(ctx, c, groupKey(req.Group), func(n NodeClient) (*LeaveGroupResponse, error) { return n.LeaveGroup(ctx, req) },
		func(r *LeaveGroupResponse) []error {
			errs := []error{r.Err}
			for _, m := range r.Members {
				errs = append(errs, m.Err)
			}
			return errs
		})
}

// OffsetCommit sends an OffsetCommit to the group's coordinator.
func (c *ClusterClient) OffsetCommit(ctx context.Context, req *OffsetCommitRequest) (*OffsetCommitResponse, error) {
	return toCoordinator(ctx, c, groupKey(req.Group), func(n NodeClient) (*OffsetCommitResponse, error) { return n.OffsetCommit(ctx, req) },
		func(r *OffsetCommitResponse) []error { return commitErrors(r.Topics) })
}

// commitErrors returns the partitions' errors of a commit's answer.
func commitErrors(topics []OffsetCommitTopicResponse) []error {
	var errs []error
	for _, t := range topics {
		for _, p := range t.Partitions {
			errs = append(errs, p.Err)
		}
	}
	return errs
}

// OffsetFetch sends an OffsetFetch to the group's coordinator.
func (c *ClusterClient) OffsetFetch(ctx context.Context, req *OffsetFetchRequest) (*OffsetFetchResponse, error) {
	return toCoordinator(ctx, c, groupKey(req.Group), func(n NodeClient) (*OffsetFetchResponse, error) { return n.OffsetFetch(ctx, req) },
		func(r *OffsetFetchResponse) []error {
			errs := []error{r.Err}
			for _, t := range r.Topics {
				for _, p := range t.Partitions {
					errs = append(errs, p.Err)
				}
			}
			return errs
		})
}

// byCoordinator finds the coordinator of each key of a type, and returns
// the keys by coordinator address, with the error of each key whose
// coordinator it could not find.
func (c *ClusterClient) byCoordinator(ctx context.Context, typ CoordinatorType, keys []string) (map[string][]string, map[string]error) {
	by, failed := map[string][]string{}, map[string]error{}
	for _, g := range keys {
		if _, addr, err := c.coordinator(ctx, coordKey{typ, g}); err != nil {
			failed[g] = err
		} else {
			by[addr] = append(by[addr], g)
		}
	}
	return by, failed
}

// DescribeGroups asks each group's coordinator to describe it. A group
// whose coordinator could not be found or reached is described with the
// error, in state Dead.
func (c *ClusterClient) DescribeGroups(ctx context.Context, req *DescribeGroupsRequest) (*DescribeGroupsResponse, error) {
	groups, err := perCoordinator(ctx, c, CoordinatorGroup, req.Groups,
		func(ctx context.Context, n NodeClient, groups []string) ([]DescribedGroup, error) {
			r, err := n.DescribeGroups(ctx, &DescribeGroupsRequest{Groups: groups})
			if err != nil {
				return nil, err
			}
			return r.Groups, nil
		},
		func(d DescribedGroup) (string, error) { return d.Group, d.Err },
		func(g string, err error) DescribedGroup {
			return DescribedGroup{Group: g, Err: err, State: "Dead", GenerationID: NoGeneration}
		})
	if err != nil {
		return nil, err
	}
	return &DescribeGroupsResponse{Groups: groups}, nil
}

// DeleteGroups asks each group's coordinator to delete it.
func (c *ClusterClient) DeleteGroups(ctx context.Context, req *DeleteGroupsRequest) (*DeleteGroupsResponse, error) {
	results, err := perCoordinator(ctx, c, CoordinatorGroup, req.Groups,
		func(ctx context.Context, n NodeClient, groups []string) ([]DeletedGroup, error) {
			r, err := n.DeleteGroups(ctx, &DeleteGroupsRequest{Groups: groups})
			if err != nil {
				return nil, err
			}
			return r.Results, nil
		},
		func(d DeletedGroup) (string, error) { return d.Group, d.Err },
		func(g string, err error) DeletedGroup { return DeletedGroup{Group: g, Err: err} })
	if err != nil {
		return nil, err
	}
	return &DeleteGroupsResponse{Results: results}, nil
}

// perCoordinator sends each key's part of a request to the key's
// coordinator (keys are group ids or transactional ids, as typ says) and
// answers key by key, in the order of keys: the coordinator's answer, or
// failed with why there is none. A coordinator that answers that it no
// longer coordinates a key is forgotten.
func perCoordinator[A any](ctx context.Context, c *ClusterClient, typ CoordinatorType, keys []string,
	send func(context.Context, NodeClient, []string) ([]A, error),
	about func(A) (key string, err error), failed func(key string, err error) A) ([]A, error) {
	by, errOf := c.byCoordinator(ctx, typ, keys)
	resps, errs := fanOut(ctx, c, mapKeys(by), func(ctx context.Context, n NodeClient, addr string) ([]A, error) {
		return send(ctx, n, by[addr])
	})
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	answers := map[string]A{}
	for addr, gs := range by {
		for _, g := range gs {
			errOf[g] = errs[addr]
		}
		for _, a := range resps[addr] {
			g, err := about(a)
			answers[g] = a
			if coordinatorMoved(err) {
				c.forgetCoordinator(coordKey{typ, g}, addr)
			}
		}
	}
	out := make([]A, 0, len(keys))
	for _, g := range keys {
		a, ok := answers[g]
		if !ok {
			k := coordKey{typ, g}
			err := errOf[g]
			if err == nil {
				err = fmt.Errorf("%w: the coordinator did not answer for %s", kafka.ErrNetwork, k)
			}
			c.forgetCoordinators(k)
			a = failed(g, err)
		}
		out = append(out, a)
	}
	return out, nil
}

// forgetCoordinators forgets the coordinator of k, wherever it was.
func (c *ClusterClient) forgetCoordinators(k coordKey) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.coords, k)
}

// ListGroups asks every node for the groups it coordinates and merges the
// answers, sorted by group id. When a node cannot be reached or fails, the
// groups of the others are answered, with Err set to that node's error.
func (c *ClusterClient) ListGroups(ctx context.Context, req *ListGroupsRequest) (*ListGroupsResponse, error) {
	answers, err := everyNode(ctx, c, func(ctx context.Context, n NodeClient) (*ListGroupsResponse, error) {
		return n.ListGroups(ctx, req)
	}, func(r *ListGroupsResponse) error { return r.Err })
	if err != nil {
		return nil, err
	}
	return &ListGroupsResponse{Err: answers.err, Groups: mergeListed(answers.resps,
		func(r *ListGroupsResponse) []ListedGroup { return r.Groups }, func(g ListedGroup) string { return g.Group })}, nil
}

// nodeAnswers are the answers of everyNode.
type nodeAnswers[R any] struct {
	resps []R   // the answers of the nodes that gave one, in address order
	err   error // the first node's error, its call's or its answer's
}

// everyNode learns the cluster's nodes (one the client does not know may
// coordinate groups or transactions) and calls each at once. It returns
// their answers, and the first error of a node that failed or whose answer
// has an error (answerErr), wrapped with the node's address; an error of
// its own only when it learnt no nodes or ctx ended.
func everyNode[R any](ctx context.Context, c *ClusterClient, call func(context.Context, NodeClient) (R, error), answerErr func(R) error) (nodeAnswers[R], error) {
	var out nodeAnswers[R]
	if _, err := c.Metadata(ctx, &MetadataRequest{Topics: []string{}}); err != nil {
		return out, err
	}
	c.mu.Lock()
	var addrs []string
	for _, a := range c.addrs {
		addrs = append(addrs, a)
	}
	c.mu.Unlock()
	slices.Sort(addrs)
	resps, errs := fanOut(ctx, c, addrs, func(ctx context.Context, n NodeClient, _ string) (R, error) { return call(ctx, n) })
	if err := ctx.Err(); err != nil {
		return out, err
	}
	for _, addr := range addrs {
		r, ok := resps[addr]
		if !ok {
			out.err = cmp.Or(out.err, fmt.Errorf("node %s: %w", addr, errs[addr]))
			continue
		}
		if err := answerErr(r); err != nil {
			out.err = cmp.Or(out.err, fmt.Errorf("node %s: %w", addr, err))
		}
		out.resps = append(out.resps, r)
	}
	return out, nil
}

// mergeListed merges what nodes listed, the items of each answer: each
// key once (a coordinator that just lost a group or transactional id may
// list it too), sorted by key.
func mergeListed[R, A any](resps []R, items func(R) []A, key func(A) string) []A {
	var out []A
	seen := map[string]bool{}
	for _, r := range resps {
		for _, a := range items(r) {
			if k := key(a); !seen[k] {
				seen[k] = true
				out = append(out, a)
			}
		}
	}
	slices.SortFunc(out, func(a, b A) int { return strings.Compare(key(a), key(b)) })
	return out
}

// mapKeys returns the keys of m.
func mapKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	return keys
}

// consumerGroupNode is n as a ConsumerGroupClient, or
// kafka.ErrUnsupportedVersion when its connection cannot speak the
// consumer group protocol.
func consumerGroupNode(n NodeClient) (ConsumerGroupClient, error) {
	cg, ok := n.(ConsumerGroupClient)
	if !ok {
		return nil, fmt.Errorf("%w: the node's client does not speak ConsumerGroupHeartbeat", kafka.ErrUnsupportedVersion)
	}
	return cg, nil
}

// ConsumerGroupHeartbeat sends a ConsumerGroupHeartbeat to the group's
// coordinator.
func (c *ClusterClient) ConsumerGroupHeartbeat(ctx context.Context, req *ConsumerGroupHeartbeatRequest) (*ConsumerGroupHeartbeatResponse, error) {
	return toCoordinator(ctx, c, groupKey(req.Group), func(n NodeClient) (*ConsumerGroupHeartbeatResponse, error) {
		cg, err := consumerGroupNode(n)
		if err != nil {
			return nil, err
		}
		return cg.ConsumerGroupHeartbeat(ctx, req)
	}, func(r *ConsumerGroupHeartbeatResponse) []error { return []error{r.Err} })
}

// ConsumerGroupDescribe asks each group's coordinator to describe it.
func (c *ClusterClient) ConsumerGroupDescribe(ctx context.Context, req *ConsumerGroupDescribeRequest) (*ConsumerGroupDescribeResponse, error) {
	groups, err := perCoordinator(ctx, c, CoordinatorGroup, req.Groups,
		func(ctx context.Context, n NodeClient, groups []string) ([]ConsumerGroupDescription, error) {
			cg, err := consumerGroupNode(n)
			if err != nil {
				return nil, err
			}
			r, err := cg.ConsumerGroupDescribe(ctx, &ConsumerGroupDescribeRequest{Groups: groups})
			if err != nil {
				return nil, err
			}
			return r.Groups, nil
		},
		func(d ConsumerGroupDescription) (string, error) { return d.Group, d.Err },
		func(g string, err error) ConsumerGroupDescription {
			return ConsumerGroupDescription{Group: g, Err: err, State: "Dead"}
		})
	if err != nil {
		return nil, err
	}
	return &ConsumerGroupDescribeResponse{Groups: groups}, nil
}
