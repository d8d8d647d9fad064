package driver

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"github.com/pgceiling/pgceiling/result"
)

// rawPair returns a rawConn dialled to a local listener and the accepted peer.
func rawPair(t *testing.T) (*rawConn, net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		accepted <- c
	}()
	var d net.Dialer
	c, err := rawDial(d.DialContext)(context.Background(), "tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	rc, ok := c.(*rawConn)
	if !ok {
		t.Fatalf("rawDial returned %T, want *rawConn", c)
	}
	peer := <-accepted
	if peer == nil {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { rc.Close(); peer.Close() })
	return rc, peer
}

func TestRawConnRoundTrip(t *testing.T) {
	rc, peer := rawPair(t)
	if n, err := rc.Write([]byte("ping")); n != 4 || err != nil {
		t.Fatalf("write: %d, %v", n, err)
	}
	buf := make([]byte, 4)
	if _, err := io.ReadFull(peer, buf); err != nil || string(buf) != "ping" {
		t.Fatalf("peer read %q, %v", buf, err)
	}
	if _, err := peer.Write([]byte("pong")); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(rc, buf); err != nil || string(buf) != "pong" {
		t.Fatalf("read %q, %v", buf, err)
	}
	if n, err := rc.Read(nil); n != 0 || err != nil {
		t.Errorf("empty read: %d, %v", n, err)
	}
}

// A write larger than the socket buffers must wait for room, not fail or block a thread.
func TestRawConnLargeWrite(t *testing.T) {
	rc, peer := rawPair(t)
	data := bytes.Repeat([]byte("0123456789abcdef"), 1<<18) // 4 MiB
	got := make(chan []byte)
	go func() {
		b, _ := io.ReadAll(io.LimitReader(peer, int64(len(data))))
		got <- b
	}()
	if n, err := rc.Write(data); n != len(data) || err != nil {
		t.Fatalf("write: %d of %d, %v", n, len(data), err)
	}
	if b := <-got; !bytes.Equal(b, data) {
		t.Fatalf("peer received %d bytes, not what was written", len(b))
	}
}

// waitingRead starts a read on rc, runs stop about 50 ms later, and returns the read's
// error. Either order is right: stop before the read starts fails it at once, stop while
// it waits ends the wait; the delay only makes the second likely.
func waitingRead(t *testing.T, rc *rawConn, stop func()) error {
	t.Helper()
	errc := make(chan error)
	go func() {
		_, err := rc.Read(make([]byte, 16))
		errc <- err
	}()
	time.AfterFunc(50*time.Millisecond, stop)
	select {
	case err := <-errc:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("a waiting read did not return")
		return nil
	}
}

// The driver interrupts in-flight work through deadlines: a read waiting for a reply must
// return a timeout at once, as a net.Error, so the error classes stay right.
func TestRawConnDeadlineInterruptsRead(t *testing.T) {
	rc, _ := rawPair(t)
	err := waitingRead(t, rc, func() { _ = rc.SetDeadline(time.Now()) })
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read after the deadline: %v, want a net timeout error", err)
	}
}

func TestRawConnPeerClose(t *testing.T) {
	rc, peer := rawPair(t)
	peer.Close()
	if _, err := rc.Read(make([]byte, 16)); err != io.EOF {
		t.Fatalf("read after the peer closed: %v, want EOF", err)
	}
	// Writing to a closed peer fails soon (EPIPE or ECONNRESET), as a connection error.
	var err error
	for range 100 {
		if _, err = rc.Write([]byte("x")); err != nil {
			break
		}
	}
	if err == nil || Classify(err) != result.Connection {
		t.Fatalf("write to a closed peer: %v (class %v), want a connection error", err, Classify(err))
	}
}

func TestRawConnClosedLocally(t *testing.T) {
	rc, _ := rawPair(t)
	if err := waitingRead(t, rc, func() { rc.Close() }); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("read on a closed conn: %v, want net.ErrClosed", err)
	}
}

// The driver's pool dials rawConns, so every probe in this package's tests runs on them.
func TestNewPoolUsesRawConn(t *testing.T) {
	pool, _ := setup(t, DefaultSession(), 1)
	c, err := pool.Acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Release()
	if sock := c.Conn().PgConn().Conn(); func() bool { _, ok := sock.(*rawConn); return !ok }() {
		t.Fatalf("the pool's connection is a %T, want *rawConn", sock)
	}
}

// BenchmarkRoundTrip compares a 16-byte request/reply over loopback through rawConn and
// through a plain net.Conn, against an echo goroutine in the same process: time per round
// trip and allocations (rawConn must allocate nothing).
// go test ./driver -run '^$' -bench RoundTrip -benchmem
func BenchmarkRoundTrip(b *testing.B) {
	for _, tc := range []struct {
		name string
		wrap bool
	}{{"raw", true}, {"net", false}} {
		b.Run(tc.name, func(b *testing.B) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			defer ln.Close()
			go func() { // echo server
				c, err := ln.Accept()
				if err != nil {
					return
				}
				defer c.Close()
				_, _ = io.Copy(c, c)
			}()
			var d net.Dialer
			dial := d.DialContext
			if tc.wrap {
				dial = rawDial(dial)
			}
			c, err := dial(context.Background(), "tcp", ln.Addr().String())
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			msg, buf := bytes.Repeat([]byte("x"), 16), make([]byte, 16)
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if _, err := c.Write(msg); err != nil {
					b.Fatal(err)
				}
				if _, err := io.ReadFull(c, buf); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
