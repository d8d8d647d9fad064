package responder

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// maxBody bounds a frontend message's body; the benchmarks send short statements.
const maxBody = 1 << 24

// readMessage reads one frontend message (type byte, int32 length including itself, body)
// into buf, reusing it, and returns the type and the body.
func readMessage(r *bufio.Reader, buf []byte) (byte, []byte, error) {
	var hdr [5]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return 0, buf, err
	}
	n := int(int32(binary.BigEndian.Uint32(hdr[1:]))) - 4
	if n < 0 || n > maxBody {
		return 0, buf, fmt.Errorf("message %q: bad length %d", hdr[0], n+4)
	}
	if cap(buf) < n {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	if _, err := io.ReadFull(r, buf); err != nil {
		return 0, buf, err
	}
	return hdr[0], buf, nil
}

// readStartup reads the length-prefixed message that opens a connection (startup, SSL,
// GSS encryption or cancel request) and returns its body (protocol code first).
func readStartup(r *bufio.Reader) ([]byte, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, err
	}
	n := int(int32(binary.BigEndian.Uint32(hdr[:]))) - 4
	if n < 4 || n > 10000 {
		return nil, fmt.Errorf("startup message: bad length %d", n+4)
	}
	buf := make([]byte, n)
	_, err := io.ReadFull(r, buf)
	return buf, err
}

var errBadBind = errors.New("malformed Bind message")

// bindMsg is what the responder needs from a Bind: the statement it binds and the
// result format codes. The slices point into the message body or into formats, which is
// reused; nothing is allocated (pgproto3.Bind.Decode allocates the names, parameters and
// format codes of every Bind).
type bindMsg struct {
	stmt    []byte
	formats []int16
	params  int // how many parameters it binds
}

// decodeBind fills m from a Bind body, reusing m.formats.
func decodeBind(body []byte, m *bindMsg) error {
	i := bytes.IndexByte(body, 0) // portal name
	if i < 0 {
		return errBadBind
	}
	rest := body[i+1:]
	i = bytes.IndexByte(rest, 0)
	if i < 0 {
		return errBadBind
	}
	m.stmt, rest = rest[:i], rest[i+1:]
	if len(rest) < 2 {
		return errBadBind
	}
	nf := int(binary.BigEndian.Uint16(rest))
	rest = rest[2:]
	if len(rest) < 2*nf+2 {
		return errBadBind
	}
	rest = rest[2*nf:] // parameter format codes: the responder ignores the parameters
	np := int(binary.BigEndian.Uint16(rest))
	m.params = np
	rest = rest[2:]
	for range np {
		if len(rest) < 4 {
			return errBadBind
		}
		l := int(int32(binary.BigEndian.Uint32(rest)))
		rest = rest[4:]
		if l < 0 {
			continue // NULL
		}
		if len(rest) < l {
			return errBadBind
		}
		rest = rest[l:]
	}
	if len(rest) < 2 {
		return errBadBind
	}
	nr := int(binary.BigEndian.Uint16(rest))
	rest = rest[2:]
	if len(rest) != 2*nr {
		return errBadBind
	}
	m.formats = m.formats[:0]
	for k := range nr {
		m.formats = append(m.formats, int16(binary.BigEndian.Uint16(rest[2*k:])))
	}
	return nil
}

// format is the result format of column i under Bind's format codes: none = all text,
// one = all columns, else one per column.
func format(codes []int16, i int) int16 {
	switch len(codes) {
	case 0:
		return 0
	case 1:
		return codes[0]
	}
	if i < len(codes) {
		return codes[i]
	}
	return 0
}

// cstring returns the NUL-terminated string at the start of b and what follows it.
func cstring(b []byte) ([]byte, []byte, bool) {
	i := bytes.IndexByte(b, 0)
	if i < 0 {
		return nil, nil, false
	}
	return b[:i], b[i+1:], true
}
