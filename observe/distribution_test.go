package observe

import (
	"context"
	"testing"

	"github.com/pgceiling/pgceiling/result"
)

// TestDiscloseNotDistributed: on plain PostgreSQL (no citus extension, no pg_dist_*
// catalogs) Disclose says "not distributed" instead of failing, with and without a
// pgceiling schema.
func TestDiscloseNotDistributed(t *testing.T) {
	c := connect(t, pgtestDB(t), "test")
	for _, withSchema := range []bool{false, true} {
		if withSchema {
			makeSchema(t, c)
		}
		d, err := Disclose(context.Background(), c, LocalInfo{})
		if err != nil {
			t.Fatalf("Disclose (schema %v): %v", withSchema, err)
		}
		if d.Distribution == nil || d.Distribution.Citus != "" || len(d.Distribution.Tables) != 0 || d.Distribution.Distributed() {
			t.Errorf("Disclose (schema %v): distribution %+v, want present and not distributed", withSchema, d.Distribution)
		}
	}
}

func TestCitusType(t *testing.T) {
	for _, tc := range []struct{ method, repmodel, want string }{
		{"", "", result.DistLocal}, {"h", "s", result.DistHash}, {"n", "t", result.DistReference},
		{"n", "s", "citus local"}, {"a", "c", "method a"},
	} {
		if got := citusType(tc.method, tc.repmodel); got != tc.want {
			t.Errorf("citusType(%q, %q) = %q, want %q", tc.method, tc.repmodel, got, tc.want)
		}
	}
}
