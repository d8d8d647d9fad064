#!/usr/bin/env bash
# One process or two (issue 15, "Many processes, one probe"): the knee of a 1-process
# search and of a 2-process search (`--drivers 2 --spawn`: the leader starts its follower
# itself) of the same workload with the same settings, on one server, back to back; each
# with repeats at the bracket's edges so it has an interval; then both knees with their
# intervals and whether each knee lies inside the other's interval (the target: both do).
#
# Same settings means the same offered rates, probe length, precision, repeats and total
# connections: the 2-process search gives each driver --conns / 2, so the server sees the
# same number of sessions. No hold step (--hold off): the question is the fleet's merge,
# not a checkpoint cycle. The order alternates with --order "2 1".
#
# Without --dsn a throwaway server with the schema (bench/benchpg, --rows rows) is
# started and removed at the end; with --dsn the schema must exist (pgceiling init). The
# DSN reaches pgceiling through PGCEILING_DSN, never its arguments.
#
# Usage: bench/fleet_knee.sh [--dsn DSN] [--rows 200000] [--workload oltp] [--sync-commit on]
#        [--seconds 30] [--warmup 5] [--precision 0.05] [--repeats 3] [--conns 40]
#        [--start RATE] [--order "1 2"] [--out DIR] [--dry-run]
# --dry-run prints the commands it would run and exits (no build, no server).
# A smoke run: bench/fleet_knee.sh --rows 20000 --seconds 3 --warmup 1 --precision 0.3 --repeats 2
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
. "$root/bench/lib.sh"
dsn="" rows=200000 wl=oltp sync=on secs=30 warm=5 prec=0.05 reps=3 conns=40 start="" order="1 2" out="" dry=""
while [ $# -gt 0 ]; do
  case "$1" in
    --dsn) dsn="$2"; shift 2 ;;
    --rows) rows="$2"; shift 2 ;;
    --workload) wl="$2"; shift 2 ;;
    --sync-commit) sync="$2"; shift 2 ;;
    --seconds) secs="$2"; shift 2 ;;
    --warmup) warm="$2"; shift 2 ;;
    --precision) prec="$2"; shift 2 ;;
    --repeats) reps="$2"; shift 2 ;;
    --conns) conns="$2"; shift 2 ;;
    --start) start="$2"; shift 2 ;;
    --order) order="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --dry-run) dry=1; shift ;;
    -h|--help) bench_help "$0"; exit 0 ;;
    *) echo "fleet_knee: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
case "$conns" in ''|*[!0-9]*) echo "fleet_knee: --conns must be a whole number, got $conns" >&2; exit 2 ;; esac
[ "$conns" -ge 2 ] || { echo "fleet_knee: --conns must be at least 2 (one per driver of the 2-process search)" >&2; exit 2; }
[ "$reps" -ge 1 ] 2>/dev/null || { echo "fleet_knee: --repeats must be at least 1 (the interval needs repeats)" >&2; exit 2; }
for n in $order; do
  case "$n" in 1|2) ;; *) echo "fleet_knee: --order lists 1 and 2, got $order" >&2; exit 2 ;; esac
done

# search_args N: the pgceiling command line of the N-process search (the DSN is in the
# environment).
search_args() {
  local n="$1" c="$conns"
  local args=(search --workload "$wl" --sync-commit "$sync" --hold off --warmup "${warm}s" --duration "${secs}s"
    --precision "$prec" --repeats "$reps" --max-probes 60)
  [ -n "$start" ] && args+=(--start-rate "$start")
  if [ "$n" = 2 ]; then
    c=$((conns / 2))
    args+=(--drivers 2 --spawn --fleet fleet-knee)
  fi
  args+=(--conns "$c" --json "$out/search-$n.json")
  printf '%s\n' "${args[@]}"
}

if [ -n "$dry" ]; then
  out="${out:-OUT}"
  [ -n "$dsn" ] || echo "# would start a throwaway server with $rows rows (bench/benchpg)"
  for n in $order; do
    mapfile -t a < <(search_args "$n")
    echo "PGCEILING_DSN=... pgceiling ${a[*]} 2>$out/search-$n.log"
  done
  exit 0
fi

for tool in python3 go; do
  command -v "$tool" >/dev/null || { echo "fleet_knee: $tool is needed" >&2; exit 1; }
done
bench_setup fleet_knee
[ -n "$out" ] || out="$work"
mkdir -p "$out"
echo "$(date -u +%FT%TZ) $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "commit $(git -C "$root" rev-parse --short HEAD); $wl sync=$sync; rows $rows; ${warm}s + ${secs}s probes; precision $prec; repeats $reps; $conns connections in all"

for n in $order; do
  mapfile -t a < <(search_args "$n")
  echo "search with $n process(es)..." >&2
  PGCEILING_DSN="$dsn" "$work/pgceiling" "${a[@]}" 2>"$out/search-$n.log" >/dev/null || { tail -5 "$out/search-$n.log" >&2; exit 1; }
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"

python3 - "$out" <<'PY'
import json, sys
out = sys.argv[1]
s = {n: json.load(open(f"{out}/search-{n}.json"))["sweeps"][0] for n in (1, 2)}
def iv(sw):
    i = sw.get("interval")
    return (i["lo"], i["hi"], i["level"]) if i else None
print(f"\n{'processes':>9} {'knee':>7} {'interval':>17} {'probes':>6} {'probe-min':>9}  stop")
for n in (1, 2):
    sw, i = s[n], iv(s[n])
    ivs = f"{i[0]:.0f}-{i[1]:.0f} ({100 * i[2]:.0f} %)" if i else "-"
    print(f"{n:>9} {sw['knee']:7.0f} {ivs:>17} {len(sw['probes']):6d} {sw['probe_minutes']:9.1f}  {sw.get('stop', '')}")
for a, b in ((1, 2), (2, 1)):
    i = iv(s[b])
    if not i:
        print(f"the {a}-process knee against the {b}-process interval: no interval (no pass and fail to fit)")
        continue
    inside = i[0] <= s[a]["knee"] <= i[1]
    print(f"the {a}-process knee {s[a]['knee']:.0f} is {'inside' if inside else 'OUTSIDE'} the {b}-process interval {i[0]:.0f}-{i[1]:.0f}")
# The 2-process search's own figures: how the drivers shared the knee's probe, their
# clocks, and whether a driver was the limit anywhere.
sw = s[2]
at = [p for p in sw["probes"] if p["target_rate"] == sw["knee"] and p.get("fleet")]
if at:
    f = at[-1]["fleet"]
    parts = ", ".join(f"driver {p['driver']}: {p['committed']} committed, late {p['late_ms']:.1f} ms, skew {p['skew_ms']:+.2f} ms"
                      for p in f["parts"])
    print(f"2-process knee probe: {parts}; max skew {f['max_skew_ms']:.2f} ms")
for n in (1, 2):
    lim = [p["target_rate"] for p in s[n]["probes"] if p.get("driver_limited")]
    if lim:
        print(f"{n}-process search: driver_limited at {', '.join(f'{r:.0f}' for r in lim)} tx/s (the client, not the server)")
PY
