package schema_test

import (
	"context"
	"errors"
	"testing"

	"github.com/pgceiling/pgceiling/schema"
)

// TestInitCitusWithoutExtension: on plain PostgreSQL Init with Distribute citus returns
// ErrNoCitus before changing anything, also when a marked schema exists and Force is
// given (nothing is dropped); Distributed and the baseline say "not distributed" without
// an error, though there are no pg_dist_* catalogs.
func TestInitCitusWithoutExtension(t *testing.T) {
	cfg, conn := setup(t)
	ctx := context.Background()
	spec := small()
	spec.Distribute = schema.DistributeCitus
	if _, err := schema.Init(ctx, cfg, spec, schema.InitOptions{Workers: 1}); !errors.Is(err, schema.ErrNoCitus) {
		t.Fatalf("Init(%s) on plain PostgreSQL = %v, want ErrNoCitus", spec, err)
	}
	if st, err := schema.Status(ctx, conn); err != nil || st.Exists {
		t.Fatalf("after the refused Init: %+v, %v; want no schema", st, err)
	}
	plain := small()
	plain.Rows = 2000
	mustInit(t, cfg, plain, schema.InitOptions{})
	if _, err := schema.Init(ctx, cfg, spec, schema.InitOptions{Workers: 1, Force: true}); !errors.Is(err, schema.ErrNoCitus) {
		t.Fatalf("Init(%s, Force) over a plain schema = %v, want ErrNoCitus", spec, err)
	}
	got, err := schema.Check(ctx, conn)
	if err != nil || got != plain {
		t.Errorf("after the refused Init: Check = %s, %v; want the plain schema %s untouched", got, err, plain)
	}
	if dist, err := schema.Distributed(ctx, conn); err != nil || dist {
		t.Errorf("Distributed on plain PostgreSQL = %v, %v; want false, nil", dist, err)
	}
	b, err := schema.TakeBaseline(ctx, conn)
	if err != nil || b.Distributed {
		t.Errorf("TakeBaseline on plain PostgreSQL: distributed %v, %v; want false, nil", b.Distributed, err)
	}
}
