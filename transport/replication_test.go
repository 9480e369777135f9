package transport

import (
	"errors"
	"fmt"
	"testing"

	"github.com/partlog/partlog/kafka"
)

func TestStaleBrokerEpochCode(t *testing.T) {
	if got := kafka.ErrorForCode(77); got != kafka.ErrStaleBrokerEpoch {
		t.Fatalf("ErrorForCode(77) = %v", got)
	}
	err := fmt.Errorf("%w: node 2", kafka.ErrStaleBrokerEpoch)
	if kafka.CodeOf(err) != 77 || !errors.Is(err, kafka.ErrStaleBrokerEpoch) || kafka.IsRetriable(err) {
		t.Fatalf("code %d, is %v, retriable %v", kafka.CodeOf(err), errors.Is(err, kafka.ErrStaleBrokerEpoch), kafka.IsRetriable(err))
	}
}
