package driver

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/pgceiling/pgceiling/internal/pgwire"
	"github.com/pgceiling/pgceiling/workload"
)

// prepared is one script statement as the loop sends it.
type prepared struct {
	name string // the server-side statement's name: the SQL's hash, so equal names mean equal SQL
	sql  string
}

// preparedStatements are s's statements under the names the loop prepares them.
func preparedStatements(s workload.Script) []prepared {
	var ps []prepared
	for _, st := range s.Statements() {
		h := sha256.Sum256([]byte(st.SQL))
		ps = append(ps, prepared{name: "pgceiling_" + hex.EncodeToString(h[:12]), sql: st.SQL})
	}
	return ps
}

// Statement states on one connection (wireConn.states, and the connection's CustomData).
const (
	stmtUnknown int8 = iota // not prepared on this connection yet: Parse and Describe
	stmtParsed              // prepared, its columns not yet described: Describe
	stmtOther               // prepared; its first column is not an integer
	stmtInt                 // prepared; its first column is an integer, read into Result.First
)

// loopPrepared is the key of a connection's CustomData under which the loop keeps the
// statements it prepared there (name -> state), so a later probe on the same pooled
// connection does not prepare them again.
const loopPrepared = "pgceiling.loop.prepared"

// wireConn is the loop's side of the protocol on one connection, without I/O: it encodes
// the statements a transaction's state machine (workload.Txn) asks for into out and turns
// the server's messages into the machine's replies. Statements without arguments go over
// the simple protocol (as pgx sends them); a script's statements over the extended
// protocol on statements prepared on first use, in the same round trip as that use (as
// pgx's cache_statement does), so a transaction's statement costs one round trip.
type wireConn struct {
	enc    pgwire.Encoder
	dec    pgwire.Decoder
	out    []byte // messages to write
	args   []byte // a step's arguments in text form
	ends   []int
	stmts  []prepared
	row    workload.RowBuf // the first row's values (the read buffer moves on before the step)
	states []int8          // per statement: its state on this connection
	known  map[string]int8 // the connection's CustomData entry: state by statement name

	// The statement in flight.
	op     workload.OpKind
	stmt   int
	reply  workload.Reply
	gotRow bool
	pgErr  *pgconn.PgError
}

func newWireConn(stmts []prepared) *wireConn {
	return &wireConn{out: make([]byte, 0, 1024), args: make([]byte, 0, 256), ends: make([]int, 0, 8),
		stmts: stmts, states: make([]int8, len(stmts)), op: workload.OpDone}
}

// attach starts the codec on a connection where known says what the loop prepared.
func (c *wireConn) attach(known map[string]int8) {
	c.out, c.known, c.op = c.out[:0], known, workload.OpDone
	for i, st := range c.stmts {
		c.states[i] = known[st.name] // stmtUnknown when absent
	}
}

// send encodes op into out, after what out holds.
func (c *wireConn) send(op workload.Op) error {
	c.op, c.reply, c.gotRow, c.pgErr = op.Kind, workload.Reply{}, false, nil
	var err error
	if op.Kind != workload.OpStep {
		c.out, err = c.enc.Query(c.out, op.SQL)
		return err
	}
	c.stmt = op.Step.Stmt
	c.args, c.ends = c.args[:0], c.ends[:0]
	for _, a := range op.Step.Args {
		c.args = a.AppendText(c.args)
		c.ends = append(c.ends, len(c.args))
	}
	ps, state := &c.stmts[c.stmt], c.states[c.stmt]
	c.out, err = c.enc.Exec(c.out, ps.name, ps.sql, state == stmtUnknown, state <= stmtParsed, c.args, c.ends)
	return err
}

// receive takes the complete messages at the start of in, advancing t at each
// ReadyForQuery and encoding what t sends next into out. It returns the bytes it took
// and done once t has ended (OpDone), leaving any later bytes unread. An error means the
// stream is out of step: the connection must be dropped.
func (c *wireConn) receive(in []byte, t *workload.Txn) (int, bool, error) {
	p := 0
	for {
		msg, n, err := c.dec.Next(in[p:])
		if err != nil {
			return p, false, err
		}
		if n == 0 {
			return p, false, nil
		}
		p += n
		switch m := msg.(type) {
		case *pgproto3.ParseComplete: // the statement exists on this connection now
			c.described(stmtParsed)
		case *pgproto3.RowDescription: // on first use: is the first column an integer?
			state := stmtOther
			if len(m.Fields) > 0 && workload.IsIntegerOID(m.Fields[0].DataTypeOID) {
				state = stmtInt
			}
			c.described(state)
		case *pgproto3.NoData: // a statement without result columns
			c.described(stmtOther)
		case *pgproto3.DataRow: // the first row's first column
			if !c.gotRow && c.op == workload.OpStep {
				c.gotRow = true
				if t.ReadsRows() { // text, for custom scripts' \gset
					c.reply.Result.Row = c.row.Copy(m.Values)
				}
				if c.states[c.stmt] == stmtInt && len(m.Values) > 0 && m.Values[0] != nil {
					if v, err := strconv.ParseInt(string(m.Values[0]), 10, 64); err == nil {
						c.reply.Result.First, c.reply.Result.HasFirst = v, true
					}
				}
			}
		case *pgproto3.CommandComplete:
			tag := pgwire.Tag(m)
			c.reply.Result.Rows = tag.RowsAffected()
			c.reply.Rolled = tag.String() == "ROLLBACK"
		case *pgproto3.ErrorResponse:
			c.pgErr = pgconn.ErrorResponseToPgError(m)
		case *pgproto3.ReadyForQuery: // the statement is done
			if c.op == workload.OpDone {
				continue // nothing was in flight
			}
			c.reply.Idle = m.TxStatus == 'I'
			if c.pgErr != nil {
				c.reply.Err = c.pgErr
			}
			op := t.Next(c.reply)
			if op.Kind == workload.OpDone {
				c.op = workload.OpDone
				return p, true, nil
			}
			if err := c.send(op); err != nil {
				return p, false, fmt.Errorf("encode: %w", err)
			}
		}
	}
}

// lost ends t after the connection broke with err (or the server's FATAL error, when one
// came first).
func (c *wireConn) lost(t *workload.Txn, err error) {
	if c.pgErr != nil {
		err = c.pgErr
	}
	if c.op != workload.OpDone {
		t.Next(workload.Reply{Err: err, Closed: true})
	}
	c.op = workload.OpDone
}

// described records what a statement's first use taught about it on this connection.
func (c *wireConn) described(state int8) {
	if c.op != workload.OpStep || c.states[c.stmt] >= state {
		return
	}
	c.states[c.stmt] = state
	c.known[c.stmts[c.stmt].name] = state
}
