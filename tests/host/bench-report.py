#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""make bench, host side: turn the guest's bench.csv into ratios.

Usage: bench-report.py RESULTS OUTDIR  (RESULTS holds the guest's bench.csv and tap)

Every figure is divided by the bare lower's figure of the same workload in
the same round (the rounds interleave the configurations, so a ratio
compares runs minutes apart, not hours); a ratio's median and spread are
over the rounds.  A step that failed shows as FAIL, never as a figure, and
the figures of a round the guest judged "not ok" (a mount or a fixture
that failed) are left out and named.  Writes OUTDIR/bench.csv (the figures), bench.json (the
figures and the ratios), table.txt (printed too), targets.txt (the
issue's targets, met or missed), and with gnuplot ratios-LOWER.svg/.png
and scaling-LOWER.svg/.png.
"""

import csv
import json
import os
import shutil
import statistics
import subprocess
import sys

CONFIGS = ["bare", "cowlinkfs-flag", "cowlinkfs-all", "cowlinkfs-nosync", "overlayfs", "mergerfs",
           "cowdancer"]
COW = ["cowlinkfs-flag", "cowlinkfs-all"]


def load(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def seconds(row):
    try:
        return float(row["seconds"])
    except (TypeError, ValueError):
        return None


def failed_rounds(tap):
    """(lower, round, config) of every "not ok LOWER/ROUND/CONFIG" line."""
    bad = set()
    if os.path.exists(tap):
        for line in open(tap):
            if line.startswith("not ok "):
                parts = line.split()[3].split("/") if len(line.split()) > 3 else []
                if len(parts) == 3:
                    bad.add((parts[0], parts[1], parts[2]))
    return bad


def summarise(rows):
    """{(lower, workload): {config: {...}}} with the median of the seconds
    and of the per-round ratio to bare, and the min-max of that ratio."""
    by = {}
    for r in rows:
        by.setdefault((r["lower"], r["workload"]), {}).setdefault(r["config"], {})[r["round"]] = r
    out = {}
    for key, cfgs in by.items():
        bare = cfgs.get("bare", {})
        out[key] = {}
        for cfg, rounds in cfgs.items():
            secs = [seconds(r) for r in rounds.values()]
            ok = [s for s in secs if s is not None]
            ratios = [seconds(r) / seconds(bare[n]) for n, r in rounds.items()
                      if seconds(r) is not None and n in bare and seconds(bare[n])]
            any_row = next(iter(rounds.values()))
            out[key][cfg] = {
                "rounds": len(secs),
                "failed": sum(r["seconds"] == "fail" for r in rounds.values()),
                "na": sum(r["seconds"] == "n/a" for r in rounds.values()),
                "median_s": statistics.median(ok) if ok else None,
                "min_s": min(ok) if ok else None,
                "max_s": max(ok) if ok else None,
                "ratio": statistics.median(ratios) if ratios else None,
                "ratio_min": min(ratios) if ratios else None,
                "ratio_max": max(ratios) if ratios else None,
                "files": any_row["files"],
                "note": any_row["note"] if ok else "",
            }
    return out


def cell(s):
    if s is None:
        return "n/a"
    if s["failed"]:
        return "FAIL (%d of %d)" % (s["failed"], s["rounds"])
    if s["ratio"] is None:
        return "n/a" if s["na"] else "-"
    return "%.2f [%.2f-%.2f]" % (s["ratio"], s["ratio_min"], s["ratio_max"])


def table(summary, lowers, workloads, kernel, rounds):
    lines = []
    for lower in lowers:
        lines.append("")
        lines.append("== %s (kernel %s, %s rounds): bare lower in seconds, others as the median "
                     "ratio to it [min-max over rounds]" % (lower, kernel, rounds))
        lines.append("%-24s %6s %9s " % ("workload", "files", "bare s") +
                     " ".join("%-19s" % c for c in CONFIGS[1:]))
        for w in workloads[lower]:
            s = summary[(lower, w)]
            bare = s.get("bare")
            lines.append("%-24s %6s %9s " % (
                w, (bare or next(iter(s.values())))["files"],
                "%.4f" % bare["median_s"] if bare and bare["median_s"] is not None else "-") +
                " ".join("%-19s" % (cell(s[c]) if c in s else "-") for c in CONFIGS[1:]))
    return lines


def ratio(summary, lower, workload, cfg):
    s = summary.get((lower, workload), {}).get(cfg)
    return s["ratio"] if s and not s["failed"] else None


def median(summary, lower, workload, cfg):
    s = summary.get((lower, workload), {}).get(cfg)
    return s["median_s"] if s and not s["failed"] else None


def targets(summary, lowers, workloads):
    """The benchmark issue's targets, each line 'met' or 'MISSED'."""
    lines = []

    def judge(what, value, limit, ok):
        if value is None or limit is None:
            lines.append("  no data %s (a step failed, or a figure is missing)" % what)
        else:
            lines.append("  %-7s %s: %.2f (limit %.2f)" % ("met" if ok(value, limit) else "MISSED",
                                                        what, value, limit))

    for lower in lowers:
        lines.append("== %s" % lower)
        ws = workloads[lower]
        for w in [w for w in ws if w.startswith("data-")]:
            for c in COW:
                judge("%s %s time / bare (throughput >= 0.97x)" % (w, c),
                      ratio(summary, lower, w, c), 1 / 0.97, lambda v, l: v <= l)
        for w in [w for w in ws if w.startswith("meta-")]:
            for c in COW:
                judge("%s %s / bare" % (w, c), ratio(summary, lower, w, c), 1.10,
                      lambda v, l: v <= l)
                judge("%s %s / overlayfs" % (w, c), ratio(summary, lower, w, c),
                      ratio(summary, lower, w, "overlayfs"), lambda v, l: v <= l)
            judge("%s mergerfs / cowlinkfs-all (>= 3)" % w, ratio(summary, lower, w, "mergerfs") /
                  ratio(summary, lower, w, "cowlinkfs-all")
                  if ratio(summary, lower, w, "mergerfs") and ratio(summary, lower, w, "cowlinkfs-all")
                  else None, 3, lambda v, l: v >= l)
        judge("cp -rl through cowlinkfs cow=all / bare", ratio(summary, lower, "tree-clone",
              "cowlinkfs-all"), 1.10, lambda v, l: v <= l)
        judge("cowlink clone / cp -rl on bare", ratio(summary, lower, "tree-clone",
              "cowlinkfs-flag"), 1.2, lambda v, l: v <= l)
        if "clone-tree" in ws:
            judge("cowlink clone of a flagged tree / cp -rl on bare",
                  ratio(summary, lower, "clone-tree", "cowlinkfs-flag"), 1.0, lambda v, l: v <= l)
            for c in COW:
                judge("discard (rm -rf) of a clone, %s / bare" % c,
                      ratio(summary, lower, "clone-discard", c), 1.10, lambda v, l: v <= l)
        cp_a = median(summary, lower, "tree-cp-a", "cowlinkfs-flag")
        judge("cowlink clone / cp -a, both through cowlinkfs",
              median(summary, lower, "tree-clone", "cowlinkfs-flag") / cp_a if cp_a else None,
              1 / 3, lambda v, l: v <= l)
        for c in COW:
            judge("diff -r original vs clone, %s / bare" % c,
                  ratio(summary, lower, "tree-diff-clone", c), 1.10, lambda v, l: v <= l)
            copy = median(summary, lower, "tree-diff-copy", c)
            judge("diff -r vs clone / diff -r vs full copy, %s" % c,
                  median(summary, lower, "tree-diff-clone", c) / copy if copy else None,
                  0.5, lambda v, l: v <= l)
            judge("du -s of both, %s / bare" % c, ratio(summary, lower, "tree-du-both", c), 1.10,
                  lambda v, l: v <= l)
        for w in [w for w in ws if w.startswith("break-") and not w.startswith(("break-cp-",
                                                                            "break-reflink-"))]:
            size = w[len("break-"):]
            cp = median(summary, lower, "break-cp-" + size, "bare")
            for c in COW:
                b = median(summary, lower, w, c)
                if lower == "xfsr" and size.startswith("1g"):
                    judge("break of %s, %s / cp on bare (<= 1/50 with reflink)" % (size, c),
                          b / cp if b and cp else None, 1 / 50, lambda v, l: v <= l)
                elif lower != "xfsr":
                    judge("break of %s, %s / cp on bare" % (size, c), b / cp if b and cp else None,
                          1.1, lambda v, l: v <= l)
    return lines


def gnuplot(out, lower, summary, workloads, scale_files):
    if not shutil.which("gnuplot"):
        return
    dat = os.path.join(out, "ratios-%s.dat" % lower)
    cfgs = CONFIGS[1:]
    with open(dat, "w") as f:
        for w in workloads:
            if w.startswith(("scale-", "break-reflink-")):
                continue
            row = [summary[(lower, w)].get(c, {}).get("ratio") for c in cfgs]
            f.write("%s %s\n" % (w, " ".join("%.4f" % r if r else "NaN" for r in row)))
    sdat = os.path.join(out, "scaling-%s.dat" % lower)
    with open(sdat, "w") as f:
        for c in CONFIGS:
            f.write("# %s\n" % c)
            for k in scale_files:
                vals = [median(summary, lower, "scale-%s@%s" % (w, k), c) for w in
                        ("clone", "diff", "break")]
                f.write("%s %s\n" % (k, " ".join("%.4f" % v if v else "NaN" for v in vals)))
            f.write("\n\n")
    for term, ext in (("svg size 1200,700", "svg"), ("pngcairo size 1200,700", "png")):
        script = """
set terminal %(term)s
set output '%(out)s/ratios-%(lower)s.%(ext)s'
set title 'make bench on %(lower)s: time as a ratio to the bare lower (median over rounds; 1 = bare)'
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set logscale y
set yrange [0.02:50]
set grid ytics
set xtics rotate by -45 font ',8'
set key top left
plot for [i=2:%(n)d] '%(dat)s' using i:xtic(1) title columnhead(i) , 1 with lines lt 0 notitle
""" % {"term": term, "out": out, "lower": lower, "ext": ext, "dat": dat, "n": len(cfgs) + 1}
        # column heads: gnuplot needs them in the file; use titles instead
        script = script.replace("title columnhead(i)", "title word('%s', i-1)" % " ".join(cfgs))
        scaling = """
set terminal %(term)s
set output '%(out)s/scaling-%(lower)s.%(ext)s'
set style data linespoints
set logscale xy
set xlabel 'files'
set ylabel 'seconds'
set multiplot layout 1,3
do for [col=2:4] {
  set title word("clone diff-r first-write", col-1) . ' on %(lower)s (median seconds)'
  plot for [b=0:%(nb)d] '%(sdat)s' index b using 1:col title word('%(cfgs)s', b+1)
}
unset multiplot
""" % {"term": term, "out": out, "lower": lower, "ext": ext, "sdat": sdat,
       "nb": len(CONFIGS) - 1, "cfgs": " ".join(CONFIGS)}
        for text in (script, scaling):
            r = subprocess.run(["gnuplot"], input=text, text=True, capture_output=True)
            if r.returncode:
                sys.stderr.write("bench-report: gnuplot (%s): %s\n" % (ext, r.stderr.strip()[-300:]))


def main():
    results, out = sys.argv[1], sys.argv[2]
    src = os.path.join(results, "bench.csv")
    os.makedirs(out, exist_ok=True)
    rows = load(src)
    if not rows:
        sys.exit("bench-report: no figures in %s" % src)
    shutil.copy(src, os.path.join(out, "bench.csv"))
    bad = failed_rounds(os.path.join(results, "tap"))
    for b in sorted(bad):
        print("bench-report: left out: %s round %s %s, judged not ok by the guest" % b)
    rows = [r for r in rows if (r["lower"], r["round"], r["config"]) not in bad]
    summary = summarise(rows)
    lowers, workloads = [], {}
    for r in rows:
        if r["lower"] not in workloads:
            lowers.append(r["lower"])
            workloads[r["lower"]] = []
        if r["workload"] not in workloads[r["lower"]]:
            workloads[r["lower"]].append(r["workload"])
    kernel = rows[0]["kernel"]
    rounds = max(int(r["round"]) for r in rows)
    for r in rows:
        r["seconds"] = seconds(r)
        r["round"] = int(r["round"])
    with open(os.path.join(out, "bench.json"), "w") as f:
        json.dump({"figures": rows,
                   "ratios": [dict(lower=k[0], workload=k[1], config=c, **v)
                              for k, cfgs in summary.items() for c, v in cfgs.items()]},
                  f, indent=1)
    lines = table(summary, lowers, workloads, kernel, rounds)
    goal = targets(summary, lowers, workloads)
    with open(os.path.join(out, "table.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")
    with open(os.path.join(out, "targets.txt"), "w") as f:
        f.write("\n".join(goal) + "\n")
    print("\n".join(lines))
    print("\n== targets (the benchmark issue's), met or missed")
    print("\n".join(goal))
    for lower in lowers:
        scale_files = sorted({int(w.split("@")[1]) for w in workloads[lower] if "@" in w})
        gnuplot(out, lower, summary, workloads[lower], scale_files)
    print("\nbench: figures, ratios and plots in %s" % out)


if __name__ == "__main__":
    main()
