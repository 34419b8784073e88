#!/usr/bin/env python3
"""Summarises warp-stall samples from Nsight Compute's source page.

Input: the CSV that `ncu -i REPORT --page source --csv --print-source sass` prints (plain or
gzip). It holds one table per profiled result (ncu may print more than one per launch); this
script adds the tables up per SASS instruction and prints, per kernel:
  - the share of each stall reason over all samples;
  - the instructions with the most samples and their top reasons;
  - with --rare N, the samples of instructions that at most N warps per table execute (in the
    fused and sampling verifiers: the reducing block's tail), reason by reason.
Reasons, briefly: long_sb waits for a global load, no_inst for instruction fetch, imc for the
constant cache, barrier for a block barrier, wait for a fixed-latency dependency.
"""
import argparse
import collections
import csv
import gzip
import io
import sys


def read_tables(path):
    opener = gzip.open if path.endswith(".gz") else open
    try:
        with opener(path, "rt") as f:
            lines = f.read().splitlines()
    except OSError as e:
        sys.exit(f"{path}: {e.strerror or e}")
    starts = [i for i, line in enumerate(lines) if line.startswith('"Address"')]
    for k, start in enumerate(starts):
        name = next(csv.reader([lines[start - 1]]))[1] if start > 0 else "?"
        end = starts[k + 1] - 1 if k + 1 < len(starts) else len(lines)
        rows = list(csv.reader(io.StringIO("\n".join(lines[start:end]))))
        yield name, rows[0], rows[1:]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("csv", help="source-page CSV (.csv or .csv.gz)")
    ap.add_argument("--top", type=int, default=15, help="instructions to list (default 15)")
    ap.add_argument("--rare", type=int, default=0,
                    help="also split out instructions run by at most N warps per table")
    args = ap.parse_args()

    kernels = collections.OrderedDict()
    for name, header, rows in read_tables(args.csv):
        col = {h: i for i, h in enumerate(header)}
        reasons = [h for h in header if h.startswith("stall_") and "Not Issued" not in h]
        k = kernels.setdefault(name, {"tables": 0, "instr": collections.OrderedDict()})
        k["tables"] += 1
        for idx, r in enumerate(rows):
            if len(r) < len(header):
                continue
            entry = k["instr"].setdefault(idx, {"sass": r[col["Source"]].strip(), "samples": 0,
                                                "executed": 0, "why": collections.Counter()})
            entry["samples"] += int(r[col["# Samples"]] or 0)
            entry["executed"] += int(r[col["Instructions Executed"]] or 0)
            for reason in reasons:
                v = r[col[reason]]
                if v not in ("", "0"):
                    entry["why"][reason[len("stall_"):]] += int(v)
    if not kernels:
        sys.exit(f"{args.csv}: no source table found (was it printed with --page source --csv?)")

    for name, k in kernels.items():
        tables = k["tables"]
        instr = k["instr"]
        total = collections.Counter()
        for e in instr.values():
            total.update(e["why"])
        n = sum(total.values()) or 1
        print(f"== {name[:120]}")
        print(f"   tables {tables}, samples {n} ({n / tables:.0f} per table)")
        shares = ", ".join(f"{r} {100 * c / n:.1f}%" for r, c in total.most_common(10))
        print("   reasons: " + shares)
        print(f"   top {args.top} instructions (index, warps per table, samples, SASS, reasons):")
        for idx in sorted(sorted(instr, key=lambda i: -instr[i]["samples"])[: args.top]):
            e = instr[idx]
            why = ", ".join(f"{r} {c}" for r, c in e["why"].most_common(3))
            warps = e["executed"] / tables
            print(f"   {idx:5d} {warps:8.1f} {e['samples']:6d}  {e['sass'][:56]:56s} {why}")
        if args.rare:
            rare = collections.Counter()
            m = 0
            for e in instr.values():
                if 0 < e["executed"] / tables <= args.rare:
                    rare.update(e["why"])
                    m += e["samples"]
            print(f"   instructions run by <= {args.rare} warps per table: {m} samples; "
                  + ", ".join(f"{r} {c}" for r, c in rare.most_common(8)))
        print()


if __name__ == "__main__":
    main()
