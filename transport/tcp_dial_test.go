package transport

import (
	"context"
	"io"
	"net"
	"testing"
	"time"

	"github.com/partlog/partlog/kafka"
	"github.com/stretchr/testify/require"
)

// listenWith serves each connection to a loopback listener with handle.
func listenWith(t *testing.T, handle func(net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go handle(c)
		}
	}()
	return ln.Addr().String()
}

// TestDialPeerThatIsNotKafka: a peer that accepts connections but never
// answers (a server of another protocol waiting for its own request) used
// to hang Dial, and every CLI command with it, in the ApiVersions
// exchange; the dial now fails with kafka.ErrNetwork after DialTimeout, saying
// why. A peer that answers in HTTP is named as such rather than read as a
// frame of 1213486160 bytes.
func TestDialPeerThatIsNotKafka(t *testing.T) {
	t.Run("silent", func(t *testing.T) {
		done := make(chan struct{})
		t.Cleanup(func() { close(done) })
		addr := listenWith(t, func(c net.Conn) {
			defer c.Close()
			<-done
		})
		start := time.Now()
		_, err := Dial(context.Background(), addr, DialOptions{DialTimeout: 300 * time.Millisecond})
		require.ErrorIs(t, err, kafka.ErrNetwork)
		require.ErrorContains(t, err, "did not answer ApiVersions")
		require.Less(t, time.Since(start), 10*time.Second, "bounded by DialTimeout")
	})
	t.Run("http", func(t *testing.T) {
		addr := listenWith(t, func(c net.Conn) {
			defer c.Close()
			io.WriteString(c, "HTTP/1.0 400 Bad Request\r\nContent-Type: text/html\r\n\r\n<html>bad request</html>")
		})
		_, err := Dial(context.Background(), addr, DialOptions{DialTimeout: 5 * time.Second})
		require.ErrorIs(t, err, kafka.ErrNetwork)
		require.ErrorContains(t, err, "HTTP")
	})
}
