package transport

import (
	"context"
	"time"
)

// ProducerIDClient is a Client that also hands out producer ids (Kafka's
// InitProducerId). It is an optional interface: a producer finds it on its
// Client by type assertion, and an idempotent producer needs it. A
// *partlog.Node implements it.
type ProducerIDClient interface {
	Client
	InitProducerID(ctx context.Context, req *InitProducerIDRequest) (*InitProducerIDResponse, error)
}

// InitProducerIDRequest asks for a producer id and epoch (Kafka's
// InitProducerId).
//
// An idempotent producer sends it with an empty TransactionalID and
// ProducerID -1: it gets a producer id no other producer of the cluster
// has had or will have, with epoch 0. A transactional producer names its
// transactional id, and the coordinator of that id (FindCoordinator with
// CoordinatorTransaction) answers: it binds the id to a producer id and a
// new epoch, which fences the producer's older instances. A node that
// coordinates no transactions answers it with an error.
type InitProducerIDRequest struct {
	// Version is the version of Kafka's InitProducerId the request
	// travels in: a coordinator answers versions below 4, which do not
	// know kafka.ErrProducerFenced, with kafka.ErrInvalidProducerEpoch
	// instead. A Server sets it from the request; a TCPClient sends the
	// newest version both sides speak, up to Version when it is above
	// zero (see TxnClient).
	Version int16
	// TransactionalID is the producer's transactional.id, or "" for an
	// idempotent producer without transactions.
	TransactionalID string
	// TransactionTimeout is transaction.timeout.ms (transactional
	// producers only).
	TransactionTimeout time.Duration
	// ProducerID and ProducerEpoch are the id and epoch the producer has
	// had so far, or -1 and -1 (KIP-360; transactional producers only).
	ProducerID int64
	// ProducerEpoch is the epoch that goes with ProducerID, or -1.
	ProducerEpoch int16
}

// InitProducerIDResponse answers an InitProducerIDRequest.
type InitProducerIDResponse struct {
	// Err says why no id was given; nil when ProducerID is set.
	Err error
	// ProducerID is the producer id given: the producer stamps it on
	// every batch, and leaders keep its sequence numbers by it. -1 with
	// Err.
	ProducerID int64
	// ProducerEpoch is the epoch given with ProducerID: 0 for a new id.
	// -1 with Err.
	ProducerEpoch int16
}
