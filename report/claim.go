package report

import (
	"bufio"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/pgceiling/pgceiling/internal/thousands"
	"github.com/pgceiling/pgceiling/result"
)

// WriteClaim writes the verdict page of a claim's results file (f.Claim), the page
// `pgceiling claim` prints and `pgceiling report` prints again, its lines wrapped to
// width columns (0: DefaultWidth): the claim and its rule, then per shape held or not,
// the achieved rate, errors and p99, why it failed, the bottleneck, the margin to the
// short search's knee and the settings unlike the usual claim's, then the sentence that
// sets the bare insert shape beside the realistic ones. Rates are tx/s, rows/s for copy.
func WriteClaim(w io.Writer, f *result.File, width int) error {
	bw := bufio.NewWriter(w)
	writeClaimPage(bw, f, TextOptions{Width: width}.width())
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("claim page: %w", err)
	}
	return nil
}

func writeClaimPage(w io.Writer, f *result.File, width int) {
	cl := f.Claim
	if cl == nil {
		return
	}
	verdict := "HOLDS for every shape"
	if !cl.Held {
		verdict = "does NOT hold"
	}
	slo := ""
	if cl.P99SLOMs > 0 {
		slo = fmt.Sprintf(", p99 <= %s ms", thousands.Format(cl.P99SLOMs, 1))
	}
	u, note := claimUnit(cl)
	claimLine(w, 0, fmt.Sprintf("pgceiling claim: %s%s for %v: %s (rule: errors <= %s%s, steady)",
		claimRate(cl.RateTxS), u, time.Duration(cl.ForS*float64(time.Second)), verdict, share(cl.MaxErrorRate), slo), width)
	if note != "" {
		claimLine(w, 2, note, width)
	}
	if f.Server != nil {
		claimLine(w, 2, "server "+f.Server.Version, width)
	}
	for _, sh := range cl.Shapes {
		fmt.Fprintln(w)
		su := unit(sh.Workload)
		v := "held"
		if !sh.Held {
			v = "NOT held (" + string(sh.Verdict) + ")"
		}
		claimLine(w, 0, fmt.Sprintf("%s (synchronous_commit=%s): %s: achieved %s%s, errors %s, p99 %s ms",
			sh.Workload, sh.SyncCommit, v, claimRate(sh.AchievedTx), su, share(sh.ErrorRate), thousands.Format(sh.P99Ms, 1)), width)
		if !sh.Held && sh.Reason != "" {
			claimLine(w, 2, "why: "+sh.Reason, width)
		}
		if sh.Bottleneck != "" {
			claimLine(w, 2, "bottleneck: "+sh.Bottleneck, width)
		}
		if m := claimMargin(cl, sh); m != "" {
			claimLine(w, 2, "margin: "+m, width)
		}
		if d := claimDiffers(sh); d != "" {
			claimLine(w, 2, "unlike the usual claim: "+d, width)
		}
	}
	fmt.Fprintln(w)
	claimLine(w, 0, "In short: "+cl.Sentence+".", width)
}

// claimMargin is the shape's margin to its short search's knee, "" without --find-knee.
func claimMargin(cl *result.Claim, sh result.ClaimShape) string {
	switch {
	case sh.KneeTxS > 0:
		m := fmt.Sprintf("knee %s; the claimed rate is %s× the knee",
			KneeText(result.Sweep{Workload: sh.Workload, Knee: sh.KneeTxS, Interval: sh.Interval}), thousands.Format(cl.RateTxS/sh.KneeTxS, 2))
		if iv := sh.Interval; iv != nil && iv.Contains(cl.RateTxS) {
			m += ", inside its interval: another run may give the other verdict"
		}
		return m
	case sh.KneeSweep != nil:
		return "the short search found no knee (" + sh.KneeSweep.Stop + ")"
	}
	return ""
}

// claimDiffers lists the settings behind the shape's figure that differ from the usual
// claim's small print, "; "-separated.
func claimDiffers(sh result.ClaimShape) string {
	var diff []string
	for _, sp := range sh.SmallPrint {
		if sp.Differs {
			diff = append(diff, fmt.Sprintf("%s %s (claims: %s)", sp.Setting, sp.Here, sp.Claims))
		}
	}
	return strings.Join(diff, "; ")
}

// claimUnit is the unit of the claimed rate after a space: the shapes' common one (" tx/s",
// " rows/s" for copy alone), else "/s" with a note saying what each shape counts.
func claimUnit(cl *result.Claim) (string, string) {
	u := ""
	for _, sh := range cl.Shapes {
		switch su := result.RateUnit(sh.Workload); {
		case u == "":
			u = su
		case su != u:
			return "/s", "the rate is rows/s for copy (its arrivals are rows) and tx/s for the other shapes"
		}
	}
	if u == "" {
		u = "tx/s"
	}
	return " " + u, ""
}

// claimTable is the claim's verdicts as a table, for the report's Markdown and HTML (the
// text report prints the verdict page instead): one row per shape, the sentence under it.
func claimTable(f *result.File) table {
	cl := f.Claim
	verdict := "HOLDS for every shape"
	if !cl.Held {
		verdict = "does NOT hold"
	}
	u, note := claimUnit(cl)
	rule := "errors <= " + share(cl.MaxErrorRate)
	if cl.P99SLOMs > 0 {
		rule += ", p99 <= " + thousands.Format(cl.P99SLOMs, 1) + " ms"
	}
	t := table{Title: fmt.Sprintf("Claim: %s%s for %v: %s (rule: %s, steady)", claimRate(cl.RateTxS), u,
		time.Duration(cl.ForS*float64(time.Second)), verdict, rule),
		Header: []string{"shape", "verdict", "achieved", "errors", "p99 ms", "bottleneck", "margin", "unlike the usual claim"},
		Narrow: []narrowing{keepWhole, wrapCell, keepWhole, keepWhole, keepWhole, wrapCell, wrapCell, wrapCell}}
	for _, sh := range cl.Shapes {
		v := "held"
		if !sh.Held {
			v = "NOT held (" + string(sh.Verdict) + ")"
			if sh.Reason != "" {
				v += ": " + sh.Reason
			}
		}
		t.Rows = append(t.Rows, []string{fmt.Sprintf("%s sync=%s", sh.Workload, sh.SyncCommit), v,
			claimRate(sh.AchievedTx) + unit(sh.Workload), share(sh.ErrorRate), thousands.Format(sh.P99Ms, 1),
			orDash(sh.Bottleneck), orDash(claimMargin(cl, sh)), orDash(claimDiffers(sh))})
	}
	if note != "" {
		t.Notes = append(t.Notes, note)
	}
	t.Notes = append(t.Notes, "In short: "+cl.Sentence+".")
	return t
}

// claimModel adds a claim's tables: its verdicts, each shape's probe at the claimed rate
// (as a run's), and each short search's probes (--find-knee).
func claimModel(m *model, f *result.File) {
	m.Tables = append(m.Tables, claimTable(f))
	for i := range f.Sweeps {
		for j := range f.Sweeps[i].Probes {
			m.Tables = append(m.Tables, runTables(&f.Sweeps[i].Probes[j])...)
		}
	}
	for _, sh := range f.Claim.Shapes {
		if sh.KneeSweep != nil {
			t := probesTable(sh.KneeSweep)
			t.Title = "Short search for the knee: " + sweepName(sh.KneeSweep)
			m.Tables = append(m.Tables, t)
		}
	}
}

// claimLine prints s indented by indent, wrapped to width, continuation lines 4 further in.
func claimLine(w io.Writer, indent int, s string, width int) {
	pad := strings.Repeat(" ", indent)
	for _, l := range wrapWords(s, max(width-1-indent, 20), 4) {
		fmt.Fprintln(w, pad+l)
	}
}

// share formats a fraction as a percentage with at most two decimals: "0.1 %", "10.52 %".
func share(v float64) string {
	s := strings.TrimRight(strings.TrimRight(thousands.Format(100*v, 2), "0"), ".")
	return s + " %"
}

// claimRate formats a rate as the claim's page does: whole numbers with thousands
// separators, one decimal for a fraction below 100.
func claimRate(v float64) string {
	if v < 100 && v != float64(int64(v)) {
		return thousands.Format(v, 1)
	}
	return thousands.Format(v, 0)
}
