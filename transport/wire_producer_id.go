package transport

// wire_producer_id.go translates InitProducerId (ProducerIDClient) to and
// from Kafka's wire protocol.

import (
	"github.com/partlog/partlog/kafka"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func initProducerIDToWire(r *InitProducerIDRequest, version int16) *kmsg.InitProducerIDRequest {
	w := versioned(kmsg.NewPtrInitProducerIDRequest(), version)
	w.TransactionalID, w.TransactionTimeoutMillis = nullable(r.TransactionalID), millis(r.TransactionTimeout)
	w.ProducerID, w.ProducerEpoch = r.ProducerID, r.ProducerEpoch
	return w
}

// initProducerIDFromWire translates an InitProducerId; before v3 it has no
// producer id or epoch, which are then -1 (none so far).
func initProducerIDFromWire(w *kmsg.InitProducerIDRequest) *InitProducerIDRequest {
	r := &InitProducerIDRequest{
		Version: w.Version, TransactionalID: deref(w.TransactionalID), TransactionTimeout: fromMillis(w.TransactionTimeoutMillis),
		ProducerID: w.ProducerID, ProducerEpoch: w.ProducerEpoch,
	}
	if w.Version < 3 {
		r.ProducerID, r.ProducerEpoch = -1, -1
	}
	return r
}

func initProducerIDResponseToWire(r *InitProducerIDResponse, version int16) *kmsg.InitProducerIDResponse {
	w := versioned(kmsg.NewPtrInitProducerIDResponse(), version)
	w.ErrorCode, w.ProducerID, w.ProducerEpoch = kafka.CodeOf(r.Err), r.ProducerID, r.ProducerEpoch
	return w
}

func initProducerIDResponseFromWire(w *kmsg.InitProducerIDResponse) *InitProducerIDResponse {
	return &InitProducerIDResponse{Err: kafka.ErrorForCode(w.ErrorCode), ProducerID: w.ProducerID, ProducerEpoch: w.ProducerEpoch}
}
