package partlog

import "github.com/partlog/partlog/controller"

// Controller is a cluster's controller run as a service (see package
// controller), one of a Raft quorum of them (ControllerOptions.Voters) or a
// quorum of one: the active controller owns the cluster metadata and
// answers nodes' calls, in process (JoinCluster) or over TCP (Serve,
// ControllerAddress).
type Controller = controller.Controller

// ControllerOptions configures a Controller. The zero value works.
type ControllerOptions = controller.Options

// OpenController opens (creating as needed) a controller's directory,
// reads its metadata log and joins its quorum. Close stops it.
func OpenController(dir string, opts ControllerOptions) (*Controller, error) {
	return controller.Open(dir, opts)
}

// ControllerEpochFileName is the file in which a controller before the
// quorum counted its starts (see controller.EpochFileName).
const ControllerEpochFileName = controller.EpochFileName

// ProducerIDsFileName is the file in which a controller before the quorum
// (a node's on its own) kept the producer id high-water mark (see
// controller.ProducerIDsFileName).
const ProducerIDsFileName = controller.ProducerIDsFileName

// ParseVoters reads a controller quorum's voters as Kafka's
// controller.quorum.voters writes them, id@host:port separated by commas,
// for ControllerOptions.Voters.
func ParseVoters(s string) (map[int32]string, error) { return controller.ParseVoters(s) }

// MemRaft is an in-memory network for the Raft messages of a quorum of
// controllers in one process (see controller.MemRaft): give it to each as
// ControllerOptions.RaftTransport, and Attach each once opened.
type MemRaft = controller.MemRaft

// NewMemRaft returns an empty in-memory Raft network.
func NewMemRaft() *MemRaft { return controller.NewMemRaft() }
