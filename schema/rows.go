package schema

import (
	"encoding/binary"
	"io"
	"math"
	"math/big"
	"math/rand/v2"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/pgceiling/pgceiling/workload"
)

// batchRows is the number of rows generated from one seed. Batches are seeded by the id
// of their first row, so the same spec always produces the same rows, whatever the
// number of workers.
const batchRows = 4096

// txColumns are the prefilled columns of transactions, in COPY order.
var txColumns = []string{"id", "wallet_id", "counterparty_id", "amount", "currency", "kind",
	"status", "reference", "description", "metadata", "created_at", "updated_at"}

// txGen generates the rows of one partition, one at a time, without keeping them.
type txGen struct {
	seed  int64
	keys  *workload.Keys
	p     partition
	i     int64 // rows generated so far
	rng   *rand.Rand
	step  float64 // nanoseconds of created_at per row
	count *atomic.Int64

	// the current row
	id, wallet, counterparty int64
	hasCounterparty          bool
	cents                    int64
	currency, kind, status   string
	ref                      []byte
	desc                     []byte
	meta                     []byte
	at                       time.Time
}

func newTxGen(seed int64, keys *workload.Keys, p partition, count *atomic.Int64) *txGen {
	g := &txGen{seed: seed, keys: keys, p: p, count: count}
	if p.Rows > 0 {
		g.step = float64(p.DataTo.Sub(p.From)) / float64(p.Rows)
	}
	return g
}

var (
	currencies = []string{"EUR", "EUR", "EUR", "USD", "USD", "GBP", "CHF", "PLN"}
	channels   = []string{"mobile", "web", "pos", "api", "atm"}
	devices    = []string{"ios", "android", "chrome", "firefox", "terminal"}
	mccs       = []string{"5411", "5812", "5999", "4111", "5732", "7011", "6011"}
)

// next generates the next row; false when the partition is full.
func (g *txGen) next() bool {
	if g.i >= g.p.Rows {
		return false
	}
	if g.i%batchRows == 0 {
		id := uint64(g.p.FirstID + g.i)
		g.rng = rand.New(rand.NewPCG(uint64(g.seed), id))
		if g.count != nil && g.i > 0 {
			g.count.Add(batchRows)
		}
	}
	r := g.rng
	g.id = g.p.FirstID + g.i
	g.at = g.p.From.Add(time.Duration((float64(g.i) + r.Float64()) * g.step))
	g.i++
	g.wallet = g.keys.Pick(r)
	u := r.IntN(100)
	switch {
	case u < 50:
		g.kind = "payment"
	case u < 75:
		g.kind = "transfer"
	case u < 85:
		g.kind = "topup"
	case u < 95:
		g.kind = "withdrawal"
	default:
		g.kind = "refund"
	}
	g.hasCounterparty = g.kind == "transfer" || g.kind == "refund"
	if g.hasCounterparty {
		g.counterparty = g.keys.Pick(r)
		if g.counterparty == g.wallet {
			g.counterparty = g.counterparty%int64(g.keys.N()) + 1
		}
	}
	// Amounts are log-normal around 30.00, capped well inside numeric(18,2).
	g.cents = int64(math.Exp(r.NormFloat64()*1.3+8)) + 1
	if g.cents > 1_000_000_00 {
		g.cents = 1_000_000_00
	}
	g.currency = currencies[r.IntN(len(currencies))]
	switch s := r.IntN(100); {
	case s < 95:
		g.status = "completed"
	case s < 98:
		g.status = "pending"
	default:
		g.status = "failed"
	}
	g.ref = append(g.ref[:0], "TX-"...)
	g.ref = strconv.AppendUint(g.ref, r.Uint64(), 36)
	merchant := r.IntN(50_000) + 1
	g.desc = append(g.desc[:0], g.kind...)
	g.desc = append(g.desc, " via "...)
	ch := channels[r.IntN(len(channels))]
	g.desc = append(g.desc, ch...)
	g.desc = append(g.desc, ", merchant #"...)
	g.desc = strconv.AppendInt(g.desc, int64(merchant), 10)
	m := g.meta[:0]
	m = append(m, `{"channel": "`...)
	m = append(m, ch...)
	m = append(m, `", "device": "`...)
	m = append(m, devices[r.IntN(len(devices))]...)
	m = append(m, `", "ip": "10.`...)
	m = strconv.AppendInt(m, int64(r.IntN(256)), 10)
	m = append(m, '.')
	m = strconv.AppendInt(m, int64(r.IntN(256)), 10)
	m = append(m, '.')
	m = strconv.AppendInt(m, int64(r.IntN(256)), 10)
	m = append(m, `", "risk_score": `...)
	m = strconv.AppendFloat(m, float64(r.IntN(1000))/1000, 'f', 3, 64)
	m = append(m, `, "merchant": {"id": `...)
	m = strconv.AppendInt(m, int64(merchant), 10)
	m = append(m, `, "mcc": "`...)
	m = append(m, mccs[r.IntN(len(mccs))]...)
	m = append(m, `"}, "tags": ["`...)
	m = append(m, g.currency...)
	m = append(m, `", "`...)
	m = append(m, g.kind...)
	m = append(m, `"]}`...)
	g.meta = m
	return true
}

// finish adds the rows of the last (partial) batch to the counter.
func (g *txGen) finish() {
	if g.count != nil && g.p.Rows > 0 {
		g.count.Add((g.p.Rows-1)%batchRows + 1)
	}
}

// appendText appends the current row in COPY text format.
func (g *txGen) appendText(b []byte) []byte {
	b = strconv.AppendInt(b, g.id, 10)
	b = append(b, '\t')
	b = strconv.AppendInt(b, g.wallet, 10)
	b = append(b, '\t')
	if g.hasCounterparty {
		b = strconv.AppendInt(b, g.counterparty, 10)
	} else {
		b = append(b, `\N`...)
	}
	b = append(b, '\t')
	b = strconv.AppendInt(b, g.cents/100, 10)
	b = append(b, '.')
	c := g.cents % 100
	b = append(b, byte('0'+c/10), byte('0'+c%10), '\t')
	b = append(b, g.currency...)
	b = append(b, '\t')
	b = append(b, g.kind...)
	b = append(b, '\t')
	b = append(b, g.status...)
	b = append(b, '\t')
	b = append(b, g.ref...)
	b = append(b, '\t')
	b = append(b, g.desc...)
	b = append(b, '\t')
	b = append(b, g.meta...) // no tabs, newlines or backslashes by construction
	b = append(b, '\t')
	b = g.at.AppendFormat(b, "2006-01-02 15:04:05.999999Z07:00")
	b = append(b, '\t')
	b = g.at.AppendFormat(b, "2006-01-02 15:04:05.999999Z07:00")
	b = append(b, '\n')
	return b
}

// values returns the current row for pgx.CopyFrom (binary COPY); the slice is reused.
func (g *txGen) values(v []any) []any {
	v = v[:0]
	var cp any
	if g.hasCounterparty {
		cp = g.counterparty
	}
	return append(v, g.id, g.wallet, cp,
		pgtype.Numeric{Int: big.NewInt(g.cents), Exp: -2, Valid: true},
		g.currency, g.kind, g.status, string(g.ref), string(g.desc), string(g.meta), g.at, g.at)
}

// textReader streams rows in COPY text format: an io.Reader that generates rows only
// as the COPY asks for them, so memory stays flat whatever the row count.
type textReader struct {
	next func(b []byte) ([]byte, bool) // appends one row, false when done
	buf  []byte
	off  int
	done bool
}

func (t *textReader) Read(p []byte) (int, error) {
	for t.off >= len(t.buf) {
		if t.done {
			return 0, io.EOF
		}
		t.buf, t.off = t.buf[:0], 0
		for len(t.buf) < 64<<10 {
			var ok bool
			if t.buf, ok = t.next(t.buf); !ok {
				t.done = true
				break
			}
		}
	}
	n := copy(p, t.buf[t.off:])
	t.off += n
	return n, nil
}

// pgEpochMicros is 2000-01-01 00:00 UTC, PostgreSQL's timestamp epoch, in Unix microseconds.
const pgEpochMicros = 946_684_800_000_000

// copyBinaryHeader starts a COPY BINARY stream: signature, flags, no header extension.
var copyBinaryHeader = []byte("PGCOPY\n\377\r\n\000\000\000\000\000\000\000\000\000")

// appendBinary appends the current row as one COPY BINARY tuple.
func (g *txGen) appendBinary(b []byte) []byte {
	b = binary.BigEndian.AppendUint16(b, 12) // fields
	b = binInt8(b, g.id)
	b = binInt8(b, g.wallet)
	if g.hasCounterparty {
		b = binInt8(b, g.counterparty)
	} else {
		b = binary.BigEndian.AppendUint32(b, nullField)
	}
	b = binNumeric2(b, g.cents)
	b = binBytes(b, g.currency)
	b = binBytes(b, g.kind)
	b = binBytes(b, g.status)
	b = binBytes(b, g.ref)
	b = binBytes(b, g.desc)
	b = binary.BigEndian.AppendUint32(b, uint32(len(g.meta)+1))
	b = append(b, 1) // jsonb binary format version
	b = append(b, g.meta...)
	ts := g.at.UnixMicro() - pgEpochMicros
	b = binInt8(b, ts)
	b = binInt8(b, ts)
	return b
}

// nullField is the field length -1 that stands for NULL in a COPY BINARY tuple.
const nullField = ^uint32(0)

// binInt8 appends a length-prefixed int8 (also a timestamptz's microseconds).
func binInt8(b []byte, v int64) []byte {
	b = binary.BigEndian.AppendUint32(b, 8)
	return binary.BigEndian.AppendUint64(b, uint64(v))
}

func binBytes[T string | []byte](b []byte, s T) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(len(s)))
	return append(b, s...)
}

// binNumeric2 appends a length-prefixed non-negative numeric with scale 2, given in
// hundredths, in PostgreSQL's binary form: base-10000 digits, weight, sign, dscale.
// Hand-written because the prefill encodes one per row: pgtype's encoder goes through
// math/big, about 30 times the time with 9 allocations per value where this takes none
// (BenchmarkNumeric); TestBinNumeric2 checks it against pgtype's decoder.
func binNumeric2(b []byte, cents int64) []byte {
	var digits [8]uint16
	n := 0
	ip, frac := cents/100, uint16(cents%100)*100
	var groups [6]uint16
	ng := 0
	for ip > 0 {
		groups[ng] = uint16(ip % 10000)
		ip /= 10000
		ng++
	}
	for i := ng - 1; i >= 0; i-- {
		digits[n] = groups[i]
		n++
	}
	weight := int16(ng - 1)
	if frac != 0 {
		digits[n] = frac
		n++
	}
	// No trailing zero digits (PostgreSQL's canonical form); leading ones cannot occur.
	for n > 0 && digits[n-1] == 0 {
		n--
	}
	if n == 0 {
		weight = 0
	}
	b = binary.BigEndian.AppendUint32(b, uint32(8+2*n))
	b = binary.BigEndian.AppendUint16(b, uint16(n))
	b = binary.BigEndian.AppendUint16(b, uint16(weight))
	b = binary.BigEndian.AppendUint16(b, 0) // positive
	b = binary.BigEndian.AppendUint16(b, 2) // dscale
	for _, d := range digits[:n] {
		b = binary.BigEndian.AppendUint16(b, d)
	}
	return b
}

// binaryReader streams a COPY BINARY stream: header, the rows next appends, trailer.
func binaryReader(next func([]byte) ([]byte, bool)) *textReader {
	started, ended := false, false
	return &textReader{next: func(b []byte) ([]byte, bool) {
		if !started {
			started = true
			return append(b, copyBinaryHeader...), true
		}
		if ended {
			return b, false
		}
		if b2, ok := next(b); ok {
			return b2, true
		}
		ended = true
		return binary.BigEndian.AppendUint16(b, 0xffff), true // trailer: field count -1
	}}
}
