package share

import "errors"

var (
	// ErrInvalidState means a State cannot be restored or an Update
	// cannot be applied: its batches overlap, are out of order, lie
	// below the start offset, span more offsets than a share partition
	// holds, or name an unknown delivery state.
	ErrInvalidState = errors.New("share: invalid share-partition state")

	// ErrInvalidConfig means a Config field is out of range; the message
	// names the field.
	ErrInvalidConfig = errors.New("share: invalid config")
)
