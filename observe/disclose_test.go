package observe

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgceiling/pgceiling/localpg"
	"github.com/pgceiling/pgceiling/result"
)

func TestDiscloseFilled(t *testing.T) {
	dsn := pgtestDB(t)
	c := connect(t, dsn, "test")
	makeSchema(t, c)
	ctx := context.Background()
	d, err := Disclose(ctx, c, LocalInfo{})
	if err != nil {
		t.Fatalf("Disclose: %v", err)
	}
	if d.Version == "" {
		t.Error("Disclose: empty version")
	}
	for _, name := range SettingNames {
		if d.Settings[name] == "" {
			t.Errorf("Disclose: setting %s missing (settings %v)", name, d.Settings)
		}
	}
	// pgtest starts the server with shared_buffers=128MB and fsync=on.
	if d.Settings["shared_buffers"] != "128MB" || d.SharedBuffersBytes != 128<<20 {
		t.Errorf("Disclose: shared_buffers %q = %d bytes, want 128MB = %d", d.Settings["shared_buffers"], d.SharedBuffersBytes, 128<<20)
	}
	if d.Settings["fsync"] != "on" {
		t.Errorf("Disclose: fsync %q, want on", d.Settings["fsync"])
	}
	want := map[string]struct {
		indexes int
		rows    int64
	}{"audit_log": {2, 0}, "events": {1, 0}, "meta": {1, 0}, "transactions": {5, 2000}, "wallets": {1, 500}}
	if len(d.Tables) != len(want) {
		t.Fatalf("Disclose: tables %+v, want %d tables", d.Tables, len(want))
	}
	var sum int64
	for _, tb := range d.Tables {
		w, ok := want[tb.Name]
		if !ok {
			t.Errorf("Disclose: unexpected table %q", tb.Name)
			continue
		}
		if tb.Indexes != w.indexes || tb.Rows != w.rows {
			t.Errorf("Disclose: table %s has %d indexes, %d rows; want %d, %d", tb.Name, tb.Indexes, tb.Rows, w.indexes, w.rows)
		}
		if tb.IndexBytes <= 0 {
			t.Errorf("Disclose: table %s index bytes %d, want > 0", tb.Name, tb.IndexBytes)
		}
		if tb.Rows > 0 && tb.HeapBytes <= 0 {
			t.Errorf("Disclose: table %s heap bytes %d with %d rows", tb.Name, tb.HeapBytes, tb.Rows)
		}
		sum += tb.HeapBytes + tb.IndexBytes
	}
	if d.DataBytes != sum || d.DataToSharedBuffers <= 0 || d.DataToSharedBuffers != float64(sum)/float64(d.SharedBuffersBytes) {
		t.Errorf("Disclose: data %d bytes, ratio %g; want %d and %g", d.DataBytes, d.DataToSharedBuffers, sum, float64(sum)/float64(d.SharedBuffersBytes))
	}
	if d.ClientCores <= 0 || d.ClientMemBytes <= 0 {
		t.Errorf("Disclose: client cores %d, memory %d", d.ClientCores, d.ClientMemBytes)
	}
	// The test server runs on this machine and was given by DSN only: detection must
	// find it through /proc.
	if !d.ServerLocal || d.ServerCores != d.ClientCores || d.ServerMemBytes != d.ClientMemBytes {
		t.Errorf("Disclose: server local %v, cores %d, memory %d; want a detected local server", d.ServerLocal, d.ServerCores, d.ServerMemBytes)
	}
	if w := Unsafe(d, true); len(w) != 0 {
		t.Errorf("Unsafe(durable server) = %q, want none", w)
	}
}

func TestDiscloseWithoutSchema(t *testing.T) {
	c := connect(t, pgtestDB(t), "test")
	d, err := Disclose(context.Background(), c, LocalInfo{PostmasterPID: 1, Embedded: true})
	if err != nil {
		t.Fatalf("Disclose: %v", err)
	}
	if len(d.Tables) != 0 || d.DataBytes != 0 || !d.Embedded || !d.ServerLocal {
		t.Errorf("Disclose without schema: tables %v, data %d, embedded %v, local %v", d.Tables, d.DataBytes, d.Embedded, d.ServerLocal)
	}
}

// TestUnsafeServer starts a server with fsync=off, synchronous_commit=off and
// full_page_writes=off: each must be warned about, and the refusal lifted only by the flag.
func TestUnsafeServer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s, err := localpg.Start(ctx, localpg.Options{SharedBuffers: "32MB", MaxConnections: 20,
		Settings: map[string]string{"fsync": "off", "synchronous_commit": "off", "full_page_writes": "off"}})
	if err != nil {
		t.Fatalf("start a server with fsync=off: %v", err)
	}
	defer s.Stop()
	c, err := pgx.Connect(ctx, s.DSN("postgres"))
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer c.Close(ctx)
	d, err := Disclose(ctx, c, LocalInfo{PostmasterPID: s.PID(), Embedded: true})
	if err != nil {
		t.Fatalf("Disclose: %v", err)
	}
	w := Unsafe(d, true)
	joined := strings.Join(w, "\n")
	for _, s := range []string{"fsync=off", "synchronous_commit=off", "full_page_writes=off"} {
		if !strings.Contains(joined, s) {
			t.Errorf("Unsafe(d, true) = %q, want a warning about %s", w, s)
		}
	}
	if w2 := Unsafe(d, false); len(w2) != 2 || strings.Contains(strings.Join(w2, " "), "synchronous_commit") {
		t.Errorf("Unsafe(d, false) = %q, want fsync and full_page_writes only", w2)
	}
	err = RefuseUnsafe(w, false)
	var unsafe *UnsafeError
	if !errors.As(err, &unsafe) || !strings.Contains(err.Error(), "--allow-unsafe-server") || !strings.Contains(err.Error(), "fsync=off") {
		t.Errorf("RefuseUnsafe(warnings, false) = %v, want an UnsafeError naming fsync=off and --allow-unsafe-server", err)
	}
	if err := RefuseUnsafe(w, true); err != nil {
		t.Errorf("RefuseUnsafe(warnings, true) = %v, want nil", err)
	}
	if err := RefuseUnsafe(nil, false); err != nil {
		t.Errorf("RefuseUnsafe(nil, false) = %v, want nil", err)
	}
}

func TestUnsafeRules(t *testing.T) {
	for _, tc := range []struct {
		settings map[string]string
		sweepsOn bool
		want     int
	}{
		{map[string]string{"fsync": "on", "synchronous_commit": "on", "full_page_writes": "on"}, true, 0},
		{map[string]string{"fsync": "on", "synchronous_commit": "off", "full_page_writes": "on"}, false, 0},
		{map[string]string{"fsync": "on", "synchronous_commit": "off", "full_page_writes": "on"}, true, 1},
		{map[string]string{"fsync": "on", "synchronous_commit": "local", "full_page_writes": "on"}, true, 0},
		{map[string]string{"fsync": "off", "synchronous_commit": "on", "full_page_writes": "on"}, false, 1},
	} {
		if got := Unsafe(&result.Disclosure{Settings: tc.settings}, tc.sweepsOn); len(got) != tc.want {
			t.Errorf("Unsafe(%v, %v) = %q, want %d warnings", tc.settings, tc.sweepsOn, got, tc.want)
		}
	}
	if got := Unsafe(nil, true); got != nil {
		t.Errorf("Unsafe(nil) = %q", got)
	}
}
