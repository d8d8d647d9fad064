package schema

import (
	"context"
	"fmt"
)

var countSQL = map[string]string{
	"transactions":     `SELECT count(*) FROM pgceiling.transactions`,
	"audit_log":        `SELECT count(*) FROM pgceiling.audit_log`,
	"wallets":          `SELECT count(*) FROM pgceiling.wallets`,
	"events":           `SELECT count(*) FROM pgceiling.events`,
	"wallets_baseline": `SELECT count(*) FROM pgceiling.wallets_baseline`,
}

// RowCount counts a pgceiling table's rows exactly (count(*)), for the tests' checks of
// the rows a probe or a restore left. table is unqualified, one of Tables.
func RowCount(ctx context.Context, q Querier, table string) (int64, error) {
	sql, ok := countSQL[table]
	if !ok {
		return 0, fmt.Errorf("row count: %q is not a pgceiling table", table)
	}
	var n int64
	if err := q.QueryRow(ctx, sql).Scan(&n); err != nil {
		return 0, fmt.Errorf("count pgceiling.%s: %w", table, err)
	}
	return n, nil
}
