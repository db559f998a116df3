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
and scaling-LOWER.svg/.png.  The runs workload (runs-*: the cross-arch
runs, set up, run and discarded each way) gets a table of its own,
runs.txt (printed too), and runs-LOWER.svg/.png.
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
# The runs workload's ways, in the order of its table, and what each does
RUNS = [("bare", "cp -a --reflink=never"), ("reflink", "cp -a --reflink=always"),
        ("overlayfs", "overlay, fresh upper"), ("cowdancer", "cp -al + cow-shell"),
        ("hardlinks", "cp -al, unprotected"), ("cowlinkfs-flag", "cowlink clone"),
        ("cowlinkfs-nosync", "cowlink clone, break_sync=off")]
RUN_STEPS = ["runs-setup", "runs-run", "runs-discard"]
# The metadata path's limits, ratio to the bare lower, cold (meta-*, tree-*)
# and warm (warm-*) alike; each row is also judged against overlayfs's
META_LIMITS = {}
for _cache, _names in (("meta", {"create": 1.15, "stat": 1.15, "miss": 1.10, "unlink": 1.10,
                                 "untar": 1.10, "find": 1.10, "du": 1.10, "rm": 1.10}),
                       ("warm", {"create": 1.15, "stat": 1.15, "miss": 1.10, "unlink": 1.10,
                                 "untar": 1.10, "find": 1.10, "du": 1.10, "rm": 1.10,
                                 "cp-a": 1.20, "cp-rl": 1.20, "diff-clone": 1.20})):
    for _w, _limit in _names.items():
        META_LIMITS["%s-%s" % (_cache, _w)] = _limit
META_LIMITS.update({"tree-cp-a": 1.20, "tree-clone": 1.20, "tree-diff-clone": 1.20})


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
        for w in [w for w in ws if w in META_LIMITS]:
            for c in COW:
                if w == "tree-clone" and c == "cowlinkfs-flag":
                    continue  # cowlink clone, judged below
                judge("%s %s / bare" % (w, c), ratio(summary, lower, w, c), META_LIMITS[w],
                      lambda v, l: v <= l)
                judge("%s %s / overlayfs" % (w, c), ratio(summary, lower, w, c),
                      ratio(summary, lower, w, "overlayfs"), lambda v, l: v <= l)
        for w in [w for w in ws if w.startswith("meta-")]:
            judge("%s mergerfs / cowlinkfs-all (>= 3)" % w, ratio(summary, lower, w, "mergerfs") /
                  ratio(summary, lower, w, "cowlinkfs-all")
                  if ratio(summary, lower, w, "mergerfs") and ratio(summary, lower, w, "cowlinkfs-all")
                  else None, 3, lambda v, l: v >= l)
        judge("cowlink clone / cp -rl on bare", ratio(summary, lower, "tree-clone",
              "cowlinkfs-flag"), 1.2, lambda v, l: v <= l)
        if "clone-tree" in ws:
            judge("cowlink clone of a flagged tree / cp -rl on bare",
                  ratio(summary, lower, "clone-tree", "cowlinkfs-flag"), 1.0, lambda v, l: v <= l)
            for c in COW:
                judge("discard (cowlink discard) of a clone, %s / rm -rf on bare" % c,
                      ratio(summary, lower, "clone-discard", c), 1.10, lambda v, l: v <= l)
        cp_a = median(summary, lower, "tree-cp-a", "cowlinkfs-flag")
        judge("cowlink clone / cp -a, both through cowlinkfs",
              median(summary, lower, "tree-clone", "cowlinkfs-flag") / cp_a if cp_a else None,
              1 / 3, lambda v, l: v <= l)
        for c in COW:
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


def runs_figures(rows, allrows, lower):
    """{config: {...}} for the runs workload on LOWER: median seconds of each
    step and of their sum per round, the median per-round ratios of each
    to cowlink clone's, MiB per run, and
    whether the pristine tree stayed intact (from every row: a round the
    guest judged not ok for a changed tree is the very finding)."""
    by = {}
    for r in rows:
        if r["lower"] == lower and r["workload"].startswith("runs-"):
            by.setdefault(r["config"], {}).setdefault(r["round"], {})[r["workload"]] = r
    intact = {r["config"]: r for r in allrows
              if r["lower"] == lower and r["workload"] == "runs-intact"}

    def total(rounds, n):
        steps = rounds.get(n, {})
        secs = [seconds(steps[w]) if w in steps else None for w in RUN_STEPS]
        return sum(secs) if None not in secs else None

    out = {}
    for cfg, _ in RUNS:
        rounds = by.get(cfg)
        if not rounds and cfg not in intact:
            continue
        rounds = rounds or {}
        f = {"failed": sum(r["seconds"] == "fail" for st in rounds.values() for r in st.values())}
        for w in RUN_STEPS + ["total"]:
            v = [total(rounds, n) if w == "total" else seconds(rounds[n][w])
                 for n in rounds if w == "total" or w in rounds[n]]
            v = [x for x in v if x is not None]
            f[w] = statistics.median(v) if v else None
        # each step's ratio to cowlink clone's in the same round
        b = by.get("cowlinkfs-flag", {})
        for step in RUN_STEPS + ["total"]:
            ratios = []
            for n in rounds:
                if step == "total":
                    x, y = total(rounds, n), total(b, n)
                else:
                    x = seconds(rounds[n][step]) if step in rounds[n] else None
                    y = seconds(b[n][step]) if n in b and step in b[n] else None
                if x is not None and y:
                    ratios.append(x / y)
            f["x" + step] = statistics.median(ratios) if ratios else None
        disk = [int(st["runs-disk"]["bytes"]) for st in rounds.values() if "runs-disk" in st]
        f["mib"] = statistics.median(disk) / 1048576 if disk else None
        f["files"] = next((r["files"] for st in rounds.values() for w, r in st.items()
                           if w != "runs-intact"), "")
        i = intact.get(cfg)
        f["intact"] = None if i is None else i["note"]
        out[cfg] = f
    return out


def runs_table(figs, lower, kernel, rounds):
    def num(v, fmt):
        return fmt % v if v is not None else "-"

    files = next((f["files"] for f in figs.values() if f["files"]), "?")
    lines = ["", "== cross-arch runs on %s (kernel %s, %s rounds, a tree of %s names): median "
             "seconds per run; ratios are medians of the per-round ratios" % (
                 lower, kernel, rounds, files),
             "%-15s %-23s %8s %8s %8s %8s  %-23s %7s  %s" % (
                 "config", "way", "setup", "run", "discard", "total",
                 "x cowlink clone's", "MiB", "pristine tree after the runs"),
             "%-15s %-23s %8s %8s %8s %8s  %-23s %7s" % (
                 "", "", "s", "s", "s", "s", "setup run disc. total", "per run")]
    for cfg, way in RUNS:
        f = figs.get(cfg)
        if f is None:
            continue
        if f["intact"] is None:
            pristine = "not checked"
        elif f["intact"] == "intact":
            pristine = "intact"
        else:
            pristine = "CHANGED (%s)" % f["intact"][len("changed: "):].strip()
        lines.append("%-15s %-23s %8s %8s %8s %8s  %-23s %7s  %s" % (
            cfg, way, num(f["runs-setup"], "%.2f"), num(f["runs-run"], "%.1f"),
            num(f["runs-discard"], "%.2f"), num(f["total"], "%.1f"),
            " ".join("%5s" % num(f["x" + w], "%.2f") for w in RUN_STEPS + ["total"]),
            num(f["mib"], "%.1f"),
            pristine + (" [%d failed steps]" % f["failed"] if f["failed"] else "")))
    return lines


def runs_plot(out, lower, figs):
    """Stacked bars of setup, run and discard, and MiB per run, per way."""
    if not shutil.which("gnuplot") or not figs:
        return
    dat = os.path.join(out, "runs-%s.dat" % lower)
    with open(dat, "w") as f:
        for cfg, way in RUNS:
            x = figs.get(cfg)
            if x is None:
                continue
            vals = [x[w] for w in RUN_STEPS] + [x["mib"]]
            label = way + ("" if x["intact"] in (None, "intact") else ": CHANGED")
            f.write('"%s" %s\n' % (label, " ".join("%.4f" % v if v is not None else "NaN"
                                                   for v in vals)))
    for term, ext in (("svg size 1500,600", "svg"), ("pngcairo size 1500,600", "png")):
        script = """
set terminal %(term)s noenhanced
set output '%(out)s/runs-%(lower)s.%(ext)s'
set multiplot layout 1,3 title 'cross-arch runs on %(lower)s, side by side in one TCG guest (median per run)'
set style data histograms
set style fill solid 0.8 border -1
set grid ytics
set xtics rotate by -35 font ',8'
set key below
set yrange [0:*]
set style histogram rowstacked
set ylabel 'seconds'
set title 'setup + run + discard'
plot '%(dat)s' using 2:xtic(1) title 'setup', '' using 3 title 'run', '' using 4 title 'discard'
set style histogram clustered gap 1
set title 'setup and discard'
plot '%(dat)s' using 2:xtic(1) title 'setup', '' using 4 title 'discard' lc 3
set ylabel 'MiB'
set title 'disk used per run (df)'
plot '%(dat)s' using 5:xtic(1) notitle lc 4
unset multiplot
""" % {"term": term, "out": out, "lower": lower, "ext": ext, "dat": dat}
        r = subprocess.run(["gnuplot"], input=script, text=True, capture_output=True)
        if r.returncode:
            sys.stderr.write("bench-report: gnuplot (%s): %s\n" % (ext, r.stderr.strip()[-300:]))


def meta_plot(out, lower, summary, workloads):
    """The metadata path, cold and warm side by side: median ratio to the
    bare lower per step, with its limit, for cowlinkfs and overlayfs."""
    steps = [w for w in workloads if w in META_LIMITS]
    if not shutil.which("gnuplot") or not steps:
        return
    cfgs = ["cowlinkfs-flag", "cowlinkfs-all", "overlayfs"]
    dat = os.path.join(out, "meta-%s.dat" % lower)
    with open(dat, "w") as f:
        for w in steps:
            row = [summary[(lower, w)].get(c, {}).get("ratio") for c in cfgs]
            f.write("%s %s %.2f\n" % (w, " ".join("%.4f" % r if r else "NaN" for r in row),
                                       META_LIMITS[w]))
    for term, ext in (("svg size 1200,500", "svg"), ("pngcairo size 1200,500", "png")):
        script = """
set terminal %(term)s noenhanced
set output '%(out)s/meta-%(lower)s.%(ext)s'
set title 'metadata on %(lower)s, caches dropped (meta-, tree-) and warm (warm-): median time as a ratio to the bare lower; the line is the limit'
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set yrange [0.8:*]
set grid ytics
set xtics rotate by -40 font ',8'
set key below horizontal
plot '%(dat)s' using 2:xtic(1) title 'cowlinkfs cow=flag', '' using 3 title 'cowlinkfs cow=all', \\
     '' using 4 title 'overlayfs', '' using 0:5:(0.45) with xerrorbars pt 0 lc 'black' lw 2 title 'limit'
""" % {"term": term, "out": out, "lower": lower, "ext": ext, "dat": dat}
        r = subprocess.run(["gnuplot"], input=script, text=True, capture_output=True)
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
    allrows = rows
    rows = [r for r in rows if (r["lower"], r["round"], r["config"]) not in bad]
    summary = summarise(rows)
    runs = {lower: runs_figures(rows, allrows, lower) for lower in
            dict.fromkeys(r["lower"] for r in allrows)}
    runs = {k: v for k, v in runs.items() if v}
    lowers, workloads = [], {}
    for r in rows:
        if r["lower"] not in workloads:
            lowers.append(r["lower"])
            workloads[r["lower"]] = []
        # the runs workload has a table of its own
        if r["workload"] not in workloads[r["lower"]] and not r["workload"].startswith("runs-"):
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
    lines = table(summary, [x for x in lowers if workloads[x]], workloads, kernel, rounds)
    for lower, figs in runs.items():
        lines += runs_table(figs, lower, kernel, rounds)
    goal = targets(summary, [x for x in lowers if workloads[x]], workloads)
    with open(os.path.join(out, "table.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")
    with open(os.path.join(out, "targets.txt"), "w") as f:
        f.write("\n".join(goal) + "\n")
    print("\n".join(lines))
    if goal:
        print("\n== targets (the benchmark issue's), met or missed")
        print("\n".join(goal))
    if runs:
        with open(os.path.join(out, "runs.txt"), "w") as f:
            f.write("\n".join(sum((runs_table(figs, lower, kernel, rounds)
                                   for lower, figs in runs.items()), [])) + "\n")
    for lower in lowers:
        if workloads[lower]:
            scale_files = sorted({int(w.split("@")[1]) for w in workloads[lower] if "@" in w})
            gnuplot(out, lower, summary, workloads[lower], scale_files)
            meta_plot(out, lower, summary, workloads[lower])
    for lower, figs in runs.items():
        runs_plot(out, lower, figs)
    print("\nbench: figures, ratios and plots in %s" % out)


if __name__ == "__main__":
    main()
