// Validates rendered Kubernetes manifests offline: every object against its
// JSON schema (kubernetes-models, with the prometheus-operator and KEDA
// models), then linalgd's own deployment rules. Prints one PASS/FAIL line per
// check; exits 1 if any failed.
//   node validate_manifests.mjs --variant gpu|cpu|gpu-shm|gpu-autoscaled rendered.yaml
import { readFileSync } from "node:fs";
import { parseAllDocuments } from "yaml";

const MODULES = {
  "": "kubernetes-models",
  "monitoring.coreos.com": "@kubernetes-models/prometheus-operator",
  "keda.sh": "@kubernetes-models/keda",
};

let failed = 0;
function check(name, ok, detail = "") {
  if (!ok) failed++;
  console.log(`${ok ? "PASS" : "FAIL"}: ${name}${detail ? ": " + detail : ""}`);
}

async function modelFor(apiVersion, kind) {
  const slash = apiVersion.indexOf("/");
  const group = slash < 0 ? "" : apiVersion.slice(0, slash);
  const pkg = MODULES[group] ?? MODULES[""];
  try {
    const mod = await import(`${pkg}/${apiVersion}/${kind}`);
    return mod[kind];
  } catch {
    return undefined;
  }
}

async function validateSchemas(objects) {
  for (const obj of objects) {
    const id = `${obj.kind}/${obj.metadata?.name}`;
    const Model = await modelFor(obj.apiVersion, obj.kind);
    if (!Model) {
      check(`schema ${id}`, false, `no model for ${obj.apiVersion} ${obj.kind}`);
      continue;
    }
    try {
      new Model(obj).validate();
      check(`schema ${id} (${obj.apiVersion})`, true);
    } catch (e) {
      check(`schema ${id} (${obj.apiVersion})`, false, e.message);
    }
  }
}

function seconds(text) {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h)?$/.exec(text ?? "");
  if (!m) return NaN;
  const scale = { ms: 0.001, s: 1, m: 60, h: 3600 }[m[2] ?? "s"];
  return Number(m[1]) * scale;
}

function flag(args, name) {
  const hit = (args ?? []).find((a) => a.startsWith(`--${name}=`));
  return hit?.slice(name.length + 3);
}

// Plaintext: kubelet's gRPC probes on 50051 (readiness on the Linalg
// service). TLS (--tls-cert): kubelet's gRPC probes cannot speak it, so exec
// probes run linalgd-cli health with LINALGD_TLS_CA, a file of a mounted
// Secret, and no plaintext --insecure beside it.
function checkProbes(pod, c) {
  const probes = ["readinessProbe", "livenessProbe", "startupProbe"];
  if (!flag(c.args, "tls-cert")) {
    for (const p of probes) {
      check(`${p} is a gRPC health probe on 50051`, c[p]?.grpc?.port === 50051);
    }
    check("readiness probes the Linalg service",
          c.readinessProbe?.grpc?.service === "linalgd.v1.Linalg");
    return;
  }
  check("TLS: no --insecure beside --tls-cert", !c.args.includes("--insecure"));
  check("TLS: --tls-key set", !!flag(c.args, "tls-key"));
  for (const p of probes) {
    const command = c[p]?.exec?.command ?? [];
    check(`TLS: ${p} runs linalgd-cli health (kubelet's gRPC probes are plaintext only)`,
          !c[p]?.grpc && command[0] === "/usr/local/bin/linalgd-cli" && command.at(-1) === "health");
  }
  const ca = (c.env ?? []).find((e) => e.name === "LINALGD_TLS_CA")?.value;
  const mount = (c.volumeMounts ?? []).find((m) => ca?.startsWith(`${m.mountPath}/`));
  const volume = pod.volumes?.find((v) => v.name === mount?.name);
  check("TLS: the probes' LINALGD_TLS_CA is a file of a mounted Secret",
        !!volume?.secret?.secretName && !mount.subPath);
}

// linalgd's hard stop: it exits this long after --shutdown-grace began.
const HARD_STOP_MARGIN_S = 5;

// SIGTERM starts the drain (--drain-grace: NOT_SERVING, new work refused,
// stored objects readable), then calls in flight finish (--shutdown-grace);
// the pod must be given all of it, the readiness probe must see the drain
// well before it ends, and the liveness probe must not restart a draining
// pod.
function checkStopping(pod, c) {
  const drain = seconds(flag(c.args, "drain-grace"));
  const grace = seconds(flag(c.args, "shutdown-grace"));
  const preStop = Number(c.lifecycle?.preStop?.exec?.command?.at(-1));
  const stop = preStop + drain + grace + HARD_STOP_MARGIN_S;
  check("--drain-grace set (replicas drain before they stop)", drain > 0, `${drain}`);
  check("preStop delay before SIGTERM", preStop > 0);
  check("terminationGracePeriodSeconds > preStop + --drain-grace + --shutdown-grace + 5 s",
        pod.terminationGracePeriodSeconds > stop,
        `${pod.terminationGracePeriodSeconds} vs ${preStop} + ${drain} + ${grace} + ${HARD_STOP_MARGIN_S}`);
  const ready = c.readinessProbe;
  check("readiness sees the drain within half of --drain-grace",
        ready.periodSeconds * ready.failureThreshold <= drain / 2,
        `${ready.periodSeconds} x ${ready.failureThreshold} vs ${drain}`);
  const live = c.livenessProbe;
  check("liveness outlasts the drain and the shutdown",
        live.periodSeconds * live.failureThreshold > stop,
        `${live.periodSeconds} x ${live.failureThreshold} vs ${stop}`);
}

function checkDeployment(dep, variant) {
  const pod = dep.spec.template.spec;
  const c = pod.containers.find((x) => x.name === "linalgd");
  check("deployment has container linalgd", !!c);
  if (!c) return;
  check("pod runs as non-root", pod.securityContext?.runAsNonRoot === true &&
        pod.securityContext?.runAsUser > 0);
  check("container drops privileges", c.securityContext?.allowPrivilegeEscalation === false &&
        c.securityContext?.capabilities?.drop?.includes("ALL"));
  checkProbes(pod, c);
  for (const [f, want] of [["listen", "0.0.0.0:50051"], ["metrics-listen", "0.0.0.0:9464"],
                           ["log-level", "info"]]) {
    check(`--${f}=${want}`, flag(c.args, f) === want);
  }
  check("plaintext off loopback is explicit (--insecure or --tls-cert)",
        c.args.includes("--insecure") || !!flag(c.args, "tls-cert"));
  const tokens = flag(c.args, "auth-tokens");
  const mount = (c.volumeMounts ?? []).find((m) => tokens?.startsWith(`${m.mountPath}/`));
  const volume = pod.volumes?.find((v) => v.name === mount?.name);
  check("--auth-tokens reads a file of a mounted Secret (a directory: updates reach it)",
        !!volume?.secret?.secretName && !mount.subPath);
  check("--max-connection-age set", seconds(flag(c.args, "max-connection-age")) > 0);
  checkStopping(pod, c);
  check("cpu and memory requested", !!c.resources?.requests?.cpu && !!c.resources?.requests?.memory);
  const gpus = Number(c.resources?.limits?.["nvidia.com/gpu"] ?? 0);
  const disabled = (c.env ?? []).some((e) => e.name === "LINALGD_DISABLE_GPU" && e.value === "1");
  if (variant.startsWith("gpu")) {
    check("gpu: limits nvidia.com/gpu >= 1", gpus >= 1);
    check("gpu: GPU not disabled", !disabled);
  } else {
    check("cpu: no nvidia.com/gpu", gpus === 0 && !c.resources?.requests?.["nvidia.com/gpu"]);
    check("cpu: LINALGD_DISABLE_GPU=1", disabled);
  }
  if (variant.endsWith("-shm")) checkSamePodShm(pod, c);
}

// --allow-shm with its socket in a volume that another container of the pod
// mounts at the same path (the path GetServerInfo reports), under one uid
// (the socket is mode 0600).
function checkSamePodShm(pod, c) {
  const socket = flag(c.args, "shm-socket") ?? "";
  check("shm: --allow-shm", (c.args ?? []).includes("--allow-shm"));
  const mountOf = (container) => (container.volumeMounts ?? []).find(
    (m) => socket.startsWith(`${m.mountPath}/`));
  const mount = mountOf(c);
  check("shm: --shm-socket in a mounted volume", !!mount, socket);
  const vol = (pod.volumes ?? []).find((v) => v.name === mount?.name);
  check("shm: the socket's volume is an emptyDir", !!vol?.emptyDir);
  const clients = pod.containers.filter((x) => x !== c && mountOf(x)?.name === mount?.name &&
    mountOf(x)?.mountPath === mount?.mountPath);
  check("shm: a client container mounts it at the same path", clients.length > 0);
  check("shm: one uid for the pod", pod.securityContext?.runAsUser > 0 &&
        clients.every((x) => x.securityContext?.runAsUser === undefined));
}

// Ingress to the linalgd pods: gRPC from labelled clients, metrics from Prometheus.
function checkNetworkPolicy(objects) {
  const np = objects.find((o) => o.kind === "NetworkPolicy");
  check("a NetworkPolicy selects the linalgd pods",
        np?.spec.podSelector?.matchLabels?.["app.kubernetes.io/name"] === "linalgd");
  const ports = (np?.spec.ingress ?? []).flatMap((r) => (r.ports ?? []).map((p) => p.port));
  check("the NetworkPolicy admits only 50051 and 9464",
        ports.length === 2 && ports.includes(50051) && ports.includes(9464));
}

function checkObjects(objects, variant) {
  const of = (kind) => objects.filter((o) => o.kind === kind);
  const deps = of("Deployment");
  check("one Deployment", deps.length === 1);
  if (deps.length) checkDeployment(deps[0], variant);
  const services = of("Service");
  const headless = services.find((s) => s.spec.clusterIP === "None");
  check("a headless Service", !!headless);
  check("the headless Service resolves to ready pods only (a draining one leaves it)",
        headless?.spec.publishNotReadyAddresses !== true);
  check("a ClusterIP Service", services.some((s) => (s.spec.type ?? "ClusterIP") === "ClusterIP" &&
        s.spec.clusterIP !== "None"));
  // Plain overlays apply on a plain cluster (built-in kinds only); the
  // -autoscaled ones add the ServiceMonitor and KEDA components.
  if (!variant.endsWith("-autoscaled")) {
    const custom = objects.filter((o) => !BUILT_IN_KINDS.has(o.kind)).map((o) => o.kind);
    check(`only built-in kinds (found ${custom.join(", ") || "none other"})`, custom.length === 0);
  } else {
    checkOperatorObjects(objects, services, deps);
  }
  const pdbs = of("PodDisruptionBudget");
  check("a PodDisruptionBudget", pdbs.length === 1);
  check("the PodDisruptionBudget drains one linalgd pod at a time",
        pdbs[0]?.spec.selector?.matchLabels?.["app.kubernetes.io/name"] === "linalgd" &&
        pdbs[0]?.spec.maxUnavailable === 1);
  checkNetworkPolicy(objects);
  check("every object in one namespace", new Set(objects.map((o) => o.metadata.namespace)).size === 1);
}

const BUILT_IN_KINDS = new Set(["Deployment", "Service", "PodDisruptionBudget", "ConfigMap",
  "Secret", "NetworkPolicy", "ServiceAccount", "HorizontalPodAutoscaler"]);

// The ServiceMonitor (prometheus-operator) and the KEDA ScaledObject.
function checkOperatorObjects(objects, services, deps) {
  const of = (kind) => objects.filter((o) => o.kind === kind);
  const sm = of("ServiceMonitor")[0];
  const scraped = services.filter((s) => Object.entries(sm?.spec.selector.matchLabels ?? {})
    .every(([k, v]) => s.metadata.labels?.[k] === v));
  check("ServiceMonitor selects exactly one Service", scraped.length === 1);
  check("ServiceMonitor scrapes port metrics at /metrics",
        sm?.spec.endpoints.some((e) => e.port === "metrics" && e.path === "/metrics"));
  const so = of("ScaledObject")[0];
  const hpa = of("HorizontalPodAutoscaler")[0];
  check("autoscaling on queue depth", (so?.spec.triggers ?? []).some((t) =>
        t.type === "prometheus" && /linalgd_queue_depth/.test(t.metadata.query)) || !!hpa);
  check("ScaledObject targets the Deployment", so?.spec.scaleTargetRef.name === deps[0]?.metadata.name);
}

const args = process.argv.slice(2);
const variant = args[args.indexOf("--variant") + 1];
const file = args.at(-1);
const objects = parseAllDocuments(readFileSync(file, "utf8")).map((d) => d.toJS()).filter(Boolean);
console.log(`--- ${file}: ${objects.length} objects (${variant})`);
await validateSchemas(objects);
checkObjects(objects, variant);
process.exit(failed ? 1 : 0);
