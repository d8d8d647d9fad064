package pgwire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"strconv"
	"testing"

	"github.com/jackc/pgx/v5/pgproto3"
)

// handExec is the loop's former hand encoding of [Parse] Bind [Describe] Execute Sync,
// proven against real servers: the library's encoding must produce the same bytes.
func handExec(dst []byte, name, sql string, parse, describe bool, args [][]byte) []byte {
	b := dst
	if parse {
		b = append(b, 'P', 0, 0, 0, 0)
		b = append(b, name...)
		b = append(b, 0)
		b = append(b, sql...)
		b = append(b, 0, 0, 0)
		binary.BigEndian.PutUint32(b[1:], uint32(len(b)-1))
	}
	at := len(b)
	b = append(b, 'B', 0, 0, 0, 0, 0)
	b = append(b, name...)
	b = append(b, 0, 0, 0)
	b = binary.BigEndian.AppendUint16(b, uint16(len(args)))
	for _, a := range args {
		b = binary.BigEndian.AppendUint32(b, uint32(len(a)))
		b = append(b, a...)
	}
	b = append(b, 0, 0)
	binary.BigEndian.PutUint32(b[at+1:], uint32(len(b)-at-1))
	if describe {
		b = append(b, 'D', 0, 0, 0, 6, 'P', 0)
	}
	b = append(b, 'E', 0, 0, 0, 9, 0, 0, 0, 0, 0)
	return append(b, 'S', 0, 0, 0, 4)
}

// flat is args concatenated, and where each ends.
func flat(args [][]byte) ([]byte, []int) {
	var b []byte
	var ends []int
	for _, a := range args {
		b = append(b, a...)
		ends = append(ends, len(b))
	}
	return b, ends
}

func TestExecMatchesHandEncoding(t *testing.T) {
	var e Encoder
	for _, c := range []struct {
		parse, describe bool
		args            [][]byte
	}{
		{false, false, nil},
		{true, true, [][]byte{[]byte("42")}},
		{true, false, [][]byte{[]byte("1"), []byte(""), []byte("3600"), []byte("-7")}},
		{false, true, [][]byte{[]byte("0190a0f0-0000-7000-8000-000000000000"), bytes.Repeat([]byte("x"), 300)}},
	} {
		const name, sql = "pgceiling_0123456789abcdef01234567", "SELECT $1::bigint"
		args, ends := flat(c.args)
		got, err := e.Exec(nil, name, sql, c.parse, c.describe, args, ends)
		want := handExec(nil, name, sql, c.parse, c.describe, c.args)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("Exec(%q, parse %v, describe %v, %q) =\n%q, %v\nwant\n%q", name, c.parse, c.describe, c.args, got, err, want)
		}
	}
	got, err := e.Query([]byte("xx"), "BEGIN")
	if want := []byte("xxQ\x00\x00\x00\x0aBEGIN\x00"); err != nil || !bytes.Equal(got, want) {
		t.Errorf("Query(BEGIN) = %q, %v; want %q", got, err, want)
	}
}

// backend encodes server messages with pgproto3, as a server sends them.
func backend(t testing.TB, msgs ...pgproto3.BackendMessage) []byte {
	t.Helper()
	var b []byte
	for _, m := range msgs {
		var err error
		if b, err = m.Encode(b); err != nil {
			t.Fatal(err)
		}
	}
	return b
}

// oneTransaction is a server's replies to one oltp-like transaction on a connection
// where its statements are prepared: BEGIN, SET, four steps, COMMIT.
func oneTransaction(t testing.TB) []byte {
	cc := func(tag string) *pgproto3.CommandComplete { return &pgproto3.CommandComplete{CommandTag: []byte(tag)} }
	rfq := func(s byte) *pgproto3.ReadyForQuery { return &pgproto3.ReadyForQuery{TxStatus: s} }
	row := func(v ...string) *pgproto3.DataRow {
		d := &pgproto3.DataRow{}
		for _, s := range v {
			d.Values = append(d.Values, []byte(s))
		}
		return d
	}
	return backend(t, cc("BEGIN"), rfq('T'), cc("SET"), rfq('T'),
		&pgproto3.BindComplete{}, row("100.00", "active"), cc("SELECT 1"), rfq('T'),
		&pgproto3.BindComplete{}, row("3"), cc("SELECT 1"), rfq('T'),
		&pgproto3.BindComplete{}, row("123456"), cc("INSERT 0 1"), rfq('T'),
		&pgproto3.BindComplete{}, cc("INSERT 0 1"), rfq('T'),
		cc("COMMIT"), rfq('I'))
}

func TestDecodeTransaction(t *testing.T) {
	in := oneTransaction(t)
	var d Decoder
	var tags []string
	var rows int64
	for len(in) > 0 {
		m, n, err := d.Next(in)
		if err != nil || n == 0 {
			t.Fatalf("Next(%q) = %T, %d, %v", in, m, n, err)
		}
		if cc, ok := m.(*pgproto3.CommandComplete); ok {
			tags = append(tags, Tag(cc).String())
			rows += Tag(cc).RowsAffected()
		}
		in = in[n:]
	}
	want := "BEGIN SET SELECT 1 SELECT 1 INSERT 0 1 INSERT 0 1 COMMIT"
	if got := joinTags(tags); got != want || rows != 4 {
		t.Errorf("tags %q, rows %d; want %q, 4", got, rows, want)
	}
}

func joinTags(tags []string) string {
	var b []byte
	for i, s := range tags {
		if i > 0 {
			b = append(b, ' ')
		}
		b = append(b, s...)
	}
	return string(b)
}

func TestDecodePartialAndBad(t *testing.T) {
	var d Decoder
	full := backend(t, &pgproto3.RowDescription{Fields: []pgproto3.FieldDescription{{Name: []byte("id"), DataTypeOID: 20}}})
	for i := range len(full) {
		if m, n, err := d.Next(full[:i]); m != nil || n != 0 || err != nil {
			t.Fatalf("Next(first %d of %d bytes) = %v, %d, %v; want nothing yet", i, len(full), m, n, err)
		}
	}
	m, n, err := d.Next(full)
	if rd, ok := m.(*pgproto3.RowDescription); !ok || n != len(full) || err != nil || rd.Fields[0].DataTypeOID != 20 {
		t.Fatalf("Next(whole) = %#v, %d, %v", m, n, err)
	}
	notice := backend(t, &pgproto3.NoticeResponse{Severity: "WARNING", Message: "there is no transaction in progress"})
	if m, n, err := d.Next(notice); m != nil || n != len(notice) || err != nil {
		t.Errorf("Next(notice) = %v, %d, %v; want it skipped whole", m, n, err)
	}
	for _, bad := range [][]byte{{'Z', 0, 0, 0, 3}, {'?', 0, 0, 0, 4}, {'Z', 0, 0, 0, 6, 'I', 'I'}, {'C', 0, 0, 0, 5, 'x'}} {
		if _, _, err := d.Next(bad); !errors.Is(err, ErrProtocol) {
			t.Errorf("Next(%q) error %v, want ErrProtocol", bad, err)
		}
	}
}

// The loop's path for one transaction, encoding its statements and decoding the replies,
// allocates nothing once the buffers have grown.
func TestTransactionAllocatesNothing(t *testing.T) {
	in := oneTransaction(t)
	var e Encoder
	var d Decoder
	out := make([]byte, 0, 1024)
	args := make([]byte, 0, 64)
	ends := make([]int, 0, 8)
	n := testing.AllocsPerRun(100, func() {
		out, _ = e.Query(out[:0], "BEGIN")
		out, _ = e.Query(out[:0], "SET LOCAL synchronous_commit TO on")
		for i := range 4 {
			args, ends = args[:0], ends[:0]
			for j := range 6 {
				args = strconv.AppendInt(args, int64(i*j+1000), 10)
				ends = append(ends, len(args))
			}
			out, _ = e.Exec(out[:0], "pgceiling_0123", "", false, false, args, ends)
		}
		out, _ = e.Query(out[:0], "COMMIT")
		for b := in; len(b) > 0; {
			m, n, err := d.Next(b)
			if err != nil || n == 0 {
				t.Fatalf("decode: %v", err)
			}
			if cc, ok := m.(*pgproto3.CommandComplete); ok {
				_ = Tag(cc).RowsAffected()
			}
			b = b[n:]
		}
	})
	if n != 0 {
		t.Errorf("%v allocations per transaction, want 0", n)
	}
}

// FuzzDecode feeds arbitrary bytes to the decoder: it must never panic, take more than
// it was given, or stop making progress without saying why.
func FuzzDecode(f *testing.F) {
	f.Add(oneTransaction(f))
	f.Add(backend(f, &pgproto3.ErrorResponse{Severity: "ERROR", Code: "40001", Message: "could not serialize access"},
		&pgproto3.ReadyForQuery{TxStatus: 'E'}))
	f.Add(backend(f, &pgproto3.ParseComplete{}, &pgproto3.RowDescription{Fields: []pgproto3.FieldDescription{{Name: []byte("id"), DataTypeOID: 20}}}, &pgproto3.NoData{}))
	f.Fuzz(func(t *testing.T, in []byte) {
		var d Decoder
		for len(in) > 0 {
			m, n, err := d.Next(in)
			if err != nil {
				return
			}
			if n == 0 {
				if m != nil {
					t.Fatalf("message %T without bytes", m)
				}
				return // incomplete
			}
			if n > len(in) {
				t.Fatalf("took %d bytes of %d", n, len(in))
			}
			if cc, ok := m.(*pgproto3.CommandComplete); ok {
				_ = Tag(cc).RowsAffected()
			}
			in = in[n:]
		}
	})
}

func BenchmarkExec(b *testing.B) {
	var e Encoder
	out := make([]byte, 0, 1024)
	args := []byte("12345678901234567890123456789012345")
	ends := []int{7, 14, 20, 27, 30, 35}
	b.ReportAllocs()
	for b.Loop() {
		out, _ = e.Exec(out[:0], "pgceiling_0123456789abcdef01234567", "", false, false, args, ends)
	}
}

func BenchmarkDecodeTransaction(b *testing.B) {
	in := oneTransaction(b)
	var d Decoder
	b.ReportAllocs()
	b.SetBytes(int64(len(in)))
	for b.Loop() {
		for p := in; len(p) > 0; {
			_, n, _ := d.Next(p)
			p = p[n:]
		}
	}
}

// BenchmarkExecHand is the former hand encoding, for comparison with BenchmarkExec.
func BenchmarkExecHand(b *testing.B) {
	args := [][]byte{[]byte("1234567"), []byte("8901234"), []byte("567890"), []byte("1234567"), []byte("890"), []byte("12345")}
	out := make([]byte, 0, 1024)
	b.ReportAllocs()
	for b.Loop() {
		out = handExec(out[:0], "pgceiling_0123456789abcdef01234567", "", false, false, args)
	}
}
