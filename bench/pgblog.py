#!/usr/bin/env python3
"""Counts of pgbench per-transaction logs (-l, with -R): the transactions that ended after
the first WARM seconds, as the bench scripts judge a probe.

Usage: pgblog.py WARM LOGFILE...
Prints one line: bad_share processed skipped late failed p50_ms p99_ms committed_per_s
where late is a latency (from the scheduled start, pgbench's -R latency) over 1 s and
bad_share = (skipped + late + failed) / (processed + skipped + failed). With no
transaction at all it prints a bad share of 1.0 and zeros.
"""
import sys

warm, files = float(sys.argv[1]), sys.argv[2:]
rows = []
for fn in files:
    for line in open(fn):
        f = line.split()
        if len(f) >= 6:
            rows.append((f[2], int(f[4]) + int(f[5]) / 1e6))
if not rows:
    print("1.0 0 0 0 0 0 0 0")
    sys.exit()
t0 = min(t for _, t in rows) + warm
t1 = max(t for _, t in rows)
processed = skipped = late = failed = 0
lats = []
for lat, t in rows:
    if t < t0:
        continue
    if lat == "skipped":
        skipped += 1
    elif lat == "failed":
        failed += 1
    else:
        processed += 1
        us = int(lat)
        lats.append(us)
        late += us > 1_000_000
total = processed + skipped + failed
lats.sort()


def pct(q):
    return lats[min(len(lats) - 1, int(q * len(lats)))] / 1000 if lats else 0


rate = processed / (t1 - t0) if t1 > t0 else 0
print(f"{(skipped + late + failed) / total if total else 1.0:.6f} {processed} {skipped} {late} {failed} "
      f"{pct(0.5):.1f} {pct(0.99):.1f} {rate:.1f}")
