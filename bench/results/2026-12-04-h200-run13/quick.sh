#!/usr/bin/env bash
h=$(cd "$(dirname "$0")" && pwd)
. "$h/env.sh"
"$h/bin/linalgd-gpu-bench" --json "$OUT/gpu_bench_parts.json" 2>&1 | grep -E "solve|rcond|getrs|ratio"
