// Package pgtest gives a package's tests a real PostgreSQL: Main starts one throwaway
// server (localpg) per package test run, and NewDatabase hands each test a fresh
// database on it. A test that needs the server fails with a clear message when it cannot
// get one; it never skips.
package pgtest

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgceiling/pgceiling/localpg"
)

var (
	server   *localpg.Server
	startErr error
	seq      atomic.Int64
)

// Main starts the server, runs the tests and stops the server. Use it from TestMain:
//
//	func TestMain(m *testing.M) { os.Exit(pgtest.Main(m, localpg.Options{})) }
func Main(m *testing.M, opt localpg.Options) int {
	if opt.SharedBuffers == "" {
		opt.SharedBuffers = "128MB"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	server, startErr = localpg.Start(ctx, opt)
	cancel()
	if startErr != nil {
		fmt.Fprintf(os.Stderr, "pgtest: cannot start the test PostgreSQL server: %v\n", startErr)
	}
	code := m.Run()
	if server != nil {
		if err := server.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "pgtest: stop server: %v\n", err)
		}
	}
	return code
}

// Server returns the package's server, failing the test if it could not be started.
func Server(t testing.TB) *localpg.Server {
	t.Helper()
	if server == nil {
		if startErr == nil {
			startErr = fmt.Errorf("pgtest.Main was not called from TestMain")
		}
		t.Fatalf("test needs PostgreSQL, but the server could not be started: %v", startErr)
	}
	return server
}

// NewDatabase creates a fresh database for the test and returns its DSN. The database is
// dropped when the test ends.
func NewDatabase(t testing.TB) string {
	t.Helper()
	s := Server(t)
	name := fmt.Sprintf("t_%s_%d", sanitize(t.Name()), seq.Add(1))
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, s.DSN("postgres"))
	if err != nil {
		t.Fatalf("connect to test server: %v", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		t.Fatalf("create test database %s: %v", name, err)
	}
	t.Cleanup(func() {
		c, err := pgx.Connect(ctx, s.DSN("postgres"))
		if err != nil {
			return // the test may have stopped the server on purpose
		}
		defer c.Close(ctx)
		_, _ = c.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)")
	})
	return s.DSN(name)
}

func sanitize(s string) string {
	s = strings.ToLower(s)
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s) && len(b) < 40; i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= '0' && c <= '9' {
			b = append(b, c)
		} else {
			b = append(b, '_')
		}
	}
	return string(b)
}
