package transport

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// FuzzServerRequest feeds arbitrary request frames to the server's
// parsing: it returns an error or a request, never panics, and a request it
// takes translates into partlog's types.
func FuzzServerRequest(f *testing.F) {
	fmt := kmsg.NewRequestFormatter(kmsg.FormatterClientID("fuzz"))
	seeds := []kmsg.Request{
		produceToWire(&ProduceRequest{Acks: AcksAll, Topics: []ProduceTopic{{Topic: "t", Partitions: []ProducePartition{{Partition: 1, Records: []byte("batch")}}}}}, 9),
		fetchToWire(&FetchRequest{MaxBytes: 100, Topics: []FetchTopic{{Topic: "t", Partitions: []FetchPartition{{FetchOffset: 4}}}}}, 12),
		listOffsetsToWire(&ListOffsetsRequest{Topics: []ListOffsetsTopic{{Topic: "t", Partitions: []ListOffsetsPartition{{Timestamp: -1}}}}}, 7),
		metadataToWire(&MetadataRequest{Topics: []string{"a", "b"}}, 12),
		produceToWire(&ProduceRequest{Acks: AcksLeader}, 3),
		fetchToWire(&FetchRequest{}, 4),
	}
	for _, req := range seeds {
		f.Add(fmt.AppendRequest(nil, req, 7)[4:])
	}
	f.Fuzz(func(t *testing.T, frame []byte) {
		h, req, body, err := parseRequestHeader(frame)
		if err != nil {
			return
		}
		rng, ok := findRange(supportedAPIs, h.apiKey)
		if !ok || h.apiVersion < rng.min || h.apiVersion > rng.max {
			return
		}
		if err := req.ReadFrom(body); err != nil {
			return
		}
		switch req := req.(type) {
		case *kmsg.ProduceRequest:
			produceFromWire(req)
		case *kmsg.FetchRequest:
			fetchFromWire(req)
		case *kmsg.ListOffsetsRequest:
			listOffsetsFromWire(req)
		case *kmsg.MetadataRequest:
			metadataFromWire(req)
		}
	})
}
