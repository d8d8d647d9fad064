package driver

import (
	"context"
	"io"
	"net"
	"os"
	"syscall"
	"unsafe"
)

// rawConn is a socket whose reads and writes skip the Go runtime's syscall bookkeeping.
//
// A driver connection does one small write and one small read per statement, thousands a
// second, and the process is idle between most of them. Every read and write through
// package net enters the runtime's syscall state, and the first one after an idle spell
// wakes the runtime's monitor thread (sysmon), which then polls every 20 µs until the
// process is idle again: on this project's 2-core machine that thread alone was a quarter
// of the driver's CPU (perf, oltp at 300 tx/s). The socket is non-blocking, so its read and
// write never block: rawConn issues them with syscall.RawSyscall, which does no such
// bookkeeping, and still waits for readiness through the runtime's network poller
// (syscall.RawConn), so deadlines, cancellation and Close behave exactly as for net.Conn.
type rawConn struct {
	net.Conn // Close, addresses and deadlines
	rc       syscall.RawConn
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
		return &rawConn{Conn: c, rc: rc}, nil
	}
}

func (c *rawConn) opError(op string, err error) error {
	return &net.OpError{Op: op, Net: c.LocalAddr().Network(), Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: err}
}

// Read reads what the socket has, waiting for readiness when it has nothing.
func (c *rawConn) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	var n int
	var errno syscall.Errno
	err := c.rc.Read(func(fd uintptr) bool {
		for {
			r, _, e := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
			switch e {
			case syscall.EINTR:
				continue
			case syscall.EAGAIN:
				return false // wait for readiness
			}
			n, errno = int(r), e
			return true
		}
	})
	switch {
	case err != nil:
		return 0, c.opError("read", err)
	case errno != 0:
		return 0, c.opError("read", os.NewSyscallError("read", errno))
	case n == 0:
		return 0, io.EOF
	}
	return n, nil
}

// Write writes all of p, waiting for room when the socket buffer is full.
func (c *rawConn) Write(p []byte) (int, error) {
	var done int
	var errno syscall.Errno
	err := c.rc.Write(func(fd uintptr) bool {
		for done < len(p) {
			r, _, e := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&p[done])), uintptr(len(p)-done))
			switch e {
			case 0:
				done += int(r)
			case syscall.EINTR:
			case syscall.EAGAIN:
				return false // wait for room
			default:
				errno = e
				return true
			}
		}
		return true
	})
	switch {
	case err != nil:
		return done, c.opError("write", err)
	case errno != 0:
		return done, c.opError("write", os.NewSyscallError("write", errno))
	}
	return done, nil
}
