package transport

// The errors a controller answers AlterPartition and broker heartbeats
// with (KIP-497, KIP-631, KIP-903).
var (
	// ErrInvalidUpdateVersion answers an AlterPartition made in a
	// partition epoch that is no longer the partition's (Kafka's
	// INVALID_UPDATE_VERSION).
	ErrInvalidUpdateVersion = &Error{95, "INVALID_UPDATE_VERSION", false, "the partition epoch of the update is not the current one"}
	// ErrBrokerIDNotRegistered answers a heartbeat or request from a node
	// the controller has no registration for (Kafka's
	// BROKER_ID_NOT_REGISTERED).
	ErrBrokerIDNotRegistered = &Error{102, "BROKER_ID_NOT_REGISTERED", false, "the node is not registered with the controller"}
	// ErrIneligibleReplica answers an AlterPartition adding to the ISR a
	// replica that is fenced or restarted since the leader saw it fetch
	// (Kafka's INELIGIBLE_REPLICA).
	ErrIneligibleReplica = &Error{107, "INELIGIBLE_REPLICA", false, "a replica added to the ISR is not eligible"}
)
