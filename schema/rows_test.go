package schema

import (
	"fmt"
	"io"
	"math/big"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/pgceiling/pgceiling/workload"
)

// BenchmarkRowsText measures the client's cost of generating transactions rows in COPY
// text format (the prefill's client-side CPU per row).
func BenchmarkRowsText(b *testing.B) {
	keys, _ := workload.NewKeys(10_000, 1)
	p := partition{From: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), DataTo: time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC), FirstID: 1, Rows: int64(b.N)}
	var n atomic.Int64
	g := newTxGen(1, keys, p, &n)
	r := &textReader{next: func(buf []byte) ([]byte, bool) {
		if !g.next() {
			return buf, false
		}
		return g.appendText(buf), true
	}}
	b.ReportAllocs()
	b.ResetTimer()
	written, _ := io.Copy(io.Discard, r)
	b.SetBytes(written / int64(max(b.N, 1)))
}

func TestBinNumeric2(t *testing.T) {
	m := pgtype.NewMap()
	for _, cents := range []int64{0, 1, 10, 99, 100, 101, 12345, 1_000_000_00, 9_999_99, 10_000_00, 99_999_999_99, 123_456_789_012_34} {
		b := binNumeric2(nil, cents)
		var n pgtype.Numeric
		if err := m.Scan(pgtype.NumericOID, pgtype.BinaryFormatCode, b[4:], &n); err != nil {
			t.Fatalf("binNumeric2(%d): decode: %v", cents, err)
		}
		v, err := n.Value()
		want := fmt.Sprintf("%d.%02d", cents/100, cents%100)
		got, ok := new(big.Rat).SetString(fmt.Sprint(v))
		if exp, _ := new(big.Rat).SetString(want); err != nil || !ok || got.Cmp(exp) != 0 {
			t.Errorf("binNumeric2(%d) decodes to %v (%v), want %s", cents, v, err, want)
		}
	}
}

// BenchmarkNumeric sets binNumeric2 beside pgtype's binary numeric encoder, the reason
// the prefill encodes its amounts by hand.
func BenchmarkNumeric(b *testing.B) {
	var buf []byte
	b.Run("binNumeric2", func(b *testing.B) {
		b.ReportAllocs()
		for i := range b.N {
			buf = binNumeric2(buf[:0], int64(i%100_000_000))
		}
	})
	b.Run("pgtype", func(b *testing.B) {
		b.ReportAllocs()
		plan := pgtype.NewMap().PlanEncode(pgtype.NumericOID, pgtype.BinaryFormatCode, pgtype.Numeric{})
		n := pgtype.Numeric{Int: new(big.Int), Exp: -2, Valid: true}
		for i := range b.N {
			n.Int.SetInt64(int64(i % 100_000_000))
			var err error
			if buf, err = plan.Encode(n, buf[:0]); err != nil {
				b.Fatal(err)
			}
		}
	})
}
