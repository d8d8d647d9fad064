//go:build !linux

package driver

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pgceiling/pgceiling/workload"

	"github.com/pgceiling/pgceiling/result"
)

// loopEngine is the event-loop engine, Linux only (see loop_linux.go).
type loopEngine struct{}

func loopAvailable(*pgxpool.Pool, workload.Workload) string { return "it runs on Linux only" }

func socketFD(*pgxpool.Conn) (int, bool) { return 0, false }

func newLoopEngine(context.Context, *probeEnv) (*loopEngine, error) {
	return nil, errors.New("it runs on Linux only")
}

func (*loopEngine) name() result.Engine       { return EngineLoop }
func (*loopEngine) cores() int                { return 1 }
func (*loopEngine) run(*scheduler, func())    {}
func (*loopEngine) offer(arrival) (int, bool) { return 0, false }
func (*loopEngine) waiting() int              { return 0 }
func (*loopEngine) cut()                      {}
func (*loopEngine) busy() []float64           { return nil }
