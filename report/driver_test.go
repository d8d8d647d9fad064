package report

import (
	"testing"

	"github.com/pgceiling/pgceiling/result"
)

// TestDriverText: the probe page's driver line names the loops, their busy shares, the
// loops --threads auto added and when, and the client CPU per transaction (per row for
// copy); the pgx engine, which has no loops, gets the engine, cores and CPU alone.
func TestDriverText(t *testing.T) {
	for _, c := range []struct {
		p    result.Probe
		want string
	}{
		{result.Probe{Workload: "oltp", Engine: "loop", DriverThreads: 2, Loops: 2, LoopBusy: []float64{0.812, 0.47},
			LoopsAddedS: []float64{0, 3}, ClientCPUSeconds: 6.94, ClientCPUPerTxMs: 0.1314},
			"engine loop on 2 core(s), 2 loop(s) busy 0.81, 0.47 (loop 2 added at 3 s), client CPU 6.9 s (0.131 ms/tx)"},
		{result.Probe{Workload: "copy", Engine: "loop", DriverThreads: 1, Loops: 1, LoopBusy: []float64{0.2},
			LoopsAddedS: []float64{0}, ClientCPUSeconds: 1, ClientCPUPerTxMs: 0.002},
			"engine loop on 1 core(s), 1 loop(s) busy 0.20, client CPU 1.0 s (0.002 ms/row)"},
		{result.Probe{Workload: "transfer", Engine: "pgx", DriverThreads: 1, ClientCPUSeconds: 10},
			"engine pgx on 1 core(s), client CPU 10.0 s"},
	} {
		if got := driverText(&c.p); got != c.want {
			t.Errorf("driverText:\n got %q\nwant %q", got, c.want)
		}
	}
}
