package partition_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/partlog/partlog/log"
	"github.com/partlog/partlog/partition"
	"github.com/partlog/partlog/transport"
	"github.com/partlog/partlog/vfs"
)

// A batch that overtook its predecessor waits in WaitTurn until the
// predecessor is in, and is then accepted in order; one whose predecessor
// never comes waits only for the timeout; one in line, or a duplicate,
// does not wait at all.
func TestWaitTurn(t *testing.T) {
	p, _ := openPartition(t, vfs.NewMem(), log.Options{}, partition.Options{})
	ctx := context.Background()
	_, err := p.Append(idemBatch(7, 0, 0, 10, 1), transport.AcksAll)
	require.NoError(t, err)

	second, third := idemBatch(7, 0, 10, 10, 2), idemBatch(7, 0, 20, 10, 3)
	waited := make(chan struct{})
	go func() {
		p.WaitTurn(ctx, third, time.Minute) // ahead of the second
		close(waited)
	}()
	select {
	case <-waited:
		t.Fatal("the third batch did not wait for the second")
	case <-time.After(50 * time.Millisecond): // a window for a wrong early return, not a wait for a condition
	}
	_, err = p.Append(second, transport.AcksAll)
	require.NoError(t, err)
	<-waited
	_, err = p.Append(third, transport.AcksAll)
	require.NoError(t, err, "in order once the second is in")

	start := time.Now()
	p.WaitTurn(ctx, idemBatch(7, 0, 40, 10, 4), 20*time.Millisecond) // the batch at 30 never comes
	require.GreaterOrEqual(t, time.Since(start), 20*time.Millisecond)

	// In line, a duplicate, a batch without a producer: no wait.
	for _, b := range [][]byte{idemBatch(7, 0, 30, 10, 5), idemBatch(7, 0, 20, 10, 3), idemBatch(-1, -1, -1, 3, 6)} {
		start := time.Now()
		p.WaitTurn(ctx, b, time.Minute)
		require.Less(t, time.Since(start), time.Second)
	}
}
