#!/usr/bin/env python3
"""Compare the fstests sections of a make fstests run.

Usage: fstests-report.py RESULTS KNOWN OUT [TAP [EXPECTED]]

RESULTS is the guest's results/fstests directory (local.config, and per
section SECTION.out, results/SECTION/result.xml, SECTION.fsck-rc), or
several of them joined by ":", the parts of one group run in parts
(FSTESTS_SKIP): their sections and tests together, a later part's
result of a test over an earlier one's; KNOWN is
tests/fstests/known (lines "TEST MODE REASON": a documented difference of
cowlinkfs in MODE, flag, all or any; TEST "notrun:WORD" stands for every
test fstests did not run through cowlinkfs with WORD in its reason).  Writes OUT/report.txt and OUT/report.csv,
prints the summary, and lists as regressions the tests that pass on the
bare lower but fail or never ran through cowlinkfs and are not known (those
notrun through cowlinkfs are listed apart, with fstests' reason).  Exits 1
when there is a regression or such a notrun (a difference the rst does
not explain yet), a section without results, or an unclean lower fs.
A cowlinkfs section without the bare section of its lower in the run is
held to "every test passes": every test it ran, and every test named in
EXPECTED (a list like tests/fstests/smoke, a test per line), which it
may not leave out.  With TAP, also writes
one TAP line per test of each cowlinkfs section there (as make test's
fstests leg is judged): ok when it passes, or does not pass on the bare
lower either, or is a documented difference (both "# SKIP" with the
reason); not ok for a regression, and for each problem.
"""
import csv
import os
import re
import sys
import xml.etree.ElementTree as ET


def sections(results):
    """The sections of each part's local.config, in order."""
    out = []
    for part in results.split(":"):
        with open(os.path.join(part, "local.config")) as f:
            for line in f:
                m = re.match(r"^\[(\w+)\]$", line.strip())
                if m and m.group(1) not in out:
                    out.append(m.group(1))
    return out


def lower_and_mode(sec):
    m = re.match(r"^cowlinkfs_(\w+?)_(flag|all)$", sec)
    return (m.group(1), m.group(2)) if m else (sec, "bare")


def results_of(results, sec):
    """{test: (state, reason)} from the section's xunit reports."""
    out = None
    for part in results.split(":"):
        r = results_of_part(part, sec)
        if r is not None:
            out = {**(out or {}), **r}
    return out


def results_of_part(results, sec):
    """{test: (state, reason)} from the section's xunit report of one part."""
    path = os.path.join(results, "results", sec, "result.xml")
    if not os.path.exists(path):
        return None
    out = {}
    root = ET.parse(path).getroot()
    for tc in root.iter("testcase"):
        name = tc.get("name")
        state, reason = "pass", ""
        for child in tc:
            if child.tag == "skipped":
                state, reason = "notrun", child.get("message", "")
            elif child.tag in ("failure", "error"):
                state, reason = "fail", child.get("message", "")
        out[name] = (state, reason)
    return out


# "TEST MODE REASON"; a "notrun:WORDS" key may have spaces, up to the mode
KNOWN_LINE = re.compile(r"^(notrun:.+?|\S+)\s+(flag|all|any)\s+(.+)$")


def known_of(path):
    out = {}
    if os.path.exists(path):
        with open(path) as f:
            for n, line in enumerate(f, 1):
                line = line.strip()
                if not line or line.startswith("#"):
                    continue
                m = KNOWN_LINE.match(line)
                if not m:
                    sys.exit(f"{path}:{n}: not TEST MODE REASON: {line}")
                out[(m.group(1), m.group(2))] = m.group(3)
    return out


def known_why(known, test, mode, state, reason):
    """The documented reason a test does not pass through cowlinkfs, if any."""
    for (k, kmode), why in known.items():
        if kmode not in (mode, "any"):
            continue
        if k == test:
            return why
        if k.startswith("notrun:") and state == "notrun" and k[7:] in reason:
            return why
    return None


def main():
    results, known_path, out = sys.argv[1:4]
    os.makedirs(out, exist_ok=True)
    known = known_of(known_path)
    expected = []
    if len(sys.argv) > 5:
        with open(sys.argv[5]) as f:
            expected = [ln.split()[0] for ln in f if ln.strip() and not ln.startswith("#")]
    for part in results.split(":"):
        if not os.path.exists(os.path.join(part, "local.config")):
            print(f"problem: no results in {part}: the guest never ran fstests")
            return 1
    secs = sections(results)
    by = {}
    bad = []
    for sec in secs:
        r = results_of(results, sec)
        if r is None:
            bad.append(f"{sec}: no result.xml (see {sec}.out)")
            r = {}
        by[sec] = r
        for part in results.split(":"):
            rc_path = os.path.join(part, sec + ".fsck-rc")
            if os.path.exists(rc_path) and open(rc_path).read().strip() != "0":
                bad.append(f"{sec}: the lower fs is not clean after {part} (see {sec}.fsck)")

    lines = []
    rows = []
    regress = []
    knownhit = []
    lines.append(f"{'section':28} {'run':>5} {'pass':>5} {'fail':>5} {'notrun':>6}")
    for sec in secs:
        r = by[sec]
        n = {s: sum(1 for v in r.values() if v[0] == s) for s in ("pass", "fail", "notrun")}
        lines.append(f"{sec:28} {n['pass'] + n['fail']:5} {n['pass']:5} {n['fail']:5} "
                     f"{n['notrun']:6}")
    notrun = []
    tap = []
    for sec in secs:
        lower, mode = lower_and_mode(sec)
        if mode == "bare":
            continue
        if lower in by:
            base = by[lower]
        else:
            # No baseline in this run (make test's smoke list, chosen
            # among tests that pass on the bare lower): every test must pass.
            base = {t: ("pass", "") for t in list(by[sec]) + expected}
            lines.append(f"{sec}: no bare {lower} section, every test expected to pass")
        for test in sorted(set(base) | set(by[sec])):
            bstate, breason = base.get(test, ("-", ""))
            state, reason = by[sec].get(test, ("missing", "never reached"))
            rows.append([lower, mode, test, bstate, state, reason or breason])
            name = f"fstests/{lower}/{mode}/{test}"
            if state == "pass":
                tap.append(f"ok {name}")
                continue
            # Not run on the bare lower (a bare section of some tests
            # only): expected to pass, as with no bare section at all.
            if bstate not in ("pass", "-"):
                tap.append(f"ok {name} # SKIP {state}, and {bstate} on the bare lower")
                continue
            why = known_why(known, test, mode, state, reason)
            short = " ".join(reason.split())[:100]
            if bstate == "-":
                short += " [no bare run]"
            if why:
                knownhit.append(f"{lower} {mode} {test}: {state} ({why})")
                tap.append(f"ok {name} # SKIP documented: {why}")
            elif state == "notrun":
                notrun.append(f"{lower} {mode} {test}: {short}")
                tap.append(f"not ok {name}\n# notrun through cowlinkfs only: {short}")
            else:
                regress.append(f"{lower} {mode} {test}: {state} through cowlinkfs ({short})")
                tap.append(f"not ok {name}\n# {state} through cowlinkfs, passes on the"
                           f" bare lower: {short}")
    lines.append("")
    lines.append(f"pass on the bare lower, not through cowlinkfs, documented: {len(knownhit)}")
    lines += ["  " + k for k in knownhit]
    lines.append(f"pass on the bare lower, notrun through cowlinkfs (fstests' reason): "
                 f"{len(notrun)}")
    lines += ["  " + k for k in notrun]
    lines.append(f"pass on the bare lower, fail or missing through cowlinkfs, not documented: "
                 f"{len(regress)}")
    lines += ["  " + k for k in regress]
    lines += ["problem: " + b for b in bad]
    with open(os.path.join(out, "report.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")
    with open(os.path.join(out, "report.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["lower", "mode", "test", "bare", "cowlinkfs", "reason"])
        w.writerows(rows)
    print("\n".join(lines))
    if len(sys.argv) > 4:
        tap += [f"not ok fstests/problem\n# {b}" for b in bad]
        with open(sys.argv[4], "w") as f:
            f.write(f"TAP version 13\n1..{len(tap)}\n")
            for i, t in enumerate(tap, 1):
                word, rest = ("not ok", t[7:]) if t.startswith("not ok") else ("ok", t[3:])
                f.write(f"{word} {i} {rest}\n")
    return 1 if regress or notrun or bad else 0


if __name__ == "__main__":
    sys.exit(main())
