package workload

import (
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestSkewReportsProducedShares(t *testing.T) {
	w, err := New("oltp", Params{Wallets: 10000, Zipf: 1.0})
	if err != nil {
		t.Fatal(err)
	}
	c := w.(*oltp).wallets
	const workers, each = 8, 50000
	var wg sync.WaitGroup
	for i := range workers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(i), 3))
			for range each {
				c.pick(rng)
			}
		})
	}
	wg.Wait()
	s := w.(SkewReporter).Skew()
	if s.Picks != workers*each || s.Keys != 10000 || s.Exponent != 1.0 {
		t.Fatalf("Skew() = %+v, want picks %d, keys 10000, exponent 1", s, workers*each)
	}
	if math.Abs(s.HottestShare-0.1022) > 0.003 || math.Abs(s.Top1PctShare-0.530) > 0.005 {
		t.Errorf("Skew() hottest %.4f top1%% %.4f, want about 0.1022 and 0.530", s.HottestShare, s.Top1PctShare)
	}
	w.(SkewResetter).ResetSkew()
	if s := w.(SkewReporter).Skew(); s.Picks != 0 || s.HottestShare != 0 {
		t.Errorf("after ResetSkew, Skew() = %+v, want no picks", s)
	}
}

func TestSkewUniform(t *testing.T) {
	c, err := newCountedKeys(1000, 0)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200000 {
		c.pick(rng)
	}
	s := c.skew()
	// 200 expected picks per key: the hottest is a little above 1/1000 by chance, the
	// top 1 % (10 keys) a little above 1 %.
	if s.HottestShare < 0.001 || s.HottestShare > 0.0016 || s.Top1PctShare < 0.01 || s.Top1PctShare > 0.014 {
		t.Errorf("uniform skew = %+v, want hottest about 0.001, top 1%% about 0.01", s)
	}
}

func TestPickDoesNotAllocate(t *testing.T) {
	c, _ := newCountedKeys(10000, 1.0)
	rng := rand.New(rand.NewPCG(1, 2))
	if n := testing.AllocsPerRun(1000, func() { c.pick(rng) }); n != 0 {
		t.Errorf("pick allocates %v times per call, want 0", n)
	}
}

func TestNewAndNames(t *testing.T) {
	if got := strings.Join(Names(), ","); got != "oltp,transfer,insert,copy" {
		t.Errorf("Names() = %s, want oltp,transfer,insert,copy", got)
	}
	for _, name := range Names() {
		w, err := New(name, DefaultParams())
		if err != nil {
			t.Fatalf("New(%q, DefaultParams()): %v", name, err)
		}
		if w.Name() != name {
			t.Errorf("New(%q).Name() = %q", name, w.Name())
		}
	}
	_, err := New("oltpp", DefaultParams())
	if err == nil || !strings.Contains(err.Error(), `"oltpp"`) || !strings.Contains(err.Error(), "oltp, transfer, insert") {
		t.Errorf(`New("oltpp") error = %v, want one naming "oltpp" and listing oltp, transfer, insert`, err)
	}
	for _, tc := range []struct {
		name string
		p    Params
	}{
		{"oltp", Params{Wallets: 0, Zipf: 1}},
		{"transfer", Params{Wallets: 1, Zipf: 1}},
		{"oltp", Params{Wallets: 10, Zipf: -1}},
		{"oltp", Params{Wallets: 10, FraudWindow: -1}},
		{"oltp", Params{Wallets: 10, FraudWindow: MaxFraudWindow + time.Second}},
		{"oltp", Params{Wallets: 10, FraudLimit: -1}},
		{"insert", Params{PayloadBytes: -1}},
	} {
		if _, err := New(tc.name, tc.p); err == nil {
			t.Errorf("New(%q, %+v) = nil error, want an error", tc.name, tc.p)
		}
	}
	_, err = New("oltp", Params{Wallets: 10, FraudWindow: 25 * time.Hour})
	if err == nil || !strings.Contains(err.Error(), "--fraud-window") {
		t.Errorf("New(oltp, 25h window) error = %v, want one naming --fraud-window", err)
	}
	if w, err := New("insert", Params{}); err != nil || w.Table() != "events" {
		t.Errorf(`New("insert", Params{}) = %v, %v; want the events workload`, w, err)
	}
}

func TestFormatSeconds(t *testing.T) {
	for d, want := range map[string]string{"24h0m0s": "86400", "1.5s": "1.5", "10m0s": "600", "1h0m0s": "3600"} {
		p := DefaultParams()
		w, _ := New("oltp", Params{Wallets: 1, FraudWindow: mustDuration(t, d), SyncCommit: p.SyncCommit})
		if got := w.(*oltp).window; got != want {
			t.Errorf("fraud window %s renders as %v, want %s", d, got, want)
		}
	}
}

func TestTransferPicksDistinctWallets(t *testing.T) {
	for _, tc := range []struct {
		wallets int
		zipf    float64
	}{{2, 0}, {2, 1}, {10, 1}, {1000, 1}, {10, 100}} {
		w, err := New("transfer", Params{Wallets: tc.wallets, Zipf: tc.zipf})
		if err != nil {
			t.Fatal(err)
		}
		tr := w.(*transfer)
		rng := rand.New(rand.NewPCG(9, 9))
		for range 10000 {
			from, to := tr.pickPair(rng)
			if from == to || from < 1 || to < 1 || from > int64(tc.wallets) || to > int64(tc.wallets) {
				t.Fatalf("wallets %d zipf %v: pickPair = %d, %d; want two distinct wallets in 1..%d", tc.wallets, tc.zipf, from, to, tc.wallets)
			}
		}
		if s := tr.Skew(); s.Picks != 20000 {
			t.Errorf("wallets %d zipf %v: Skew().Picks = %d, want 20000", tc.wallets, tc.zipf, s.Picks)
		}
	}
}
