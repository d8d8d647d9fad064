# Shared set-up of the benchmark scripts; source it right after setting $root (it only
# defines functions), then call bench_setup NAME after parsing the arguments.
# Uses $root (the repository), $dsn (empty: start a throwaway server) and $rows; sets
# $work (a temp dir holding the pgceiling and benchpg binaries, removed on exit) and $dsn.
bench_setup() {
  local name="$1"
  work="$(mktemp -d)"
  server_pid=""
  trap bench_cleanup EXIT
  chmod 755 "$work"
  (cd "$root" && go build -o "$work/pgceiling" ./cmd/pgceiling && go build -o "$work/benchpg" ./bench/benchpg) || exit 1
  if [ -z "$dsn" ]; then
    echo "starting a throwaway server with the schema ($rows rows)..." >&2
    "$work/benchpg" -dsn-file "$work/dsn" -rows "$rows" 2>"$work/benchpg.log" &
    server_pid=$!
    dsn="$(wait_dsn_file "$name" "$server_pid" "$work/dsn" "$work/benchpg.log" 300)" || exit 1
  fi
}

# bench_cleanup stops the throwaway server and the steal log, and removes the work directory.
bench_cleanup() {
  if [ -n "$server_pid" ]; then kill -TERM "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
  if [ -n "${steal_pid:-}" ]; then kill "$steal_pid" 2>/dev/null || true; wait "$steal_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}

# bench_steal_log: from now until the script exits, $work/stat.log gets the time and
# /proc/stat's first line every second, for bench_steal_max.
bench_steal_log() {
  (while :; do echo "$(date +%s) $(head -1 /proc/stat)"; sleep 1; done) >"$work/stat.log" 2>/dev/null &
  steal_pid=$!
}

# bench_steal_max T0 T1: the highest share of this machine's CPU its hypervisor gave other
# guests (steal) over any 5 s between the Unix times T0 and T1, from $work/stat.log (0
# when the log has too little of that span).
bench_steal_max() {
  python3 - "$work/stat.log" "$1" "$2" <<'PY'
import sys
t0, t1 = int(sys.argv[2]), int(sys.argv[3])
rows = []
for line in open(sys.argv[1]):
    f = line.split()
    if len(f) >= 10 and f[1] == "cpu" and t0 <= int(f[0]) <= t1:
        v = [int(x) for x in f[2:10]]  # user nice system idle iowait irq softirq steal
        rows.append((int(f[0]), sum(v), v[7]))
best = 0.0
for i, a in enumerate(rows):
    b = next((r for r in rows[i:] if r[0] >= a[0] + 5), None)
    if b and b[1] > a[1]:
        best = max(best, (b[2] - a[2]) / (b[1] - a[1]))
print(f"{best:.3f}")
PY
}

# wait_dsn_file NAME PID FILE LOG SECONDS: waits until process PID has written its DSN to
# FILE and prints it; fails (with PID's LOG) if PID exits first or SECONDS pass.
wait_dsn_file() {
  local name="$1" pid="$2" file="$3" log="$4" secs="$5" i
  for i in $(seq 1 $((secs * 10))); do
    [ -s "$file" ] && { cat "$file"; return 0; }
    kill -0 "$pid" 2>/dev/null || { cat "$log" >&2; return 1; }
    sleep 0.1
  done
  echo "$name: the server did not come up within ${secs}s" >&2
  return 1
}

# bench_pin_server CPU: pins the throwaway server (its postmaster and every process it has;
# backends forked later inherit the postmaster's affinity) to core CPU. Nothing with --dsn
# (no throwaway server) or an empty CPU.
bench_pin_server() {
  local c="$1" p
  [ -n "$c" ] && [ -n "$server_pid" ] || return 0
  for p in $(pgrep -u postgres); do taskset -a -p -c "$c" "$p" >/dev/null; done
}

# bench_pgbench RATE WORKLOAD SEED [PREFIX...]: one pgbench probe as the agreement scripts
# run it (`-n -M prepared -c $conns -j 1 -R RATE --latency-limit 1000 -T $warm+$secs`, every
# transaction logged to $work/pgblog*, bench/pgbench/WORKLOAD.sql, --random-seed SEED
# unless SEED is empty: then pgbench's own, from the clock), the command run under PREFIX
# (taskset, /usr/bin/time); count the log with bench/pgblog.py. Uses $conns, $warm, $secs,
# $dsn, $root and $work; pgbench's own exit status is ignored (a probe whose transactions
# all fail is judged from its log).
bench_pgbench() {
  local rate="$1" wl="$2" seed=()
  [ -z "$3" ] || seed=(--random-seed "$3")
  shift 3
  rm -f "$work"/pgblog*
  "$@" pgbench -n -M prepared -c "$conns" -j 1 -R "$rate" --latency-limit 1000 -T "$((warm + secs))" -l "${seed[@]}" \
    --log-prefix="$work/pgblog" -f "$root/bench/pgbench/$wl.sql" "$dsn" >"$work/pgb.out" 2>"$work/pgb.err" || true
}

# bench_client_probe CLIENT RATE WORKLOAD SEED: one probe of the agreement scripts by CLIENT
# (pgceiling or pgbench) at RATE tx/s of WORKLOAD (synchronous_commit on), on data the
# caller prepared as pgceiling prepares its own probes (bench/benchpg -rate RATE -workload
# WORKLOAD: restore to $work/baseline.json, back-fill oltp's fraud window at RATE,
# CHECKPOINT); the client runs under "${pin[@]}" and /usr/bin/time (its CPU to $work/time). pgceiling:
# `pgceiling run --engine loop --threads 1 --pool-wait 1s --seed SEED`; pgbench: bench_pgbench
# with --random-seed SEED. Give every probe its own SEED: `pgceiling run` seeds its arrivals
# and key choices with 1 unless told, so probes without one replay one draw of arrival
# times and wallets (scaled to the rate) and are not independent trials, while pgbench
# draws afresh in every run by default (a staircase fit assumes independent probes). Prints
# one line over the measured seconds (after $warm): committed/s, the bad share by pgbench's
# rule (skipped or rejected + failed + late, late = a latency over 1 s from the scheduled
# start, over all scheduled), p50 and p99 of that latency in ms, and the transactions the
# client committed in the whole run (warm-up included, for CPU per transaction). Uses
# $dsn, $work, $root, $conns, $warm, $secs and the array pin.
bench_client_probe() {
  local client="$1" rate="$2" wl="$3" seed="$4" bad processed crate p50 p99 all
  if [ "$client" = pgceiling ]; then
    "${pin[@]}" /usr/bin/time -f "%U %S" -o "$work/time" "$work/pgceiling" run --dsn "$dsn" --workload "$wl" --sync-commit on \
      --rate "$rate" --warmup "${warm}s" --duration "${secs}s" --conns "$conns" --pool-wait 1s --engine loop --threads 1 \
      --seed "$seed" --no-backfill --json "$work/run.json" >/dev/null 2>"$work/run.err" || { [ -s "$work/run.json" ] || { cat "$work/run.err" >&2; return 1; }; }
    python3 - "$work/run.json" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))["sweeps"][0]["probes"][0]
bad = sum(p["failed"].values()) + p["rejected"] + p.get("late", 0)
print(f'{p["achieved_rate"]:.1f} {bad / p["scheduled"] if p["scheduled"] else 1:.6f} {p["latency_ms"]["p50"]:.1f} {p["latency_ms"]["p99"]:.1f} {sum(x["committed"] for x in p["series"])}')
PY
  else
    bench_pgbench "$rate" "$wl" "$seed" "${pin[@]}" /usr/bin/time -f "%U %S" -o "$work/time"
    read -r bad processed _ _ _ p50 p99 crate < <(python3 "$root/bench/pgblog.py" "$warm" "$work"/pgblog*)
    all="$(cat "$work"/pgblog* | awk '$3 != "skipped" && $3 != "failed"' | wc -l)"
    echo "$crate $bad $p50 $p99 $all"
  fi
}

# bench_help SCRIPT prints SCRIPT's header comment (from line 2 to the first line that is
# not a comment) without the comment marks: every script's --help, so it never falls
# behind the header the way a fixed line range did.
bench_help() {
  awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$1"
}
