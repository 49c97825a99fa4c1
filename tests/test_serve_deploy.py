"""deploy/serve/ runs `gpuctl serve` where users run things (docs/serve.md, "Deploying it"):
the manifests parse and use only real API fields; the pod is hardened and runs the
options `gpuctl serve` accepts; its RBAC is deploy/rbac.yaml's read-only role plus
list/watch of exactly what the watch cache keeps (checked against the local API
server in role mode: no 403, every cache synced); the alerts and the dashboard use
only the metric names and labels docs/serve.md documents, every finding code they
name exists and every alert links its runbook. With promtool (Debian package
prometheus): `promtool check rules`, the rules' unit tests
(deploy/serve/tests/rules-test.yaml), `promtool check metrics` on a real scrape, and a
real Prometheus that scrapes `gpuctl serve`, loads the rules and answers a query."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest
import yaml

from gpuctl.collect.files import resolve_snapshot
from gpuctl.findings import CODES

ROOT = Path(__file__).resolve().parent.parent
DEPLOY = ROOT / "deploy"
SERVE = DEPLOY / "serve"
DOC = ROOT / "docs" / "serve.md"
RUNBOOKS = ROOT / "docs" / "runbooks"
RUNBOOK_BASE = "https://github.com/gpuctl/gpuctl/blob/main/docs/runbooks/"
DOCS_BASE = "https://github.com/gpuctl/gpuctl/blob/main/docs/serve.md#"
# Metrics whose `code` label is a finding code (gpuctl_api_errors_total's is an HTTP status).
FINDING_CODE_METRICS = {"gpuctl_pending_pods", "gpuctl_pending_oldest_seconds", "gpuctl_node_findings"}
TARGET_LABELS = {"job", "instance"}   # what Prometheus adds to every scraped series
READ_VERBS = {"get", "list", "watch"}
NEEDS_PROMTOOL = "needs promtool (Debian package prometheus)"
needs_promtool = pytest.mark.skipif(shutil.which("promtool") is None, reason=NEEDS_PROMTOOL)


def _docs(path: Path) -> list[dict]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d is not None]


def _manifests() -> list[Path]:
    return sorted(p for p in SERVE.glob("*.yaml") if p.name != "kustomization.yaml")


def _all() -> list[tuple[Path, dict]]:
    return [(p, d) for p in _manifests() for d in _docs(p)]


def _one(kind: str, name: str) -> dict:
    found = [d for _, d in _all() if d["kind"] == kind and d["metadata"]["name"] == name]
    assert len(found) == 1, f"{len(found)} {kind} {name} in deploy/serve/"
    return found[0]


def _deployment() -> dict:
    return _one("Deployment", "gpuctl-serve")


def _pod() -> dict:
    return _deployment()["spec"]["template"]["spec"]


def _container() -> dict:
    containers = _pod()["containers"]
    assert len(containers) == 1
    return containers[0]


def _rule() -> dict:
    return _one("PrometheusRule", "gpuctl-serve")


def _alerts() -> list[dict]:
    return [r for g in _rule()["spec"]["groups"] for r in g["rules"] if "alert" in r]


def _dashboard() -> dict:
    return json.loads((SERVE / "dashboard.json").read_text())


def _dashboard_exprs() -> list[str]:
    def panels(items):
        for p in items:
            yield p
            yield from panels(p.get("panels") or [])

    exprs = [t["expr"] for p in panels(_dashboard()["panels"]) for t in p.get("targets") or []]
    for v in _dashboard()["templating"]["list"]:
        q = v.get("query")
        if v.get("type") == "query":
            exprs.append(q["query"] if isinstance(q, dict) else q)
    return exprs


# ------------------------------------------------------------------ the contract, from docs/serve.md


def _documented() -> dict[str, tuple[str, set[str], str]]:
    """docs/serve.md's metric table: name -> (type, labels, meaning)."""
    out = {}
    for line in DOC.read_text().splitlines():
        m = re.match(r"\|\s*`(gpuctl_[a-z0-9_]+)`\s*\|\s*([a-z]+)\s*\|([^|]*)\|(.*)\|\s*$", line)
        if m:
            out[m[1]] = (m[2], set(re.findall(r"`([a-z_]+)`", m[3])), m[4])
    return out


def _wire_names() -> dict[str, tuple[str, set[str]]]:
    """Every series name a scrape can carry -> (documented family, its labels)."""
    out = {}
    for name, (kind, labels, _) in _documented().items():
        if kind == "counter":
            out[name if name.endswith("_total") else name + "_total"] = (name, labels)
        elif kind == "histogram":
            for suffix in ("_bucket", "_sum", "_count"):
                out[name + suffix] = (name, labels | ({"le"} if suffix == "_bucket" else set()))
        else:
            out[name] = (name, labels)
    return out


def test_the_contract_table_parses():
    doc = _documented()
    assert len(doc) >= 14, sorted(doc)
    assert {"gpuctl_pending_pods", "gpuctl_diagnosis_age_seconds", "gpuctl_watch_restarts_total"} <= set(doc)
    assert doc["gpuctl_diagnosis_duration_seconds"][0] == "histogram"
    assert all(kind in ("gauge", "counter", "histogram") for kind, _, _ in doc.values())
    for name in FINDING_CODE_METRICS:
        assert "code" in doc[name][1], name
    # The only other metric with a `code` label says its code is an HTTP status.
    others = {n for n, (_, labels, _) in doc.items() if "code" in labels} - FINDING_CODE_METRICS
    assert others == {"gpuctl_api_errors_total"} and "HTTP" in doc["gpuctl_api_errors_total"][2]


def _selectors(expr: str) -> list[tuple[str, set[str]]]:
    """(metric name, label names of its matchers) for each gpuctl_* in a PromQL expression."""
    out = []
    for m in re.finditer(r"\b(gpuctl_[a-z0-9_]+)\b(\{([^}]*)\})?", expr):
        labels = set(re.findall(r"([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=)", m[3] or ""))
        out.append((m[1], labels))
    return out


def _grouping_labels(expr: str) -> set[str]:
    return {lbl.strip() for group in re.findall(r"\b(?:by|without)\s*\(([^)]*)\)", expr)
            for lbl in group.split(",") if lbl.strip()}


def _check_exprs(exprs: list[str], where: str) -> set[str]:
    wire = _wire_names()
    problems, used = [], set()
    for expr in exprs:
        sel = _selectors(expr)
        if not sel:
            problems.append(f"{where}: uses no gpuctl metric: {expr}")
        allowed = set(TARGET_LABELS)
        for name, labels in sel:
            if name not in wire:
                problems.append(f"{where}: {name} is not in docs/serve.md's metric table")
                continue
            family, documented = wire[name]
            used.add(family)
            allowed |= documented
            extra = labels - documented - TARGET_LABELS
            if extra:
                problems.append(f"{where}: {name} has no label {sorted(extra)} (docs/serve.md: {sorted(documented)})")
        extra = _grouping_labels(expr) - allowed
        if extra:
            problems.append(f"{where}: groups by undocumented labels {sorted(extra)}: {expr}")
        # label_values(metric, label) in a dashboard variable
        for name, label in re.findall(r"label_values\((gpuctl_[a-z0-9_]+)[^,]*,\s*([a-z_]+)\)", expr):
            if name in wire and label not in wire[name][1] | TARGET_LABELS:
                problems.append(f"{where}: label_values of undocumented label {label} of {name}")
    assert not problems, "\n".join(problems)
    return used


def test_alerts_use_only_documented_metrics_and_labels():
    _check_exprs([a["expr"] for a in _alerts()], "prometheusrule.yaml")


def test_dashboard_uses_only_documented_metrics_and_labels_and_shows_them_all():
    used = _check_exprs(_dashboard_exprs(), "dashboard.json")
    assert used == set(_documented()), f"not on the dashboard: {sorted(set(_documented()) - used)}"


# ------------------------------------------------------------------ every file


def test_every_file_parses_and_the_kustomization_lists_them():
    files = sorted(p.relative_to(SERVE).as_posix() for p in SERVE.rglob("*") if p.is_file())
    assert {"deployment.yaml", "servicemonitor.yaml", "prometheusrule.yaml", "dashboard.json",
            "kustomization.yaml", "tests/rules-test.yaml"} <= set(files), files
    for p in SERVE.rglob("*.yaml"):
        assert _docs(p), p
    for path, d in _all():
        assert isinstance(d.get("apiVersion"), str) and isinstance(d.get("kind"), str), path.name
        assert d["metadata"].get("name"), (path.name, d["kind"])
        assert d["metadata"].get("namespace") in (None, "gpuctl"), (path.name, d["metadata"])
    assert isinstance(_dashboard(), dict)
    k = _docs(SERVE / "kustomization.yaml")[0]
    assert k["kind"] == "Kustomization"
    listed = set(k["resources"]) | {f for g in k.get("configMapGenerator", []) for f in g["files"]}
    assert listed == {p.name for p in _manifests()} | {"dashboard.json"}


def test_kustomize_builds_it():
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.skip("needs kubectl (kubectl kustomize, offline)")
    r = subprocess.run([kubectl, "kustomize", str(SERVE)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    built = {(d["kind"], d["metadata"]["name"]) for d in yaml.safe_load_all(r.stdout) if d}
    expected = {(d["kind"], d["metadata"]["name"]) for _, d in _all()} | {("ConfigMap", "gpuctl-serve-dashboard")}
    assert built == expected
    cm = next(d for d in yaml.safe_load_all(r.stdout) if d and d["kind"] == "ConfigMap")
    assert cm["metadata"]["labels"]["grafana_dashboard"] == "1" and cm["metadata"]["namespace"] == "gpuctl"
    assert json.loads(cm["data"]["dashboard.json"]) == _dashboard()


def _model_round_trip(doc: dict):
    """The document through the official client's model for its kind and back: a
    misspelled or misplaced field is dropped on the way (as in tests/test_deploy.py)."""
    from kubernetes import client

    api = client.ApiClient()
    deserialize = getattr(api, "_ApiClient__deserialize", None)
    if deserialize is None:
        pytest.skip("this kubernetes client has no model deserializer")
    version = doc["apiVersion"].rpartition("/")[2]
    return api.sanitize_for_serialization(deserialize(doc, f"{version[:1].upper()}{version[1:]}{doc['kind']}"))


def test_every_field_is_a_real_api_field():
    core = [d for _, d in _all() if not d["apiVersion"].startswith("monitoring.coreos.com/")]
    assert {d["kind"] for d in core} == {"Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding",
                                         "Deployment", "Service"}
    for d in core:
        assert _model_round_trip(d) == d, f"{d['kind']} {d['metadata']['name']} has unknown fields"


def test_the_namespace_is_the_one_the_other_manifests_apply():
    ours = _one("Namespace", "gpuctl")
    for name in ("labeller.yaml", "probe-daemonset.yaml"):
        theirs = [d for d in _docs(DEPLOY / name) if d["kind"] == "Namespace"]
        assert theirs == [ours], name


# ------------------------------------------------------------------ the pod


def test_one_replica_of_the_image_deploy_builds():
    dep = _deployment()
    assert dep["spec"]["replicas"] == 1 and dep["spec"]["strategy"]["type"] == "Recreate"
    labeller = next(d for d in _docs(DEPLOY / "labeller.yaml") if d["kind"] == "CronJob")
    image = labeller["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]["image"]
    assert _container()["image"] == image
    assert "command" not in _container()   # the image's ENTRYPOINT is gpuctl


def test_the_pod_is_hardened():
    pod, c = _pod(), _container()
    for key in ("hostNetwork", "hostPID", "hostIPC"):
        assert not pod.get(key), key
    psc = pod["securityContext"]
    assert psc["runAsNonRoot"] is True and psc["runAsUser"] != 0
    assert psc["seccompProfile"] == {"type": "RuntimeDefault"}
    users = [ln.split()[1] for ln in (DEPLOY / "Dockerfile").read_text().splitlines() if ln.startswith("USER ")]
    assert psc["runAsUser"] == int(users[-1].split(":")[0])
    sc = c["securityContext"]
    assert sc["allowPrivilegeEscalation"] is False and sc["readOnlyRootFilesystem"] is True
    assert sc.get("privileged") is not True
    assert sc["capabilities"] == {"drop": ["ALL"]}
    assert not any("hostPath" in v for v in pod.get("volumes", []))
    # The only writable path is a small emptyDir, and HOME points at it.
    mounts = {m["mountPath"]: m["name"] for m in c.get("volumeMounts", [])}
    volumes = {v["name"]: v for v in pod.get("volumes", [])}
    assert all("emptyDir" in volumes[n] for n in mounts.values())
    env = {e["name"]: e.get("value") for e in c.get("env", [])}
    assert env.get("HOME") in mounts
    # Not on a GPU node.
    terms = pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert terms and all({"key": "nvidia.com/gpu.present", "operator": "DoesNotExist"} in t["matchExpressions"]
                         for t in terms)


def _quantity(text: str) -> float:
    units = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "m": 1e-3, "": 1}
    m = re.fullmatch(r"([0-9.]+)(Ki|Mi|Gi|m|)", str(text))
    assert m, text
    return float(m[1]) * units[m[2]]


def test_resources_are_sized_for_the_budget():
    res = _container()["resources"]
    assert _quantity(res["requests"]["cpu"]) == 0.25
    assert _quantity(res["requests"]["memory"]) == 512 * 2**20
    limit = _quantity(res["limits"]["memory"])
    assert limit == 768 * 2**20 and limit > 600e6   # the budget: <= 600 MB steady, and headroom above it
    assert "cpu" not in res["limits"]               # no CPU throttling of the first sync
    assert "600 MB" in (SERVE / "deployment.yaml").read_text()


def test_the_container_runs_serve_with_options_it_accepts(cli):
    import typer.main

    from gpuctl.cli.app import app
    from gpuctl.serve.server import parse_listen

    args = _container()["args"]
    assert args == ["serve", "--listen", ":9402", "--interval", "15"]
    serve = typer.main.get_command(app).commands["serve"]
    ctx = serve.make_context("serve", list(args[1:]))   # parses and converts; starts nothing
    assert ctx.params["listen"] == ":9402" and ctx.params["interval"] == 15.0
    assert parse_listen(ctx.params["listen"]) == ("0.0.0.0", 9402)
    helptext = cli("serve", "--help").out
    for opt in (a for a in args if a.startswith("--")):
        assert opt in helptext, opt


def _port(name_or_number, container: dict) -> int:
    if isinstance(name_or_number, int):
        return name_or_number
    return next(p["containerPort"] for p in container["ports"] if p["name"] == name_or_number)


def test_probes_service_and_servicemonitor_agree():
    c = _container()
    assert c["ports"] == [{"name": "http-metrics", "containerPort": 9402, "protocol": "TCP"}]
    assert c["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert c["readinessProbe"]["httpGet"]["path"] == "/readyz"
    for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
        if probe in c:
            assert _port(c[probe]["httpGet"]["port"], c) == 9402, probe
    svc = _one("Service", "gpuctl-serve")
    assert [(p["name"], p["port"], _port(p["targetPort"], c)) for p in svc["spec"]["ports"]] == \
        [("http-metrics", 9402, 9402)]
    tpl = _deployment()["spec"]["template"]["metadata"]["labels"]
    assert svc["spec"]["selector"].items() <= tpl.items()
    assert _deployment()["spec"]["selector"]["matchLabels"].items() <= tpl.items()
    sm = _one("ServiceMonitor", "gpuctl-serve")
    assert sm["apiVersion"] == "monitoring.coreos.com/v1"
    assert sm["spec"]["selector"]["matchLabels"].items() <= svc["metadata"]["labels"].items()
    assert sm["spec"]["namespaceSelector"]["matchNames"] == [svc["metadata"]["namespace"]]
    (ep,) = sm["spec"]["endpoints"]
    assert ep["port"] == "http-metrics" and ep["path"] == "/metrics" and ep["interval"] == "30s"
    # gpuctl_pending_pods' `namespace` is the pods' namespace, not the exporter's.
    assert ep["honorLabels"] is True


def test_the_paths_the_probes_use_answer_as_documented():
    from gpuctl.serve.server import route

    class Fresh:   # a Service before its first sync
        state = None
        last_error = None

        def ready(self):
            return False

    assert route(Fresh(), "/healthz")[0] == 200
    assert route(Fresh(), "/readyz")[0] == 503


# ------------------------------------------------------------------ RBAC


def _reader_rules() -> list[dict]:
    return next(d for d in _docs(DEPLOY / "rbac.yaml")
                if d["kind"] == "ClusterRole" and d["metadata"]["name"] == "gpuctl-reader")["rules"]


def _watch_rules() -> list[dict]:
    return _one("ClusterRole", "gpuctl-serve-watch")["rules"]


def test_the_account_is_bound_to_the_reader_and_the_watch_role_only():
    sa = {"kind": "ServiceAccount", "name": "gpuctl-serve", "namespace": "gpuctl"}
    _one("ServiceAccount", "gpuctl-serve")
    assert _pod()["serviceAccountName"] == "gpuctl-serve"
    bindings = [d for _, d in _all() if d["kind"] in ("ClusterRoleBinding", "RoleBinding")]
    assert sorted(b["roleRef"]["name"] for b in bindings) == ["gpuctl-reader", "gpuctl-serve-watch"]
    for b in bindings:
        assert b["kind"] == "ClusterRoleBinding" and b["roleRef"]["kind"] == "ClusterRole"
        assert b["subjects"] == [sa], b["metadata"]["name"]
    # gpuctl-reader is deploy/rbac.yaml's, reused as it is: not redefined here, never widened.
    assert not [d for _, d in _all() if d["kind"] == "ClusterRole" and d["metadata"]["name"] == "gpuctl-reader"]
    assert all(set(r["verbs"]) <= {"get", "list"} for r in _reader_rules())


def test_the_watch_role_only_reads():
    for r in _watch_rules():
        assert set(r["verbs"]) <= READ_VERBS, r
        assert "watch" in r["verbs"], r
        assert "*" not in r["resources"] and "*" not in r["apiGroups"] and not r.get("resourceNames"), r
        assert not {"secrets", "configmaps"} & set(r["resources"]), r
        assert not any("/" in res for res in r["resources"]), r   # no subresources (pods/exec, pods/proxy, ...)


SERVE_CLUSTERS = [
    "demo",
    "tests/pending/mixed-causes/snapshot",
    "tests/scenarios/queue-not-admitted-kueue/snapshot",
    "tests/scenarios/device-plugin-not-running/snapshot",
    "tests/scenarios/dra-claim-unallocatable/snapshot",
    "tests/scenarios/volume-binding/snapshot",
    "tests/scenarios/node-ecc-uncorrectable/snapshot",
]


def _run_serve(serve, snapshot: str, rules: list[dict]):
    """One recompute of `gpuctl serve` against the local API server in role mode, then
    long enough for every informer to open its watch. Returns (server, service)."""
    from gpuctl.collect.kube import KubeAPI
    from gpuctl.serve.server import Service

    srv, kubeconfig = serve(resolve_snapshot(snapshot) if snapshot == "demo" else ROOT / snapshot)
    srv.allow_only(rules)
    svc = Service(KubeAPI(kubeconfig, "incident", request_timeout=10.0), interval=5.0, watch_seconds=5)
    svc.recompute()
    listed = {(inf.path, tuple(sorted(inf.query.items()))) for inf in svc.cache.informers.values() if inf.stats.synced}

    def watched():
        return {(r.path, tuple(sorted((k, v[0]) for k, v in r.query.items() if k in ("fieldSelector", "labelSelector"))))
                for r in srv.requests if "watch" in r.query}

    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and not listed <= watched():
        time.sleep(0.05)
    assert listed <= watched(), sorted(listed - watched())
    return srv, svc


@pytest.mark.parametrize("snapshot", SERVE_CLUSTERS, ids=[s.rsplit("/", 2)[-2] if "/" in s else s for s in SERVE_CLUSTERS])
def test_the_roles_are_enough_for_serve(serve, snapshot):
    srv, svc = _run_serve(serve, snapshot, _reader_rules() + _watch_rules())
    try:
        denied = sorted({f"{r.method} {r.path}?{r.query}" for r in srv.requests if r.status == 403})
        assert denied == [], denied
        assert any("watch" in r.query for r in srv.requests)
        for inf in svc.cache.informers.values():
            gap = inf.stats.gap
            assert inf.stats.synced or (gap is not None and gap.reason == "not-found"), (inf.path, gap)
        assert svc.ready()
    finally:
        svc.stop()


def test_without_the_watch_role_every_watch_is_denied(serve):
    srv, svc = _run_serve(serve, "demo", _reader_rules())
    try:
        watches = [r for r in srv.requests if "watch" in r.query]
        assert watches and all(r.status == 403 for r in watches)
        assert not [r for r in srv.requests if "watch" not in r.query and r.status == 403]
    finally:
        svc.stop()


# ------------------------------------------------------------------ alerts


def _slug(heading: str) -> str:
    return re.sub(r"[\s]+", "-", re.sub(r"[^\w\s-]", "", heading.strip().lower()))


def _code_matchers(expr: str) -> set[str]:
    """The finding codes an expression names in a `code` matcher of a finding-code metric."""
    codes = set()
    for m in re.finditer(r"\b(gpuctl_[a-z0-9_]+)\{([^}]*)\}", expr):
        if m[1] not in FINDING_CODE_METRICS:
            continue
        for op, value in re.findall(r"\bcode\s*(=~|=|!=|!~)\s*\"([^\"]*)\"", m[2]):
            assert op in ("=", "=~"), f"negative code matcher: {expr}"
            codes |= set(value.split("|"))
    return codes


def test_every_alert_is_complete():
    alerts = _alerts()
    names = [a["alert"] for a in alerts]
    assert len(names) == len(set(names)), names
    assert len(alerts) >= 6
    for a in alerts:
        assert a["labels"]["severity"] in ("critical", "warning", "info"), a["alert"]
        assert re.fullmatch(r"\d+[smh]", a.get("for", "")), a["alert"]
        ann = a["annotations"]
        assert ann.get("summary") and ann.get("description") and ann.get("runbook_url"), a["alert"]
        assert "$labels" in ann["summary"] + ann["description"] or "absent(" in a["expr"], a["alert"]


def test_every_code_an_alert_names_exists_and_its_runbook_is_linked():
    keyed = 0
    for a in _alerts():
        codes = _code_matchers(a["expr"])
        url = a["annotations"]["runbook_url"]
        if not codes:
            continue
        keyed += 1
        for code in codes:
            assert code in CODES, f"{a['alert']}: no finding code {code}"
            assert (RUNBOOKS / f"{code}.md").is_file(), code
        if len(codes) == 1:
            assert url in (f"{RUNBOOK_BASE}{next(iter(codes))}.md", f"{RUNBOOK_BASE}{{{{ $labels.code }}}}.md"), url
        else:
            # One alert per code: the URL is the firing series' code, so `code` must survive the expression.
            assert url == f"{RUNBOOK_BASE}{{{{ $labels.code }}}}.md", url
            grouping = re.findall(r"\b(by|without)\s*\(([^)]*)\)", a["expr"])
            for how, labels in grouping:
                kept = {x.strip() for x in labels.split(",")}
                assert ("code" in kept) == (how == "by"), f"{a['alert']} drops the code label"
    assert keyed >= 3
    wanted = {"device-plugin-not-running", "nvml-init-failed", "insufficient-gpu", "ecc-uncorrectable", "xid-error"}
    assert wanted <= set().union(*(_code_matchers(a["expr"]) for a in _alerts()))


def test_exporter_alerts_link_their_section_of_the_docs():
    text = DOC.read_text()
    anchors = {_slug(h) for h in re.findall(r"^#{2,6}\s+(.+)$", text, re.M)}
    for a in _alerts():
        url = a["annotations"]["runbook_url"]
        if url.startswith(RUNBOOK_BASE):
            continue
        assert url.startswith(DOCS_BASE), url
        assert url[len(DOCS_BASE):] in anchors, f"{a['alert']}: docs/serve.md has no heading #{url[len(DOCS_BASE):]}"
    assert RUNBOOK_BASE in text   # the placeholder base is documented


def test_the_alerts_the_brief_asks_for_are_there():
    exprs = {a["alert"]: " ".join(a["expr"].split()) for a in _alerts()}
    assert any("gpuctl_diagnosis_age_seconds > 300" in e for e in exprs.values())
    assert any("gpuctl_cache_synced" in e and "== 0" in e for e in exprs.values())
    assert any("gpuctl_api_errors_total" in e and "rate(" in e for e in exprs.values())
    assert any("gpuctl_pending_oldest_seconds" in e and "1800" in e for e in exprs.values())


def test_docs_list_every_alert():
    text = DOC.read_text()
    assert "## Deploying it" in text
    section = text[text.index("## Deploying it"):]
    for a in _alerts():
        assert f"`{a['alert']}`" in section, a["alert"]
    assert "kubectl apply -k deploy/serve" in section


def test_dashboard_is_importable():
    d = _dashboard()
    assert d["uid"] and d["title"] and isinstance(d["schemaVersion"], int)
    names = [v["name"] for v in d["templating"]["list"]]
    assert names[0] == "datasource" and d["templating"]["list"][0]["query"] == "prometheus"
    ids = [p["id"] for p in d["panels"]]
    assert len(ids) == len(set(ids))
    for p in d["panels"]:
        assert 0 <= p["gridPos"]["x"] and p["gridPos"]["x"] + p["gridPos"]["w"] <= 24, p["title"]
        if p["type"] == "row":
            continue
        assert p["datasource"] == {"type": "prometheus", "uid": "${datasource}"}, p["title"]
        assert p["targets"] and all(t["expr"].strip() for t in p["targets"]), p["title"]
        assert p.get("description"), p["title"]
    for link in re.findall(r'"(https://[^"]+)"', json.dumps(d)):
        assert link.startswith(RUNBOOK_BASE), link


# ------------------------------------------------------------------ promtool


def _rules_file(tmp_path: Path) -> Path:
    out = tmp_path / "rules.yaml"
    out.write_text(yaml.safe_dump({"groups": _rule()["spec"]["groups"]}, sort_keys=False))
    return out


def _promtool(*args: str, stdin: bytes | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(["promtool", *args], input=stdin, capture_output=True, cwd=cwd, timeout=120)


@needs_promtool
def test_promtool_check_rules(tmp_path):
    r = _promtool("check", "rules", str(_rules_file(tmp_path)))
    out = (r.stdout + r.stderr).decode()
    assert r.returncode == 0, out
    assert f"SUCCESS: {sum(len(g['rules']) for g in _rule()['spec']['groups'])} rules found" in out, out


@needs_promtool
def test_promtool_rule_unit_tests(tmp_path):
    _rules_file(tmp_path)
    tests = yaml.safe_load((SERVE / "tests" / "rules-test.yaml").read_text())
    assert tests["rule_files"] == ["rules.yaml"]
    tested = {t["alertname"] for group in tests["tests"] for t in group.get("alert_rule_test", [])
              if t.get("exp_alerts")}
    assert tested == {a["alert"] for a in _alerts()}, "every alert has a unit test where it fires"
    shutil.copy(SERVE / "tests" / "rules-test.yaml", tmp_path / "rules-test.yaml")
    r = _promtool("test", "rules", "rules-test.yaml", cwd=tmp_path)
    assert r.returncode == 0, (r.stdout + r.stderr).decode()


@needs_promtool
def test_promtool_check_metrics_on_a_real_scrape(serve):
    """gpuctl's exposition of the demo cluster, served by the local API server and
    read through the watch cache, passes promtool's lint; and it carries every
    metric family of the contract (what the alerts and dashboard query)."""
    from prometheus_client.parser import text_string_to_metric_families

    from gpuctl.collect.kube import KubeAPI
    from gpuctl.serve.metrics import exposition
    from gpuctl.serve.server import Service

    _, kubeconfig = serve(resolve_snapshot("demo"))
    svc = Service(KubeAPI(kubeconfig, "incident", request_timeout=10.0), interval=5.0, watch_seconds=5)
    try:
        svc.recompute()
        text = exposition(svc.exporter)
    finally:
        svc.stop()
    r = _promtool("check", "metrics", stdin=text)
    assert r.returncode == 0 and not (r.stdout + r.stderr).strip(), (r.stdout + r.stderr).decode()
    families = list(text_string_to_metric_families(text.decode()))
    exposed = {f.name for f in families}   # a counter's family is named without _total
    documented = {re.sub(r"_total$", "", n) if kind == "counter" else n for n, (kind, _, _) in _documented().items()}
    assert documented - exposed == set(), f"documented but not in a real scrape: {sorted(documented - exposed)}"
    wire = _wire_names()
    for f in families:
        for s in f.samples:   # every sample's name and labels are the contract's
            assert s.name in wire, s.name
            assert set(s.labels) <= wire[s.name][1], (s.name, s.labels)


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get_json(url: str) -> dict:
    import urllib.request

    with urllib.request.urlopen(url, timeout=5) as r:
        return json.loads(r.read())


@pytest.mark.skipif(shutil.which("prometheus") is None, reason="needs prometheus (Debian package prometheus)")
def test_a_real_prometheus_scrapes_serve_and_loads_the_rules(serve, tmp_path):
    """`gpuctl serve` (the demo cluster through the local API server) scraped by a real
    Prometheus that also loads the PrometheusRule's groups: the rules load healthy,
    and a metric queried back says what the exporter computed."""
    import threading
    import urllib.parse

    from gpuctl.collect.kube import KubeAPI
    from gpuctl.serve.server import Service, http_server

    _, kubeconfig = serve(resolve_snapshot("demo"))
    svc = Service(KubeAPI(kubeconfig, "incident", request_timeout=10.0), interval=5.0, watch_seconds=5)
    state = svc.recompute()
    httpd = http_server(svc, "127.0.0.1", 0)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    port = _free_port()
    config = tmp_path / "prometheus.yml"
    config.write_text(yaml.safe_dump({
        "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
        "rule_files": [str(_rules_file(tmp_path))],
        "scrape_configs": [{"job_name": "gpuctl-serve", "honor_labels": True,
                            "static_configs": [{"targets": [f"127.0.0.1:{httpd.server_address[1]}"]}]}],
    }))
    log = (tmp_path / "prometheus.log").open("wb")
    proc = subprocess.Popen(["prometheus", f"--config.file={config}", f"--storage.tsdb.path={tmp_path / 'data'}",
                             f"--web.listen-address=127.0.0.1:{port}"],
                            stdout=subprocess.DEVNULL, stderr=log)
    base = f"http://127.0.0.1:{port}/api/v1"
    try:
        result, deadline = [], time.monotonic() + 60
        query = urllib.parse.quote("sum(gpuctl_pending_pods)")
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                result = _get_json(f"{base}/query?query={query}")["data"]["result"]
            except OSError:
                result = []
            if result:
                break
            time.sleep(0.5)
        assert result, "no gpuctl_pending_pods scraped: " + (tmp_path / "prometheus.log").read_text()[-2000:]
        assert float(result[0]["value"][1]) == state.pending["pods"] > 0
        by_ns = _get_json(f"{base}/query?query=" + urllib.parse.quote("sum by (namespace) (gpuctl_pending_pods)"))
        assert {r["metric"]["namespace"] for r in by_ns["data"]["result"]} == \
            {p["namespace"] for g in state.pending["groups"] for p in g["pods"]}
        up = _get_json(f"{base}/query?query=" + urllib.parse.quote('up{job="gpuctl-serve"}'))["data"]["result"]
        assert [r["value"][1] for r in up] == ["1"]
        rules = [r for g in _get_json(f"{base}/rules")["data"]["groups"] for r in g["rules"]]
        assert {r["name"] for r in rules} == {a["alert"] for a in _alerts()}
        assert all(r["health"] in ("ok", "unknown") for r in rules), [(r["name"], r.get("lastError")) for r in rules]
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
        httpd.shutdown()
        httpd.server_close()
        svc.stop()
