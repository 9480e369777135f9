package kafka_test

import (
	"errors"
	"fmt"

	"github.com/partlog/partlog/kafka"
)

// A Kafka error travels as a code on the wire and comes back as the same
// value: code that returns one wraps it with details, and callers match it
// with errors.Is and ask whether a retry may succeed.
func ExampleError() {
	err := fmt.Errorf("%w: orders-0 has 1 in-sync replica, min.insync.replicas is 2", kafka.ErrNotEnoughReplicas)
	code := kafka.CodeOf(err)
	back := kafka.ErrorForCode(code)
	fmt.Println(code, back == kafka.ErrNotEnoughReplicas, errors.Is(err, kafka.ErrNotEnoughReplicas), kafka.IsRetriable(err))
	fmt.Println(kafka.CodeOf(errors.New("something else")), kafka.ErrorForCode(0))
	// Output:
	// 19 true true true
	// -1 <nil>
}
