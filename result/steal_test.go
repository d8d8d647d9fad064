package result

import "testing"

func TestBreakdown(t *testing.T) {
	series := func(bad map[int]int64) []Second {
		var out []Second
		for t := 0; t < 3; t++ { // warm-up: its errors never count
			s := Second{T: t, Phase: PhaseWarmup, Offered: 1000}
			s.Failed[PoolTimeout] = 500
			out = append(out, s)
		}
		for m := 0; m < 30; m++ {
			s := Second{T: 3 + m, Phase: PhaseMeasure, Offered: 1000}
			s.Failed[Serialization] = bad[m]
			out = append(out, s)
		}
		return out
	}
	for _, tc := range []struct {
		name     string
		bad      map[int]int64
		cut      bool
		measured float64
		want     int
		ok       bool
	}{
		{"a lone error (0.1 %), then a collapse", map[int]int64{2: 1, 9: 40, 10: 600}, false, 30, 9, true},
		{"errors from the first second", map[int]int64{0: 5}, false, 30, 0, true},
		{"cut short by the trend after 27.3 s, no error", nil, true, 27.3, 27, true},
		{"cut short after exactly 27 s", nil, true, 27, 26, true},
		{"cut short by the budget: its first bad second", map[int]int64{20: 300}, true, 21, 20, true},
		{"full length, a lone error only", map[int]int64{4: 1}, false, 30, 0, false},
	} {
		p := &Probe{Series: series(tc.bad), CutShort: tc.cut, MeasuredS: tc.measured}
		got, ok := p.Breakdown(0.001)
		if got != tc.want || ok != tc.ok {
			t.Errorf("%s: second %d, %v; want %d, %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
}

func TestStealBefore(t *testing.T) {
	o := &Observation{HostStealSeries: []float64{0.3, 0.3, 0, 0, 0.1, 0.1, 0.1}}
	for _, tc := range []struct {
		at, lead, n int
		share       float64
	}{
		{6, 3, 3, 0.1},     // the last three seconds
		{1, 15, 2, 0.3},    // fewer at the window's start
		{10, 3, 0, 0},      // past the series' end: nothing known
		{6, 7, 7, 0.9 / 7}, // all of it
		{8, 3, 1, 0.1},     // only second 6 is known of 6-8
	} {
		share, n := o.StealBefore(tc.at, tc.lead)
		if n != tc.n || share < tc.share-1e-9 || share > tc.share+1e-9 {
			t.Errorf("StealBefore(at %d, lead %d) = %.4f over %d s, want %.4f over %d", tc.at, tc.lead, share, n, tc.share, tc.n)
		}
	}
}

// TestStealAtBreakdown: the steal over the lead up to the breakdown, none for a probe that
// did not break down or has no steal series, or none for a nil observation.
func TestStealAtBreakdown(t *testing.T) {
	p := &Probe{}
	for m := 0; m < 30; m++ {
		s := Second{T: 2 + m, Phase: PhaseMeasure, Offered: 1000}
		if m == 20 {
			s.Failed[PoolTimeout] = 300
		}
		p.Series = append(p.Series, s)
	}
	steal := make([]float64, 30)
	for i := 10; i <= 20; i++ {
		steal[i] = 0.15 // 11 of the 15 s up to second 20
	}
	p.Observation = &Observation{HostStealSeries: steal}
	if share, at, n := p.StealAtBreakdown(0.001); at != 20 || n != StealLeadS || share < 0.11-1e-9 || share > 0.11+1e-9 {
		t.Errorf("StealAtBreakdown = %.4f at second %d over %d s; want 0.11 at 20 over %d", share, at, n, StealLeadS)
	}
	if _, _, n := p.StealAtBreakdown(0.5); n != 0 {
		t.Errorf("with a 50 %% error rule the probe did not break down, yet %d seconds were averaged", n)
	}
	p.Observation = nil
	if _, _, n := p.StealAtBreakdown(0.001); n != 0 {
		t.Errorf("without an observation, %d seconds were averaged", n)
	}
	p.Observation = &Observation{}
	if _, _, n := p.StealAtBreakdown(0.001); n != 0 {
		t.Errorf("without a steal series, %d seconds were averaged", n)
	}
}

// TestStolen: the whole probe's steal at StealLimit decides first; below it, a breakdown
// after StealOnsetLimit over the lead does; neither, or no observation, is not stolen.
func TestStolen(t *testing.T) {
	p := &Probe{}
	for m := 0; m < 30; m++ {
		s := Second{T: m, Phase: PhaseMeasure, Offered: 1000}
		if m == 25 {
			s.Failed[PoolTimeout] = 300
		}
		p.Series = append(p.Series, s)
	}
	steal := make([]float64, 30)
	for i := 11; i <= 25; i++ {
		steal[i] = 0.06 // 6 % over the 15 s up to the breakdown
	}
	p.Observation = &Observation{HostStealSeries: steal, HostStealShare: 0.03}
	s, ok := Stolen(p.Observation, p, 0.001)
	if !ok || !s.AtBreakdown || s.At != 25 || s.N != StealLeadS || s.Share < 0.06-1e-9 || s.Share > 0.06+1e-9 {
		t.Errorf("a breakdown after 6 %% steal: Stolen = %+v, %v; want 6 %% at breakdown 25 over %d s", s, ok, StealLeadS)
	}
	if _, ok := Stolen(p.Observation, nil, 0.001); ok {
		t.Error("without the probe the breakdown is unknown, yet Stolen said so")
	}
	p.Observation.HostStealShare = StealLimit
	if s, ok := Stolen(p.Observation, p, 0.001); !ok || s.AtBreakdown || s.Share != StealLimit {
		t.Errorf("a whole probe at StealLimit: Stolen = %+v, %v; want the whole probe's share", s, ok)
	}
	p.Observation.HostStealShare = 0.03
	for i := range steal {
		steal[i] = 0.04
	}
	if s, ok := Stolen(p.Observation, p, 0.001); ok {
		t.Errorf("4 %% steal before the breakdown: Stolen = %+v, want not stolen", s)
	}
	if _, ok := Stolen(nil, p, 0.001); ok {
		t.Error("a nil observation was stolen")
	}
}
