// Package responder is a minimal PostgreSQL wire-protocol server for benchmarks of the
// client alone: it answers startup (no authentication), simple and extended queries with
// canned replies (Canned), so a driver's own capacity per core can be measured without a
// server's cost. It speaks protocol 3.0 through pgproto3's backend messages; a
// connection's hot path (Bind, Execute, Sync, simple BEGIN/SET/COMMIT) reuses its buffers
// and allocates nothing.
//
// It is not a database: every statement gets the canned answer of the first reply it
// matches (or a made-up one from its first word, counted as a fallback), parameters are
// ignored, nothing fails. It does track what a client can check: the transaction status
// in ReadyForQuery (BEGIN, COMMIT, ROLLBACK), ids from a sequence for INSERT ...
// RETURNING id, and the rows committed into each table, so a client's row check (rows
// gained = commits) holds.
package responder

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/jackc/pgx/v5/pgtype"
)

// Options configure a Server.
type Options struct {
	// Replies are the canned replies, first match wins; nil: Canned(Wallets, now).
	Replies []Reply
	// Wallets is the wallet count the schema reports (default 10,000).
	Wallets int
	// Log, when set, gets one line per statement no reply matched (once per text) and
	// per connection error.
	Log *log.Logger
}

// Server answers PostgreSQL clients on one listener.
type Server struct {
	ln      net.Listener
	replies []Reply
	logger  *log.Logger

	nextID  atomic.Int64
	counts  [nTables]atomic.Int64
	pids    atomic.Uint32
	stats   Stats
	mu      sync.Mutex
	unknown map[string]*Reply        // fallback replies, by statement text
	apps    map[string]*atomic.Int64 // ReadyForQuery messages by application_name
	conns   map[net.Conn]struct{}
	wg      sync.WaitGroup
	closed  bool
}

// Stats counts what the server did.
type Stats struct {
	Conns     atomic.Int64 // connections accepted
	Commits   atomic.Int64 // COMMITs of an open transaction
	Fallbacks atomic.Int64 // statements answered by a fallback (no canned reply matched)
}

// Listen makes a Server listening on addr (host:port; port 0 picks a free one).
func Listen(addr string, opt Options) (*Server, error) {
	replies := opt.Replies
	if replies == nil {
		w := opt.Wallets
		if w <= 0 {
			w = 10_000
		}
		replies = Canned(w, time.Now())
	}
	m := pgtype.NewMap()
	for i := range replies {
		if err := replies[i].compile(m); err != nil {
			return nil, err
		}
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	s := &Server{ln: ln, replies: replies, logger: opt.Log, unknown: map[string]*Reply{}, apps: map[string]*atomic.Int64{}, conns: map[net.Conn]struct{}{}}
	s.pids.Store(10_000)
	return s, nil
}

// Addr is the address the server listens on.
func (s *Server) Addr() *net.TCPAddr { return s.ln.Addr().(*net.TCPAddr) }

// DSN is a connection string for the server (TLS off: the responder refuses it).
func (s *Server) DSN() string {
	a := s.Addr()
	return "postgres://bench@" + net.JoinHostPort(a.IP.String(), strconv.Itoa(a.Port)) + "/bench?sslmode=disable"
}

// Stats is the server's counters.
func (s *Server) Stats() *Stats { return &s.stats }

// RoundTrips is the ReadyForQuery messages sent after startup to the connections whose
// application_name is app: their round trips, when they do not pipeline.
func (s *Server) RoundTrips(app string) int64 { return s.appReady(app).Load() }

// appReady is app's ReadyForQuery counter, made on first use.
func (s *Server) appReady(app string) *atomic.Int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, ok := s.apps[app]
	if !ok {
		n = new(atomic.Int64)
		s.apps[app] = n
	}
	return n
}

// Committed is the rows committed into t so far.
func (s *Server) Committed(t Table) int64 { return s.counts[t].Load() }

// Serve accepts connections until Close, each served by its own goroutine.
func (s *Server) Serve() error {
	for {
		nc, err := s.ln.Accept()
		if err != nil {
			s.mu.Lock()
			closed := s.closed
			s.mu.Unlock()
			if closed {
				return nil
			}
			return err
		}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			nc.Close()
			return nil
		}
		s.conns[nc] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		s.stats.Conns.Add(1)
		go func() {
			defer s.wg.Done()
			if err := s.serveConn(nc); err != nil && s.logger != nil {
				s.logger.Printf("connection %v: %v", nc.RemoteAddr(), err)
			}
			s.mu.Lock()
			delete(s.conns, nc)
			s.mu.Unlock()
			nc.Close()
		}()
	}
}

// Close stops accepting, closes every connection and waits for their goroutines.
func (s *Server) Close() error {
	s.mu.Lock()
	s.closed = true
	err := s.ln.Close()
	for nc := range s.conns {
		nc.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
	return err
}

// lookup is the reply for sql: the first canned reply it matches, else its fallback.
func (s *Server) lookup(sql []byte) *Reply {
	sql = trimSQL(sql)
	if len(sql) == 0 {
		return &emptyReply
	}
	for i := range s.replies {
		if s.replies[i].matches(sql) {
			return &s.replies[i]
		}
	}
	s.stats.Fallbacks.Add(1)
	s.mu.Lock()
	defer s.mu.Unlock()
	if r, ok := s.unknown[string(sql)]; ok {
		return r
	}
	r := fallback(string(sql))
	if err := r.compile(nil); err != nil { // fallbacks have no static values to encode
		panic(err)
	}
	s.unknown[string(sql)] = r
	if s.logger != nil {
		s.logger.Printf("no canned reply, answering %q with %d column(s) and %d row(s): %s", r.tag, len(r.Cols), len(r.Rows), sql)
	}
	return r
}

// prepared is a statement a client parsed.
type prepared struct {
	reply  *Reply
	params []uint32
}

// conn is one client connection's state; its buffers are reused for every message.
type conn struct {
	s        *Server
	nc       net.Conn
	r        *bufio.Reader
	out      []byte
	body     []byte
	stmts    map[string]*prepared
	unnamed  prepared
	portal   *prepared // the statement bound last (only the unnamed portal is used)
	bind     bindMsg
	status   byte // 'I' idle, 'T' in a transaction
	pending  [nTables]int64
	skipping bool          // after an error, until Sync
	appReady *atomic.Int64 // the ReadyForQuery counter of its application_name
	values   [][]byte
	scratch  []byte
	fields   []pgproto3.FieldDescription
	row      pgproto3.DataRow
	rd       pgproto3.RowDescription
}

var errTerminate = errors.New("terminate")

func (s *Server) serveConn(nc net.Conn) error {
	if tc, ok := nc.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
	}
	c := &conn{s: s, nc: nc, r: bufio.NewReaderSize(nc, 32<<10), out: make([]byte, 0, 16<<10),
		body: make([]byte, 0, 4<<10), stmts: map[string]*prepared{}, status: 'I', scratch: make([]byte, 0, 256)}
	if err := c.startup(); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, errTerminate) {
			return nil
		}
		return err
	}
	for {
		typ, body, err := readMessage(c.r, c.body)
		c.body = body
		if err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) {
				return nil
			}
			return err
		}
		if err := c.handle(typ, body); err != nil {
			if errors.Is(err, errTerminate) {
				return nil
			}
			return err
		}
		if len(c.out) > 32<<10 {
			if err := c.flush(); err != nil {
				return err
			}
		}
	}
}

// startup answers SSL and GSS encryption requests with 'N', then the startup message
// with AuthenticationOk, the usual parameters, BackendKeyData and ReadyForQuery.
func (c *conn) startup() error {
	for {
		body, err := readStartup(c.r)
		if err != nil {
			return err
		}
		code := binary.BigEndian.Uint32(body)
		switch code {
		case 80877103, 80877104: // SSLRequest, GSSENCRequest
			if _, err := c.nc.Write([]byte{'N'}); err != nil {
				return err
			}
			continue
		case 80877102: // CancelRequest: nothing runs long enough to cancel
			return errTerminate
		}
		var sm pgproto3.StartupMessage
		if err := sm.Decode(body); err != nil {
			return err
		}
		if sm.ProtocolVersion != pgproto3.ProtocolVersion30 {
			c.send(&pgproto3.NegotiateProtocolVersion{NewestMinorProtocol: 0})
		}
		c.send(&pgproto3.AuthenticationOk{})
		for _, p := range [][2]string{{"server_version", ServerVersion}, {"server_encoding", "UTF8"},
			{"client_encoding", "UTF8"}, {"standard_conforming_strings", "on"}, {"DateStyle", "ISO, MDY"},
			{"integer_datetimes", "on"}, {"TimeZone", "UTC"}, {"IntervalStyle", "postgres"},
			{"application_name", sm.Parameters["application_name"]}} {
			c.send(&pgproto3.ParameterStatus{Name: p[0], Value: p[1]})
		}
		pid := c.s.pids.Add(1)
		key := binary.BigEndian.AppendUint32(nil, pid*2654435761)
		c.send(&pgproto3.BackendKeyData{ProcessID: pid, SecretKey: key})
		c.send(&pgproto3.ReadyForQuery{TxStatus: 'I'})
		c.appReady = c.s.appReady(sm.Parameters["application_name"])
		return c.flush()
	}
}

// The constant messages, encoded once.
var (
	msgBindComplete  = encode(&pgproto3.BindComplete{})
	msgParseComplete = encode(&pgproto3.ParseComplete{})
	msgCloseComplete = encode(&pgproto3.CloseComplete{})
	msgNoData        = encode(&pgproto3.NoData{})
	msgEmptyQuery    = encode(&pgproto3.EmptyQueryResponse{})
	msgReadyIdle     = encode(&pgproto3.ReadyForQuery{TxStatus: 'I'})
	msgReadyInTx     = encode(&pgproto3.ReadyForQuery{TxStatus: 'T'})
)

func encode(m pgproto3.BackendMessage) []byte {
	b, err := m.Encode(nil)
	if err != nil {
		panic(err)
	}
	return b
}

// ready appends ReadyForQuery with the connection's transaction status.
func (c *conn) ready() {
	c.appReady.Add(1)
	if c.status == 'T' {
		c.out = append(c.out, msgReadyInTx...)
	} else {
		c.out = append(c.out, msgReadyIdle...)
	}
}

// send appends msg to the output buffer (the messages of the cold paths: pgproto3
// messages passed as an interface escape to the heap).
func (c *conn) send(msg pgproto3.BackendMessage) {
	out, err := msg.Encode(c.out)
	if err != nil {
		panic(fmt.Sprintf("encode %T: %v", msg, err)) // only for messages too large for the protocol
	}
	c.out = out
}

func (c *conn) flush() error {
	if len(c.out) == 0 {
		return nil
	}
	_, err := c.nc.Write(c.out)
	c.out = c.out[:0]
	return err
}

// flushIdle flushes unless more input is already buffered (a pipelining client).
func (c *conn) flushIdle() error {
	if c.r.Buffered() > 0 {
		return nil
	}
	return c.flush()
}

// fail sends an ErrorResponse and, in the extended protocol, skips to the next Sync.
func (c *conn) fail(code, msg string, extended bool) {
	c.send(&pgproto3.ErrorResponse{Severity: "ERROR", SeverityUnlocalized: "ERROR", Code: code, Message: msg})
	c.skipping = extended
}

func (c *conn) handle(typ byte, body []byte) error {
	if c.skipping && typ != 'S' && typ != 'X' {
		return nil
	}
	switch typ {
	case 'Q':
		return c.query(body)
	case 'P':
		return c.parse(body)
	case 'B':
		if err := decodeBind(body, &c.bind); err != nil {
			c.fail("08P01", err.Error(), true)
			return nil
		}
		ps := &c.unnamed
		if len(c.bind.stmt) > 0 {
			var ok bool
			if ps, ok = c.stmts[string(c.bind.stmt)]; !ok {
				c.fail("26000", fmt.Sprintf("prepared statement %q does not exist", c.bind.stmt), true)
				return nil
			}
		}
		if ps.reply == nil {
			c.fail("26000", "unnamed prepared statement does not exist", true)
			return nil
		}
		c.portal = ps
		c.out = append(c.out, msgBindComplete...)
	case 'D':
		return c.describe(body)
	case 'E':
		if c.portal == nil {
			c.fail("34000", "portal does not exist", true)
			return nil
		}
		c.execute(c.portal.reply, c.bind.formats, c.bind.params)
	case 'S':
		c.skipping = false
		c.ready()
		return c.flushIdle()
	case 'H':
		return c.flushIdle()
	case 'C':
		if len(body) < 2 {
			c.fail("08P01", "malformed Close message", true)
			return nil
		}
		name, _, ok := cstring(body[1:])
		if ok && body[0] == 'S' {
			if len(name) == 0 {
				c.unnamed = prepared{}
			} else {
				delete(c.stmts, string(name))
			}
		}
		c.out = append(c.out, msgCloseComplete...)
	case 'X':
		return errTerminate
	default:
		c.fail("08P01", fmt.Sprintf("unsupported message type %q", typ), false)
		c.send(&pgproto3.ReadyForQuery{TxStatus: c.status})
		return c.flush()
	}
	return nil
}

func (c *conn) parse(body []byte) error {
	var m pgproto3.Parse
	if err := m.Decode(body); err != nil {
		c.fail("08P01", err.Error(), true)
		return nil
	}
	r := c.s.lookup([]byte(m.Query))
	ps := prepared{reply: r, params: paramTypes(m.Query, r.Params)}
	for i, oid := range m.ParameterOIDs {
		if oid != 0 && i < len(ps.params) {
			ps.params[i] = oid
		}
	}
	if m.Name == "" {
		c.unnamed = ps
	} else {
		c.stmts[m.Name] = &ps
	}
	c.out = append(c.out, msgParseComplete...)
	return nil
}

func (c *conn) describe(body []byte) error {
	if len(body) < 2 {
		c.fail("08P01", "malformed Describe message", true)
		return nil
	}
	name, _, ok := cstring(body[1:])
	if !ok {
		c.fail("08P01", "malformed Describe message", true)
		return nil
	}
	if body[0] == 'P' {
		if c.portal == nil {
			c.fail("34000", "portal does not exist", true)
			return nil
		}
		c.rowDescription(c.portal.reply, c.bind.formats)
		return nil
	}
	ps := &c.unnamed
	if len(name) > 0 {
		if ps, ok = c.stmts[string(name)]; !ok {
			c.fail("26000", fmt.Sprintf("prepared statement %q does not exist", name), true)
			return nil
		}
	}
	if ps.reply == nil {
		c.fail("26000", "unnamed prepared statement does not exist", true)
		return nil
	}
	c.send(&pgproto3.ParameterDescription{ParameterOIDs: ps.params})
	c.rowDescription(ps.reply, nil)
	return nil
}

// rowDescription sends r's columns in the given result formats, or NoData.
func (c *conn) rowDescription(r *Reply, formats []int16) {
	if len(r.Cols) == 0 {
		c.out = append(c.out, msgNoData...)
		return
	}
	text := true
	for i := range r.Cols {
		text = text && format(formats, i) == 0
	}
	if text {
		c.out = append(c.out, r.rowDesc...)
		return
	}
	c.fields = append(c.fields[:0], r.fields...)
	for i := range c.fields {
		c.fields[i].Format = format(formats, i)
	}
	c.rd.Fields = c.fields
	c.out, _ = c.rd.Encode(c.out) // cannot fail: a few columns
}

// query answers a simple Query: each statement's rows in text, then ReadyForQuery.
func (c *conn) query(body []byte) error {
	sql := body
	if n := len(sql); n > 0 && sql[n-1] == 0 {
		sql = sql[:n-1]
	}
	some := false
	for len(sql) > 0 {
		stmt, rest := splitStatement(sql)
		sql = rest
		r := c.s.lookup(stmt)
		if r.empty {
			continue
		}
		some = true
		c.rowDescription(r, nil)
		c.execute(r, nil, 0)
	}
	if !some {
		c.out = append(c.out, msgEmptyQuery...)
	}
	c.ready()
	return c.flushIdle()
}

// splitStatement cuts sql after its first semicolon outside quotes.
func splitStatement(sql []byte) ([]byte, []byte) {
	var quote byte
	for i, b := range sql {
		switch {
		case quote != 0:
			if b == quote {
				quote = 0
			}
		case b == '\'' || b == '"':
			quote = b
		case b == ';':
			return sql[:i], sql[i+1:]
		}
	}
	return sql, nil
}

// execute sends r's rows in the given formats and its command tag, and applies its
// effects: the transaction status and the rows it inserts (params: the parameters bound,
// for a multi-row INSERT).
func (c *conn) execute(r *Reply, formats []int16, params int) {
	for _, row := range r.cells {
		c.values = c.values[:0]
		c.scratch = c.scratch[:0]
		for j := range row {
			v := &row[j]
			bin := format(formats, j) == 1
			switch {
			case v.null:
				c.values = append(c.values, nil)
			case v.dyn:
				n := c.s.counts[v.count].Load()
				if v.nextID {
					n = c.s.nextID.Add(1)
				}
				start := len(c.scratch)
				if bin {
					c.scratch = binary.BigEndian.AppendUint64(c.scratch, uint64(n))
				} else {
					c.scratch = strconv.AppendInt(c.scratch, n, 10)
				}
				// Should scratch grow, the earlier values keep the old array.
				c.values = append(c.values, c.scratch[start:len(c.scratch):len(c.scratch)])
			case bin:
				c.values = append(c.values, v.bin)
			default:
				c.values = append(c.values, v.text)
			}
		}
		c.row.Values = c.values
		c.out, _ = c.row.Encode(c.out) // cannot fail: a few short values
	}
	if r.empty {
		c.out = append(c.out, msgEmptyQuery...)
		return
	}
	rows := int64(1)
	if r.ParamsPerRow > 0 && params > r.ParamsPerRow {
		rows = int64(params / r.ParamsPerRow)
	}
	if rows == 1 {
		c.out = append(c.out, r.complete...)
	} else {
		c.scratch = strconv.AppendInt(append(c.scratch[:0], "INSERT 0 "...), rows, 10)
		c.out, _ = (&pgproto3.CommandComplete{CommandTag: c.scratch}).Encode(c.out) // cannot fail: a short tag
	}
	if r.Insert != NoTable {
		if c.status == 'T' {
			c.pending[r.Insert] += rows
		} else {
			c.s.counts[r.Insert].Add(rows)
		}
	}
	switch r.Tx {
	case TxBegin:
		c.status = 'T'
	case TxCommit:
		if c.status == 'T' {
			c.s.stats.Commits.Add(1)
			for t, n := range c.pending {
				if n != 0 {
					c.s.counts[t].Add(n)
				}
			}
		}
		c.pending = [nTables]int64{}
		c.status = 'I'
	case TxRollback:
		c.pending = [nTables]int64{}
		c.status = 'I'
	}
}

// ServeContext serves until ctx ends, then closes the server.
func (s *Server) ServeContext(ctx context.Context) error {
	go func() {
		<-ctx.Done()
		s.Close()
	}()
	return s.Serve()
}
