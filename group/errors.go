package group

import "errors"

var (
	// ErrClosed means the coordinator was closed.
	ErrClosed = errors.New("group: coordinator closed")

	// ErrCorrupt means a record of __consumer_offsets could not be parsed.
	ErrCorrupt = errors.New("group: corrupt record in __consumer_offsets")

	// ErrUnknownVersion means a record of __consumer_offsets has a key or
	// value version this package does not read (written by a newer
	// release).
	ErrUnknownVersion = errors.New("group: unknown record version in __consumer_offsets")
)
