package driver

import (
	"syscall"
	"time"
	"unsafe"
)

// The driver's raw system calls, all of them, and why they are raw.
//
// A driver connection does one small write and one small read per statement, thousands a
// second, and the process is idle between most of them. A system call through package
// syscall's Syscall (as package net makes them) enters the runtime's syscall state, and
// the first one after an idle spell wakes the runtime's monitor thread (sysmon), which
// then polls every 20 µs until the process is idle again: on this project's 2-core
// machine that thread alone was a quarter of the driver's CPU (perf, oltp at 300 tx/s).
// Reads and writes of non-blocking sockets never block, and the loop's wait in epoll is
// bounded (loopMaxWait), so RawSyscall, which does no such bookkeeping, is safe for them.
// rawConn (the pgx engine's sockets) and the loop engine both use these.

// rawRead reads what fd has into p.
func rawRead(fd int, p []byte) (int, syscall.Errno) {
	n, _, e := syscall.RawSyscall(syscall.SYS_READ, uintptr(fd), uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
	return int(n), e
}

// rawWrite writes what fd has room for of p.
func rawWrite(fd int, p []byte) (int, syscall.Errno) {
	n, _, e := syscall.RawSyscall(syscall.SYS_WRITE, uintptr(fd), uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
	return int(n), e
}

// sysEpollPwait2 is epoll_pwait2(2) (Linux 5.11), epoll_wait with a nanosecond timeout.
const sysEpollPwait2 = 441

// kernelTimespec is struct __kernel_timespec: 64-bit fields on every architecture.
type kernelTimespec struct{ sec, nsec int64 }

// epollWait blocks in epoll epfd for at most d and fills events. Without pwait2
// (epoll_pwait2 missing: Linux < 5.11, or a seccomp filter) it uses epoll_pwait, whose
// timeout is whole milliseconds, rounded up. While it waits the loop keeps the process's
// only P; the wait is short, and the runtime's timers run when the loop yields.
func epollWait(epfd int, events []syscall.EpollEvent, d time.Duration, pwait2 bool) (int, syscall.Errno) {
	if pwait2 {
		ts := kernelTimespec{sec: int64(d / time.Second), nsec: int64(d % time.Second)}
		n, _, e := syscall.RawSyscall6(sysEpollPwait2, uintptr(epfd), uintptr(unsafe.Pointer(&events[0])),
			uintptr(len(events)), uintptr(unsafe.Pointer(&ts)), 0, 0)
		return int(n), e
	}
	ms := (d + time.Millisecond - 1) / time.Millisecond
	n, _, e := syscall.RawSyscall6(syscall.SYS_EPOLL_PWAIT, uintptr(epfd), uintptr(unsafe.Pointer(&events[0])),
		uintptr(len(events)), uintptr(ms), 0, 0)
	return int(n), e
}
