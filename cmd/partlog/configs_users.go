package main

// configs_users.go is 'partlog configs --entity-type users': the SCRAM
// credentials of the users SASL listeners authenticate, as
// kafka-configs.sh manages them (AlterUserScramCredentials,
// DescribeUserScramCredentials).

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/partlog/partlog/auth"
	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/transport"
)

// entityUsers is the entity type of users.
const entityUsers = "users"

// userAdmin returns the target's user calls: the node's own with --dir,
// or the node at --bootstrap-server, which forwards changes to the
// controller.
func (t *target) userAdmin() transport.UserAdminClient {
	if t.node != nil {
		return t.node.Client()
	}
	return t.remote
}

// scramChanges reads alter's changes of a user: --add-config
// SCRAM-SHA-256=[iterations=8192,password=...] sets a credential, salted
// here (the password does not leave the command), and --delete-config
// SCRAM-SHA-512 deletes one.
func scramChanges(user string, changes []transport.ConfigChange) (*transport.AlterUserScramCredentialsRequest, error) {
	req := &transport.AlterUserScramCredentialsRequest{}
	for _, c := range changes {
		if !slices.Contains(auth.ScramMechanisms, c.Name) {
			return nil, usageErrorf("configs", "a user's config is %s or %s, not %q", auth.MechanismScramSHA256, auth.MechanismScramSHA512, c.Name)
		}
		if c.Op == transport.ConfigDelete {
			req.Deletions = append(req.Deletions, transport.ScramCredentialDeletion{User: user, Mechanism: c.Name})
			continue
		}
		iterations, password := auth.DefaultScramIterations, ""
		for _, kv := range strings.Split(c.Value, ",") {
			k, v, _ := strings.Cut(kv, "=")
			switch k {
			case "iterations":
				n, err := strconv.Atoi(v)
				if err != nil {
					return nil, usageErrorf("configs", "%s: iterations %q is not a number", c.Name, v)
				}
				iterations = n
			case "password":
				password = v
			default:
				return nil, usageErrorf("configs", "%s=[%s]: give iterations=N,password=P", c.Name, c.Value)
			}
		}
		if password == "" {
			return nil, usageErrorf("configs", "%s needs a password: %s=[password=...]", c.Name, c.Name)
		}
		if iterations < auth.DefaultScramIterations || iterations > auth.MaxScramIterations {
			return nil, usageErrorf("configs", "%s: %d SCRAM iterations: Kafka takes %d to %d", c.Name, iterations, auth.DefaultScramIterations, auth.MaxScramIterations)
		}
		salt := make([]byte, 32)
		rand.Read(salt)
		salted, err := auth.SaltPassword(c.Name, password, salt, iterations)
		if err != nil {
			return nil, usageErrorf("configs", "%s: %v", c.Name, err)
		}
		req.Upsertions = append(req.Upsertions, transport.ScramCredentialUpsertion{User: user, Mechanism: c.Name,
			Iterations: iterations, Salt: salt, SaltedPassword: salted})
	}
	return req, nil
}

// alterUser sets and deletes user's SCRAM credentials.
func alterUser(ctx context.Context, t *target, user string, changes []transport.ConfigChange, stdout io.Writer) error {
	req, err := scramChanges(user, changes)
	if err != nil {
		return err
	}
	resp, err := t.userAdmin().AlterUserScramCredentials(ctx, req)
	if err != nil {
		return err
	}
	var errs []error
	for _, r := range resp.Results {
		if r.Err != nil {
			errs = append(errs, fmt.Errorf("user %s: %s", r.User, serverMessage(r.Err)))
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	fmt.Fprintf(stdout, "Completed updating config for user %s.\n", user)
	return nil
}

// describeUsers prints the SCRAM credentials of user, or of every user,
// as kafka-configs.sh does: their mechanisms and iteration counts. A user
// without credentials is kafka.ErrResourceNotFound, unless missingOK.
func describeUsers(ctx context.Context, t *target, user string, missingOK bool, stdout io.Writer) error {
	req := &transport.DescribeUserScramCredentialsRequest{}
	if user != "" {
		req.Users = []string{user}
	}
	resp, err := t.userAdmin().DescribeUserScramCredentials(ctx, req)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		return err
	}
	for _, r := range resp.Results {
		if missingOK && errors.Is(r.Err, kafka.ErrResourceNotFound) {
			continue
		}
		if r.Err != nil {
			return fmt.Errorf("user %s: %s", r.User, serverMessage(r.Err))
		}
		var creds []string
		for _, c := range r.Credentials {
			creds = append(creds, fmt.Sprintf("%s=iterations=%d", c.Mechanism, c.Iterations))
		}
		fmt.Fprintf(stdout, "SCRAM credential configs for user-principal '%s' are %s\n", r.User, strings.Join(creds, ", "))
	}
	return nil
}
