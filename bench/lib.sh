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

# bench_cleanup stops the throwaway server and removes the work directory.
bench_cleanup() {
  if [ -n "$server_pid" ]; then kill -TERM "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
  rm -rf "$work"
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

# bench_pgbench RATE WORKLOAD [PREFIX...]: one pgbench probe as the agreement scripts run it
# (`-n -M prepared -c $conns -j 1 -R RATE --latency-limit 1000 -T $warm+$secs`, every
# transaction logged to $work/pgblog*, bench/pgbench/WORKLOAD.sql), the command run under
# PREFIX (taskset, /usr/bin/time); count the log with bench/pgblog.py. Uses $conns,
# $warm, $secs, $dsn, $root and $work; pgbench's own exit status is ignored (a probe
# whose transactions all fail is judged from its log).
bench_pgbench() {
  local rate="$1" wl="$2"
  shift 2
  rm -f "$work"/pgblog*
  "$@" pgbench -n -M prepared -c "$conns" -j 1 -R "$rate" --latency-limit 1000 -T "$((warm + secs))" -l \
    --log-prefix="$work/pgblog" -f "$root/bench/pgbench/$wl.sql" "$dsn" >"$work/pgb.out" 2>"$work/pgb.err" || true
}

# bench_help SCRIPT prints SCRIPT's header comment (from line 2 to the first line that is
# not a comment) without the comment marks: every script's --help, so it never falls
# behind the header the way a fixed line range did.
bench_help() {
  awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$1"
}
