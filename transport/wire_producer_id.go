package transport

// wire_producer_id.go translates InitProducerId (ProducerIDClient) to and
// from Kafka's wire protocol.

import (
	"time"

	"github.com/partlog/partlog/kafka"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func initProducerIDToWire(r *InitProducerIDRequest, version int16) *kmsg.InitProducerIDRequest {
	w := kmsg.NewPtrInitProducerIDRequest()
	w.Version = version
	w.TransactionalID = nullable(r.TransactionalID)
	w.TransactionTimeoutMillis = millis(r.TransactionTimeout)
	w.ProducerID, w.ProducerEpoch = r.ProducerID, r.ProducerEpoch
	return w
}

// initProducerIDFromWire translates an InitProducerId; before v3 it has no
// producer id or epoch, which are then -1 (none so far).
func initProducerIDFromWire(w *kmsg.InitProducerIDRequest) *InitProducerIDRequest {
	r := &InitProducerIDRequest{
		TransactionalID: deref(w.TransactionalID), TransactionTimeout: time.Duration(w.TransactionTimeoutMillis) * time.Millisecond,
		ProducerID: w.ProducerID, ProducerEpoch: w.ProducerEpoch,
	}
	if w.Version < 3 {
		r.ProducerID, r.ProducerEpoch = -1, -1
	}
	return r
}

func initProducerIDResponseToWire(r *InitProducerIDResponse, version int16) *kmsg.InitProducerIDResponse {
	w := kmsg.NewPtrInitProducerIDResponse()
	w.Version = version
	w.ErrorCode = kafka.CodeOf(r.Err)
	w.ProducerID, w.ProducerEpoch = r.ProducerID, r.ProducerEpoch
	return w
}

func initProducerIDResponseFromWire(w *kmsg.InitProducerIDResponse) *InitProducerIDResponse {
	return &InitProducerIDResponse{Err: kafka.ErrorForCode(w.ErrorCode), ProducerID: w.ProducerID, ProducerEpoch: w.ProducerEpoch}
}
