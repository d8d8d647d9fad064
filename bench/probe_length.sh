#!/usr/bin/env bash
# Probe-length independence (issue "A knee that is a property of the server"): the knees
# of each workload (synchronous_commit on) found by searches that differ only in their
# probe length, on one prefilled server, back to back; their spread against the median
# (target <= 10 %); then the knee of the middle length held by `pgceiling run` for
# --hold seconds: its error rate and the trend of its per-second queue wait (Theil-Sen
# slope, ms per minute), which must be flat. The searches run the hold step
# (--search-hold, default auto: the knee then held for checkpoint_timeout + 1 min,
# stepping down until a rate holds; off gives the knee of the probe length alone).
# --conns is the searches' pool (default auto: each search scans pool sizes up and back
# and uses the smallest whose mean saturated throughput is within 3 % of the best); the
# hold runs with the pool the middle length's search used. The lengths run in the order
# given, so the probe length and the server's age are confounded: run them once in each
# order (--lengths "30 120 300", then "300 120 30") to tell them apart.
#
# Without --dsn a throwaway server with the schema (bench/benchpg, --rows rows) is
# started and removed at the end; with --dsn the schema must exist (pgceiling init).
#
# Usage: bench/probe_length.sh [--dsn DSN] [--rows 1000000] [--workloads "oltp transfer"]
#        [--lengths "30 120 300"] [--warmup 10] [--repeats 2] [--precision 0.05]
#        [--hold 600] [--search-hold auto|off|DURATION] [--conns auto|N] [--out DIR]
# A smoke run: bench/probe_length.sh --rows 50000 --workloads oltp --lengths "10 20"
#        --warmup 3 --repeats 1 --precision 0.2 --hold 20
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
. "$root/bench/lib.sh"
dsn="" rows=1000000 wls="oltp transfer" lengths="30 120 300" warm=10 reps=2 prec=0.05 hold=600 shold=auto conns=auto out=""
while [ $# -gt 0 ]; do
  case "$1" in
    --dsn) dsn="$2"; shift 2 ;;
    --rows) rows="$2"; shift 2 ;;
    --workloads) wls="$2"; shift 2 ;;
    --lengths) lengths="$2"; shift 2 ;;
    --warmup) warm="$2"; shift 2 ;;
    --repeats) reps="$2"; shift 2 ;;
    --precision) prec="$2"; shift 2 ;;
    --hold) hold="$2"; shift 2 ;;
    --search-hold) shold="$2"; shift 2 ;;
    --conns) conns="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    -h|--help) bench_help "$0"; exit 0 ;;
    *) echo "probe_length: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done

bench_setup probe_length
[ -n "$out" ] || out="$work"
mkdir -p "$out"
echo "$(date -u +%FT%TZ) $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "commit $(git -C "$root" rev-parse --short HEAD); rows $rows; warm-up ${warm}s; repeats $reps; precision $prec"

mid=""
set -- $lengths
mid="${@:$(( ($# + 1) / 2 )):1}"
for wl in $wls; do
  for len in $lengths; do
    f="$out/$wl-$len.json"
    echo "search $wl, ${len}s probes..." >&2
    "$work/pgceiling" search --dsn "$dsn" --workload "$wl" --sync-commit on --hold "$shold" --conns "$conns" --warmup "${warm}s" --duration "${len}s" \
      --precision "$prec" --repeats "$reps" --json "$f" 2>"$out/$wl-$len.log" >/dev/null || { tail -3 "$out/$wl-$len.log" >&2; exit 1; }
  done
  read -r knee pool < <(python3 -c 'import json,sys; s=json.load(open(sys.argv[1]))["sweeps"][0]; print(int(s["knee"]), s["probes"][-1]["conns"])' "$out/$wl-$mid.json")
  echo "run $wl at the ${mid}s knee, $knee tx/s, $pool connections, for ${hold}s..." >&2
  "$work/pgceiling" run --dsn "$dsn" --workload "$wl" --sync-commit on --rate "$knee" --conns "$pool" --warmup "${warm}s" --duration "${hold}s" \
    --json "$out/$wl-hold.json" 2>"$out/$wl-hold.log" >/dev/null || { tail -3 "$out/$wl-hold.log" >&2; exit 1; }
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"

python3 - "$out" "$lengths" "$wls" <<'PY'
import json, sys, statistics
out, lengths, wls = sys.argv[1], sys.argv[2].split(), sys.argv[3].split()
def theil_sen(y):
    s = [(y[j] - y[i]) / (j - i) for i in range(len(y)) for j in range(i + 1, len(y))]
    return statistics.median(s) if s else 0.0
for wl in wls:
    print(f"\n{wl}, synchronous_commit=on")
    print(f"  {'probe':>6} {'knee':>7} {'interval (90 %)':>17} {'pool':>4} {'probes':>6} {'probe-min':>9} {'fraud rows p50 first/last':>26} {'steal max':>9}")
    knees = []
    for n in lengths:
        s = json.load(open(f"{out}/{wl}-{n}.json"))["sweeps"][0]
        iv = s.get("interval")
        ivs = f"{iv['lo']:.0f}-{iv['hi']:.0f}" if iv else "-"
        fr = "-"
        at = [p for p in s["probes"] if p["target_rate"] == s["knee"] and p.get("fraud_check")]
        if at:
            fc = at[-1]["fraud_check"]
            fr = f"{fc['rows_p50_first_third']:.0f} / {fc['rows_p50_last_third']:.0f}"
        steal = max([(p.get("observation") or {}).get("host_steal_share", 0) for p in s["probes"]] or [0])
        pool = (s.get("pool") or {}).get("conns") or s["probes"][-1]["conns"]
        print(f"  {n + 's':>6} {s['knee']:7.0f} {ivs:>17} {pool:4d} {len(s['probes']):6d} {s['probe_minutes']:9.1f} {fr:>26} {100 * steal:8.0f}%")
        knees.append(s["knee"])
    med = statistics.median(knees)
    if med:
        print(f"  spread (max - min) / median: {100 * (max(knees) - min(knees)) / med:.1f} % (target <= 10 %)")
    h = json.load(open(f"{out}/{wl}-hold.json"))["sweeps"][0]["probes"][0]
    qw = [x["queue_wait_p99_ms"] for x in h["series"] if x["phase"] == "measure"]
    er = 100 * (sum(h["failed"].values()) + h["rejected"]) / max(h["scheduled"], 1)
    hs = (h.get("observation") or {}).get("host_steal_share", 0)
    print(f"  held {h['target_rate']:.0f} tx/s for {h['measured_s']:.0f} s: achieved {h['achieved_rate']:.0f}, error rate {er:.3f} %, "
          f"p99 {h['latency_ms']['p99']:.1f} ms, queue-wait p99 per second: median {statistics.median(qw) if qw else 0:.1f} ms, "
          f"Theil-Sen slope {60 * theil_sen(qw):+.2f} ms/min; steal {100 * hs:.0f} %")
PY
