#!/usr/bin/env bash
# Which kernels of kernels/verify_sampling.cu compile to the same PTX in two trees, on the CPU
# machine (same nvcc, sm_90): each argument is REV or REV+PATCH (a patch file applied to REV's
# kernels/ and include/; WORK = the working tree). Labels ($L__...) and the anonymous namespace's
# path hash are ignored. Used on
# 2026-12-07 to show that the landed rows kernel is the one measured as `exp` at 10:41 UTC
# (pick_count.patch) and that the path and chain kernels are main's.
set -eu
root=$(git rev-parse --show-toplevel)
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
ptx() { # $1 spec, $2 output
  local rev=${1%%+*} patch= d=$tmp/src_$RANDOM
  [[ $1 == *+* ]] && patch=${1#*+}
  mkdir -p "$d"
  if [ "$rev" = WORK ]; then cp -r "$root/kernels" "$root/include" "$root/src" "$d/"
  else git -C "$root" archive "$rev" kernels include src | tar -x -C "$d"; fi
  [ -n "$patch" ] && (cd "$d" && patch -s -p1 < "$root/$patch")
  /usr/local/cuda/bin/nvcc -DSPECBENCH_HAVE_CUDA=1 -I"$d/include" -O3 -DNDEBUG -arch=sm_90 \
    --expt-relaxed-constexpr -std=c++17 -x cu -ptx "$d/kernels/verify_sampling.cu" -o "$2"
}
ptx "$1" "$tmp/a.ptx"; ptx "$2" "$tmp/b.ptx"
[ -n "${KEEP:-}" ] && cp "$tmp"/[ab].ptx "$KEEP"/
python3 - "$tmp/a.ptx" "$tmp/b.ptx" <<'PY'
import re, sys
def entries(path):
    # The anonymous namespace's names carry a hash of the file's path: made equal.
    s = re.sub(r'(_INTERNAL_|_GLOBAL__N__)[0-9a-f]{8}_', r'\1X_', open(path).read())
    out = {}
    for part in re.split(r'(?m)^(?=\.visible \.entry|\.entry|\.weak \.entry)', s):
        m = re.search(r'\.entry\s+(\S+)\(', part)
        if m:
            out[m.group(1)] = re.sub(r'\$L__\w+', 'L', part)
    return out
a, b = entries(sys.argv[1]), entries(sys.argv[2])
for k in sorted(set(a) | set(b)):
    name = re.search(r'(tree_rows_kernel|tree_path_kernel|chain_sampling_kernel)ILb(\d)', k)
    label = f"{name.group(1)}<{'true' if name.group(2) == '1' else 'false'}>" if name else k
    print(f"{label:36s} {'same' if a.get(k) == b.get(k) else 'differs'}")
PY
