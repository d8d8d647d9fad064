package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/pgceiling/pgceiling/result"
)

// readClaim reads a claim's results file and checks its shape.
func readClaim(t *testing.T, path string, shapes int) *result.File {
	t.Helper()
	f, err := result.Read(path)
	if err != nil {
		t.Fatalf("read the claim's JSON: %v", err)
	}
	if f.Command != "claim" || f.Claim == nil || len(f.Claim.Shapes) != shapes || len(f.Sweeps) != shapes || f.Server == nil {
		t.Fatalf("results file: command %q, claim %+v, %d sweeps: want %d shapes, each with its probe", f.Command, f.Claim, len(f.Sweeps), shapes)
	}
	return f
}

// TestClaimHolds: a low rate holds for every shape (exit 0); the page and the file say
// so, with each probe judged by the search's rule and the small print from the
// disclosure.
func TestClaimHolds(t *testing.T) {
	dsn := runDB(t)
	path := filepath.Join(t.TempDir(), "claim.json")
	stdout, stderr, code := cli(t, map[string]string{"PGCEILING_DSN": dsn}, "claim", "--rate", "20", "--for", "2s",
		"--warmup", "500ms", "--conns", "5", "--workload", "insert,oltp,transfer", "--json", path)
	if code != 0 {
		t.Fatalf("pgceiling claim --rate 20: code %d, stderr %q\n%s", code, stderr, stdout)
	}
	for _, want := range []string{"20 tx/s for 2s: HOLDS for every shape", "insert (synchronous_commit=on): held",
		"oltp (synchronous_commit=on): held", "unlike the usual claim: fsync on (claims: off)", "indexes on transactions 5",
		"synchronous_commit on (per session)", "synchronous_commit on (per transaction)", "batch 1 row per statement",
		"In short: the server holds 20 single-row inserts/s; it holds 20 oltp tx/s too"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("claim page lacks %q:\n%s", want, stdout)
		}
	}
	f := readClaim(t, path, 3)
	if !f.Claim.Held || f.Claim.RateTxS != 20 || f.Claim.ForS != 2 {
		t.Errorf("claim section %+v: want held, 20 tx/s for 2 s", f.Claim)
	}
	for i, sh := range f.Claim.Shapes {
		p := f.Sweeps[i].Probes[0]
		if !sh.Held || sh.Verdict != result.Pass || p.Verdict != result.Pass || p.TargetRate != 20 || p.Committed == 0 ||
			sh.Batch != 1 || len(sh.SmallPrint) != 5 || sh.Table == "" || sh.Indexes < 1 {
			t.Errorf("shape %d: %+v, probe verdict %s at %v, %d committed", i, sh, p.Verdict, p.TargetRate, p.Committed)
		}
	}
}

// TestClaimDoesNotHold: an absurd rate does not hold (exit 3, one line on stderr), and
// the page and the results file are still written.
func TestClaimDoesNotHold(t *testing.T) {
	dsn := runDB(t)
	path := filepath.Join(t.TempDir(), "claim.json")
	stdout, stderr, code := cli(t, map[string]string{"PGCEILING_DSN": dsn}, "claim", "--rate", "50000", "--for", "2s",
		"--warmup", "0s", "--conns", "5", "--workload", "insert", "--json", path, "--quiet")
	if code != 3 {
		t.Fatalf("pgceiling claim --rate 50000: code %d, want 3; stderr %q\n%s", code, stderr, stdout)
	}
	if !strings.Contains(stderr, "did not hold 50,000 tx/s for 2s with insert") || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
		t.Errorf("stderr %q: want one line saying the claim did not hold", stderr)
	}
	if !strings.Contains(stdout, "does NOT hold") || !strings.Contains(stdout, "insert (synchronous_commit=on): NOT held") ||
		!strings.Contains(stdout, "the server does not hold 50,000 single-row inserts/s") {
		t.Errorf("claim page:\n%s", stdout)
	}
	f := readClaim(t, path, 1)
	if f.Claim.Held || f.Claim.Shapes[0].Held || f.Claim.Shapes[0].Verdict == result.Pass {
		t.Errorf("claim section %+v: want not held", f.Claim)
	}
}

func TestClaimBadInput(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"claim", "--for", "10m"}, "--rate is required"},
		{[]string{"claim", "--rate", "100000"}, "--for is required"},
		{[]string{"claim", "--rate", "100000", "--for", "10m", "--workload", "insret"}, `did you mean "insert"`},
		{[]string{"claim", "--rate", "100000", "--for", "10m", "--duration", "1m"}, "unknown flag: --duration"},
		{[]string{"claim", "--rate", "100000", "--for", "10m", "--knee-duration", "0s"}, "--knee-duration must be"},
	} {
		_, stderr, code := cli(t, nil, tc.args...)
		if code != 2 || !strings.Contains(stderr, tc.want) || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
			t.Errorf("pgceiling %q: code %d, stderr %q; want 2 and one line with %q", tc.args, code, stderr, tc.want)
		}
	}
}

// TestClaimFindKnee: --find-knee adds a short search per shape; its knee (with the
// sweep behind it) is the margin on the page and in the file.
func TestClaimFindKnee(t *testing.T) {
	dsn := runDB(t)
	path := filepath.Join(t.TempDir(), "claim.json")
	stdout, stderr, code := cli(t, map[string]string{"PGCEILING_DSN": dsn}, "claim", "--rate", "20", "--for", "1s",
		"--warmup", "200ms", "--conns", "5", "--workload", "insert", "--find-knee", "--knee-duration", "1s", "--json", path, "--quiet")
	if code != 0 {
		t.Fatalf("pgceiling claim --find-knee: code %d, stderr %q\n%s", code, stderr, stdout)
	}
	f := readClaim(t, path, 1)
	sh := f.Claim.Shapes[0]
	if sh.KneeSweep == nil || sh.KneeTxS <= 0 || sh.KneeTxS != sh.KneeSweep.Knee || len(sh.KneeSweep.Probes) < 2 {
		t.Fatalf("shape %+v: want a short search with a knee", sh)
	}
	if !strings.Contains(stdout, "margin: knee ") || !strings.Contains(stdout, "its insert knee is ") {
		t.Errorf("claim page lacks the margin:\n%s", stdout)
	}
}

// TestClaimBatches: the small print discloses each shape's batch: insert's rows per
// statement (--batch) and copy's COPY batches (--copy-batch, --copy-wait, and the mean its
// probe made); copy's rates are rows/s. `pgceiling report` renders the claim's file
// again as the same verdict page, never as a search whose knees none passed.
func TestClaimBatches(t *testing.T) {
	dsn := runDB(t)
	path := filepath.Join(t.TempDir(), "claim.json")
	stdout, stderr, code := cli(t, map[string]string{"PGCEILING_DSN": dsn}, "claim", "--rate", "400", "--for", "2s",
		"--warmup", "500ms", "--conns", "4", "--workload", "insert,copy", "--batch", "10", "--copy-batch", "500",
		"--copy-wait", "20ms", "--json", path, "--quiet")
	if code != 0 {
		t.Fatalf("pgceiling claim --workload insert,copy: code %d, stderr %q\n%s", code, stderr, stdout)
	}
	f := readClaim(t, path, 2)
	ins, cp := f.Claim.Shapes[0], f.Claim.Shapes[1]
	batch := func(sh result.ClaimShape) result.SmallPrint {
		for _, sp := range sh.SmallPrint {
			if sp.Setting == "batch" {
				return sp
			}
		}
		t.Fatalf("shape %s: no batch in the small print %+v", sh.Workload, sh.SmallPrint)
		return result.SmallPrint{}
	}
	if b := batch(ins); ins.Batch != 10 || b.Here != "10 rows per statement" || !b.Differs {
		t.Errorf("insert --batch 10: batch %d, small print %+v; want 10 rows per statement, unlike the claims'", ins.Batch, b)
	}
	b := batch(cp)
	if cp.Batch != 500 || !strings.HasPrefix(b.Here, "COPY of up to 500 rows, at most 20 ms of wait") ||
		!strings.Contains(b.Here, "rows per COPY on average") || !b.Differs {
		// 400 rows/s over 20 ms waits: about 8 rows a batch, far from the claims' hundreds.
		t.Errorf("copy --copy-batch 500 --copy-wait 20ms: batch %d, small print %+v", cp.Batch, b)
	}
	for _, want := range []string{"pgceiling claim: 400/s for 2s", "rows/s for copy", "insert (synchronous_commit=on): held: achieved",
		"copy (synchronous_commit=on): held: achieved", " rows/s, errors", "batch 10 rows per statement",
		"batch COPY of up to 500 rows", "the server holds 400 inserts/s of 10 rows each", "it holds 400 rows/s by COPY too"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("claim page lacks %q:\n%s", want, stdout)
		}
	}

	again, stderr, code := cli(t, nil, "report", path)
	if code != 0 {
		t.Fatalf("pgceiling report CLAIM: code %d, stderr %q", code, stderr)
	}
	if !strings.Contains("\n"+again, "\npgceiling claim\n") || strings.Contains(again, "none passed") || !strings.Contains(again, stdout) {
		t.Errorf("pgceiling report of a claim's file: want the title, the same verdict page and no knees; got:\n%s\nthe claim printed:\n%s", again, stdout)
	}
	md, _, code := cli(t, nil, "report", path, "--format", "markdown")
	if code != 0 || !strings.Contains(md, "## Claim: 400/s for 2s: HOLDS for every shape") || strings.Contains(md, "none passed") {
		t.Errorf("pgceiling report --format markdown of a claim's file (code %d):\n%s", code, md)
	}
}
