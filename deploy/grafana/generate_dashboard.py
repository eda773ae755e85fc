#!/usr/bin/env python3
"""Writes linalgd-dashboard.json (Grafana) from the panel list below.

  python3 deploy/grafana/generate_dashboard.py          # rewrite the JSON
  python3 deploy/grafana/generate_dashboard.py --check  # exit 1 if stale
"""
import json
import os
import sys

DS = {"type": "prometheus", "uid": "${datasource}"}
SEL = 'instance=~"$instance"'
RATE = "$__rate_interval"
NOT_OK = 'code!="OK"'


def rate(metric, extra=""):
    sel = SEL + ("," + extra if extra else "")
    return f"rate({metric}{{{sel}}}[{RATE}])"


def quantile(q, metric, by):
    return f"histogram_quantile({q}, sum by (le, {by}) ({rate(metric + '_bucket')}))"


# (title, unit, [(expr, legend)], width); a str entry starts a row.
PANELS = [
    "Traffic",
    ("Requests/s by op", "reqps",
     [(f"sum by (op) ({rate('linalgd_requests_total')})", "{{op}}")], 8),
    ("Errors/s by code", "reqps",
     [(f"sum by (code) ({rate('linalgd_requests_total', NOT_OK)})", "{{code}}")], 8),
    ("Requests/s by backend", "reqps",
     [(f"sum by (backend) ({rate('linalgd_requests_total')})", "{{backend}}")], 8),
    ("Request latency p50 / p99 by op", "s",
     [(quantile(0.5, "linalgd_request_duration_seconds", "op"), "p50 {{op}}"),
      (quantile(0.99, "linalgd_request_duration_seconds", "op"), "p99 {{op}}")], 12),
    ("Bytes/s received and sent", "Bps",
     [(f"sum by (transport) ({rate('linalgd_received_bytes_total')})", "in {{transport}}"),
      (f"sum by (transport) ({rate('linalgd_sent_bytes_total')})", "out {{transport}}")], 12),
    "Scheduler",
    ("Queue depth by device", "short",
     [(f"sum by (device) (linalgd_queue_depth{{{SEL}}})", "{{device}}"),
      (f"max by (device) (linalgd_queue_capacity{{{SEL}}})", "capacity {{device}}")], 8),
    ("In-flight jobs by device", "short",
     [(f"sum by (device) (linalgd_inflight_jobs{{{SEL}}})", "{{device}}")], 8),
    ("Queue wait p50 / p99 by backend", "s",
     [(quantile(0.5, "linalgd_queue_wait_seconds", "backend"), "p50 {{backend}}"),
      (quantile(0.99, "linalgd_queue_wait_seconds", "backend"), "p99 {{backend}}")], 8),
    ("Compute time p50 / p99 by op", "s",
     [(quantile(0.5, "linalgd_compute_seconds", "op"), "p50 {{op}}"),
      (quantile(0.99, "linalgd_compute_seconds", "op"), "p99 {{op}}")], 8),
    ("Mean batch size by backend", "short",
     [(f"sum by (backend) ({rate('linalgd_batch_size_sum')}) / "
       f"sum by (backend) ({rate('linalgd_batch_size_count')})", "{{backend}}")], 8),
    ("CPU fallbacks/s by reason", "ops",
     [(f"sum by (reason) ({rate('linalgd_cpu_fallbacks_total')})", "{{reason}}")], 8),
    "Devices",
    ("Device healthy (1) / fenced (0)", "short",
     [(f"min by (device) (linalgd_device_healthy{{{SEL}}})", "{{device}}")], 8),
    ("Device utilization (busy time)", "percentunit",
     [(f"sum by (device) ({rate('linalgd_device_busy_seconds_total')})", "{{device}}")], 8),
    ("Throughput (FLOP/s) by backend", "short",
     [(f"sum by (backend) ({rate('linalgd_flops_total')})", "{{backend}}")], 8),
    ("GPU memory: budget, reserved, used", "bytes",
     [(f"sum by (device) (linalgd_device_memory_budget_bytes{{{SEL}}})", "budget {{device}}"),
      (f"sum by (device) (linalgd_device_memory_reserved_bytes{{{SEL}}})", "reserved {{device}}"),
      (f"sum by (device) (linalgd_device_memory_used_bytes{{{SEL}}})", "used {{device}}")], 12),
    ("Resident store", "bytes",
     [(f"sum by (instance) (linalgd_resident_store_bytes{{{SEL}}})", "bytes {{instance}}"),
      (f"sum by (instance) (linalgd_resident_store_objects{{{SEL}}})", "objects {{instance}}")], 12),
]


def timeseries(pid, title, unit, targets, x, y, w):
    panel = {
        "id": pid, "type": "timeseries", "title": title, "datasource": DS,
        "gridPos": {"h": 8, "w": w, "x": x, "y": y},
        "fieldConfig": {"defaults": {"unit": unit}, "overrides": []},
        "options": {"legend": {"displayMode": "list", "placement": "bottom", "showLegend": True},
                    "tooltip": {"mode": "multi", "sort": "desc"}},
        "targets": [{"datasource": DS, "expr": e, "legendFormat": l, "refId": chr(65 + i)}
                    for i, (e, l) in enumerate(targets)],
    }
    if title == "Resident store":  # objects are a count, not bytes
        panel["fieldConfig"]["overrides"].append({
            "matcher": {"id": "byRegexp", "options": "objects.*"},
            "properties": [{"id": "unit", "value": "short"},
                           {"id": "custom.axisPlacement", "value": "right"}]})
    return panel


def panels():
    out, pid, x, y = [], 1, 0, 0
    for entry in PANELS:
        if isinstance(entry, str):
            y += 0 if x == 0 else 8
            x = 0
            out.append({"id": pid, "type": "row", "title": entry, "collapsed": False,
                        "gridPos": {"h": 1, "w": 24, "x": 0, "y": y}, "panels": []})
            pid, y = pid + 1, y + 1
            continue
        title, unit, targets, w = entry
        if x + w > 24:
            x, y = 0, y + 8
        out.append(timeseries(pid, title, unit, targets, x, y, w))
        pid, x = pid + 1, x + w
    return out


def dashboard():
    return {
        "uid": "linalgd", "title": "linalgd", "tags": ["linalgd"],
        "description": "linalgd: traffic, scheduler, devices and data (deploy/grafana).",
        "editable": True, "graphTooltip": 1, "refresh": "30s", "schemaVersion": 39,
        "time": {"from": "now-1h", "to": "now"}, "timezone": "", "version": 1,
        "annotations": {"list": []}, "links": [],
        "templating": {"list": [
            {"name": "datasource", "label": "Data source", "type": "datasource",
             "query": "prometheus", "current": {}, "hide": 0},
            {"name": "instance", "label": "Instance", "type": "query", "datasource": DS,
             "query": {"query": "label_values(linalgd_build_info, instance)", "refId": "instance"},
             "definition": "label_values(linalgd_build_info, instance)",
             "refresh": 2, "multi": True, "includeAll": True, "allValue": ".*",
             "current": {}, "sort": 1, "hide": 0},
        ]},
        "panels": panels(),
    }


def main():
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "linalgd-dashboard.json")
    text = json.dumps(dashboard(), indent=2) + "\n"
    if "--check" in sys.argv[1:]:
        with open(path) as f:
            if f.read() != text:
                print(f"{path} is stale: run python3 {sys.argv[0]}")
                return 1
        return 0
    with open(path, "w") as f:
        f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
