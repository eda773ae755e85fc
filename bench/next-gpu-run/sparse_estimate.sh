#!/usr/bin/env bash
# What the sparse direct solves' condition estimate costs: bench/sparse_estimate.py (Cholesky of
# the 2-D Poisson matrix, n = 1e6, and the 3-D one, n = 216,000, through the Python client; the
# server's router picks the backend and the reply says which) against two servers on this host,
# one with the estimate (the default) and one without it (--singular-rcond-factor=0), one after
# the other. About 150 s. Run from the repository's root (bench/ and client/python with its
# generated _proto are read from there).
#   tar xJf .gpu-bundle.tar.xz && OUT=$OUT bash gpu-bundle/sparse_estimate.sh
set -u
. "$(dirname "$0")/gpu_run_env.sh" sparse
for cfg in "estimate:" "no_estimate:--singular-rcond-factor=0"; do  # --op-timeout: large solves
  name=${cfg%%:*} flags=${cfg#*:}
  # shellcheck disable=SC2086  # flags: zero or one word
  "$h/bin/linalgd" --listen 127.0.0.1:50071 --op-timeout=120s $flags > "$logs/server_$name.log" 2>&1 &
  pid=$!
  for _ in $(seq 150); do grep -q "listening on" "$logs/server_$name.log" && break; sleep 0.2; done
  PYTHONPATH=$PWD/client/python run "sparse_$name" 200 python3 bench/sparse_estimate.py \
    127.0.0.1:50071 2d:1000 3d:60
  kill "$pid"; wait "$pid"
  { echo "== $name ($flags)"; cat "$logs/sparse_$name.log"; } >> "$s"
done
cat "$s"
