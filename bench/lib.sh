# Shared set-up of the benchmark scripts; source it, then call bench_setup NAME.
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
    for _ in $(seq 1 600); do
      [ -s "$work/dsn" ] && break
      kill -0 "$server_pid" 2>/dev/null || { cat "$work/benchpg.log" >&2; exit 1; }
      sleep 0.5
    done
    [ -s "$work/dsn" ] || { echo "$name: the server did not come up" >&2; exit 1; }
    dsn="$(cat "$work/dsn")"
  fi
}

# bench_cleanup stops the throwaway server and removes the work directory.
bench_cleanup() {
  if [ -n "$server_pid" ]; then kill -TERM "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
