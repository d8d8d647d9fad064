// Package pgwire is the wire layer of the driver's event-loop engine: the frontend messages
// it sends and the backend messages it reads, encoded and decoded by pgx's pgproto3 message
// types into and from buffers the caller owns and reuses, so a transaction costs no
// allocation. It does no I/O: the loop moves the bytes (see driver/loop_linux.go), and
// everything here is testable without a server.
//
// Only the framing (a type byte and a big-endian length) is done here; every message body
// is pgproto3's own Encode or Decode.
package pgwire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"unsafe"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
)

// Encoder appends frontend messages to a buffer. Its message structs and the argument
// slices are reused from one call to the next.
type Encoder struct {
	query    pgproto3.Query
	parse    pgproto3.Parse
	bind     pgproto3.Bind
	describe pgproto3.Describe
	execute  pgproto3.Execute
	sync     pgproto3.Sync
	params   [][]byte
}

// Query appends a simple-protocol Query: a statement without parameters, as pgx sends
// BEGIN, SET and COMMIT.
func (e *Encoder) Query(dst []byte, sql string) ([]byte, error) {
	e.query.String = sql
	return e.query.Encode(dst)
}

// Exec appends one round trip of the extended protocol for the prepared statement name:
// Bind (text parameters, text results) of the unnamed portal, Execute (all rows) and Sync.
// With parse, a Parse of sql under name goes first (no parameter types: the server infers
// them); with describe, a Describe of the portal follows the Bind, for its row's columns.
// The parameters are the text forms of the arguments concatenated in args, argument i
// ending at ends[i].
func (e *Encoder) Exec(dst []byte, name, sql string, parse, describe bool, args []byte, ends []int) ([]byte, error) {
	var err error
	if parse {
		e.parse.Name, e.parse.Query = name, sql
		if dst, err = e.parse.Encode(dst); err != nil {
			return dst, err
		}
	}
	e.params = e.params[:0]
	start := 0
	for _, end := range ends {
		e.params = append(e.params, args[start:end:end])
		start = end
	}
	e.bind.DestinationPortal, e.bind.PreparedStatement, e.bind.Parameters = "", name, e.params
	if dst, err = e.bind.Encode(dst); err != nil {
		return dst, err
	}
	if describe {
		e.describe.ObjectType, e.describe.Name = 'P', ""
		if dst, err = e.describe.Encode(dst); err != nil {
			return dst, err
		}
	}
	e.execute.Portal, e.execute.MaxRows = "", 0
	if dst, err = e.execute.Encode(dst); err != nil {
		return dst, err
	}
	return e.sync.Encode(dst)
}

// Decoder decodes backend messages into message structs of its own, reused from one
// message to the next: a message it returns is valid until the next call to Next, and
// only while the bytes it was decoded from are unchanged (its byte slices point into
// them).
type Decoder struct {
	parseComplete        pgproto3.ParseComplete
	bindComplete         pgproto3.BindComplete
	closeComplete        pgproto3.CloseComplete
	noData               pgproto3.NoData
	rowDescription       pgproto3.RowDescription
	parameterDescription pgproto3.ParameterDescription
	dataRow              pgproto3.DataRow
	commandComplete      pgproto3.CommandComplete
	emptyQuery           pgproto3.EmptyQueryResponse
	portalSuspended      pgproto3.PortalSuspended
	errorResponse        pgproto3.ErrorResponse
	readyForQuery        pgproto3.ReadyForQuery
}

// headerLen is a message's type byte and its length.
const headerLen = 5

// ErrProtocol is a message the decoder cannot read: the connection is out of step.
var ErrProtocol = errors.New("protocol")

// Next decodes the first message in buf. It returns the message, and n, the bytes it
// took from buf; n is 0 when buf does not hold a whole message yet. Messages the loop has
// no use for (notices, notifications, parameter status) are taken without decoding: the
// message is nil and n > 0. An error means the stream is not the protocol; the
// connection cannot be used further.
func (d *Decoder) Next(buf []byte) (msg pgproto3.BackendMessage, n int, err error) {
	if len(buf) < headerLen {
		return nil, 0, nil
	}
	l := int64(binary.BigEndian.Uint32(buf[1:]))
	if l < 4 {
		return nil, 0, fmt.Errorf("%w: message %q has length %d", ErrProtocol, buf[0], l)
	}
	if int64(len(buf)) < 1+l {
		return nil, 0, nil
	}
	n = int(1 + l)
	body := buf[headerLen:n]
	switch buf[0] {
	case '1':
		msg = &d.parseComplete
	case '2':
		msg = &d.bindComplete
	case '3':
		msg = &d.closeComplete
	case 'n':
		msg = &d.noData
	case 'T':
		msg = &d.rowDescription
	case 't':
		msg = &d.parameterDescription
	case 'D':
		msg = &d.dataRow
	case 'C':
		msg = &d.commandComplete
	case 'I':
		msg = &d.emptyQuery
	case 's':
		msg = &d.portalSuspended
	case 'E':
		msg = &d.errorResponse
	case 'Z':
		msg = &d.readyForQuery
	case 'N', 'A', 'S': // NoticeResponse, NotificationResponse, ParameterStatus
		return nil, n, nil
	default:
		return nil, 0, fmt.Errorf("%w: unexpected message type %q", ErrProtocol, buf[0])
	}
	if err := msg.Decode(body); err != nil {
		return nil, 0, fmt.Errorf("%w: %w", ErrProtocol, err)
	}
	return msg, n, nil
}

// Tag is cc's command tag. It shares cc's bytes, without a copy: it is valid only as long
// as the message is (see Decoder), and must not be kept.
func Tag(cc *pgproto3.CommandComplete) pgconn.CommandTag {
	if len(cc.CommandTag) == 0 {
		return pgconn.NewCommandTag("")
	}
	return pgconn.NewCommandTag(unsafe.String(&cc.CommandTag[0], len(cc.CommandTag)))
}
