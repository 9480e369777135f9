package partlog_test

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/partlog/partlog"
	"github.com/partlog/partlog/auth"
	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/transport"
)

// aclWorld is a node served with SASL (SCRAM) and its ACLs checked, the
// super user admin and the user alice, who starts with no ACL.
type aclWorld struct {
	node  *partlog.Node
	addr  string
	admin *kadm.Client
}

func newACLWorld(t *testing.T, authorizer bool) *aclWorld {
	t.Helper()
	n, err := partlog.Open(t.TempDir())
	require.NoError(t, err)
	t.Cleanup(func() { n.Close() })
	require.NoError(t, n.CreateTopic(context.Background(), partlog.NewTopic{Name: "orders", Partitions: 2}))
	users := auth.NewUsers()
	require.NoError(t, users.SetPassword("admin", "admin-secret"))
	require.NoError(t, users.SetPassword("alice", "alice-secret"))
	opts := transport.ServerOptions{SASL: &transport.SASL{Credentials: users}}
	if authorizer {
		opts.Authorizer = &auth.Authorizer{ACLs: n.ACLs, SuperUsers: []auth.Principal{auth.User("admin")}}
	}
	w := &aclWorld{node: n, addr: serveWith(t, n.Client(), opts)}
	w.admin = kadm.NewClient(w.client(t, "admin"))
	return w
}

// client is a franz-go client of user name.
func (w *aclWorld) client(t *testing.T, name string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(w.addr), kgo.SASL(kgoSASL(auth.MechanismScramSHA512, name, name+"-secret")),
		kgo.RetryTimeout(5 * time.Second), kgo.RequestRetries(2)}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	return cl
}

// grant gives alice the ACLs b describes, through admin.
func (w *aclWorld) grant(t *testing.T, ctx context.Context, b *kadm.ACLBuilder) {
	t.Helper()
	results, err := w.admin.CreateACLs(ctx, b)
	require.NoError(t, err)
	for _, r := range results {
		require.NoError(t, r.Err, "%s %s on %s", r.Principal, r.Operation, r.Name)
	}
}

// everyACL selects every ACL, to list or delete.
func everyACL() *kadm.ACLBuilder {
	return kadm.NewACLs().AnyResource().Allow().AllowHosts().Deny().DenyHosts().Operations(kadm.OpAny).ResourcePatternType(kadm.ACLPatternAny)
}

// endOffsets is how many records each partition of orders holds, as the
// super user lists them.
func (w *aclWorld) endOffsets(t *testing.T, ctx context.Context) [2]int64 {
	t.Helper()
	listed, err := w.admin.ListEndOffsets(ctx, "orders")
	require.NoError(t, err)
	var ends [2]int64
	listed.Each(func(o kadm.ListedOffset) {
		require.NoError(t, o.Err)
		ends[o.Partition] = o.Offset
	})
	return ends
}

// TestACLs checks requests against the cluster's ACLs, with franz-go
// over SASL: alice, with no ACL, cannot write, read, describe, create or
// delete a topic, join or commit in a group, or grant herself ACLs — each
// refused with Kafka's *_AUTHORIZATION_FAILED, nothing written or
// deleted; once the super user admin grants them, the same client
// produces (idempotently), consumes in a group and reads back every
// record byte for byte, creates and deletes topics under her prefix; a
// DENY then takes reading back. DescribeAcls lists what was granted, and
// DeleteAcls takes it away.
func TestACLs(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	w := newACLWorld(t, true)
	alice := w.client(t, "alice", kgo.DefaultProduceTopic("orders"), kgo.DisableIdempotentWrite())
	aliceAdm := kadm.NewClient(alice)

	// Refused, each with Kafka's error.
	err := alice.ProduceSync(ctx, &kgo.Record{Value: []byte("no")}).FirstErr()
	require.ErrorIs(t, err, kerr.TopicAuthorizationFailed)
	require.Equal(t, [2]int64{0, 0}, w.endOffsets(t, ctx), "a refused produce wrote")

	fetch := kmsg.NewPtrFetchRequest()
	fetch.MaxWaitMillis, fetch.MaxBytes = 10, 1<<20
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = "orders"
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.PartitionMaxBytes = 1 << 20
	ft.Partitions = append(ft.Partitions, fp)
	fetch.Topics = append(fetch.Topics, ft)
	fresp, err := fetch.RequestWith(ctx, alice)
	require.NoError(t, err)
	require.Equal(t, kerr.TopicAuthorizationFailed.Code, fresp.Topics[0].Partitions[0].ErrorCode)

	md, err := aliceAdm.Metadata(ctx)
	require.NoError(t, err)
	require.Empty(t, md.Topics.Names(), "a listing shows a topic alice may not describe")
	_, err = aliceAdm.Metadata(ctx, "orders")
	require.ErrorIs(t, err, kerr.TopicAuthorizationFailed)

	_, err = aliceAdm.CreateTopic(ctx, 1, 1, nil, "alice-new")
	require.ErrorIs(t, err, kerr.TopicAuthorizationFailed)
	deleted, err := aliceAdm.DeleteTopics(ctx, "orders")
	require.NoError(t, err)
	require.ErrorIs(t, deleted["orders"].Err, kerr.TopicAuthorizationFailed)
	require.Contains(t, w.node.ListTopics(), "orders", "a refused delete deleted")

	join := kmsg.NewPtrJoinGroupRequest()
	join.Group, join.ProtocolType, join.SessionTimeoutMillis, join.RebalanceTimeoutMillis = "billing", "consumer", 10000, 10000
	join.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range"}}
	_, err = join.RequestWith(ctx, alice) // FindCoordinator is refused first
	require.ErrorIs(t, err, kerr.GroupAuthorizationFailed)
	jresp, err := alice.SeedBrokers()[0].Request(ctx, join) // and so is a JoinGroup sent to the node
	require.NoError(t, err)
	require.Equal(t, kerr.GroupAuthorizationFailed.Code, jresp.(*kmsg.JoinGroupResponse).ErrorCode)
	commit := kmsg.NewPtrOffsetCommitRequest()
	commit.Group, commit.Generation = "billing", -1
	commit.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "orders", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 1}}}}
	cresp, err := alice.SeedBrokers()[0].Request(ctx, commit)
	require.NoError(t, err)
	require.Equal(t, kerr.GroupAuthorizationFailed.Code, cresp.(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode)

	results, err := aliceAdm.CreateACLs(ctx, kadm.NewACLs().Allow("User:alice").Topics("orders").Operations(kadm.OpAll))
	require.NoError(t, err)
	require.ErrorIs(t, results[0].Err, kerr.ClusterAuthorizationFailed)
	refused, err := aliceAdm.DescribeACLs(ctx, everyACL())
	require.NoError(t, err)
	require.NotEmpty(t, refused)
	for _, r := range refused {
		require.ErrorIs(t, r.Err, kerr.ClusterAuthorizationFailed)
	}

	// Granted by the super user.
	w.grant(t, ctx, kadm.NewACLs().Allow("User:alice").AllowHosts().Topics("orders").Operations(kadm.OpWrite, kadm.OpRead))
	w.grant(t, ctx, kadm.NewACLs().Allow("User:alice").AllowHosts().Groups("billing").Operations(kadm.OpRead))
	w.grant(t, ctx, kadm.NewACLs().Allow("User:alice").AllowHosts().Topics("alice-").ResourcePatternType(kadm.ACLPatternPrefixed).
		Operations(kadm.OpCreate, kadm.OpDelete))
	described, err := w.admin.DescribeACLs(ctx, everyACL())
	require.NoError(t, err)
	var listed []string
	for _, r := range described {
		require.NoError(t, r.Err)
		for _, d := range r.Described {
			listed = append(listed, fmt.Sprintf("%s %s %s %s %s", d.Principal, d.Permission, d.Operation, d.Pattern, d.Name))
		}
	}
	require.ElementsMatch(t, []string{
		"User:alice ALLOW WRITE LITERAL orders", "User:alice ALLOW READ LITERAL orders", "User:alice ALLOW READ LITERAL billing",
		"User:alice ALLOW CREATE PREFIXED alice-", "User:alice ALLOW DELETE PREFIXED alice-",
	}, listed)

	producer := w.client(t, "alice", kgo.DefaultProduceTopic("orders")) // idempotent: WRITE on a topic suffices
	var want []string
	for i := range 200 {
		v := fmt.Sprintf("order-%03d", i)
		want = append(want, v)
		require.NoError(t, producer.ProduceSync(ctx, &kgo.Record{Key: []byte(v), Value: []byte(v)}).FirstErr())
	}
	consumer := w.client(t, "alice", kgo.ConsumeTopics("orders"), kgo.ConsumerGroup("billing"), kgo.FetchMaxWait(100*time.Millisecond))
	var got []string
	for len(got) < len(want) {
		fs := consumer.PollFetches(ctx)
		require.NoError(t, fs.Err0())
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	require.ElementsMatch(t, want, got)
	require.NoError(t, consumer.CommitUncommittedOffsets(ctx))
	offsets, err := aliceAdm.FetchOffsets(ctx, "billing")
	require.NoError(t, err)
	require.NoError(t, offsets.Error())
	var total int64
	offsets.Each(func(o kadm.OffsetResponse) { total += o.At })
	require.EqualValues(t, len(want), total)

	_, err = aliceAdm.CreateTopic(ctx, 1, 1, nil, "alice-new")
	require.NoError(t, err)
	deleted, err = aliceAdm.DeleteTopics(ctx, "alice-new", "orders")
	require.NoError(t, err)
	require.NoError(t, deleted["alice-new"].Err)
	require.ErrorIs(t, deleted["orders"].Err, kerr.TopicAuthorizationFailed, "DELETE was granted under alice- only")

	// A DENY wins over the ALLOW.
	w.grant(t, ctx, kadm.NewACLs().Deny("User:alice").DenyHosts().Topics("orders").Operations(kadm.OpRead))
	fresp, err = fetch.RequestWith(ctx, alice)
	require.NoError(t, err)
	require.Equal(t, kerr.TopicAuthorizationFailed.Code, fresp.Topics[0].Partitions[0].ErrorCode)

	// DeleteAcls takes the grants away: writing is refused again.
	removed, err := w.admin.DeleteACLs(ctx, everyACL())
	require.NoError(t, err)
	var n int
	for _, r := range removed {
		require.NoError(t, r.Err)
		n += len(r.Deleted)
	}
	require.Equal(t, 6, n)
	before := w.endOffsets(t, ctx)
	err = alice.ProduceSync(ctx, &kgo.Record{Value: []byte("no")}).FirstErr()
	require.ErrorIs(t, err, kerr.TopicAuthorizationFailed)
	require.Equal(t, before, w.endOffsets(t, ctx))
}

// TestACLsOff is TestACLs's negative control: without an Authorizer the
// same client may do what the ACLs refused, and ACL requests get
// SECURITY_DISABLED, as from a Kafka broker with no authorizer.
func TestACLsOff(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	w := newACLWorld(t, false)
	alice := w.client(t, "alice", kgo.DefaultProduceTopic("orders"), kgo.DisableIdempotentWrite())
	require.NoError(t, alice.ProduceSync(ctx, &kgo.Record{Value: []byte("yes")}).FirstErr())
	results, err := w.admin.CreateACLs(ctx, kadm.NewACLs().Allow("User:alice").Topics("orders").Operations(kadm.OpAll))
	require.NoError(t, err)
	require.ErrorIs(t, results[0].Err, kerr.SecurityDisabled)
	_ = kafka.ErrSecurityDisabled
}

// TestACLsInternalAPIs checks that partlog's own calls between nodes
// need CLUSTER_ACTION: a client that sends one without it is answered
// CLUSTER_AUTHORIZATION_FAILED, and a super user's goes through.
func TestACLsInternalAPIs(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	w := newACLWorld(t, true)
	for user, want := range map[string]error{"alice": kafka.ErrClusterAuthorizationFailed, "admin": nil} {
		c, err := transport.Dial(ctx, w.addr, transport.DialOptions{SASL: &transport.SASLCredentials{Mechanism: auth.MechanismScramSHA512, User: user, Password: user + "-secret"}})
		require.NoError(t, err)
		_, err = c.CallInternal(ctx, transport.APIController, []byte("{}"))
		c.Close()
		if want != nil {
			require.ErrorIs(t, err, want, user)
		} else {
			require.NotErrorIs(t, err, kafka.ErrClusterAuthorizationFailed, user)
		}
	}
}

// TestACLsAutoCreate: a Metadata request that would auto-create topics
// creates only those the principal may create (CREATE on the cluster or
// the topic) and answers the others TOPIC_AUTHORIZATION_FAILED, as Kafka
// does — in version 3 too, which has no allow_auto_topic_creation field
// and always asks for creation. DESCRIBE alone creates nothing.
func TestACLsAutoCreate(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n, err := partlog.Open(t.TempDir())
	require.NoError(t, err)
	defer n.Close()
	addr := serveWith(t, n.Client(), transport.ServerOptions{Authorizer: &auth.Authorizer{ACLs: n.ACLs}})
	anyone := func(name string, pt auth.PatternType, op auth.Operation) auth.ACL {
		return auth.ACL{ResourceType: auth.TopicResource, ResourceName: name, PatternType: pt, Principal: auth.Anonymous.String(),
			Host: auth.WildcardHost, Operation: op, Permission: auth.Allow}
	}
	errs, err := n.Client().(transport.ACLAdminClient).CreateACLs(ctx, []auth.ACL{
		anyone("*", auth.LiteralPattern, auth.DescribeOperation),
		anyone("made-", auth.PrefixedPattern, auth.CreateOperation),
	})
	require.NoError(t, err)
	require.Equal(t, []error{nil, nil}, errs)

	conn, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(30 * time.Second))
	r := bufio.NewReader(conn)
	f := kmsg.NewRequestFormatter(kmsg.FormatterClientID("v3"))
	for v := int16(3); v <= 4; v++ {
		req := kmsg.NewPtrMetadataRequest()
		req.Version, req.AllowAutoTopicCreation = v, true
		for _, name := range []string{fmt.Sprintf("made-%d", v), fmt.Sprintf("other-%d", v)} {
			req.Topics = append(req.Topics, kmsg.MetadataRequestTopic{Topic: kmsg.StringPtr(name)})
		}
		_, err = conn.Write(f.AppendRequest(nil, req, int32(v)))
		require.NoError(t, err)
		var size [4]byte
		_, err = io.ReadFull(r, size[:])
		require.NoError(t, err)
		b := make([]byte, binary.BigEndian.Uint32(size[:]))
		_, err = io.ReadFull(r, b)
		require.NoError(t, err)
		resp := kmsg.NewPtrMetadataResponse()
		resp.Version = v
		require.NoError(t, resp.ReadFrom(b[4:]))
		codes := map[string]int16{}
		for _, tm := range resp.Topics {
			codes[*tm.Topic] = tm.ErrorCode
		}
		require.Equal(t, map[string]int16{fmt.Sprintf("made-%d", v): 0, fmt.Sprintf("other-%d", v): kerr.TopicAuthorizationFailed.Code}, codes, "v%d", v)
	}
	require.ElementsMatch(t, []string{"made-3", "made-4"}, n.ListTopics(), "a topic alice may not create was created")
}
