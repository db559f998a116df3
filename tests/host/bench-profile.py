#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""make profile: sum up the function profiler's figures of each timed step.

Usage: bench-profile.py RESULTS_DIR OUTDIR

RESULTS_DIR/profile.txt has one section per lower fs, configuration and
workload ("## FS CONFIG WORKLOAD FILES"), each the trace_stat/function*
files of the profiler (one per CPU: Function, Hit, Time, Avg, s^2).  For
each workload this prints, for the functions that took the most time in
any configuration, the calls per file and the time (with callees, as the
graph profiler counts it) in each configuration side by side, and writes
the same to OUTDIR/profile.txt.  Times are the profiler's, which slows
every profiled call: compare calls, and times only between
configurations of the same step.
"""
import collections
import os
import re
import sys

TOP = 25


def parse(path):
    """{(fs, workload): {config: (files, {function: [hits, us]})}}"""
    steps = collections.OrderedDict()
    cur = None
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            if line.startswith("## "):
                fs, cfg, wl, files = (line.split() + [""] * 5)[1:5]
                n = int(files) if files.isdigit() else 0
                cur = collections.defaultdict(lambda: [0, 0.0])
                steps.setdefault((fs, wl), collections.OrderedDict())[cfg] = (n, cur)
                continue
            m = re.match(r"\s+(\S+)\s+(\d+)\s+([\d.]+) (us|ms|s)\b", line)
            if not m or cur is None:
                continue
            scale = {"us": 1, "ms": 1e3, "s": 1e6}[m.group(4)]
            cur[m.group(1)][0] += int(m.group(2))
            cur[m.group(1)][1] += float(m.group(3)) * scale
    return steps


def table(fs, wl, cfgs):
    out = []
    files = max(n for n, _ in cfgs.values()) or 1
    out.append(f"{fs} {wl} ({files} files): calls per file, time in ms")
    funcs = set()
    for _, prof in cfgs.values():
        funcs.update(prof)
    key = lambda fn: -max(prof.get(fn, [0, 0])[1] for _, prof in cfgs.values())
    names = list(cfgs)
    head = f"  {'function':32}" + "".join(f"{c[:25]:>26}" for c in names)
    out.append(head)
    for fn in sorted(funcs, key=key)[:TOP]:
        row = f"  {fn[:32]:32}"
        for c in names:
            n, prof = cfgs[c]
            hits, us = prof.get(fn, [0, 0.0])
            row += f"{hits / (n or files):16.2f}{us / 1000:10.1f}"
        out.append(row)
    return out


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    src = os.path.join(sys.argv[1], "profile.txt")
    if not os.path.exists(src):
        sys.exit(f"bench-profile: no {src}")
    steps = parse(src)
    if not steps:
        sys.exit(f"bench-profile: {src} has no profiled step")
    lines = []
    for (fs, wl), cfgs in steps.items():
        lines += table(fs, wl, cfgs) + [""]
    os.makedirs(sys.argv[2], exist_ok=True)
    with open(os.path.join(sys.argv[2], "profile.txt"), "w", encoding="utf-8") as f:
        f.write("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
