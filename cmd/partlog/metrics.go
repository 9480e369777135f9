package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/partlog/partlog"
)

// metricsReady, when set, is told the metrics listener's address: tests
// listen on port 0.
var metricsReady func(addr string)

// serveMetrics serves n's metrics at http://addr/metrics until the
// returned stop is called.
func serveMetrics(addr string, n *partlog.Node, stderr io.Writer) (stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("serve: --metrics: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(n.Metrics().Registry, promhttp.HandlerOpts{}))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintf(stderr, "partlog: serve: metrics: %v\n", err)
		}
	}()
	fmt.Fprintf(stderr, "partlog: metrics at http://%s/metrics\n", ln.Addr())
	if metricsReady != nil {
		metricsReady(ln.Addr().String())
	}
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
		<-done
	}, nil
}
