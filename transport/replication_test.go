package transport

import (
	"errors"
	"fmt"
	"testing"
)

func TestStaleBrokerEpochCode(t *testing.T) {
	if got := ErrorForCode(77); got != ErrStaleBrokerEpoch {
		t.Fatalf("ErrorForCode(77) = %v", got)
	}
	err := fmt.Errorf("%w: node 2", ErrStaleBrokerEpoch)
	if CodeOf(err) != 77 || !errors.Is(err, ErrStaleBrokerEpoch) || IsRetriable(err) {
		t.Fatalf("code %d, is %v, retriable %v", CodeOf(err), errors.Is(err, ErrStaleBrokerEpoch), IsRetriable(err))
	}
}
