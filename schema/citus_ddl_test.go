package schema

import (
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestCitusTablesDDL: the statements that distribute the schema, as text: the primary key
// changes come before the tables are distributed (Citus refuses a key without the
// distribution column), wallets gets a colocation group of its own, and
// wallets_baseline, transactions and audit_log join it by wallet.
func TestCitusTablesDDL(t *testing.T) {
	got := citusTables()
	want := []string{
		"ALTER TABLE pgceiling.audit_log DROP CONSTRAINT audit_log_pkey",
		"ALTER TABLE pgceiling.audit_log ADD CONSTRAINT audit_log_pkey PRIMARY KEY (id, wallet_id)",
		"CREATE TABLE pgceiling.wallets_baseline (LIKE pgceiling.wallets)",
		"ALTER TABLE pgceiling.wallets_baseline ADD PRIMARY KEY (account_id)",
		"SELECT create_distributed_table('pgceiling.wallets', 'account_id', colocate_with => 'none')",
		"SELECT create_distributed_table('pgceiling.wallets_baseline', 'account_id', colocate_with => 'pgceiling.wallets')",
		"SELECT create_distributed_table('pgceiling.transactions', 'wallet_id', colocate_with => 'pgceiling.wallets')",
		"SELECT create_distributed_table('pgceiling.audit_log', 'wallet_id', colocate_with => 'pgceiling.wallets')",
		"SELECT create_distributed_table('pgceiling.events', 'id', colocate_with => 'none')",
	}
	if !slices.Equal(got, want) {
		t.Errorf("citusTables() =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if got, want := citusPrelude(true), []string{"SET LOCAL citus.multi_shard_modify_mode TO 'sequential'",
		"SET LOCAL citus.enable_schema_based_sharding TO off"}; !slices.Equal(got, want) {
		t.Errorf("citusPrelude(true) = %q, want %q", got, want)
	}
	if got := citusPrelude(false); len(got) != 1 || strings.Contains(got[0], "schema_based") {
		t.Errorf("citusPrelude(false) = %q: want only the sequential mode (Citus before 12 has no schema-based sharding)", got)
	}
}

// distributionColumns is each distributed table's distribution column, as citusTables
// distributes them.
var distributionColumns = map[string]string{
	"wallets": "account_id", "wallets_baseline": "account_id", "transactions": "wallet_id",
	"audit_log": "wallet_id", "events": "id",
}

// TestCitusDistributesEveryTableOnce: every table create_distributed_table names is
// distributed once, by the column distributionColumns says, and every statement names
// only schema pgceiling's objects.
func TestCitusDistributesEveryTableOnce(t *testing.T) {
	call := regexp.MustCompile(`^SELECT create_distributed_table\('pgceiling\.(\w+)', '(\w+)', colocate_with => '([\w.]+)'\)$`)
	seen := map[string]bool{}
	for _, s := range append(citusTables(), citusBaseline) {
		if m := call.FindStringSubmatch(s); m != nil {
			if seen[m[1]] || distributionColumns[m[1]] != m[2] {
				t.Errorf("%s: distributes %s by %s (seen before: %v), want once by %q", s, m[1], m[2], seen[m[1]], distributionColumns[m[1]])
			}
			seen[m[1]] = true
			if m[3] != "none" && m[3] != "pgceiling.wallets" {
				t.Errorf("%s: colocated with %s, want none or pgceiling.wallets", s, m[3])
			}
		} else if strings.Contains(s, "create_distributed_table") {
			t.Errorf("%s: not in the form the test reads", s)
		}
		for _, q := range regexp.MustCompile(`\b(\w+)\.\w+`).FindAllStringSubmatch(s, -1) {
			if q[1] != Name {
				t.Errorf("%s names schema %s", s, q[1])
			}
		}
	}
	if len(seen) != len(distributionColumns) {
		t.Errorf("distributed %v, want %v", seen, distributionColumns)
	}
}

// TestCitusIndexesDDL: indexes.sql for Citus widens only the primary key of
// transactions, by wallet_id; a changed indexes.sql without that key is an error.
func TestCitusIndexesDDL(t *testing.T) {
	plain, err := statements("sql/indexes.sql")
	if err != nil {
		t.Fatal(err)
	}
	got, err := citusIndexes(plain)
	if err != nil {
		t.Fatalf("citusIndexes(indexes.sql): %v", err)
	}
	if len(got) != len(plain) {
		t.Fatalf("citusIndexes: %d statements, want %d", len(got), len(plain))
	}
	changed := 0
	for i := range got {
		if got[i] != plain[i] {
			changed++
			if plain[i] != "ALTER TABLE pgceiling.transactions ADD CONSTRAINT transactions_pkey PRIMARY KEY (id, created_at)" ||
				got[i] != "ALTER TABLE pgceiling.transactions ADD CONSTRAINT transactions_pkey PRIMARY KEY (id, created_at, wallet_id)" {
				t.Errorf("citusIndexes changed %q into %q", plain[i], got[i])
			}
		}
	}
	if changed != 1 {
		t.Errorf("citusIndexes changed %d statements, want 1 (the primary key of transactions)", changed)
	}
	if _, err := citusIndexes(plain[1:]); err == nil {
		t.Errorf("citusIndexes(indexes.sql without the primary key) = nil error, want one")
	}
}

// TestCitusUniqueConstraintsIncludeDistributionColumn reads tables.sql and indexes.sql
// for every primary key and unique constraint or index: each one on a distributed table
// must include its distribution column once citusTables and citusIndexes have run. A new
// key in either file fails here until the Citus DDL handles it.
func TestCitusUniqueConstraintsIncludeDistributionColumn(t *testing.T) {
	tables, err := sqlFiles.ReadFile("sql/tables.sql")
	if err != nil {
		t.Fatal(err)
	}
	// Inline keys of tables.sql: "CREATE TABLE pgceiling.t (" ... "col type ... PRIMARY KEY".
	inline := map[string]string{} // table -> key column
	var table string
	for _, line := range strings.Split(string(tables), "\n") {
		line = strings.TrimSpace(line)
		if m := regexp.MustCompile(`^CREATE TABLE pgceiling\.(\w+)`).FindStringSubmatch(line); m != nil {
			table = m[1]
		}
		if strings.Contains(line, "UNIQUE") || strings.Contains(line, "EXCLUDE") {
			t.Errorf("tables.sql has a unique constraint the Citus DDL does not handle: %q", line)
		}
		if strings.Contains(line, "PRIMARY KEY") {
			inline[table] = strings.Fields(line)[0]
		}
	}
	want := map[string]string{"meta": "key", "wallets": "account_id", "audit_log": "id", "events": "id"}
	if len(inline) != len(want) {
		t.Errorf("tables.sql's primary keys = %v, want %v (review the Citus DDL for a new one)", inline, want)
	}
	for tb, col := range want {
		if inline[tb] != col {
			t.Errorf("tables.sql: primary key of %s is %q, want %q (review the Citus DDL)", tb, inline[tb], col)
		}
	}
	// Keys after the Citus DDL: audit_log's is replaced; the rest are as inline.
	keys := map[string][]string{"wallets": {"account_id"}, "events": {"id"}, "wallets_baseline": {"account_id"}}
	pk := regexp.MustCompile(`^ALTER TABLE pgceiling\.(\w+) ADD (?:CONSTRAINT \w+ )?PRIMARY KEY \(([^)]*)\)$`)
	stmts, err := statements("sql/indexes.sql")
	if err != nil {
		t.Fatal(err)
	}
	citusIdx, err := citusIndexes(stmts)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range append(citusTables(), citusIdx...) {
		if strings.Contains(s, "UNIQUE") {
			t.Errorf("%s: a unique index the Citus DDL does not handle", s)
		}
		if m := pk.FindStringSubmatch(s); m != nil {
			keys[m[1]] = strings.Split(strings.ReplaceAll(m[2], " ", ""), ",")
		}
	}
	for tb, col := range distributionColumns {
		if !slices.Contains(keys[tb], col) {
			t.Errorf("primary key of %s under --distribute citus = %v: lacks the distribution column %s", tb, keys[tb], col)
		}
	}
}

func TestVersionAtLeast(t *testing.T) {
	for _, tc := range []struct {
		v    string
		want bool
	}{
		{"11.2-1", true}, {"11.1-1", false}, {"12.1-1", true}, {"13.0", true}, {"10.2-4", false}, {"11.2", true}, {"x", false}, {"", false},
	} {
		if got := versionAtLeast(tc.v, [2]int{11, 2}); got != tc.want {
			t.Errorf("versionAtLeast(%q, 11.2) = %v, want %v", tc.v, got, tc.want)
		}
	}
}

func TestSpecDistribute(t *testing.T) {
	s := Spec{Wallets: 10, Rows: 10, Months: 1, Zipf: 1, Seed: 1, Distribute: DistributeCitus}
	if err := s.validate(); err != nil {
		t.Errorf("validate(%s) = %v, want nil", s, err)
	}
	if got := s.String(); !strings.HasSuffix(got, " --distribute citus") {
		t.Errorf("String() = %q, want it to end with --distribute citus", got)
	}
	s.Distribute = DistributeNone
	if got := s.String(); strings.Contains(got, "distribute") {
		t.Errorf("String() of a plain spec = %q, want no --distribute", got)
	}
	s.Distribute = "cockroach"
	if err := s.validate(); err == nil || !strings.Contains(err.Error(), "distribute") {
		t.Errorf("validate(distribute cockroach) = %v, want an error naming distribute", err)
	}
}
