#!/usr/bin/env python3
"""scripts/ncu_stalls.py on a hand-made source-page CSV of two result tables: per-instruction
sums, reason shares, the split of instructions that few warps run, and clear errors."""
import gzip
import os
import subprocess
import sys
import tempfile

SCRIPT = sys.argv[1]
REASONS = ["stall_long_sb", "stall_no_inst", "stall_barrier", "stall_wait"]
HEADER = ['"Address"', '"Source"', '"# Samples"', '"Instructions Executed"'] + [
    f'"{r}"' for r in REASONS] + [f'"{r} (Not Issued)"' for r in REASONS]


def table(rows):
    out = ['"Kernel Name","toy_kernel(float*)"', ",".join(HEADER)]
    for addr, sass, samples, executed, why in rows:
        cells = [f'"{addr}"', f'"      {sass}"', f'"{samples}"', f'"{executed}"']
        cells += [f'"{why.get(r, 0)}"' for r in REASONS] + ['"0"'] * len(REASONS)
        out.append(",".join(cells))
    return out


def run(path, *extra):
    return subprocess.run([sys.executable, SCRIPT, path, *extra], capture_output=True, text=True)


def check(cond, what, out):
    if not cond:
        print(f"FAIL: {what}\n--- output ---\n{out}")
        sys.exit(1)


lines = []
# Two results of the same kernel: 400 warps run the loads, 8 warps (one block) the tail.
for _ in range(2):
    lines += table([
        ("0x10", "LDC R1, c[0x0][0x28]", 30, 400, {"stall_no_inst": 30}),
        ("0x20", "LDG.E.128 R4, desc[UR4][R2.64]", 60, 400, {"stall_long_sb": 60}),
        ("0x30", "BAR.SYNC.DEFER_BLOCKING 0x0", 6, 8, {"stall_barrier": 4, "stall_wait": 2}),
    ])
with tempfile.TemporaryDirectory() as d:
    path = os.path.join(d, "source.csv.gz")
    with gzip.open(path, "wt") as f:
        f.write("\n".join(lines) + "\n")
    r = run(path, "--rare", "16", "--top", "2")
    out = r.stdout
    check(r.returncode == 0, f"exit code {r.returncode}: {r.stderr}", out)
    check("tables 2, samples 192 (96 per table)" in out, "totals over both tables", out)
    check("long_sb 62.5%" in out and "no_inst 31.2%" in out, "reason shares", out)
    # --top 2 keeps the two busiest instructions: the load (120) and the first one (60).
    check("LDG.E.128" in out and "LDC R1" in out and "BAR.SYNC" not in out.split("run by")[0],
          "top instructions", out)
    check("run by <= 16 warps per table: 12 samples; barrier 8, wait 4" in out,
          "the rarely run instructions, reason by reason", out)

    empty = os.path.join(d, "empty.csv")
    with open(empty, "w") as f:
        f.write("not a source page\n")
    r = run(empty)
    check(r.returncode != 0 and "no source table found" in r.stderr, "a CSV without tables",
          r.stdout + r.stderr)
    r = run(os.path.join(d, "missing.csv"))
    check(r.returncode != 0 and "No such file" in r.stderr, "a missing file", r.stdout + r.stderr)
print("ncu_stalls.py: all checks passed")
