package main

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestServeMetrics serves a node with --metrics and scrapes /metrics as
// Prometheus would: the node's gauges and the requests a command made.
func TestServeMetrics(t *testing.T) {
	metricsAt := make(chan string, 1)
	metricsReady = func(addr string) { metricsAt <- addr }
	defer func() { metricsReady = nil }()
	addr, stop := serveInBackground(t, "--dir", newTopic(t, 2), "--listen", "127.0.0.1:0", "--metrics", "127.0.0.1:0")
	scrapeAddr := <-metricsAt
	_, stderr, code := cli(t, "topics", "list", "--bootstrap-server", addr)
	require.Equal(t, exitOK, code, stderr)
	resp, err := http.Get("http://" + scrapeAddr + "/metrics")
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	text := string(body)
	require.Contains(t, text, "\nkafka_server_replicamanager_partitioncount 2\n")
	require.Contains(t, text, "\nkafka_server_replicamanager_leadercount 2\n")
	require.Contains(t, text, `kafka_network_requestmetrics_requests_total{error="false",request="Metadata"}`)
	require.True(t, strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain"), resp.Header.Get("Content-Type"))
	stderr, code = stop()
	require.Equal(t, exitOK, code, stderr)
	require.Contains(t, stderr, "partlog: metrics at http://"+scrapeAddr+"/metrics\n")
}
