package responder

import (
	"bytes"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/jackc/pgx/v5/pgtype"
)

// Table is a table whose committed INSERTs the responder counts, so a client's row
// checks (rows gained = transactions committed) hold.
type Table int8

// The counted tables; NoTable is a statement that inserts nothing.
const (
	NoTable Table = iota - 1
	Transactions
	AuditLog
	Events
	nTables
)

// TxEffect is what a statement does to the connection's transaction status.
type TxEffect int8

// The transaction effects: BEGIN opens a transaction, COMMIT and ROLLBACK end it.
const (
	TxNone TxEffect = iota
	TxBegin
	TxCommit
	TxRollback
)

// Column is one result column: its name and type OID.
type Column struct {
	Name string
	OID  uint32
}

// Cell is one value of a canned row: text (the value's text form), NULL, the next id of
// a server-wide sequence, or the committed row count of a table.
type Cell struct {
	Text   string
	Null   bool
	NextID bool
	Count  Table // with CountOf
	dyn    bool
}

// V is a value given in its text form.
func V(text string) Cell { return Cell{Text: text} }

// Null is SQL NULL.
var Null = Cell{Null: true}

// NextID is the next value of the responder's id sequence (as nextval would give).
var NextID = Cell{NextID: true, dyn: true}

// CountOf is the number of rows committed into t since the responder started.
func CountOf(t Table) Cell { return Cell{Count: t, dyn: true} }

// Reply is the canned answer to the statements it matches: those starting with Prefix
// (case-insensitive, after leading blanks) and, when set, containing Contains.
type Reply struct {
	Name     string
	Prefix   string
	Contains string
	Tag      string // the command tag; empty: "SELECT <rows>"
	Cols     []Column
	Rows     [][]Cell
	Params   []uint32 // parameter type OIDs by position where the SQL's casts do not say (0: from the SQL)
	Tx       TxEffect
	Insert   Table // the table each execution adds a row to (NoTable: none)
	// ParamsPerRow, when set, makes an extended-protocol execution add its bound
	// parameters / ParamsPerRow rows (at least one) to Insert, with the matching tag
	// INSERT 0 n: a multi-row INSERT (the insert workload's --batch).
	ParamsPerRow int

	tag      []byte
	complete []byte // the CommandComplete message
	rowDesc  []byte // the RowDescription with every column in text format
	fields   []pgproto3.FieldDescription
	cells    [][]cell
	fallback bool // made up for a statement no canned reply matched
	empty    bool // the empty statement (pgxpool's "-- ping"): EmptyQueryResponse
}

// emptyReply answers a statement that is only blanks and comments.
var emptyReply = Reply{Name: "empty", Insert: NoTable, empty: true}

// cell is a Cell encoded once in both formats.
type cell struct {
	text, bin []byte
	null      bool
	nextID    bool
	count     Table
	dyn       bool
}

// typeSize is pg_type.typlen of the types the canned replies use (-1: variable).
var typeSize = map[uint32]int16{pgtype.BoolOID: 1, pgtype.Int2OID: 2, pgtype.Int4OID: 4, pgtype.Int8OID: 8,
	pgtype.Float8OID: 8, pgtype.TimestamptzOID: 8, pgtype.OIDOID: 4}

// compile encodes r's tag, row description and values (binary through pgtype), once.
func (r *Reply) compile(m *pgtype.Map) error {
	tag := r.Tag
	if tag == "" {
		tag = "SELECT " + strconv.Itoa(len(r.Rows))
	}
	r.tag = []byte(tag)
	var err error
	if r.complete, err = (&pgproto3.CommandComplete{CommandTag: r.tag}).Encode(nil); err != nil {
		return err
	}
	r.fields = make([]pgproto3.FieldDescription, len(r.Cols))
	for i, c := range r.Cols {
		size, ok := typeSize[c.OID]
		if !ok {
			size = -1
		}
		r.fields[i] = pgproto3.FieldDescription{Name: []byte(c.Name), DataTypeOID: c.OID, DataTypeSize: size, TypeModifier: -1}
	}
	if len(r.Cols) > 0 {
		if r.rowDesc, err = (&pgproto3.RowDescription{Fields: r.fields}).Encode(nil); err != nil {
			return err
		}
	}
	r.cells = make([][]cell, len(r.Rows))
	for i, row := range r.Rows {
		if len(row) != len(r.Cols) {
			return fmt.Errorf("reply %q: row %d has %d values for %d columns", r.Name, i, len(row), len(r.Cols))
		}
		r.cells[i] = make([]cell, len(row))
		for j, c := range row {
			e := cell{null: c.Null, nextID: c.NextID, count: c.Count, dyn: c.dyn}
			if c.dyn {
				if r.Cols[j].OID != pgtype.Int8OID {
					return fmt.Errorf("reply %q: column %q: a sequence or count needs int8", r.Name, r.Cols[j].Name)
				}
			} else if !c.Null {
				bin, err := binaryOf(m, r.Cols[j].OID, c.Text)
				if err != nil {
					return fmt.Errorf("reply %q: column %q: %w", r.Name, r.Cols[j].Name, err)
				}
				e.text, e.bin = []byte(c.Text), bin
			}
			r.cells[i][j] = e
		}
	}
	return nil
}

// binaryOf is text's binary form as type oid, through pgtype's codecs.
func binaryOf(m *pgtype.Map, oid uint32, text string) ([]byte, error) {
	var v any
	if err := m.Scan(oid, pgtype.TextFormatCode, []byte(text), &v); err != nil {
		return nil, fmt.Errorf("parse %q: %w", text, err)
	}
	b, err := m.Encode(oid, pgtype.BinaryFormatCode, v, nil)
	if err != nil {
		return nil, fmt.Errorf("encode %q: %w", text, err)
	}
	return b, nil
}

// matches reports whether sql (leading blanks trimmed) is one of r's statements.
func (r *Reply) matches(sql []byte) bool {
	if len(sql) < len(r.Prefix) || !bytes.EqualFold(sql[:len(r.Prefix)], []byte(r.Prefix)) {
		return false
	}
	if len(sql) > len(r.Prefix) && len(r.Prefix) > 0 && isWordByte(r.Prefix[len(r.Prefix)-1]) && isWordByte(sql[len(r.Prefix)]) {
		return false // BEGIN must not match BEGINNING
	}
	return r.Contains == "" || bytes.Contains(sql, []byte(r.Contains))
}

func isWordByte(b byte) bool {
	return b == '_' || b >= '0' && b <= '9' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z'
}

// trimSQL drops leading blanks and -- comments, and trailing blanks and semicolons.
func trimSQL(sql []byte) []byte {
	for {
		sql = bytes.TrimLeft(sql, " \t\r\n")
		if !bytes.HasPrefix(sql, []byte("--")) {
			break
		}
		i := bytes.IndexByte(sql, '\n')
		if i < 0 {
			return nil
		}
		sql = sql[i+1:]
	}
	return bytes.TrimRight(sql, " \t\r\n;")
}

// fallback makes a reply for a statement no canned reply matches, from its first word:
// a query returns no rows (one text column), an INSERT adds one row (RETURNING: one int8
// id from the sequence), UPDATE changes one row, DELETE none, anything else completes
// with its first word as the tag.
func fallback(sql string) *Reply {
	word := strings.ToUpper(firstWord(sql))
	r := &Reply{Name: "fallback", Insert: NoTable, fallback: true}
	switch word {
	case "SELECT", "WITH", "SHOW", "VALUES", "TABLE":
		r.Tag, r.Cols = "SELECT 0", []Column{{"?column?", pgtype.TextOID}}
	case "INSERT":
		r.Tag = "INSERT 0 1"
		if strings.Contains(strings.ToUpper(sql), "RETURNING") {
			r.Cols, r.Rows = []Column{{"id", pgtype.Int8OID}}, [][]Cell{{NextID}}
		}
	case "UPDATE":
		r.Tag = "UPDATE 1"
	case "DELETE":
		r.Tag = "DELETE 0"
	case "BEGIN", "START":
		r.Tag, r.Tx = "BEGIN", TxBegin
	case "COMMIT", "END":
		r.Tag, r.Tx = "COMMIT", TxCommit
	case "ROLLBACK", "ABORT":
		r.Tag, r.Tx = "ROLLBACK", TxRollback
	default:
		r.Tag = word
	}
	return r
}

func firstWord(sql string) string {
	sql = strings.TrimLeft(sql, " \t\r\n(")
	for i := 0; i < len(sql); i++ {
		if !isWordByte(sql[i]) {
			return sql[:i]
		}
	}
	return sql
}

// castTypes maps the type names of `$n::type` casts to OIDs.
var castTypes = map[string]uint32{
	"bigint": pgtype.Int8OID, "int8": pgtype.Int8OID, "int": pgtype.Int4OID, "integer": pgtype.Int4OID,
	"int4": pgtype.Int4OID, "smallint": pgtype.Int2OID, "int2": pgtype.Int2OID, "text": pgtype.TextOID,
	"text[]": pgtype.TextArrayOID, "interval": pgtype.IntervalOID, "uuid": pgtype.UUIDOID,
	"timestamptz": pgtype.TimestamptzOID, "numeric": pgtype.NumericOID, "boolean": pgtype.BoolOID,
	"bool": pgtype.BoolOID, "jsonb": pgtype.JSONBOID, "float8": pgtype.Float8OID,
}

var paramRE = regexp.MustCompile(`\$(\d+)(::([a-z0-9_]+(\[\])?))?`)

// paramTypes is the parameter types PostgreSQL would infer for sql, as far as the
// casts say ($n::bigint is int8); an uncast parameter is text unless over says otherwise.
func paramTypes(sql string, over []uint32) []uint32 {
	var oids []uint32
	for _, m := range paramRE.FindAllStringSubmatch(sql, -1) {
		n, err := strconv.Atoi(m[1])
		if err != nil || n < 1 || n > 1000 {
			continue
		}
		for len(oids) < n {
			oids = append(oids, 0)
		}
		if oid, ok := castTypes[m[3]]; ok && oids[n-1] == 0 {
			oids[n-1] = oid
		}
	}
	for i := range oids {
		if i < len(over) && over[i] != 0 {
			oids[i] = over[i]
		}
		if oids[i] == 0 {
			oids[i] = pgtype.TextOID
		}
	}
	return oids
}
