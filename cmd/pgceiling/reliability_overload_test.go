package main

// Overload without self-harm (issue 6 item 3): far past the server's capacity the driver's
// memory and goroutines stay bounded, Ctrl-C still works, and the result is a clean
// failure with the rejections counted.

import (
	"bytes"
	"context"
	"path/filepath"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/pgceiling/pgceiling/internal/pgtest"
)

// relPeaks samples the process's goroutine count and heap every 20 ms until stopped.
type relPeaks struct {
	stop       chan struct{}
	wg         sync.WaitGroup
	goroutines int
	heap       uint64
}

func samplePeaks() *relPeaks {
	p := &relPeaks{stop: make(chan struct{})}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		var ms runtime.MemStats
		for {
			p.goroutines = max(p.goroutines, runtime.NumGoroutine())
			runtime.ReadMemStats(&ms)
			p.heap = max(p.heap, ms.HeapInuse)
			select {
			case <-p.stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	return p
}

func (p *relPeaks) done() { close(p.stop); p.wg.Wait() }

func TestReliabilityOverload(t *testing.T) {
	dsn := pgtest.NewDatabase(t)
	initTiny(t, dsn)
	env := map[string]string{"PGCEILING_DSN": dsn}
	dir := t.TempDir()
	// Two connections of fsync'd single-row inserts hold a few hundred to a couple of
	// thousand tx/s here: 20,000 tx/s is 10-50x that.
	const rate, conns = "20000", "2"
	runtime.GC()
	base := runtime.NumGoroutine()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	baseHeap := ms.HeapInuse

	path := filepath.Join(dir, "overload.json")
	pk := samplePeaks()
	_, stderr, code := cli(t, env, "run", "--workload", "insert", "--rate", rate, "--conns", conns, "--warmup", "1s",
		"--duration", "3s", "--json", path)
	pk.done()
	if code != 0 {
		t.Fatalf("overload run: exit %d; stderr:\n%s", code, stderr)
	}
	_, p := relReadProbe(t, path)
	if !p.Balanced() || p.Rejected == 0 || p.ErrorRate() < 0.5 || p.Committed == 0 {
		t.Errorf("overload: scheduled %d committed %d failed %v rejected %d: want balanced books, most arrivals rejected, some committed",
			p.Scheduled, p.Committed, p.Failed, p.Rejected)
	}
	// Bounded: the workers, a few helpers and pgx's, never one per arrival
	// (there were ~80,000 arrivals).
	if g := pk.goroutines - base; g > 100 {
		t.Errorf("overload: %d goroutines above the %d before the run; want a fixed set (no goroutine per arrival)", g, base)
	}
	// Queue bound: rate x pool wait = 20,000 timestamps; histograms are fixed size.
	grew := int64(pk.heap) - int64(baseHeap)
	if grew > 150<<20 {
		t.Errorf("overload: the heap grew by %d MB during the probe; want a bounded queue and fixed histograms", grew>>20)
	}
	t.Logf("overload at %s tx/s on %s conns: scheduled %d committed %d rejected %d failed %d; peak goroutines +%d, heap in use +%d MB",
		rate, conns, p.Scheduled, p.Committed, p.Rejected, p.Failed.Total(), pk.goroutines-base, grew>>20)

	// Ctrl-C while overloaded: it stops promptly and keeps the result.
	path = filepath.Join(dir, "overload-int.json")
	args := []string{"run", "--workload", "insert", "--rate", rate, "--conns", conns, "--warmup", "0s", "--duration", "60s", "--json", path}
	var out bytes.Buffer
	var errb lockedBuffer
	e := &Env{Stdout: &out, Stderr: &errb, Getenv: func(k string) string { return env[k] }, Args: append([]string{"pgceiling"}, args...)}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	codec := make(chan int, 1)
	go func() { codec <- Main(ctx, e, args) }()
	// 8,000 rows take the driver about two seconds here (more with the pgx engine): long
	// enough for the queue's front to wait out the 1 s pool wait, so there are rejections
	// to keep.
	relWaitUntil(t, dsn, "the overloaded probe to commit rows", rowsAfter(t, dsn, 8000), 30*time.Second)
	e.signal.Store(int32(syscall.SIGINT))
	cancel()
	begin := time.Now()
	select {
	case code = <-codec:
	case <-time.After(30 * time.Second):
		t.Fatalf("overloaded run ignored Ctrl-C for 30s")
	}
	if took := time.Since(begin); code != 130 || took > relStopBudget {
		t.Errorf("overloaded run, Ctrl-C: exit %d after %v; want 130 within %v; stderr:\n%s", code, took, relStopBudget, errb.String())
	}
	f, p := relReadProbe(t, path)
	if !f.Interrupted || !p.Balanced() || p.Rejected == 0 {
		t.Errorf("overloaded run, Ctrl-C: interrupted %v balanced %v rejected %d", f.Interrupted, p.Balanced(), p.Rejected)
	}
}
