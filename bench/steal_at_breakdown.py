#!/usr/bin/env python3
"""Steal at each failing probe's breakdown, from pgceiling results files.

For every probe judged fail, not_steady or host_steal, prints the measured second in which
it broke down (search.Breakdown's rule: the first measured second whose failed and
rejected arrivals exceed --max-error-rate of its offered ones, else the second it was cut
short) and the mean steal share over the --lead seconds up to and including it, next to
the probe's whole-window steal (observation.host_steal_share). Passing probes get the
highest --lead-second steal anywhere in their window, to compare. Steal per second comes
from observation.host_steal_series when the file has it; for files written before that
field, give --stat LOG, a log of `date +%s` and /proc/stat's first line every few seconds,
as the bench notes take it:

    while :; do echo "$(date +%s) $(head -1 /proc/stat)"; sleep 5; done > stat.log

Usage: bench/steal_at_breakdown.py [--stat stat.log] [--lead 15] [--limit 0.05]
       [--max-error-rate 0.001] RESULTS.json...
"""
import argparse
import datetime
import json
import math
import sys


def load_stat(path):
    """Samples (end time, steal share of the span since the previous line)."""
    rows = []
    with open(path) as f:
        for line in f:
            x = line.split()
            if len(x) < 10 or x[1] != "cpu":
                continue
            v = [int(n) for n in x[2:10]]  # user nice system idle iowait irq softirq steal
            rows.append((int(x[0]), sum(v), v[7]))
    return [(b[0], (b[2] - a[2]) / (b[1] - a[1])) for a, b in zip(rows, rows[1:]) if b[1] > a[1]]


def per_second(probe, samples):
    """Steal share for each measured second: the file's series, else the log's samples."""
    obs = probe.get("observation") or {}
    if obs.get("host_steal_series"):
        return obs["host_steal_series"]
    if samples is None:
        return None
    t0 = datetime.datetime.fromisoformat(probe["started_at"].replace("Z", "+00:00")).timestamp()
    t0 += probe.get("warmup_s", 0)
    out = []
    for s in range(math.ceil(probe.get("measured_s", 0))):
        # the sample whose span holds the middle of second s
        mid = t0 + s + 0.5
        share = next((sh for end, sh in samples if end >= mid), None)
        if share is None:
            break
        out.append(share)
    return out


def breakdown(probe, max_error_rate):
    first = None
    for s in probe.get("series") or []:
        if s.get("phase") != "measure":
            continue
        if first is None:
            first = s["t"]
        bad = sum((s.get("failed") or {}).values())
        if bad > 0 and bad > max_error_rate * s.get("offered", 0):
            return s["t"] - first
    if probe.get("cut_short"):
        return max(math.ceil(probe.get("measured_s", 0)) - 1, 0)
    return None


def mean_before(series, at, lead):
    xs = series[max(at - lead + 1, 0):at + 1]
    return sum(xs) / len(xs) if xs else None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--stat")
    ap.add_argument("--lead", type=int, default=15)
    ap.add_argument("--limit", type=float, default=0.05)
    ap.add_argument("--max-error-rate", type=float, default=0.001)
    ap.add_argument("files", nargs="+")
    a = ap.parse_args()
    samples = load_stat(a.stat) if a.stat else None
    print(f"{'file':<20} {'rate':>6} {'verdict':<11} {'length':>6} {'broke at':>8} "
          f"{'steal ' + str(a.lead) + ' s before':>18} {'probe steal':>11}  would be")
    for path in a.files:
        with open(path) as f:
            doc = json.load(f)
        for sw in doc.get("sweeps") or []:
            for p in sw.get("probes") or []:
                series = per_second(p, samples)
                whole = (p.get("observation") or {}).get("host_steal_share", 0)
                v = p.get("verdict", "")
                at = breakdown(p, a.max_error_rate) if v in ("fail", "not_steady", "host_steal") else None
                lead, note = None, ""
                if series:
                    if at is not None:
                        lead = mean_before(series, at, a.lead)
                        if lead is not None and lead >= a.limit:
                            note = "host_steal"
                    elif v == "pass":
                        ws = [mean_before(series, i, a.lead) for i in range(a.lead - 1, len(series))]
                        lead = max([w for w in ws if w is not None] or [0])
                        note = "(pass: highest)"
                lt = "-" if lead is None else f"{100 * lead:.1f} %"
                print(f"{path.split('/')[-1]:<20} {p.get('target_rate', 0):6.0f} {v:<11} {p.get('duration_s', 0):5.0f}s "
                      f"{'-' if at is None else str(at) + ' s':>8} {lt:>18} {100 * whole:9.1f} %  {note}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
