#!/usr/bin/env bash
# Issue 14's check of the script runner: the knee of bench/pgbench/oltp.sql run through
# --script against the built-in `oltp` (the same SQL), synchronous_commit on (--sync off:
# off; pgceiling replaces the script's SET LOCAL with --sync-commit). Target: within 5 %.
#
# One search per round, both sweeps on one server (`--workload oltp,script`), in ABBA
# order over the rounds (oltp first, script first, script first, oltp first, ...), so a
# drift of the machine over the run and the position of a sweep inside its search cancel
# out. One knee of a 15-20 s-probe search moves 10-20 % between runs on a 2-core machine
# that runs client and server (docs/figures.md), so one pair of knees cannot show 5 %:
# the summary gives each round's ratio script / oltp of the knees and of the fitted 50 %
# pass rates (the intervals' midpoints, which use every probe), their geometric means
# and a 95 % t-interval over the rounds.
#
# The script's `wallets`, `window` and `limit` must match the schema and the flags (its
# defaults do: 10,000 wallets, --fraud-window 1h, --fraud-limit 20). Both sweeps run
# without the fraud window's back-fill (--no-backfill), which only the built-in oltp gets.
#
# --conns N fixes the pool for both sweeps (default auto: each sweep scans pool sizes
# first, and two sweeps may then run with different pools).
#
# Without --dsn a throwaway server with the schema (bench/benchpg, --rows rows) is started
# and removed at the end; with --dsn the schema must exist (pgceiling init).
#
# Usage: bench/script_vs_oltp.sh [--dsn DSN] [--rows 1000000] [--rounds 4] [--warmup 5]
#        [--seconds 15] [--precision 0.05] [--repeats 2] [--sync on|off] [--conns auto|N] [--out DIR]
# A smoke run: bench/script_vs_oltp.sh --rows 20000 --rounds 2 --warmup 1 --seconds 3 --precision 0.3
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
. "$root/bench/lib.sh"
dsn="" rows=1000000 rounds=4 warm=5 secs=15 prec=0.05 repeats=2 out="" sync=on conns=auto
while [ $# -gt 0 ]; do
  case "$1" in
    --dsn) dsn="$2"; shift 2 ;;
    --rows) rows="$2"; shift 2 ;;
    --rounds) rounds="$2"; shift 2 ;;
    --warmup) warm="$2"; shift 2 ;;
    --seconds) secs="$2"; shift 2 ;;
    --precision) prec="$2"; shift 2 ;;
    --repeats) repeats="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --sync) sync="$2"; shift 2 ;;
    --conns) conns="$2"; shift 2 ;;
    -h|--help) bench_help "$0"; exit 0 ;;
    *) echo "script_vs_oltp: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
for tool in python3 go; do
  command -v "$tool" >/dev/null || { echo "script_vs_oltp: $tool is not installed" >&2; exit 1; }
done
[ "$rounds" -ge 2 ] 2>/dev/null || { echo "script_vs_oltp: --rounds must be at least 2" >&2; exit 2; }
case "$sync" in on | off) ;; *) echo "script_vs_oltp: --sync must be on or off" >&2; exit 2 ;; esac
bench_setup script_vs_oltp
out="${out:-$work/out}"
mkdir -p "$out"

echo "$(date -u +%FT%TZ) $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); load: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
echo "commit $(git -C "$root" rev-parse --short HEAD); rows $rows; $rounds rounds; ${warm}s warm-up + ${secs}s probes; precision $prec; repeats $repeats; sync $sync; conns $conns; --hold off --no-backfill" >&2
for r in $(seq 1 "$rounds"); do
  # ABBA: rounds 1, 4, 5, 8, ... put oltp first.
  case $(((r - 1) % 4)) in 0 | 3) order=oltp,script ;; *) order=script,oltp ;; esac
  if grep -qs "results in" "$out/round$r.log"; then echo "round $r: done before, kept" >&2; continue; fi
  echo "$(date -u +%T) round $r of $rounds: --workload $order" >&2
  "$work/pgceiling" search --dsn "$dsn" --workload "$order" --script "$root/bench/pgbench/oltp.sql" --sync-commit "$sync" --conns "$conns" \
    --hold off --no-backfill --warmup "${warm}s" --duration "${secs}s" --precision "$prec" --repeats "$repeats" \
    --seed "$r" --json "$out/round$r.json" 2>"$out/round$r.log" >/dev/null || { tail -3 "$out/round$r.log" >&2; exit 1; }
done

python3 - "$out" "$rounds" <<'EOF'
import json, math, sys
out, rounds = sys.argv[1], int(sys.argv[2])
# Two-sided 95 % t quantiles by degrees of freedom.
T95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262, 10: 2.228}
def summary(name, logs):
    n = len(logs)
    mean = sum(logs) / n
    sd = math.sqrt(sum((x - mean) ** 2 for x in logs) / (n - 1))
    half = T95.get(n - 1, 1.96) * sd / math.sqrt(n)
    lo, mid, hi = (100 * (math.exp(v) - 1) for v in (mean - half, mean, mean + half))
    print(f"{name}: geometric mean {mid:+.1f} %, 95 % interval {lo:+.1f} % to {hi:+.1f} % over {n} rounds"
          f" (target: within 5 %: {'yes' if abs(mid) <= 5 else 'NO'}; interval inside ±5 %: {'yes' if lo >= -5 and hi <= 5 else 'no'})")
print(f"{'round':5} {'order':13} {'oltp knee (90 %)':>22} {'script knee (90 %)':>22} {'knee ratio':>10} {'50 % ratio':>10}")
knees, mids = [], []
for r in range(1, rounds + 1):
    f = json.load(open(f"{out}/round{r}.json"))
    by = {s["workload"]: s for s in f["sweeps"]}
    order = ",".join(s["workload"] for s in f["sweeps"])
    o, s = by["oltp"], by["script"]
    def cell(sw):
        iv = sw.get("interval") or {}
        return f"{sw['knee']:.0f} ({iv.get('lo', 0):.0f}-{iv.get('hi', 0):.0f})"
    kr = s["knee"] / o["knee"] if o["knee"] and s["knee"] else float("nan")
    om, sm = (o.get("interval") or {}).get("midpoint"), (s.get("interval") or {}).get("midpoint")
    mr = sm / om if om and sm else float("nan")
    print(f"{r:5} {order:13} {cell(o):>22} {cell(s):>22} {kr:10.3f} {mr:10.3f}")
    if kr == kr:
        knees.append(math.log(kr))
    if mr == mr:
        mids.append(math.log(mr))
if len(knees) >= 2:
    summary("script / oltp, knees", knees)
if len(mids) >= 2:
    summary("script / oltp, fitted 50 % pass rates", mids)
EOF
