package replica

// TruncateToHighWatermark switches o to the protocol before KIP-101: a
// follower truncates to its own high watermark and fetches without its last
// epoch. Only tests may use it, to show the loss it causes.
func TruncateToHighWatermark(o Options) Options {
	o.truncateToHighWatermark = true
	return o
}
