package partlog

import "github.com/partlog/partlog/controller"

// Controller is a cluster's controller run as a service (see package
// controller): it owns the cluster metadata and answers nodes' calls, in
// process (JoinCluster) or over TCP (Serve, ControllerAddress).
type Controller = controller.Controller

// ControllerOptions configures a Controller. The zero value works.
type ControllerOptions = controller.Options

// OpenController opens (creating as needed) a controller's directory,
// replays its metadata log and starts ticking. Close stops it.
func OpenController(dir string, opts ControllerOptions) (*Controller, error) {
	return controller.Open(dir, opts)
}

// ControllerEpochFileName is the file in a controller's directory that
// counts its starts (see controller.EpochFileName).
const ControllerEpochFileName = controller.EpochFileName

// ProducerIDsFileName is the file in a controller's directory (a node's on
// its own) that holds the producer id high-water mark (see
// controller.ProducerIDsFileName).
const ProducerIDsFileName = controller.ProducerIDsFileName
