// Checks that every metric the dashboard, the alert rules and the autoscaler
// queries use is one that a live linalgd exports, and writes the dashboard's
// queries as a Prometheus rule file so that `promtool check rules` parses
// them.
//   node check_metrics.mjs --scrape FILE|URL --dashboard JSON --alerts YAML
//        [--manifests YAML...] [--rules-out FILE]
import { readFileSync, writeFileSync } from "node:fs";
import { parseAllDocuments, parse } from "yaml";

// Series that Prometheus itself makes, not the target.
const BUILTIN = new Set(["up", "scrape_duration_seconds", "scrape_samples_scraped", "ALERTS"]);
const KEYWORDS = new Set(["by", "without", "on", "ignoring", "group_left", "group_right", "bool",
  "and", "or", "unless", "offset", "inf", "nan", "Inf", "NaN"]);

// Metric names in a PromQL expression (a tokenizer, not a parser: strings,
// label matchers, ranges, grouping lists, numbers and function calls are
// removed first).
export function metricNames(expr) {
  let e = expr
    .replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`/g, '""')
    .replace(/\{[^}]*\}/g, " ")
    .replace(/\[[^\]]*\]/g, " ")
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, " ")
    .replace(/\boffset\s+\S+/g, " ")
    .replace(/\$\{?\w+\}?/g, " ")
    .replace(/(^|[^\w:])\d+(\.\d+)?(e[+-]?\d+)?/gi, "$1 ");
  const names = new Set();
  for (const m of e.matchAll(/[a-zA-Z_:][a-zA-Z0-9_:]*(\s*\()?/g)) {
    const word = m[0].replace(/\s*\($/, "");
    if (m[1] || KEYWORDS.has(word)) continue;  // a function call or keyword
    names.add(word);
  }
  return names;
}

function dashboardExprs(dash) {
  const out = [];
  const walk = (panels) => {
    for (const p of panels ?? []) {
      for (const t of p.targets ?? []) if (t.expr) out.push({ where: `panel "${p.title}"`, expr: t.expr });
      walk(p.panels);
    }
  };
  walk(dash.panels);
  for (const v of dash.templating?.list ?? []) {
    const q = typeof v.query === "string" ? v.query : v.query?.query;
    const lv = /^label_values\(\s*([^,)]+)/.exec(q ?? "");
    if (lv) out.push({ where: `variable $${v.name}`, expr: lv[1] });
  }
  return out;
}

function alertExprs(rules) {
  return rules.groups.flatMap((g) => g.rules.map((r) => ({ where: `alert ${r.alert ?? r.record}`, expr: r.expr })));
}

function manifestExprs(files) {
  const out = [];
  for (const f of files) {
    for (const doc of parseAllDocuments(readFileSync(f, "utf8"))) {
      const o = doc.toJS();
      for (const t of o?.spec?.triggers ?? []) {
        if (t.type === "prometheus") out.push({ where: `${o.kind}/${o.metadata.name}`, expr: t.metadata.query });
      }
    }
  }
  return out;
}

// Metric names in a text-format scrape: # TYPE lines (with the histogram
// suffixes) and sample lines.
function exportedNames(text) {
  const names = new Set();
  const families = new Set();
  for (const line of text.split("\n")) {
    const type = /^# TYPE (\S+) (\S+)/.exec(line);
    if (type) {
      families.add(type[1]);
      names.add(type[1]);
      if (type[2] === "histogram" || type[2] === "summary") {
        for (const s of ["_bucket", "_sum", "_count"]) names.add(type[1] + s);
      }
    } else if (/^[a-zA-Z_:]/.test(line)) {
      names.add(/^[a-zA-Z0-9_:]+/.exec(line)[0]);
    }
  }
  return { names, families };
}

function arg(args, name) {
  const i = args.indexOf(name);
  return i < 0 ? undefined : args[i + 1];
}

async function main() {
  const args = process.argv.slice(2);
  const src = arg(args, "--scrape");
  const scrape = /^https?:/.test(src) ? await (await fetch(src)).text() : readFileSync(src, "utf8");
  const { names, families } = exportedNames(scrape);
  const dash = JSON.parse(readFileSync(arg(args, "--dashboard"), "utf8"));
  const manifests = args.flatMap((a, i) => (args[i - 1] === "--manifests" ? [a] : []));
  const uses = [...dashboardExprs(dash), ...alertExprs(parse(readFileSync(arg(args, "--alerts"), "utf8"))),
    ...manifestExprs(manifests)];
  let failed = 0;
  const used = new Set();
  for (const { where, expr } of uses) {
    for (const name of metricNames(expr)) {
      used.add(name);
      const ok = names.has(name) || BUILTIN.has(name);
      if (!ok) failed++;
      console.log(`${ok ? "PASS" : "FAIL"}: ${where} uses ${name}${ok ? "" : " (not exported by the scrape)"}`);
    }
  }
  const linalgd = [...families].filter((f) => f.startsWith("linalgd_"));
  check: {
    const ok = linalgd.length > 0;
    if (!ok) failed++;
    console.log(`${ok ? "PASS" : "FAIL"}: scrape exports ${linalgd.length} linalgd_ families`);
  }
  for (const f of linalgd) {
    const seen = [f, f + "_bucket", f + "_sum", f + "_count"].some((n) => used.has(n));
    if (!seen && f !== "linalgd_build_info") console.log(`NOTE: ${f} is on no dashboard panel or alert`);
  }
  const rulesOut = arg(args, "--rules-out");
  if (rulesOut) {
    const exprs = dashboardExprs(dash).filter((u) => u.where.startsWith("panel"));
    const rules = exprs.map((u, i) => `      - record: dashboard:expr_${i}\n        expr: ${JSON.stringify(
      u.expr.replace(/\$__rate_interval/g, "1m").replace(/\$\{?\w+\}?/g, ".*"))}`);
    writeFileSync(rulesOut, `groups:\n  - name: dashboard\n    rules:\n${rules.join("\n")}\n`);
  }
  process.exit(failed ? 1 : 0);
}

await main();
