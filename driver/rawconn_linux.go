package driver

import (
	"context"
	"io"
	"net"
	"os"
	"sync"
	"syscall"
)

// rawConn is a socket whose reads and writes skip the Go runtime's syscall bookkeeping
// (rawRead and rawWrite: see rawsys_linux.go for why). It still waits for readiness
// through the runtime's network poller (syscall.RawConn), so deadlines, cancellation and
// Close behave exactly as for net.Conn.
type rawConn struct {
	net.Conn // Close, addresses and deadlines
	rc       syscall.RawConn
	rd, wr   rawOp // a read and a write may run at once
}

// rawOp is the state of one direction's system call, with the function RawConn calls bound
// once at dial, so a read or write allocates nothing.
type rawOp struct {
	mu    sync.Mutex
	buf   []byte
	n     int
	errno syscall.Errno
	fn    func(fd uintptr) bool
}

// rawDial dials like net.Dialer and wraps TCP and Unix sockets in a rawConn.
func rawDial(dial func(ctx context.Context, network, addr string) (net.Conn, error)) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		sc, ok := c.(syscall.Conn)
		if !ok {
			return c, nil
		}
		rc, err := sc.SyscallConn()
		if err != nil {
			return c, nil
		}
		r := &rawConn{Conn: c, rc: rc}
		r.rd.fn, r.wr.fn = r.rd.read, r.wr.write
		return r, nil
	}
}

// opError wraps err as package net would; errors from syscall.RawConn come wrapped already.
func (c *rawConn) opError(op string, err error) error {
	if _, ok := err.(*net.OpError); ok {
		return err
	}
	return &net.OpError{Op: op, Net: c.LocalAddr().Network(), Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: err}
}

// read reads what the socket has into buf; false (wait for readiness) when it has nothing.
func (op *rawOp) read(fd uintptr) bool {
	for {
		r, e := rawRead(int(fd), op.buf)
		switch e {
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
			return false
		}
		op.n, op.errno = r, e
		return true
	}
}

// write writes the rest of buf; false (wait for room) when the socket buffer is full.
func (op *rawOp) write(fd uintptr) bool {
	for op.n < len(op.buf) {
		r, e := rawWrite(int(fd), op.buf[op.n:])
		switch e {
		case 0:
			op.n += r
		case syscall.EINTR:
		case syscall.EAGAIN:
			return false
		default:
			op.errno = e
			return true
		}
	}
	return true
}

// do runs one read or write of p through call: the bytes it moved, and the error as
// package net would report it.
func (c *rawConn) do(op *rawOp, name string, p []byte, call func(func(uintptr) bool) error) (int, error) {
	op.mu.Lock()
	defer op.mu.Unlock()
	op.buf, op.n, op.errno = p, 0, 0
	err := call(op.fn)
	op.buf = nil
	n := max(op.n, 0) // a failed read(2) reports -1
	switch {
	case err != nil:
		return n, c.opError(name, err)
	case op.errno != 0:
		return n, c.opError(name, os.NewSyscallError(name, op.errno))
	}
	return n, nil
}

// Read reads what the socket has, waiting for readiness when it has nothing.
func (c *rawConn) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	n, err := c.do(&c.rd, "read", p, c.rc.Read)
	if err == nil && n == 0 {
		return 0, io.EOF
	}
	return n, err
}

// Write writes all of p, waiting for room when the socket buffer is full.
func (c *rawConn) Write(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	return c.do(&c.wr, "write", p, c.rc.Write)
}
