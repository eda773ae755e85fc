#!/usr/bin/env bash
# GPU-host run 12 (one H200): fair sharing between tenants. A small tenant's
# 64^3 f32 matmul p50 alone and while another tenant's 256 callers flood the
# same server (bench/tenant_fairness.py), with tenants taking turns, and with
# both as one tenant (--fifo) for comparison; and --version of the binaries.
#   tar xJf .gpu-bundle.tar.xz && bash gpu-bundle/run.sh
set -u
h=$(cd "$(dirname "$0")" && pwd)
. "$h/env.sh"
out=${OUT:-/tmp/out}; mkdir -p "$out"
s=$out/summary.txt; : > "$s"
if [[ -z "${OPENBLAS_CORETYPE:-}" ]] && grep -q avx512f /proc/cpuinfo; then export OPENBLAS_CORETYPE=SkylakeX; fi
export LINALGD_CRC32C_LIBRARY="$h/liblinalgd_crc32c.so"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader >> "$s" 2>&1
for b in linalgd linalgd-cli linalgd-bench linalgd-gpu-bench; do "$h/bin/$b" --version >> "$s" 2>&1; done
for mode in turns fifo turns fifo; do
  extra=(); [[ $mode == fifo ]] && extra=(--fifo)
  echo "== $mode" >> "$s"
  timeout 120 python3 bench/tenant_fairness.py --server "$h/bin/linalgd" --flood-callers 256 \
    --flood-n 128 --calls 400 "${extra[@]}" >> "$s" 2>&1; echo "rc=$?" >> "$s"
done
cat "$s"
