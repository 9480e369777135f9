package memnet

import (
	"context"
	"fmt"

	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/transport"
)

// A client forwards the share state calls (transport.ShareStateClient),
// which brokers send each other, to its node when the node hosts a share
// coordinator; to one that does not they fail with
// kafka.ErrUnsupportedVersion, as over TCP.

func (c client) InitializeShareGroupState(ctx context.Context, req *transport.InitializeShareGroupStateRequest) (*transport.InitializeShareGroupStateResponse, error) {
	return call(ctx, c, req, shareState(transport.ShareStateClient.InitializeShareGroupState))
}

func (c client) ReadShareGroupState(ctx context.Context, req *transport.ReadShareGroupStateRequest) (*transport.ReadShareGroupStateResponse, error) {
	return call(ctx, c, req, shareState(transport.ShareStateClient.ReadShareGroupState))
}

func (c client) WriteShareGroupState(ctx context.Context, req *transport.WriteShareGroupStateRequest) (*transport.WriteShareGroupStateResponse, error) {
	return call(ctx, c, req, shareState(transport.ShareStateClient.WriteShareGroupState))
}

func (c client) DeleteShareGroupState(ctx context.Context, req *transport.DeleteShareGroupStateRequest) (*transport.DeleteShareGroupStateResponse, error) {
	return call(ctx, c, req, shareState(transport.ShareStateClient.DeleteShareGroupState))
}

// shareState makes a method of transport.ShareStateClient one of an
// Endpoint that may implement it.
func shareState[Req, Resp any](method func(transport.ShareStateClient, context.Context, Req) (Resp, error)) func(Endpoint, context.Context, Req) (Resp, error) {
	return func(e Endpoint, ctx context.Context, req Req) (Resp, error) {
		sc, ok := e.(transport.ShareStateClient)
		if !ok {
			var zero Resp
			return zero, fmt.Errorf("%w: the node hosts no share coordinator", kafka.ErrUnsupportedVersion)
		}
		return method(sc, ctx, req)
	}
}
