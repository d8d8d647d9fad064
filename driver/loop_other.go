//go:build !linux

package driver

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pgceiling/pgceiling/workload"

	"github.com/pgceiling/pgceiling/result"
)

// loop is the event-loop engine, Linux only (see loop_linux.go).
type loop struct{}

func loopAvailable(*pgxpool.Pool, workload.Workload) string { return "it runs on Linux only" }

func socketFD(*pgxpool.Conn) (int, bool) { return 0, false }

func newLoop(context.Context, *probeEnv) (*loop, error) {
	return nil, errors.New("it runs on Linux only")
}

func (*loop) name() result.Engine       { return EngineLoop }
func (*loop) oneCore() bool             { return true }
func (*loop) run(*scheduler, func())    {}
func (*loop) offer(arrival) (int, bool) { return 0, false }
func (*loop) waiting() int              { return 0 }
func (*loop) cut()                      {}
