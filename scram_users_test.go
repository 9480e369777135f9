package partlog_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/partlog/partlog"
	"github.com/partlog/partlog/auth"
	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/partlogtest"
	"github.com/partlog/partlog/transport"
)

// TestScramUsers manages users with franz-go's kadm (Kafka's
// AlterUserScramCredentials and DescribeUserScramCredentials) on a node
// that serves a SASL listener with the node's own credentials: a user set
// through the admin API authenticates at once, with the mechanism it was
// set for only; describe gives mechanisms and iterations, never keys; a
// deleted credential no longer authenticates; the users outlive a restart
// of the node. Wrong requests get Kafka's errors.
func TestScramUsers(t *testing.T) {
	dir := t.TempDir()
	n, err := partlog.Open(dir)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// The admin listener is plaintext, for the test; the SASL one
	// authenticates with the users the admin calls set.
	admin := serveWith(t, n.Client(), transport.ServerOptions{})
	sasl := serveWith(t, n.Client(), transport.ServerOptions{SASL: &transport.SASL{Credentials: n.Credentials()}})
	cl, err := kgo.NewClient(kgo.SeedBrokers(admin))
	require.NoError(t, err)
	defer cl.Close()
	adm := kadm.NewClient(cl)

	login := func(mechanism, user, password string) error {
		c, err := transport.Dial(ctx, sasl, transport.DialOptions{SASL: &transport.SASLCredentials{Mechanism: mechanism, User: user, Password: password}})
		if err == nil {
			c.Close()
		}
		return err
	}
	require.ErrorIs(t, login(auth.MechanismScramSHA256, "alice", "alice-secret"), kafka.ErrSaslAuthenticationFailed, "no user yet")

	altered, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{
		{User: "alice", Mechanism: kadm.ScramSha256, Iterations: 8192, Password: "alice-secret"},
		{User: "bob", Mechanism: kadm.ScramSha512, Iterations: 4096, Password: "bob-secret"},
	})
	require.NoError(t, err)
	for _, a := range altered {
		require.NoError(t, a.Err, a.User)
	}
	require.NoError(t, login(auth.MechanismScramSHA256, "alice", "alice-secret"))
	require.NoError(t, login(auth.MechanismScramSHA512, "bob", "bob-secret"))
	require.NoError(t, login(auth.MechanismPlain, "bob", "bob-secret"), "PLAIN checks the SCRAM credential")
	require.ErrorIs(t, login(auth.MechanismScramSHA512, "alice", "alice-secret"), kafka.ErrSaslAuthenticationFailed, "alice has no SCRAM-SHA-512 credential")
	require.ErrorIs(t, login(auth.MechanismScramSHA256, "alice", "bob-secret"), kafka.ErrSaslAuthenticationFailed)

	described, err := adm.DescribeUserSCRAMs(ctx)
	require.NoError(t, err)
	require.Len(t, described, 2)
	require.Equal(t, []kadm.CredInfo{{Mechanism: kadm.ScramSha256, Iterations: 8192}}, described["alice"].CredInfos)
	require.Equal(t, []kadm.CredInfo{{Mechanism: kadm.ScramSha512, Iterations: 4096}}, described["bob"].CredInfos)
	described, err = adm.DescribeUserSCRAMs(ctx, "carol")
	require.NoError(t, err)
	require.ErrorIs(t, described["carol"].Err, kerrResourceNotFound())

	// Kafka's errors: a user and mechanism named twice, too few
	// iterations, deleting a credential that is not there.
	altered, err = adm.AlterUserSCRAMs(ctx, []kadm.DeleteSCRAM{{User: "bob", Mechanism: kadm.ScramSha512}},
		[]kadm.UpsertSCRAM{{User: "bob", Mechanism: kadm.ScramSha512, Iterations: 4096, Password: "x"},
			{User: "carol", Mechanism: kadm.ScramSha256, Iterations: 4096, Salt: []byte("s"), SaltedPassword: []byte("p")}})
	require.NoError(t, err)
	require.Equal(t, "DUPLICATE_RESOURCE", kerrName(altered["bob"].Err))
	require.NoError(t, altered["carol"].Err, "carol, salted by the client")
	altered, err = adm.AlterUserSCRAMs(ctx, []kadm.DeleteSCRAM{{User: "alice", Mechanism: kadm.ScramSha512}}, nil)
	require.NoError(t, err)
	require.Equal(t, "RESOURCE_NOT_FOUND", kerrName(altered["alice"].Err))
	c, err := transport.Dial(ctx, admin, transport.DialOptions{})
	require.NoError(t, err)
	defer c.Close()
	resp, err := c.AlterUserScramCredentials(ctx, &transport.AlterUserScramCredentialsRequest{Upsertions: []transport.ScramCredentialUpsertion{
		{User: "dave", Mechanism: auth.MechanismScramSHA256, Iterations: 100, Salt: []byte("s"), SaltedPassword: []byte("p")}}})
	require.NoError(t, err)
	require.ErrorIs(t, resp.Results[0].Err, kafka.ErrUnacceptableCredential)

	// A deleted credential no longer authenticates; the others outlive a
	// restart of the node.
	altered, err = adm.AlterUserSCRAMs(ctx, []kadm.DeleteSCRAM{{User: "bob", Mechanism: kadm.ScramSha512}}, nil)
	require.NoError(t, err)
	require.NoError(t, altered["bob"].Err)
	require.ErrorIs(t, login(auth.MechanismScramSHA512, "bob", "bob-secret"), kafka.ErrSaslAuthenticationFailed)
	cl.Close()
	require.NoError(t, n.Close())
	n, err = partlog.Open(dir)
	require.NoError(t, err)
	defer n.Close()
	sasl = serveWith(t, n.Client(), transport.ServerOptions{SASL: &transport.SASL{Credentials: n.Credentials()}})
	require.NoError(t, login(auth.MechanismScramSHA256, "alice", "alice-secret"), "alice after a restart")
	require.ErrorIs(t, login(auth.MechanismScramSHA512, "bob", "bob-secret"), kafka.ErrSaslAuthenticationFailed)
}

// kerrName returns the name of the Kafka error err is, as franz-go gives
// it, or "" for none.
func kerrName(err error) string {
	if err == nil {
		return ""
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Message
	}
	return err.Error()
}

func kerrResourceNotFound() error { return kerr.ResourceNotFound }

// TestClusterScramUsers sets a user through one node of a cluster with
// SASL_SSL listeners: every node authenticates it, from the metadata the
// controller gives them, and after the controller restarts from its log
// too; a deletion through another node reaches them all.
func TestClusterScramUsers(t *testing.T) {
	w := newTLSWorld(t)
	nodeUsers := auth.NewUsers()
	require.NoError(t, nodeUsers.SetPassword("node", "node-secret"))
	c := newSecureCluster(t, w, nodeUsers, 1, 2, 3)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dial := func(id int32, user, password string) (*transport.TCPClient, error) {
		return transport.Dial(ctx, c.addrs[id], transport.DialOptions{TLS: w.client(w.ca, w.alice),
			SASL: &transport.SASLCredentials{Mechanism: auth.MechanismScramSHA512, User: user, Password: password}})
	}
	admin, err := dial(1, "node", "node-secret")
	require.NoError(t, err)
	defer admin.Close()
	salt := []byte("a salt of alice's")
	salted, err := auth.SaltPassword(auth.MechanismScramSHA512, "alice-secret", salt, 4096)
	require.NoError(t, err)
	resp, err := admin.AlterUserScramCredentials(ctx, &transport.AlterUserScramCredentialsRequest{Upsertions: []transport.ScramCredentialUpsertion{
		{User: "alice", Mechanism: auth.MechanismScramSHA512, Iterations: 4096, Salt: salt, SaltedPassword: salted}}})
	require.NoError(t, err)
	require.NoError(t, resp.Results[0].Err)
	everyNode := func(what string, ok bool) {
		t.Helper()
		for id := int32(1); id <= 3; id++ {
			require.NoError(t, partlogtest.SyncMetadata(ctx, c.nodes[id]), "node %d catches up with the controller", id)
			cl, err := dial(id, "alice", "alice-secret")
			if err == nil {
				cl.Close()
			}
			require.Equal(t, ok, err == nil, "%s on node %d: %v", what, id, err)
		}
	}
	everyNode("alice authenticates", true)

	require.NoError(t, c.ctl.Close())
	c.startController(c.ctlAddr)
	require.Contains(t, c.ctl.State().Users, "alice", "the restarted controller has alice from its log")
	everyNode("alice authenticates after the controller's restart", true)

	other, err := dial(3, "node", "node-secret")
	require.NoError(t, err)
	defer other.Close()
	resp, err = other.AlterUserScramCredentials(ctx, &transport.AlterUserScramCredentialsRequest{Deletions: []transport.ScramCredentialDeletion{
		{User: "alice", Mechanism: auth.MechanismScramSHA512}}})
	require.NoError(t, err)
	require.NoError(t, resp.Results[0].Err)
	everyNode("alice is refused once deleted", false)
}
