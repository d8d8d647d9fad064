// Package schematest holds test helpers for code that must touch only schema pgceiling.
// It is for tests only: unlike the rest of pgceiling, it reads other schemas.
package schematest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// ForeignChecksum hashes every schema of the connected database except pgceiling and
// the system schemas: the definitions of its tables (columns, types, defaults,
// constraints, indexes), views, functions, sequences (definition and position), and the
// full contents of its tables. Equal checksums before and after a command mean the
// command changed nothing outside pgceiling.
func ForeignChecksum(ctx context.Context, conn *pgx.Conn) (string, error) {
	h := sha256.New()
	defs := []string{
		// schemas and their owners
		`SELECT n.nspname || ' ' || pg_get_userbyid(n.nspowner) FROM pg_namespace n
		 WHERE ` + foreign("n.nspname") + ` ORDER BY 1`,
		// relations with their kind and columns
		`SELECT n.nspname || '.' || c.relname || ' ' || c.relkind::text || ' ' || coalesce(
			(SELECT string_agg(a.attname || ' ' || format_type(a.atttypid, a.atttypmod) || ' ' || a.attnotnull ||
				coalesce(' default ' || pg_get_expr(d.adbin, d.adrelid), ''), ', ' ORDER BY a.attnum)
			 FROM pg_attribute a LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
			 WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped), '')
		 FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		 WHERE ` + foreign("n.nspname") + ` ORDER BY 1`,
		`SELECT n.nspname || '.' || c.relname || ' ' || pg_get_indexdef(i.indexrelid)
		 FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_namespace n ON n.oid = c.relnamespace
		 WHERE ` + foreign("n.nspname") + ` ORDER BY 1`,
		`SELECT n.nspname || '.' || co.conname || ' ' || pg_get_constraintdef(co.oid)
		 FROM pg_constraint co JOIN pg_namespace n ON n.oid = co.connamespace
		 WHERE ` + foreign("n.nspname") + ` ORDER BY 1`,
		`SELECT n.nspname || '.' || c.relname || ' ' || pg_get_viewdef(c.oid)
		 FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		 WHERE c.relkind IN ('v', 'm') AND ` + foreign("n.nspname") + ` ORDER BY 1`,
		`SELECT n.nspname || '.' || p.proname || ' ' || CASE WHEN p.prokind IN ('f', 'p') THEN pg_get_functiondef(p.oid) ELSE p.prosrc END
		 FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
		 WHERE ` + foreign("n.nspname") + ` ORDER BY 1`,
		`SELECT schemaname || '.' || sequencename || ' ' || coalesce(last_value::text, 'null') || ' ' || increment_by || ' ' || data_type
		 FROM pg_sequences WHERE ` + foreign("schemaname") + ` ORDER BY 1`,
		`SELECT n.nspname || '.' || t.typname || ' ' || t.typtype::text FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace
		 WHERE ` + foreign("n.nspname") + ` ORDER BY 1`,
	}
	for _, q := range defs {
		rows, err := conn.Query(ctx, q)
		if err != nil {
			return "", fmt.Errorf("foreign checksum: %w", err)
		}
		lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return "", fmt.Errorf("foreign checksum: %w", err)
		}
		for _, l := range lines {
			fmt.Fprintln(h, l)
		}
	}
	rows, err := conn.Query(ctx, `SELECT n.nspname, c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE c.relkind = 'r' AND `+foreign("n.nspname")+` ORDER BY 1, 2`)
	if err != nil {
		return "", fmt.Errorf("foreign checksum: list tables: %w", err)
	}
	tables, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (pgx.Identifier, error) {
		var s, t string
		err := r.Scan(&s, &t)
		return pgx.Identifier{s, t}, err
	})
	if err != nil {
		return "", fmt.Errorf("foreign checksum: list tables: %w", err)
	}
	for _, t := range tables {
		var sum string
		err := conn.QueryRow(ctx, `SELECT count(*)::text || ' ' || coalesce(md5(string_agg(x::text, E'\n' ORDER BY x::text)), '')
			FROM ONLY `+t.Sanitize()+` x`).Scan(&sum)
		if err != nil {
			return "", fmt.Errorf("foreign checksum: contents of %s: %w", t.Sanitize(), err)
		}
		fmt.Fprintln(h, t.Sanitize(), sum)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func foreign(col string) string {
	return col + ` NOT IN ('pgceiling', 'pg_catalog', 'information_schema') AND ` + col + ` NOT LIKE 'pg\_toast%' AND ` + col + ` NOT LIKE 'pg\_temp%'`
}
