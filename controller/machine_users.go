package controller

import (
	"fmt"
	"slices"

	"github.com/partlog/partlog/auth"
	"github.com/partlog/partlog/kafka"
)

// SetScramCredential gives user cred for mechanism, replacing the one it
// had (an upsertion of Kafka's AlterUserScramCredentials). The errors are
// kafka.ErrUnsupportedSaslMechanism for a mechanism other than SCRAM's,
// and kafka.ErrUnacceptableCredential for an empty user name, salt or key
// or an iteration count outside 4096 to 16384.
func (c *Machine) SetScramCredential(user, mechanism string, cred auth.ScramCredential) error {
	switch {
	case !slices.Contains(auth.ScramMechanisms, mechanism):
		return fmt.Errorf("%w: %q is not a SCRAM mechanism", kafka.ErrUnsupportedSaslMechanism, mechanism)
	case user == "":
		return fmt.Errorf("%w: an empty user name", kafka.ErrUnacceptableCredential)
	case cred.Iterations < auth.DefaultScramIterations || cred.Iterations > auth.MaxScramIterations:
		return fmt.Errorf("%w: %d iterations: %d to %d", kafka.ErrUnacceptableCredential, cred.Iterations, auth.DefaultScramIterations, auth.MaxScramIterations)
	case len(cred.Salt) == 0 || len(cred.StoredKey) == 0 || len(cred.ServerKey) == 0:
		return fmt.Errorf("%w: an empty salt or key", kafka.ErrUnacceptableCredential)
	}
	return c.commit([]Record{{Type: RecordScramCredential, User: user, Mechanism: mechanism, Scram: cred}})
}

// DeleteScramCredential deletes user's credential for mechanism:
// kafka.ErrResourceNotFound when it has none.
func (c *Machine) DeleteScramCredential(user, mechanism string) error {
	if _, ok := c.users[user][mechanism]; !ok {
		return fmt.Errorf("%w: user %q has no %s credential", kafka.ErrResourceNotFound, user, mechanism)
	}
	return c.commit([]Record{{Type: RecordRemoveScramCredential, User: user, Mechanism: mechanism}})
}
