package transport

import (
	"reflect"
	"testing"

	"github.com/partlog/partlog/auth"
	"github.com/partlog/partlog/kafka"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// denyAll authorizes nothing.
type denyAll struct{}

func (denyAll) Authorize(auth.Principal, string, auth.Operation, auth.ResourceType, string) bool {
	return false
}
func (denyAll) AuthorizeAny(auth.Principal, string, auth.Operation, auth.ResourceType) bool {
	return false
}

// unchecked are the APIs a principal with no ACL may use, as in Kafka:
// ApiVersions, the SASL exchange, DescribeCluster. Fetch is checked where
// it is answered (TestAuthorizeFetch); partlog's internal APIs in
// dispatch (TestACLsInternalAPIs at the root).
var unchecked = map[int16]bool{18: true, 17: true, 36: true, 60: true, 1: true,
	APIReplicaMessages: true, APIController: true, APIControllerRaft: true}

// TestEveryRequestIsAuthorized sends every API the server speaks, in
// every version it speaks, from a principal no ACL allows anything: each
// request whose every string names a resource and whose every array holds
// one element must come back refused — an answer of the server's own or
// merged parts carrying TOPIC_, GROUP_, CLUSTER_ or
// TRANSACTIONAL_ID_AUTHORIZATION_FAILED — or, for a listing, with what
// the handler listed taken out, unless it is one Kafka leaves unchecked.
// An API added without a check fails here.
func TestEveryRequestIsAuthorized(t *testing.T) {
	s := &Server{opts: ServerOptions{Authorizer: denyAll{}}}
	p := &peer{principal: auth.User("nobody"), clientHost: "127.0.0.1"}
	for _, r := range supportedAPIs {
		if unchecked[r.key] {
			continue
		}
		for v := r.min; v <= r.max; v++ {
			req := kmsg.RequestForKey(r.key)
			if req == nil {
				t.Fatalf("no kmsg request for key %d", r.key)
			}
			req.SetVersion(v)
			fill(reflect.ValueOf(req).Elem(), 0)
			if pr, ok := req.(*kmsg.ProduceRequest); ok {
				pr.Acks = -1
			}
			authz, err := s.authorize(req, v, p)
			if err != nil {
				t.Errorf("%s v%d: %v", kmsg.NameForKey(r.key), v, err)
				continue
			}
			resp := authz.answer
			if resp == nil && authz.merge != nil {
				resp = emptyResponse(req, v)
				authz.merge(resp)
			}
			if resp != nil && hasAuthorizationError(reflect.ValueOf(resp)) {
				continue
			}
			// A listing is not refused but filtered: what the handler
			// lists leaves the answer.
			if authz.merge != nil {
				listed := emptyResponse(req, v)
				fill(reflect.ValueOf(listed).Elem(), 0)
				before := elements(reflect.ValueOf(listed))
				authz.merge(listed)
				if elements(reflect.ValueOf(listed)) < before {
					continue
				}
			}
			t.Errorf("%s v%d from a principal with no ACL: neither refused nor filtered", kmsg.NameForKey(r.key), v)
		}
	}
}

// readTopics allows reading topics and nothing else.
type readTopics struct{}

func (readTopics) Authorize(_ auth.Principal, _ string, op auth.Operation, rt auth.ResourceType, _ string) bool {
	return op == auth.ReadOperation && rt == auth.TopicResource
}
func (readTopics) AuthorizeAny(auth.Principal, string, auth.Operation, auth.ResourceType) bool {
	return false
}

// TestAuthorizeFetch: a consumer's fetch of topics the principal may not
// read answers each partition TOPIC_AUTHORIZATION_FAILED; a replica's
// fetch (replica id 2) needs CLUSTER_ACTION, READ on the topics not
// being enough, and without it is answered the same, as Kafka answers it.
func TestAuthorizeFetch(t *testing.T) {
	for _, c := range []struct {
		name    string
		a       Authorizer
		replica int32
		refused bool
	}{
		{"consumer, no ACL", denyAll{}, -1, true},
		{"consumer with READ", readTopics{}, -1, false},
		{"replica with READ only", readTopics{}, 2, true},
	} {
		r := &FetchRequest{ReplicaID: c.replica, Topics: []FetchTopic{{Topic: "a", Partitions: []FetchPartition{{Partition: 0}, {Partition: 1}}}}}
		refused := authorizeFetch(guard{a: c.a, who: auth.User("nobody")}, r)
		if !c.refused {
			if refused != nil || len(r.Topics) != 1 {
				t.Fatalf("%s: refused %+v", c.name, r.Topics)
			}
			continue
		}
		if refused == nil || len(r.Topics) != 0 {
			t.Fatalf("%s: the fetch went through: %+v", c.name, r.Topics)
		}
		resp := &FetchResponse{}
		refused(resp)
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 2 || resp.Topics[0].Partitions[1].Err != kafka.ErrTopicAuthorizationFailed {
			t.Fatalf("%s: answered %+v, want TOPIC_AUTHORIZATION_FAILED for both partitions", c.name, resp.Topics)
		}
	}
}

// fill gives every string of v a name, every array one filled element
// and every nullable string a name, depth-first.
func fill(v reflect.Value, depth int) {
	if depth > 6 {
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString("x")
	case reflect.Pointer:
		if v.Type().Elem().Kind() == reflect.String {
			s := "x"
			v.Set(reflect.ValueOf(&s))
		}
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return // bytes: records, metadata
		}
		s := reflect.MakeSlice(v.Type(), 1, 1)
		fill(s.Index(0), depth+1)
		v.Set(s)
	case reflect.Struct:
		for i := range v.NumField() {
			if f := v.Field(i); f.CanSet() && v.Type().Field(i).Name != "UnknownTags" {
				fill(f, depth+1)
			}
		}
	}
}

// hasAuthorizationError reports whether an error code field anywhere in v
// is an authorization failure.
func hasAuthorizationError(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		return !v.IsNil() && hasAuthorizationError(v.Elem())
	case reflect.Slice:
		for i := range v.Len() {
			if hasAuthorizationError(v.Index(i)) {
				return true
			}
		}
	case reflect.Struct:
		for i := range v.NumField() {
			f := v.Field(i)
			if v.Type().Field(i).Name == "ErrorCode" && f.Kind() == reflect.Int16 {
				switch f.Int() {
				case int64(kafka.ErrTopicAuthorizationFailed.Code), int64(kafka.ErrGroupAuthorizationFailed.Code),
					int64(kafka.ErrClusterAuthorizationFailed.Code), int64(kafka.ErrTransactionalIDAuthorizationFailed.Code):
					return true
				}
			}
			if hasAuthorizationError(f) {
				return true
			}
		}
	}
	return false
}

// elements counts the elements of every slice in v, but bytes.
func elements(v reflect.Value) int {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return 0
		}
		return elements(v.Elem())
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return 0
		}
		n := v.Len()
		for i := range v.Len() {
			n += elements(v.Index(i))
		}
		return n
	case reflect.Struct:
		n := 0
		for i := range v.NumField() {
			n += elements(v.Field(i))
		}
		return n
	}
	return 0
}
