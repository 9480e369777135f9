// Package metrics is a node's Prometheus metrics: the broker metrics a
// Kafka operator watches, under the names the Prometheus JMX exporter's
// Kafka rules give them, in a registry of the node's own that the host
// program mounts (promhttp.HandlerFor(node.Metrics(), ...)) or that
// 'partlog serve --metrics HOST:PORT' serves at /metrics.
//
// Counters move as requests are answered; gauges of the node's
// partitions are read from the node when the registry is scraped.
package metrics

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// State is what a node says of its partitions when the registry is
// scraped.
type State struct {
	// Partitions counts the replicas the node hosts; Leaders those it
	// leads.
	Partitions, Leaders int
	// UnderReplicated counts the partitions the node leads whose ISR is
	// smaller than their replica set; UnderMinISR those whose ISR is
	// below min.insync.replicas.
	UnderReplicated, UnderMinISR int
	// Offline counts the partitions the node hosts that have no leader or
	// whose log it could not open.
	Offline int
	// ActiveController is whether the node is the cluster's active
	// controller (a combined node's controller is active).
	ActiveController bool
	// GroupLag is the lag of the groups this node coordinates, on the
	// partitions it hosts.
	GroupLag []GroupLag
}

// GroupLag is a consumer group's lag on one partition: the records
// between its committed offset and the partition's high watermark.
type GroupLag struct {
	// Group, Topic and Partition say whose lag and where.
	Group, Topic string
	Partition    int32
	// Lag is the count of records the group has not committed.
	Lag int64
}

// Node holds one node's metrics. Its methods are safe for concurrent use.
type Node struct {
	// Registry holds the node's metrics, and Go's runtime and process
	// collectors.
	Registry *prometheus.Registry

	bytesIn, bytesOut, messagesIn *prometheus.CounterVec
	requests                      *prometheus.CounterVec
	requestSeconds                *prometheus.HistogramVec
	isrShrinks, isrExpands        prometheus.Counter
	flushSeconds                  prometheus.Histogram
}

// New returns a node's metrics; state is called on each scrape for the
// gauges of the node's partitions.
func New(state func() State) *Node {
	m := &Node{Registry: prometheus.NewRegistry()}
	topic := []string{"topic"}
	m.bytesIn = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kafka_server_brokertopicmetrics_bytesin_total",
		Help: "Bytes of record batches appended, by topic (Kafka's BrokerTopicMetrics BytesInPerSec)."}, topic)
	m.bytesOut = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kafka_server_brokertopicmetrics_bytesout_total",
		Help: "Bytes of record batches fetched by consumers, by topic (BytesOutPerSec)."}, topic)
	m.messagesIn = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kafka_server_brokertopicmetrics_messagesin_total",
		Help: "Records appended, by topic (MessagesInPerSec)."}, topic)
	m.requests = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kafka_network_requestmetrics_requests_total",
		Help: "Requests answered over TCP, by API and by whether the request failed whole (RequestMetrics RequestsPerSec)."}, []string{"request", "error"})
	m.requestSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "kafka_network_requestmetrics_totaltime_seconds",
		Help:    "Time from a request's arrival to its answer, by API (RequestMetrics TotalTimeMs).",
		Buckets: prometheus.ExponentialBuckets(0.0001, 4, 10)}, []string{"request"})
	m.isrShrinks = prometheus.NewCounter(prometheus.CounterOpts{Name: "kafka_server_replicamanager_isrshrinks_total",
		Help: "ISR shrinks the controller committed for partitions this node leads (ReplicaManager IsrShrinksPerSec)."})
	m.isrExpands = prometheus.NewCounter(prometheus.CounterOpts{Name: "kafka_server_replicamanager_isrexpands_total",
		Help: "ISR expansions the controller committed for partitions this node leads (IsrExpandsPerSec)."})
	m.flushSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "kafka_log_logflushstats_logflush_seconds",
		Help:    "Time of each flush of a log to disk (LogFlushStats LogFlushRateAndTimeMs).",
		Buckets: prometheus.ExponentialBuckets(0.0001, 4, 10)})
	m.Registry.MustRegister(m.bytesIn, m.bytesOut, m.messagesIn, m.requests, m.requestSeconds, m.isrShrinks, m.isrExpands, m.flushSeconds,
		&stateCollector{state: state}, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Produced counts a batch of records appended to topic as a client
// produced it.
func (m *Node) Produced(topic string, bytes, records int) {
	m.bytesIn.WithLabelValues(topic).Add(float64(bytes))
	m.messagesIn.WithLabelValues(topic).Add(float64(records))
}

// Fetched counts bytes of topic's records sent to a consumer.
func (m *Node) Fetched(topic string, bytes int) {
	if bytes > 0 {
		m.bytesOut.WithLabelValues(topic).Add(float64(bytes))
	}
}

// ObserveRequest counts a request a server answered (transport's
// RequestObserver): its API's name, how long it took, and whether it
// failed whole.
func (m *Node) ObserveRequest(api string, took time.Duration, failed bool) {
	e := "false"
	if failed {
		e = "true"
	}
	m.requests.WithLabelValues(api, e).Inc()
	m.requestSeconds.WithLabelValues(api).Observe(took.Seconds())
}

// ISRChanged counts a change of the ISR of a partition this node leads,
// from before to after members: a shrink or an expansion.
func (m *Node) ISRChanged(before, after int) {
	switch {
	case after < before:
		m.isrShrinks.Inc()
	case after > before:
		m.isrExpands.Inc()
	}
}

// Flushed records how long a flush of a log to disk took (log.Options'
// OnFlush).
func (m *Node) Flushed(took time.Duration) { m.flushSeconds.Observe(took.Seconds()) }

// stateCollector reads the node's state at each scrape.
type stateCollector struct {
	state func() State
}

var (
	partitionsDesc = prometheus.NewDesc("kafka_server_replicamanager_partitioncount", "Replicas this node hosts.", nil, nil)
	leadersDesc    = prometheus.NewDesc("kafka_server_replicamanager_leadercount", "Partitions this node leads.", nil, nil)
	urpDesc        = prometheus.NewDesc("kafka_server_replicamanager_underreplicatedpartitions",
		"Partitions this node leads whose ISR is smaller than their replicas.", nil, nil)
	underMinISRDesc = prometheus.NewDesc("kafka_cluster_partition_underminisr",
		"Partitions this node leads whose ISR is below min.insync.replicas.", nil, nil)
	offlineDesc = prometheus.NewDesc("kafka_controller_kafkacontroller_offlinepartitionscount",
		"Partitions this node hosts with no leader, or whose log could not be opened.", nil, nil)
	activeDesc = prometheus.NewDesc("kafka_controller_kafkacontroller_activecontrollercount",
		"1 when this node is the cluster's active controller.", nil, nil)
	lagDesc = prometheus.NewDesc("kafka_consumergroup_lag",
		"Records between a group's committed offset and the partition's high watermark, for the groups this node coordinates.",
		[]string{"consumergroup", "topic", "partition"}, nil)
)

func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{partitionsDesc, leadersDesc, urpDesc, underMinISRDesc, offlineDesc, activeDesc, lagDesc} {
		ch <- d
	}
}

func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.state()
	active := 0.0
	if s.ActiveController {
		active = 1
	}
	for _, g := range []struct {
		d *prometheus.Desc
		v float64
	}{{partitionsDesc, float64(s.Partitions)}, {leadersDesc, float64(s.Leaders)}, {urpDesc, float64(s.UnderReplicated)},
		{underMinISRDesc, float64(s.UnderMinISR)}, {offlineDesc, float64(s.Offline)}, {activeDesc, active}} {
		ch <- prometheus.MustNewConstMetric(g.d, prometheus.GaugeValue, g.v)
	}
	for _, l := range s.GroupLag {
		ch <- prometheus.MustNewConstMetric(lagDesc, prometheus.GaugeValue, float64(l.Lag), l.Group, l.Topic, strconv.Itoa(int(l.Partition)))
	}
}
