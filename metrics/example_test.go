package metrics_test

import (
	"fmt"
	"strings"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/partlog/partlog/metrics"
)

// A node counts what it appends and fetches, and reports its partitions
// when scraped.
func ExampleNode() {
	m := metrics.New(func() metrics.State {
		return metrics.State{Partitions: 3, Leaders: 2, UnderReplicated: 1,
			GroupLag: []metrics.GroupLag{{Group: "billing", Topic: "orders", Partition: 0, Lag: 42}}}
	})
	m.Produced("orders", 1024, 10)
	m.Produced("orders", 512, 5)
	m.Fetched("orders", 1536)
	err := testutil.GatherAndCompare(m.Registry, strings.NewReader(`
# HELP kafka_server_brokertopicmetrics_messagesin_total Records appended, by topic (MessagesInPerSec).
# TYPE kafka_server_brokertopicmetrics_messagesin_total counter
kafka_server_brokertopicmetrics_messagesin_total{topic="orders"} 15
# HELP kafka_server_replicamanager_underreplicatedpartitions Partitions this node leads whose ISR is smaller than their replicas.
# TYPE kafka_server_replicamanager_underreplicatedpartitions gauge
kafka_server_replicamanager_underreplicatedpartitions 1
# HELP kafka_consumergroup_lag Records between a group's committed offset and the partition's high watermark, for the groups this node coordinates.
# TYPE kafka_consumergroup_lag gauge
kafka_consumergroup_lag{consumergroup="billing",partition="0",topic="orders"} 42
`), "kafka_server_brokertopicmetrics_messagesin_total", "kafka_server_replicamanager_underreplicatedpartitions", "kafka_consumergroup_lag")
	fmt.Println(err)
	// Output:
	// <nil>
}
