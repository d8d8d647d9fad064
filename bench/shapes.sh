#!/usr/bin/env bash
# The shapes of issue 14 on one server in one run (synchronous_commit on, --hold off, the
# same probe length and precision for every sweep):
#   1. `insert` as one autocommit round trip (this checkout) against the four-round-trip
#      insert of --old (a commit before the change, default 37c3777), and `oltp`;
#   2. `copy` (rows batched into COPY) against `insert`, in rows/s;
#   3. bench/pgbench/oltp.sql through --script against the built-in `oltp` (same SQL:
#      target, knees within 5 %);
# with the client CPU per row at each knee (per transaction = per row, except copy).
#
# Without --dsn a throwaway server with the schema (bench/benchpg, --rows rows) is started
# and removed at the end; with --dsn the schema must exist (pgceiling init).
#
# Usage: bench/shapes.sh [--dsn DSN] [--rows 1000000] [--warmup 5] [--seconds 20]
#        [--precision 0.05] [--old COMMIT] [--out DIR]
# A smoke run: bench/shapes.sh --rows 20000 --warmup 1 --seconds 3 --precision 0.3
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
. "$root/bench/lib.sh"
dsn="" rows=1000000 warm=5 secs=20 prec=0.05 old=37c3777 out=""
while [ $# -gt 0 ]; do
  case "$1" in
    --dsn) dsn="$2"; shift 2 ;;
    --rows) rows="$2"; shift 2 ;;
    --warmup) warm="$2"; shift 2 ;;
    --seconds) secs="$2"; shift 2 ;;
    --precision) prec="$2"; shift 2 ;;
    --old) old="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    -h|--help) bench_help "$0"; exit 0 ;;
    *) echo "shapes: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
for tool in git python3 go; do
  command -v "$tool" >/dev/null || { echo "shapes: $tool is not installed" >&2; exit 1; }
done
bench_setup shapes
out="${out:-$work/out}"
mkdir -p "$out" "$work/old"
git -C "$root" archive "$old" | tar -x -C "$work/old"
(cd "$work/old" && go build -o "$work/pgceiling-old" ./cmd/pgceiling) || exit 1

echo "$(date -u +%FT%TZ) $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); load: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
echo "commit $(git -C "$root" rev-parse --short HEAD) (old: $old); rows $rows; ${warm}s warm-up + ${secs}s probes; precision $prec; --hold off; repeats 1" >&2
common=(--dsn "$dsn" --sync-commit on --warmup "${warm}s" --duration "${secs}s" --precision "$prec" --repeats 1)
search() { # NAME BINARY ARGS...: one search, its results in $out/NAME.json (kept: a rerun
  # with the same --out skips a search that finished)
  local name="$1" bin="$2"; shift 2
  if grep -qs "results in" "$out/$name.log"; then echo "search $name: done before, kept" >&2; return; fi
  # --hold came with the hold step; a binary from before it has no hold step anyway.
  if "$bin" search --help 2>&1 | grep -q -- "--hold"; then set -- --hold off "$@"; fi
  echo "search $name..." >&2
  "$bin" search "${common[@]}" "$@" --json "$out/$name.json" 2>"$out/$name.log" >/dev/null || { tail -3 "$out/$name.log" >&2; exit 1; }
}
search new "$work/pgceiling" --workload insert,copy,oltp
search old "$work/pgceiling-old" --workload insert
search script "$work/pgceiling" --script "$root/bench/pgbench/oltp.sql"

python3 - "$out" <<'EOF'
import json, sys
out = sys.argv[1]
def sweeps(name):
    return json.load(open(f"{out}/{name}.json"))["sweeps"]
rows = []
for name, label in (("new", None), ("old", "insert, 4 round trips (old)"), ("script", "oltp.sql via --script")):
    for s in sweeps(name):
        knee = s["knee"]
        at = [p for p in s["probes"] if p["target_rate"] == knee and p.get("verdict") == "pass"]
        p = at[-1] if at else None
        cpu = p["client_cpu_per_tx_ms"] if p and p.get("client_cpu_per_tx_ms") else None
        if cpu is None and p and p.get("committed"):
            cpu = 1000 * p["client_cpu_s"] / p["committed"]
        unit = "rows/s" if s["workload"] == "copy" else "tx/s"
        rt = (p or {}).get("rows_per_tx") or 1
        iv = s.get("interval") or {}
        rows.append((label or s["workload"], knee, unit, iv.get("lo"), iv.get("hi"), cpu / rt if cpu else None, len(s["probes"]), s.get("stop", "")))
print(f"{'shape':34} {'knee':>9} {'unit':7} {'90 % interval':>17} {'client ms/row':>13} probes stop")
for r in rows:
    ivs = f"{r[3]:.0f}-{r[4]:.0f}" if r[3] else "-"
    cpu = f"{r[5]:.4f}" if r[5] else "-"
    print(f"{r[0]:34} {r[1]:9.0f} {r[2]:7} {ivs:>17} {cpu:>13} {r[6]:6} {r[7]}")
k = {r[0]: r[1] for r in rows}
if k.get("insert") and k.get("insert, 4 round trips (old)"):
    print(f"insert autocommit / old insert: {k['insert'] / k['insert, 4 round trips (old)']:.2f}x")
if k.get("copy") and k.get("insert"):
    print(f"copy rows/s / insert rows/s: {k['copy'] / k['insert']:.1f}x")
if k.get("oltp.sql via --script") and k.get("oltp"):
    d = k["oltp.sql via --script"] / k["oltp"] - 1
    print(f"--script oltp.sql vs built-in oltp: {100 * d:+.1f} % (target within 5 %)")
EOF
