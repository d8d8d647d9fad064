package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/pgceiling/pgceiling/result"
)

// citusDistribution is a distributed schema as observe discloses it on a Citus cluster
// of a coordinator and two workers.
func citusDistribution() *result.Distribution {
	return &result.Distribution{Citus: "12.1-1", Workers: 2, Nodes: 2, PropagateSetCommands: "local", Tables: []result.DistributedTable{
		{Name: "audit_log", Type: result.DistHash, Column: "wallet_id", ColocationID: 7, Shards: 32, ShardNodes: 2, HeapBytes: 3 << 20, IndexBytes: 1 << 20},
		{Name: "meta", Type: result.DistLocal},
		{Name: "transactions", Type: result.DistHash, Column: "wallet_id", ColocationID: 7, Shards: 32, ShardNodes: 2, HeapBytes: 30 << 20, IndexBytes: 20 << 20},
		{Name: "wallets", Type: result.DistHash, Column: "account_id", ColocationID: 7, Shards: 32, ShardNodes: 2},
	}}
}

// TestDisclosureDistribution: inspect's Distribution section says "not distributed" on a
// server without Citus and on a Citus database whose schema is plain, and lists the
// tables' column, colocation group and shards when distributed; a disclosure from before
// (nil) has no section.
func TestDisclosureDistribution(t *testing.T) {
	for _, tc := range []struct {
		name string
		d    *result.Distribution
		want []string // lines, in order
	}{
		{"plain PostgreSQL", &result.Distribution{}, []string{"Distribution", "  not distributed (no citus extension in this database)"}},
		{"citus, plain schema", &result.Distribution{Citus: "12.1-1", Workers: 2, Nodes: 2, Tables: []result.DistributedTable{{Name: "transactions", Type: result.DistLocal}}},
			[]string{"Distribution", "  not distributed (citus 12.1-1 installed, 2 workers; see `pgceiling init --distribute citus`)"}},
		{"distributed", citusDistribution(), []string{"Distribution",
			"  citus 12.1-1: 2 nodes may hold shards (2 workers); sizes are over every shard",
			"  table         type         column      colocation  shards  nodes  heap      indexes",
			"  audit_log     distributed  wallet_id   7           32      2      3.0 MiB   1.0 MiB",
			"  meta          local        -           -           -       -      -         -",
			"  transactions  distributed  wallet_id   7           32      2      30.0 MiB  20.0 MiB",
			"  wallets       distributed  account_id  7           32      2      0 B       0 B"}},
		{"distributed, SET not propagated", func() *result.Distribution {
			d := citusDistribution()
			d.PropagateSetCommands = "none"
			return d
		}(), []string{"  citus 12.1-1: 2 nodes may hold shards (2 workers); sizes are over every shard",
			"  citus.propagate_set_commands = none: the workers commit with their own synchronous_commit (a",
			"    synchronous_commit=off sweep needs it local)",
			"  table         type         column      colocation  shards  nodes  heap      indexes"}},
	} {
		var b bytes.Buffer
		d := result.Disclosure{Version: "16", Distribution: tc.d}
		if err := WriteDisclosure(&b, &d, settingOrder); err != nil {
			t.Fatalf("%s: WriteDisclosure: %v", tc.name, err)
		}
		want := strings.Join(tc.want, "\n") + "\n"
		if !strings.Contains(b.String(), want) {
			t.Errorf("%s: WriteDisclosure(Distribution %+v) =\n%s\nwant it to contain:\n%s", tc.name, *tc.d, b.String(), want)
		}
	}
	var b bytes.Buffer
	if err := WriteDisclosure(&b, &result.Disclosure{Version: "16"}, settingOrder); err != nil || strings.Contains(b.String(), "Distribution") {
		t.Errorf("WriteDisclosure without a Distribution = %v:\n%s\nwant no Distribution section", err, b.String())
	}
}

// TestDisclosureLineDistributed: a report's server line names a distributed schema, and
// says nothing of distribution otherwise (files of plain servers read as before).
func TestDisclosureLineDistributed(t *testing.T) {
	d := &result.Disclosure{Version: "16", Distribution: citusDistribution()}
	if got, want := disclosureLine(d), "distributed: citus 12.1-1 on 2 nodes (transactions by wallet_id, 32 shards)"; !strings.Contains(got, want) {
		t.Errorf("disclosureLine(distributed) = %q, want it to contain %q", got, want)
	}
	for _, dist := range []*result.Distribution{nil, {}, {Citus: "12.1-1", Tables: []result.DistributedTable{{Name: "transactions", Type: result.DistLocal}}}} {
		if got := disclosureLine(&result.Disclosure{Version: "16", Distribution: dist}); strings.Contains(got, "distributed") {
			t.Errorf("disclosureLine(Distribution %+v) = %q, want nothing about distribution", dist, got)
		}
	}
}
