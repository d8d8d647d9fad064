package workload

import (
	"context"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// roundTripScript draws an integer and a double, has the server return them with a
// text, a numeric, a smallint and a real in one row stored by \gset r_, and sends each
// stored value back into a table typed for it, beside the values drawn.
const roundTripScript = `\set i random(1, 1000000)
\set f :i / 3.0
BEGIN;
SELECT :i::bigint AS a, :f::float8 AS b, 'w' || :i AS c, :i::numeric / 8 AS d, (:i % 30000)::int2 AS e, 0.5::float4 AS g \gset r_
INSERT INTO rt (a, b, c, d, e, g, i, f) VALUES (:r_a, :r_b, :r_c, :r_d, :r_e, :r_g, :i, :f);
COMMIT;
`

// TestCustomGsetAndArgsRoundTrip: through pgx (cache_statement), \gset stores every
// column of the row, integer, double and text (numeric keeps its digits), and each
// variable goes back to the server as its parameter's type asks: integers and doubles
// in binary (so the double is exact: f = i / 3.0 on the server too), the rest as text.
func TestCustomGsetAndArgsRoundTrip(t *testing.T) {
	dsn := setupSchema(t, 10)
	conn := connect(t, dsn, pgx.QueryExecModeCacheStatement)
	ctx := context.Background()
	if _, err := conn.Exec(ctx, `CREATE TEMP TABLE rt (a bigint, b float8, c text, d numeric, e smallint, g real, i bigint, f float8)`); err != nil {
		t.Fatal(err)
	}
	c, err := NewCustom([]CustomFile{{Name: "rt.sql", Source: roundTripScript, Weight: 1}}, Params{SyncCommit: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Describe(ctx, conn); err != nil {
		t.Fatalf("Describe: %v", err)
	}
	want := []argKind{argInt, argFloat, argText, argText, argInt, argFloat, argInt, argFloat}
	for j, a := range c.plans[0][1].args {
		if a.kind != want[j] {
			t.Errorf("INSERT parameter $%d: kind %d, want %d (0 integer, 1 double, 2 text)", j+1, a.kind, want[j])
		}
	}
	rng := rand.New(rand.NewPCG(5, 6))
	const n = 40
	for range n {
		if err := c.Do(ctx, conn, rng); err != nil {
			t.Fatalf("Do: %v", err)
		}
	}
	var rows, exact int
	err = conn.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE a = i AND b = f AND c = 'w' || i AND d = i::numeric / 8
		AND d::text = (i::numeric / 8)::text AND e = i % 30000 AND g = 0.5 AND f = i::float8 / 3.0::float8) FROM rt`).Scan(&rows, &exact)
	if err != nil {
		t.Fatal(err)
	}
	if rows != n || exact != n {
		t.Errorf("%d rows, %d of them with every value back as drawn; want %d and %d", rows, exact, n, n)
	}
}

// TestCustomGsetErrors: a \gset statement that returns no row, or a NULL, fails the
// transaction at the statement's file:line; a variable no statement sets is refused at
// Describe, at the line that uses it.
func TestCustomGsetErrors(t *testing.T) {
	dsn := setupSchema(t, 10)
	conn := connect(t, dsn, pgx.QueryExecModeCacheStatement)
	ctx := context.Background()
	for _, tc := range []struct {
		src, describe, run string
	}{
		{"BEGIN;\nSELECT 1 AS x WHERE false \\gset\nSELECT :x;\nCOMMIT;\n", "", "g.sql:2: \\gset: expected one row, got 0"},
		{"BEGIN;\nSELECT NULL::int AS x \\gset\nSELECT :x;\nCOMMIT;\n", "", `g.sql:2: \gset: column "x" is NULL`},
		{"BEGIN;\nSELECT 1 AS x, 2 AS y \\gset p_\nSELECT :p_x, :y;\nCOMMIT;\n", "g.sql:3: variable :y is never set: no \\set of it and no \\gset column of that name (the \\gset at line 2 sets :p_x, :p_y)", ""},
	} {
		c, err := NewCustom([]CustomFile{{Name: "g.sql", Source: tc.src, Weight: 1}}, Params{SyncCommit: true})
		if err != nil {
			t.Fatal(err)
		}
		err = c.Describe(ctx, conn)
		if tc.describe != "" {
			if err == nil || err.Error() != tc.describe {
				t.Errorf("Describe(%q) = %v, want %q", tc.src, err, tc.describe)
			}
			continue
		}
		if err != nil {
			t.Fatalf("Describe(%q): %v", tc.src, err)
		}
		if err := c.Do(ctx, conn, rand.New(rand.NewPCG(1, 1))); err == nil || !strings.Contains(err.Error(), tc.run) {
			t.Errorf("Do(%q) = %v, want an error containing %q", tc.src, err, tc.run)
		}
		if conn.PgConn().TxStatus() != 'I' {
			t.Fatalf("after the failed transaction the connection is not idle (%c)", conn.PgConn().TxStatus())
		}
	}
}
