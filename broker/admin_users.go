package broker

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/partlog/partlog/auth"
	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/transport"
)

// AlterUserScramCredentials deletes and sets users' SCRAM credentials
// through the controller, which keeps them in the cluster's metadata, and
// answers once this node has the change: every node then authenticates
// the users with them (ScramCredential). A user whose request names one
// mechanism twice gets kafka.ErrDuplicateResource and none of its
// changes; a deletion of a credential the user does not have,
// kafka.ErrResourceNotFound.
func (n *Broker) AlterUserScramCredentials(ctx context.Context, req *transport.AlterUserScramCredentialsRequest) (*transport.AlterUserScramCredentialsResponse, error) {
	if err := n.begin(); err != nil {
		return nil, err
	}
	defer n.end()
	type change struct {
		mechanism string
		upsert    *transport.ScramCredentialUpsertion // nil: a deletion
	}
	byUser := map[string][]change{}
	var order []string
	add := func(user string, c change) {
		if byUser[user] == nil {
			order = append(order, user)
		}
		byUser[user] = append(byUser[user], c)
	}
	for _, d := range req.Deletions {
		add(d.User, change{mechanism: d.Mechanism})
	}
	for i := range req.Upsertions {
		add(req.Upsertions[i].User, change{mechanism: req.Upsertions[i].Mechanism, upsert: &req.Upsertions[i]})
	}
	resp := &transport.AlterUserScramCredentialsResponse{}
	for _, user := range order {
		changes := byUser[user]
		err := func() error {
			seen := map[string]bool{}
			for _, c := range changes {
				switch {
				case seen[c.mechanism]:
					return fmt.Errorf("%w: user %q and mechanism %s named twice", kafka.ErrDuplicateResource, user, c.mechanism)
				case user == "":
					return fmt.Errorf("%w: an empty user name", kafka.ErrUnacceptableCredential)
				case !slices.Contains(auth.ScramMechanisms, c.mechanism):
					return fmt.Errorf("%w: not a SCRAM mechanism", kafka.ErrUnsupportedSaslMechanism)
				}
				seen[c.mechanism] = true
			}
			for _, c := range changes {
				if err := n.alterScram(ctx, user, c.mechanism, c.upsert); err != nil {
					return err
				}
			}
			return nil
		}()
		resp.Results = append(resp.Results, transport.UserResult{User: user, Err: err})
	}
	return resp, nil
}

// alterScram sets user's credential for mechanism from u, or deletes it
// when u is nil, and waits until this node has the change.
func (n *Broker) alterScram(ctx context.Context, user, mechanism string, u *transport.ScramCredentialUpsertion) error {
	if u == nil {
		return n.awaitChange(ctx)(n.member.ctl.DeleteScramCredential(ctx, user, mechanism))
	}
	cred, err := auth.ScramCredentialFromSalted(mechanism, u.Salt, u.SaltedPassword, u.Iterations)
	if err != nil {
		return fmt.Errorf("%w: %v", kafka.ErrUnacceptableCredential, err)
	}
	return n.awaitChange(ctx)(n.member.ctl.SetScramCredential(ctx, user, mechanism, cred))
}

// DescribeUserScramCredentials answers which SCRAM credentials users have
// — their mechanisms and iteration counts, never their keys — from the
// metadata this node has.
func (n *Broker) DescribeUserScramCredentials(ctx context.Context, req *transport.DescribeUserScramCredentialsRequest) (*transport.DescribeUserScramCredentialsResponse, error) {
	if err := n.begin(); err != nil {
		return nil, err
	}
	defer n.end()
	md, _ := n.member.metadata()
	users := req.Users
	if users == nil {
		users = slices.Sorted(maps.Keys(md.Users))
	}
	resp := &transport.DescribeUserScramCredentialsResponse{}
	seen := map[string]bool{}
	for _, user := range users {
		if seen[user] {
			resp.Results = append(resp.Results, transport.UserScramCredentials{User: user,
				Err: fmt.Errorf("%w: user %q is named twice", kafka.ErrDuplicateResource, user)})
			continue
		}
		seen[user] = true
		creds := md.Users[user]
		if len(creds) == 0 {
			resp.Results = append(resp.Results, transport.UserScramCredentials{User: user,
				Err: fmt.Errorf("%w: attempt to describe a user credential that does not exist", kafka.ErrResourceNotFound)})
			continue
		}
		r := transport.UserScramCredentials{User: user}
		for _, m := range auth.ScramMechanisms {
			if c, ok := creds[m]; ok {
				r.Credentials = append(r.Credentials, transport.ScramCredentialInfo{Mechanism: m, Iterations: c.Iterations})
			}
		}
		resp.Results = append(resp.Results, r)
	}
	return resp, nil
}

// ScramCredential returns user's SCRAM credential for mechanism from the
// cluster's metadata as this node has it: the node is an auth.Credentials
// for its SASL listeners, which authenticate users set with
// AlterUserScramCredentials on any node.
func (n *Broker) ScramCredential(user, mechanism string) (auth.ScramCredential, bool) {
	md, _ := n.member.metadata()
	c, ok := md.Users[user][mechanism]
	return c, ok
}
