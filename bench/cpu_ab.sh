#!/usr/bin/env bash
# Client CPU per committed transaction of two pgceiling builds and pgbench, in paired
# rounds that resist a noisy host: each round runs A, B and pgbench once per workload,
# back to back and in a rotating order, on one server, and the figures compared are the
# ratios WITHIN a round (B/A, A/pgbench, B/pgbench), summarized by their median over the
# rounds whose runs all saw little hypervisor steal. On a VM that books stolen time to
# the running process, a steal burst inflates every client's CPU seconds alike for the
# minute it lasts; adjacent runs share it, ratios of adjacent runs mostly cancel it, and
# rounds with steal above --max-steal (percent, default 3) are reported but left out.
#
# CPU: user + system seconds of each client process as a whole (/usr/bin/time), per
# 1,000 committed transactions; pgceiling runs use --no-backfill so both clients run the
# same SQL on the same data (the back-fill is a COPY that pgbench has no counterpart of),
# --warmup 0s (both count the same transactions), --exec-mode cache_statement, the engine
# given by --engine (default loop). pgbench: -n -M prepared -c CONNS -R RATE -T SECONDS
# -f bench/pgbench/WORKLOAD.sql (one thread, like the loop engine).
#
# A and B are checkouts (directories) of the code to compare, each built once at the
# start; B defaults to this checkout. Without --dsn a throwaway server with the schema
# (bench/benchpg from this checkout, --rows rows) is started and removed at the end.
#
# Usage: bench/cpu_ab.sh --a DIR [--b DIR] [--dsn DSN] [--rounds 6] [--seconds 30]
#        [--rate 300] [--workloads "oltp transfer"] [--engine loop] [--conns 50]
#        [--rows 200000] [--max-steal 3]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
. "$root/bench/lib.sh"
dsn="" a="" b="$root" rounds=6 secs=30 rate=300 wls="oltp transfer" engine=loop conns=50 rows=200000 maxsteal=3
while [ $# -gt 0 ]; do
  case "$1" in
    --a) a="$2"; shift 2 ;;
    --b) b="$2"; shift 2 ;;
    --dsn) dsn="$2"; shift 2 ;;
    --rounds) rounds="$2"; shift 2 ;;
    --seconds) secs="$2"; shift 2 ;;
    --rate) rate="$2"; shift 2 ;;
    --workloads) wls="$2"; shift 2 ;;
    --engine) engine="$2"; shift 2 ;;
    --conns) conns="$2"; shift 2 ;;
    --rows) rows="$2"; shift 2 ;;
    --max-steal) maxsteal="$2"; shift 2 ;;
    -h|--help) bench_help "$0"; exit 0 ;;
    *) echo "cpu_ab: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
[ -n "$a" ] || { echo "cpu_ab: --a DIR (a checkout of the code to compare with) is needed" >&2; exit 2; }
for tool in pgbench /usr/bin/time python3 go; do
  command -v "$tool" >/dev/null || { echo "cpu_ab: $tool is needed" >&2; exit 1; }
done

bench_setup cpu_ab
(cd "$a" && go build -o "$work/pgc-a" ./cmd/pgceiling) || exit 1
(cd "$b" && go build -o "$work/pgc-b" ./cmd/pgceiling) || exit 1
echo "$(date -u +%FT%TZ) $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
echo "A: $a ($(git -C "$a" rev-parse --short HEAD))  B: $b ($(git -C "$b" rev-parse --short HEAD))"
echo "$rounds rounds x (A, B, pgbench) x ($wls), ${secs}s each at $rate tx/s, $conns connections, engine $engine"

# one CLIENT WORKLOAD: runs it, appends "round workload client tx cpu steal" to $work/runs.
one() {
  local c="$1" w="$2" s0 s1 n
  s0="$(head -1 /proc/stat)"
  if [ "$c" = pgbench ]; then
    /usr/bin/time -f "%U %S" -o "$work/time" pgbench -n -M prepared -c "$conns" -R "$rate" -T "$secs" \
      -f "$root/bench/pgbench/$w.sql" "$dsn" >"$work/out" 2>"$work/err" || { tail -5 "$work/err" >&2; exit 1; }
    n="$(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' "$work/out")"
  else
    /usr/bin/time -f "%U %S" -o "$work/time" "$work/pgc-$c" run --dsn "$dsn" --workload "$w" --rate "$rate" \
      --warmup 0s --duration "${secs}s" --conns "$conns" --exec-mode cache_statement --engine "$engine" \
      --no-backfill --json "$work/run.json" >"$work/out" 2>"$work/err" || { tail -5 "$work/err" >&2; exit 1; }
    n="$(python3 -c "import json; print(json.load(open('$work/run.json'))['sweeps'][0]['probes'][0]['checks']['committed_total'])")"
  fi
  s1="$(head -1 /proc/stat)"
  python3 - "$round" "$w" "$c" "$n" "$s0" "$s1" "$(cat "$work/time")" >>"$work/runs" <<'PY'
import sys
r, w, c, n, s0, s1, t = sys.argv[1:8]
a = list(map(int, s0.split()[1:])); b = list(map(int, s1.split()[1:]))
d = [y - x for x, y in zip(a, b)]
u, s = map(float, t.split())
print(r, w, c, n, round(u + s, 3), round(100 * d[7] / max(sum(d), 1), 1))
PY
  tail -1 "$work/runs" | awk '{printf "round %s %-9s %-8s %7s tx  %.3f s/1k tx  steal %s %%\n", $1, $2, $3, $4, 1000*$5/$4, $6}'
}

: >"$work/runs"
orders=("a b pgbench" "b pgbench a" "pgbench a b")
for round in $(seq 1 "$rounds"); do
  for w in $wls; do
    for c in ${orders[$(( (round - 1) % 3 ))]}; do one "$c" "$w"; done
  done
done

python3 - "$work/runs" "$maxsteal" <<'PY'
import sys, statistics as st
rows = [l.split() for l in open(sys.argv[1])]
lim = float(sys.argv[2])
by = {}
for r, w, c, n, cpu, steal in rows:
    by.setdefault((w, r), {})[c] = (1000 * float(cpu) / int(n), float(steal))
print()
print(f"per workload: median over rounds with every run's steal <= {lim:g} % (all rounds in brackets)")
print(f"{'workload':<9} {'rounds':>6} | {'A s/1k':>7} {'B s/1k':>7} {'pgb s/1k':>8} | {'B/A':>5} {'A/pgb':>6} {'B/pgb':>6}")
for w in dict.fromkeys(k[0] for k in by):
    rs = [v for (ww, _), v in by.items() if ww == w and len(v) == 3]
    ok = [v for v in rs if max(x[1] for x in v.values()) <= lim]
    def med(sel, f):
        return st.median([f(v) for v in sel]) if sel else float('nan')
    def cols(sel):
        return (med(sel, lambda v: v['a'][0]), med(sel, lambda v: v['b'][0]), med(sel, lambda v: v['pgbench'][0]),
                med(sel, lambda v: v['b'][0] / v['a'][0]), med(sel, lambda v: v['a'][0] / v['pgbench'][0]),
                med(sel, lambda v: v['b'][0] / v['pgbench'][0]))
    q, al = cols(ok), cols(rs)
    print(f"{w:<9} {len(ok):>2} of {len(rs):<2}| {q[0]:7.3f} {q[1]:7.3f} {q[2]:8.3f} | {q[3]:5.2f} {q[4]:6.2f} {q[5]:6.2f}"
          f"   (all: B/A {al[3]:.2f}, A/pgb {al[4]:.2f}, B/pgb {al[5]:.2f})")
PY
