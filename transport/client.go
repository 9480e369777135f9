package transport

import "context"

// Client is what producers and consumers need of a cluster: the requests
// they send, answered. A *partlog.Node implements it for the partitions it
// hosts, in process; a network client implements it by sending each
// request to the node that leads the partitions it names.
//
// A method returns an error only when there is no answer (kafka.ErrClosed, a
// network failure, ctx done); what happened to each partition is in the
// answer.
type Client interface {
	Metadata(ctx context.Context, req *MetadataRequest) (*MetadataResponse, error)
	Produce(ctx context.Context, req *ProduceRequest) (*ProduceResponse, error)
	Fetch(ctx context.Context, req *FetchRequest) (*FetchResponse, error)
	ListOffsets(ctx context.Context, req *ListOffsetsRequest) (*ListOffsetsResponse, error)
}
