"""``gpuctl fit`` (docs/fit.md): would a manifest's pods fit, before it is applied.

- Agreement with ``diagnose pod`` by construction: every Pending, unbound pod of
  every scenario, fed back as a manifest (its own metadata labels and annotations
  and spec), gets the same fit matrix (nodes, fits, reasons, details) and the same
  finding codes, except the codes only an existing pod's events, status or age can
  show (EXISTING_POD_ONLY, each with its reason).
- Gangs on hand-checked fixtures (tests/fit/*: topology spread, anti-affinity,
  mixed GPU pools, quota): how many replicas fit together, where each goes
  (MostAllocated), and what stops the next.
- The quick form, counterfactuals, queues, every output format, usage errors, the
  library entry point, and a live run through the real kubernetes client against
  the local API server, which must give the offline answer.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import ROOT, scenario_dirs, snapshot_of

from gpuctl.collect.files import iter_raw_objects, load_snapshot
from gpuctl.engine import diagnose
from gpuctl.errors import UsageError
from gpuctl.model.manifests import parse_manifest_text, pod_templates
from gpuctl.reports.fit import fit_report

FIXTURES = ROOT / "tests" / "fit"
DEMO = ROOT / "examples" / "demo-cluster"
DEMO_CORDONED = "ip-10-42-50-173.us-west-2.compute.internal"

# Codes diagnose pod derives from what only an existing pod has; fit's pods do not exist yet.
EXISTING_POD_ONLY = {
    "autoscaler-no-scale-up": "from the cluster autoscaler's / Karpenter's events about the existing pod",
    "scale-up-in-progress": "from the autoscaler's TriggeredScaleUp / Nominated events about the existing pod",
    "preemption-in-progress": "from the existing pod's status.nominatedNodeName and its victims terminating",
    "scheduler-not-found": "from the existing pod's age with no PodScheduled condition or scheduling event",
    "scheduling-in-progress": "says the pod is seconds old, which every pod fit imagines is; fit drops it",
}

# Scenarios whose cause is the state of an existing object fit's pods would not have.
EXISTING_STATE_ONLY = {
    "kueue-admission-check-pending": "queue-not-admitted comes from the existing Workload's admission check (a "
                                     "ProvisioningRequest) being Pending; a new Workload's check has no state yet, and "
                                     "fit says it cannot tell (queue.admitted null)",
    "kueue-topology-no-fit": "queue-not-admitted comes from Kueue's topology-aware scheduling over the pod group "
                             "of 4 (the existing Workload's QuotaReserved=False message: 'topology allows to fit only "
                             "2 out of 4'); each pod fed back alone is one pod, whose quota and nodes fit, and fit does "
                             "not model TAS",
}


def _pending_pods():
    out = []
    for sc in scenario_dirs():
        snap = load_snapshot(snapshot_of(sc))
        for p in sorted(snap.pods.values(), key=lambda p: p.key):
            if p.phase == "Pending" and not p.spec.nodeName and not p.metadata.deletionTimestamp:
                out.append(pytest.param(sc, p.metadata.namespace, p.metadata.name, id=f"{sc.name}/{p.metadata.name}"))
    return out


PENDING = _pending_pods()


def _own_manifest(snapdir: Path, ns: str, name: str) -> dict:
    raw = next(o for o in iter_raw_objects(snapdir) if o.get("kind") == "Pod"
               and o["metadata"]["name"] == name and (o["metadata"].get("namespace") or "default") == ns)
    meta = raw["metadata"]
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": ns, "labels": meta.get("labels") or {},
                         "annotations": meta.get("annotations") or {}},
            "spec": copy.deepcopy(raw["spec"])}


def _matrix(nodes: list[dict]) -> dict:
    return {n["name"]: (n["fits"], n["reasons"], n["details"], n["free"]) for n in nodes}


def test_every_scenario_with_a_pending_pod_is_covered():
    names = {p.values[0].name for p in PENDING}
    assert len(PENDING) >= 35 and {"untolerated-taint", "pod-topology-constraint", "queue-not-admitted-kueue",
                                   "queue-not-admitted-volcano", "volume-binding"} <= names


def _without_device_narrowing(rows: list[dict]) -> list[dict]:
    out = []
    for n in rows:
        if "dra-claim-unallocatable" in n["reasons"]:
            reasons = [r for r in n["reasons"] if r != "dra-claim-unallocatable"]
            n = {**n, "reasons": reasons, "fits": not reasons,
                 "details": [x for x in n["details"] if x != "no free devices here for the pod's ResourceClaims"]}
        out.append(n)
    return out


@pytest.mark.parametrize("scenario, ns, name", PENDING)
def test_fit_agrees_with_diagnose_pod(scenario, ns, name):
    snapdir = snapshot_of(scenario)
    snap = load_snapshot(snapdir)
    d = diagnose(snap, ns, name)
    doc, code = fit_report(snap, [_own_manifest(snapdir, ns, name)], namespace=ns)
    assert doc["schema"] == "gpuctl/fit/v1"
    t = doc["workloads"][0]["templates"][0]
    # fit also narrows a DRA pod's nodes to those with devices for its claims (it must pick
    # one to place the next replica); diagnose pod says the same as a claim-level finding
    assert _matrix(_without_device_narrowing(t["nodes"])) == _matrix(d.nodes)
    if any("dra-claim-unallocatable" in n["reasons"] for n in t["nodes"]):
        assert snap.pods[f"{ns}/{name}"].spec.resourceClaims
    excluded = set(EXISTING_POD_ONLY) | ({"queue-not-admitted"} if scenario.name in EXISTING_STATE_ONLY else set())
    want = [f.code for f in d.findings if f.code not in excluded]
    assert [f["code"] for f in t["findings"]] == want
    blockers = [f for f in d.findings if f.severity.value == "blocker" and f.code not in excluded]
    fits_somewhere = any(n["fits"] for n in d.nodes)
    assert doc["fits"] == (fits_somewhere and not blockers)
    assert code == (0 if doc["fits"] else 1)
    if doc["fits"]:   # it goes where MostAllocated ranks first among the nodes diagnose says fit
        best = t["placements"][0]["node"]
        assert best == t["nodes"][0]["name"] and t["nodes"][0]["fits"]


def test_the_original_snapshot_is_not_changed():
    snap = load_snapshot(FIXTURES / "anti-affinity" / "snapshot")
    before = (dict(snap.pods), dict(snap.nodes), list(snap.events))
    docs = parse_manifest_text((FIXTURES / "anti-affinity" / "manifest.yaml").read_text(), "m")
    fit_report(snap, docs, assume=["uncordon=gpu-h1", "free=gpu-h4"])
    assert (snap.pods, snap.nodes, snap.events) == before


# ------------------------------------------------------------------ gangs, hand-checked


GANGS = sorted(p.name for p in FIXTURES.iterdir() if (p / "expected.json").is_file())


@pytest.mark.parametrize("name", GANGS)
def test_gang_fixture(cli, name):
    exp = json.loads((FIXTURES / name / "expected.json").read_text())
    r = cli("fit", "-f", str(FIXTURES / name / "manifest.yaml"), "--snapshot", str(FIXTURES / name / "snapshot"), "-o", "json")
    assert r.err == ""
    doc = r.json()
    w = doc["workloads"][0]
    assert (w["fit"], w["replicas"]) == (exp["fit"], exp["replicas"])
    assert w["stoppedBy"]["code"] == exp["stoppedBy"]
    assert [[p["pod"], p["node"]] for t in w["templates"] for p in t["placements"]] == exp["placements"]
    assert r.code == 1 and doc["fits"] is False and w["verdict"] == "partial"
    assert f"{exp['fit']} of {exp['replicas']} replicas" in doc["summary"]


def test_gang_that_fits_exits_0(cli):
    r = cli("fit", "-f", str(FIXTURES / "anti-affinity" / "manifest.yaml"), "--snapshot",
            str(FIXTURES / "anti-affinity" / "snapshot"), "--assume", "free=gpu-h4", "-o", "json")
    doc = r.json()
    assert r.code == 0 and doc["fits"], doc["summary"]
    assert doc["summary"].startswith("after freeing gpu-h4 (1 non-DaemonSet pod gone), 4 of 4 replicas")
    # freed, gpu-h4 is as empty as the others; placed replicas keep every later one off their host
    assert sorted(p["node"] for p in doc["workloads"][0]["templates"][0]["placements"]) == ["gpu-h1", "gpu-h2", "gpu-h3", "gpu-h4"]


def test_volcano_min_available(tmp_path):
    """A Volcano Job fits when minAvailable of its pods can start together."""
    snap = load_snapshot(FIXTURES / "anti-affinity" / "snapshot")
    job = {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {"name": "vc", "namespace": "ml"},
           "spec": {"minAvailable": 3, "schedulerName": "volcano", "queue": "default",
                    "tasks": [{"name": "worker", "replicas": 5, "template": yaml.safe_load(
                        (FIXTURES / "anti-affinity" / "manifest.yaml").read_text())["spec"]["template"]}]}}
    doc, code = fit_report(snap, [job])
    w = doc["workloads"][0]
    assert (w["fit"], w["minAvailable"], w["fits"], code) == (3, 3, True, 0)
    job["spec"]["minAvailable"] = 4
    doc, code = fit_report(snap, [job])
    assert (doc["workloads"][0]["fits"], code) == (False, 1)
    assert doc["workloads"][0]["queue"]["admitted"] is None     # no Volcano queue in this cluster: cannot tell


# ------------------------------------------------------------------ queues


def test_kueue_admission_from_the_cluster_queue():
    """The LocalQueue's ClusterQueue has 8 nominal GPUs, all reserved: a Job of 4
    GPUs is not admitted; the nodes would take it."""
    snapdir = snapshot_of(ROOT / "tests" / "scenarios" / "queue-not-admitted-kueue")
    snap = load_snapshot(snapdir)
    job = {"apiVersion": "batch/v1", "kind": "Job",
           "metadata": {"name": "sft", "namespace": "ml-team-a", "labels": {"kueue.x-k8s.io/queue-name": "team-a"}},
           "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [
               {"name": "t", "resources": {"requests": {"cpu": "4", "nvidia.com/gpu": "4"}, "limits": {"nvidia.com/gpu": "4"}}}]}}}}
    doc, code = fit_report(snap, [job])
    w = doc["workloads"][0]
    assert code == 1 and w["queue"]["admitted"] is False and w["stoppedBy"]["code"] == "queue-not-admitted"
    assert any("needs 4 nvidia.com/gpu, queue has 0 free of 8 nominal" in e for e in w["queue"]["evidence"])
    assert w["templates"][0]["placed"] == 1     # the scheduler would place it: the queue holds it
    job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = "no-such-queue"
    doc, _ = fit_report(snap, [job])
    assert "LocalQueue no-such-queue does not exist in namespace ml-team-a" in doc["workloads"][0]["stoppedBy"]["summary"]


# ------------------------------------------------------------------ the quick form and counterfactuals


def test_quick_form_ranks_by_most_allocated(cli):
    """Demo: 2-GPU pods go first where exactly 2 are free (score 100), then to the node with 3 free (7/8: 87)."""
    r = cli("fit", "--gpus", "2", "--replicas", "6", "--snapshot", str(DEMO), "-o", "json")
    doc = r.json()
    t = doc["workloads"][0]["templates"][0]
    assert [n["score"] for n in t["nodes"] if n["fits"]] == [100, 100, 87]
    assert [p["score"] for p in t["placements"]] == [100, 100, 87]
    assert doc["workloads"][0]["fit"] == 3 and r.code == 1
    assert doc["workloads"][0]["stoppedBy"]["replica"] == 4


def test_quick_form_8_gpus_on_demo(cli):
    r = cli("fit", "--gpus", "8", "--snapshot", str(DEMO))
    assert r.code == 1 and "BLOCKED" in r.out and "node-unschedulable" in r.out
    r = cli("fit", "--gpus", "8", "--snapshot", str(DEMO), "--assume", f"uncordon={DEMO_CORDONED}", "-o", "json")
    doc = r.json()
    assert r.code == 0 and doc["fits"]
    assert doc["summary"].startswith(f"after uncordoning {DEMO_CORDONED}, --gpus 8 fits: best node {DEMO_CORDONED}")
    assert doc["assumptions"] == [{"kind": "uncordon", "node": DEMO_CORDONED, "text": f"uncordoning {DEMO_CORDONED}"}]


def test_quick_form_selector_and_toleration():
    snap = load_snapshot(DEMO)
    doc, _ = fit_report(snap, gpus=1, selectors=["no-such-label=x"])
    assert doc["workloads"][0]["stoppedBy"]["code"] == "node-selector-mismatch"
    tainted = next(n for n in snap.nodes.values() if n.spec.taints and not n.spec.unschedulable)
    t = tainted.spec.taints[0]
    without, _ = fit_report(snap, gpus=1)
    with_tol, _ = fit_report(snap, gpus=1, tolerations=[f"{t.key}={t.value}:{t.effect}" if t.value else f"{t.key}:{t.effect}"])
    reasons = lambda d: {n["name"]: n["reasons"] for n in d["workloads"][0]["templates"][0]["nodes"]}
    assert "untolerated-taint" in reasons(without)[tainted.metadata.name]
    assert "untolerated-taint" not in reasons(with_tol)[tainted.metadata.name]


def test_untaint_assumption():
    snap = load_snapshot(DEMO)
    tainted = next(n for n in snap.nodes.values() if n.spec.taints and not n.spec.unschedulable)
    key = tainted.spec.taints[0].key
    doc, _ = fit_report(snap, gpus=1, assume=[f"untaint={tainted.metadata.name}:{key}"])
    node = next(n for n in doc["workloads"][0]["templates"][0]["nodes"] if n["name"] == tainted.metadata.name)
    assert "untolerated-taint" not in node["reasons"]
    assert doc["assumptions"][0]["text"] == f"removing taint {key} from {tainted.metadata.name}"


@pytest.mark.parametrize("args, words", [
    (["--gpus", "8", "--assume", "uncordon=gpu-nope"], "no node 'gpu-nope'"),
    (["--gpus", "8", "--assume", "reboot=x"], "give uncordon=NODE"),
    (["--gpus", "8", "--assume", f"untaint={DEMO_CORDONED}:no-such-key"], "has no taint 'no-such-key'"),
    (["--gpus", "0"], "--gpus 0"),
    (["--gpus", "1", "--toleration", "k=v:Sometimes"], "--toleration"),
    (["--gpus", "1", "--selector", "novalue"], "--selector"),
    (["--gpus", "1", "--resource", "bad resource"], "--resource"),
    ([], "give -f FILE"),
    (["--gpus", "1", "-f", "x.yaml"], "not both"),
    (["-f", "/nonexistent/m.yaml"], "cannot be read"),
])
def test_usage_errors(cli, args, words):
    r = cli("fit", *args, "--snapshot", str(DEMO))
    assert r.code == 2, r.out
    assert r.out == "" and words in r.err and "Traceback" not in r.err and len(r.err.strip().splitlines()) == 1


@pytest.mark.parametrize("text, words", [
    ("kind: Pod\nmetadata: {name: x\n", "not valid YAML or JSON"),
    ("- just\n- a list\n", "not a Kubernetes object"),
    ("apiVersion: v1\nkind: Service\nmetadata: {name: s}\n", "kind Service is not supported"),
    ("apiVersion: batch/v1\nkind: Job\nmetadata: {name: j}\nspec: {parallelism: -1, template: {spec: {containers: [{name: c}]}}}\n",
     "spec.parallelism must be a whole number"),
    ("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, resources: {requests: {nvidia.com/gpu: lots}}}]}\n",
     "nvidia.com/gpu"),
    ("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec: {replicas: 2}\n", "no pod template"),
    ("", "no Kubernetes object"),
])
def test_bad_manifests(cli, tmp_path, text, words):
    f = tmp_path / "m.yaml"
    f.write_text(text)
    r = cli("fit", "-f", str(f), "--snapshot", str(DEMO))
    assert r.code == 2 and words in r.err and "Traceback" not in r.err, r.err


def test_parse_manifest_text_library():
    docs = parse_manifest_text('{"apiVersion":"v1","kind":"List","items":[{"apiVersion":"v1","kind":"Pod",'
                               '"metadata":{"name":"a"},"spec":{"containers":[{"name":"c"}]}}]}', "inline")
    assert [d["kind"] for d in docs] == ["Pod"]
    with pytest.raises(UsageError, match="inline: document 1 .*kind CronJob is not supported"):
        parse_manifest_text("kind: CronJob\nmetadata: {name: c}\n", "inline")


def test_workload_kinds_and_replicas():
    text = (FIXTURES / "mixed-pools" / "manifest.yaml").read_text()
    ts = pod_templates(parse_manifest_text(text, "m")[0], "default", "m")
    assert [(t.role, t.replicas, t.namespace) for t in ts] == [("Master", 1, "ml"), ("Worker", 3, "ml")]
    jobset = {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": {"name": "js"},
              "spec": {"replicatedJobs": [{"name": "workers", "replicas": 2, "template": {"spec": {
                  "parallelism": 4, "template": {"spec": {"containers": [{"name": "c"}]}}}}}]}}
    (t,) = pod_templates(jobset, "team", "m")
    assert (t.role, t.replicas, t.namespace, t.pod["metadata"]["labels"]["jobset.sigs.k8s.io/jobset-name"]) == ("workers", 8, "team", "js")
    mpi = {"apiVersion": "kubeflow.org/v2beta1", "kind": "MPIJob", "metadata": {"name": "m"},
           "spec": {"mpiReplicaSpecs": {"Launcher": {"replicas": 1, "template": {"spec": {"containers": [{"name": "l"}]}}},
                                        "Worker": {"replicas": 2, "template": {"spec": {"containers": [{"name": "w"}]}}}}}}
    assert [(t.role, t.replicas) for t in pod_templates(mpi)] == [("Launcher", 1), ("Worker", 2)]


def test_stdin_and_repeated_files(cli, monkeypatch, tmp_path):
    import io
    import sys

    text = (FIXTURES / "anti-affinity" / "manifest.yaml").read_text()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(text.encode())))
    other = tmp_path / "pod.yaml"
    other.write_text("apiVersion: v1\nkind: Pod\nmetadata: {name: one, namespace: ml}\nspec:\n  containers:\n"
                     "  - name: c\n    resources: {limits: {nvidia.com/gpu: 1}}\n")
    r = cli("fit", "-f", "-", "-f", str(other), "--snapshot", str(FIXTURES / "anti-affinity" / "snapshot"), "-o", "json")
    doc = r.json()
    assert [w["workload"] for w in doc["workloads"]] == ["statefulset/serve", "pod/one"]
    # what the StatefulSet took, the pod sees: one GPU left on gpu-h1..h3 is not all there was
    assert doc["workloads"][1]["fits"] and doc["summary"].startswith("1 of 2 workloads fit")


# ------------------------------------------------------------------ output formats


@pytest.mark.parametrize("fmt", ["table", "wide", "json", "yaml", "markdown"])
def test_every_format(cli, fmt):
    r = cli("fit", "-f", str(FIXTURES / "topology-spread" / "manifest.yaml"), "--snapshot",
            str(FIXTURES / "topology-spread" / "snapshot"), "-o", fmt)
    assert r.code == 1 and r.err == "" and "\x1b" not in r.out
    if fmt == "json":
        assert r.json()["schema"] == "gpuctl/fit/v1"
    elif fmt == "yaml":
        doc = yaml.safe_load(r.out)
        assert doc["schema"] == "gpuctl/fit/v1" and doc["workloads"][0]["stoppedBy"]["code"] == "pod-topology-constraint"
    elif fmt == "markdown":
        assert r.out.startswith("## gpuctl fit: **does not fit**") and "`pod-topology-constraint`" in r.out
    else:
        assert "PARTIAL" in r.out and "pod-topology-constraint" in r.out
        assert ("Per-node fit of the first replica" in r.out) == (fmt == "wide")


def test_json_keys_are_camel_case(cli):
    r = cli("fit", "-f", str(FIXTURES / "quota" / "manifest.yaml"), "--snapshot", str(FIXTURES / "quota" / "snapshot"), "-o", "json")
    doc = r.json()
    t = doc["workloads"][0]["templates"][0]
    assert {"stoppedBy", "minAvailable"} <= set(doc["workloads"][0]) and {"quotaAdmits", "placements"} <= set(t)
    assert t["quotaAdmits"] == 2 and t["placed"] == 2 and t["fit"] == 2    # a refused pod is never created


def test_hostile_text_is_cleaned(cli, tmp_path):
    f = tmp_path / "m.yaml"
    f.write_text('apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: ml}\nspec:\n  nodeSelector: {"gpu-type": "a\\u001b[31m100"}\n'
                 "  containers: [{name: c, resources: {limits: {nvidia.com/gpu: 1}}}]\n")
    for fmt in ("table", "json", "markdown"):
        r = cli("fit", "-f", str(f), "--snapshot", str(FIXTURES / "mixed-pools" / "snapshot"), "-o", fmt)
        assert "\x1b" not in r.out and r.code == 1


# ------------------------------------------------------------------ live


def test_live_matches_snapshot(cli, serve):
    snapdir = FIXTURES / "topology-spread" / "snapshot"
    srv, kubeconfig = serve(snapdir)
    manifest = str(FIXTURES / "topology-spread" / "manifest.yaml")
    live = cli("fit", "-f", manifest, "--kubeconfig", kubeconfig, "-o", "json")
    offline = cli("fit", "-f", manifest, "--snapshot", str(snapdir), "-o", "json")
    assert live.err == "" and live.code == offline.code == 1
    a, b = live.json(), offline.json()
    assert (a["source"], b["source"]) == ("live", "snapshot")
    assert a["workloads"] == b["workloads"]
    assert {r.method for r in srv.requests} == {"GET"}
    paths = {r.path for r in srv.requests}
    assert not any(p.endswith("/events") for p in paths), paths      # pods that do not exist have no events
    assert "/api/v1/nodes" in paths and "/api/v1/namespaces/ml/resourcequotas" in paths


def test_live_quick_form_reads_nodes_and_bound_pods_only(cli, serve):
    srv, kubeconfig = serve(DEMO)
    r = cli("fit", "--gpus", "8", "--kubeconfig", kubeconfig, "--assume", f"uncordon={DEMO_CORDONED}", "-o", "json")
    assert r.code == 0 and r.json()["fits"]
    pod_lists = [r for r in srv.requests if r.path == "/api/v1/pods"]
    assert pod_lists and all("spec.nodeName" in " ".join(r.query.get("fieldSelector", [])) for r in pod_lists)
    assert not any(r.path.endswith("/events") or "/logs" in r.path or r.path.endswith("/log") for r in srv.requests)
    r = cli("fit", "--gpus", "8", "--kubeconfig", kubeconfig, "--assume", "uncordon=nope")
    assert r.code == 2 and "no node 'nope'" in r.err


def test_library_signature_is_the_documented_one():
    import inspect

    sig = inspect.signature(fit_report)
    assert list(sig.parameters) == ["snap", "manifests", "namespace", "gpus", "resource", "selectors", "tolerations",
                                    "replicas", "assume"]
    assert [p.name for p in sig.parameters.values() if p.kind == p.KEYWORD_ONLY] == list(sig.parameters)[2:]
    snap = load_snapshot(DEMO)
    with pytest.raises(UsageError, match="not both"):
        fit_report(snap, [{"kind": "Pod"}], gpus=1)
    with pytest.raises(UsageError, match="not both and not neither"):
        fit_report(snap)


def test_job_never_runs_more_pods_than_completions():
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"},
           "spec": {"parallelism": 8, "completions": 3, "template": {"spec": {"containers": [{"name": "c"}]}}}}
    (t,) = pod_templates(job)
    assert t.replicas == 3


def test_priority_is_named_in_a_note():
    snap = load_snapshot(FIXTURES / "mixed-pools" / "snapshot")
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "urgent", "namespace": "ml"},
           "spec": {"priorityClassName": "high", "nodeSelector": {"gpu-type": "a100"},
                    "containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": 8}}}]}}
    doc, code = fit_report(snap, [pod])
    t = doc["workloads"][0]["templates"][0]
    assert code == 0 and t["placements"][0]["node"] == "a100-1"
    assert any("priority high" in n and "preempt" in n for n in t["notes"])


@pytest.mark.parametrize("name", ["Bad_Name", "x; rm -rf /", "a" * 300])
def test_manifest_names_must_be_kubernetes_names(name):
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
           "spec": {"containers": [{"name": "c"}]}}
    with pytest.raises(UsageError, match="not a valid Kubernetes name"):
        pod_templates(pod)


def test_live_kueue_queue_is_read_and_judged(cli, serve, tmp_path):
    snapdir = snapshot_of(ROOT / "tests" / "scenarios" / "queue-not-admitted-kueue")
    srv, kubeconfig = serve(snapdir)
    f = tmp_path / "job.yaml"
    f.write_text("apiVersion: batch/v1\nkind: Job\nmetadata: {name: sft, namespace: ml-team-a, labels: "
                 "{kueue.x-k8s.io/queue-name: team-a}}\nspec:\n  template:\n    spec:\n      restartPolicy: Never\n"
                 "      containers: [{name: t, resources: {requests: {cpu: '4', nvidia.com/gpu: '4'}, limits: {nvidia.com/gpu: '4'}}}]\n")
    live = cli("fit", "-f", str(f), "--kubeconfig", kubeconfig, "-o", "json")
    offline = cli("fit", "-f", str(f), "--snapshot", str(snapdir), "-o", "json")
    assert live.err == "" and live.code == offline.code == 1
    assert live.json()["workloads"] == offline.json()["workloads"]
    assert live.json()["workloads"][0]["queue"]["admitted"] is False
    paths = {r.path for r in srv.requests}
    assert any(p.endswith("/localqueues") for p in paths) and any(p.endswith("/clusterqueues") for p in paths)


@pytest.mark.parametrize("scenario, ns, name", PENDING)
def test_live_fit_reads_what_the_offline_fit_uses(cli, serve, tmp_path, scenario, ns, name):
    """Each scenario's Pending pod as a manifest, live through the real client against
    the local API server: the same answer as from the snapshot, so the collector
    read everything the fit used (device plugins, DaemonSets, PVCs, DRA, queues)."""
    snapdir = snapshot_of(scenario)
    f = tmp_path / "pod.json"
    f.write_text(json.dumps(_own_manifest(snapdir, ns, name)))
    srv, kubeconfig = serve(snapdir)
    live = cli("fit", "-f", str(f), "--kubeconfig", kubeconfig, "-o", "json")
    offline = cli("fit", "-f", str(f), "--snapshot", str(snapdir), "-o", "json")
    assert live.err == "" and live.code == offline.code

    def comparable(doc: dict) -> list:
        # a device plugin's previous log the server answers 400 for (the kubelet's normal
        # answer when it is gone) is a `read logs` entry live only, as in test_scenarios
        for w in doc["workloads"]:
            for t in w["templates"]:
                t["checks"] = [c for c in t["checks"] if c["name"] != "read logs"]
        return doc["workloads"]

    assert comparable(live.json()) == comparable(offline.json())
    assert {r.method for r in srv.requests} == {"GET"}
    assert not [r.path for r in srv.requests if r.path.endswith("/events")]


def _gang_cases():
    cases = [pytest.param(FIXTURES / n / "snapshot", [FIXTURES / n / "manifest.yaml"], {}, id=f"fixture-{n}") for n in GANGS]
    for gpus, replicas in ((1, 40), (2, 12), (4, 6), (3, 9)):
        cases.append(pytest.param(DEMO, None, {"gpus": gpus, "replicas": replicas}, id=f"demo-{gpus}x{replicas}"))
    for p in PENDING[::3]:
        sc, ns, name = p.values
        cases.append(pytest.param(snapshot_of(sc), (ns, name), {}, id=f"scenario-{sc.name}"))
    return cases


@pytest.mark.parametrize("snapdir, manifests, quick", _gang_cases())
def test_reusing_the_fit_matrix_between_replicas_changes_nothing(monkeypatch, snapdir, manifests, quick):
    """Later replicas reuse the fit matrix with only the last node recomputed
    (engine.fit.REUSE_MATRIX): the document must equal a full diagnosis per replica."""
    import gpuctl.engine.fit as F

    def run() -> dict:
        snap = load_snapshot(snapdir)
        if quick:
            return fit_report(snap, **quick)[0]
        if isinstance(manifests, tuple):
            m = _own_manifest(snapdir, *manifests)
            job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "gang", "namespace": manifests[0]},
                   "spec": {"parallelism": 5, "template": {"metadata": m["metadata"], "spec": m["spec"]}}}
            return fit_report(snap, [job])[0]
        return fit_report(snap, [d for f in manifests for d in parse_manifest_text(f.read_text(), str(f))])[0]

    monkeypatch.setattr(F, "REUSE_MATRIX", True)
    fast = run()
    monkeypatch.setattr(F, "REUSE_MATRIX", False)
    assert fast == run()


def test_kueue_admission_checks_make_the_answer_unknown():
    snapdir = snapshot_of(ROOT / "tests" / "scenarios" / "kueue-admission-check-pending")
    ns, name = "ml-team-a", "llm-sft-7d4b9"
    doc, code = fit_report(load_snapshot(snapdir), [_own_manifest(snapdir, ns, name)], namespace=ns)
    q = doc["workloads"][0]["queue"]
    assert q["admitted"] is None and any("admission checks dws-prov" in e for e in q["evidence"])


def test_quota_that_admits_none_still_shows_the_fit_matrix():
    snap = load_snapshot(FIXTURES / "quota" / "snapshot")
    job = yaml.safe_load((FIXTURES / "quota" / "manifest.yaml").read_text())
    job["spec"]["template"]["spec"]["containers"][0]["resources"] = {"limits": {"nvidia.com/gpu": 10}}
    doc, code = fit_report(snap, [job])
    w = doc["workloads"][0]
    t = w["templates"][0]
    assert (code, w["verdict"], t["quotaAdmits"], t["placed"]) == (1, "blocked", 0, 0)
    assert w["stoppedBy"]["code"] == "quota-exceeded" and w["stoppedBy"]["replica"] == 1
    assert t["requests"]["nvidia.com/gpu"] == 10 and t["nodes"]     # the first pod's fit matrix all the same


def test_zero_replicas_fit_trivially():
    snap = load_snapshot(FIXTURES / "quota" / "snapshot")
    dep = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "namespace": "ml"},
           "spec": {"replicas": 0, "template": {"spec": {"containers": [{"name": "c"}]}}}}
    doc, code = fit_report(snap, [dep])
    assert code == 0 and doc["workloads"][0]["fit"] == 0 and doc["fits"]


def test_node_name_is_fitted_to_that_node_only():
    snap = load_snapshot(FIXTURES / "mixed-pools" / "snapshot")
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "pinned", "namespace": "ml"},
           "spec": {"nodeName": "l4-1", "containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": 2}}}]}}
    doc, code = fit_report(snap, [pod])
    t = doc["workloads"][0]["templates"][0]
    assert code == 0 and [p["node"] for p in t["placements"]] == ["l4-1"]
    assert [n["name"] for n in t["nodes"] if n["fits"]] == ["l4-1"]
    pod["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] = 6
    doc, code = fit_report(snap, [pod])
    assert code == 1


# ------------------------------------------------------------------ property: bad manifests are usage errors


_FUZZ_SNAP = load_snapshot(FIXTURES / "mixed-pools" / "snapshot")


_BITS = ["apiVersion: batch/v1\n", "kind: Job\n", "kind: Pod\n", "kind: PyTorchJob\n", "metadata: {name: x}\n",
         "spec:\n", "  parallelism: 3\n", "  replicas: -2\n", "  template:\n", "    spec:\n", "      containers:\n",
         "      - name: c\n", "        resources: {limits: {nvidia.com/gpu: 2}}\n", "        resources: {limits: {nvidia.com/gpu: x}}\n",
         "  pytorchReplicaSpecs: {Worker: {replicas: 2}}\n", "---\n", "- a\n", "{", "}", "&a [*a, *a]\n", "\x00", "\t", ": :\n"]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.one_of(st.text(max_size=300), st.lists(st.sampled_from(_BITS), max_size=25).map("".join)))
def test_any_manifest_text_is_fitted_or_a_usage_error(text):
    """Whatever the text, fit either answers or raises UsageError: never another exception."""
    snap = _FUZZ_SNAP
    try:
        docs = parse_manifest_text(text, "fuzz")
        doc, code = fit_report(snap, docs, namespace="ml")
    except UsageError as e:
        assert e.message and "\n" not in e.message.strip()
        return
    assert doc["schema"] == "gpuctl/fit/v1" and code in (0, 1)


def test_pytorchjob_min_available_from_its_scheduling_policy():
    snap = load_snapshot(FIXTURES / "mixed-pools" / "snapshot")
    ptj = yaml.safe_load((FIXTURES / "mixed-pools" / "manifest.yaml").read_text())
    ptj["spec"]["runPolicy"] = {"schedulingPolicy": {"minAvailable": 3}}
    doc, code = fit_report(snap, [ptj])
    w = doc["workloads"][0]
    assert (w["fit"], w["replicas"], w["minAvailable"], w["fits"], code) == (3, 4, 3, True, 0)


def test_quota_of_a_namespace_the_snapshot_did_not_save_is_unknown():
    snap = load_snapshot(FIXTURES / "quota" / "snapshot")
    snap.namespaces = ["other"]
    job = yaml.safe_load((FIXTURES / "quota" / "manifest.yaml").read_text())
    doc, code = fit_report(snap, [job])
    t = doc["workloads"][0]["templates"][0]
    assert t["quotaAdmits"] is None and t["placed"] == 3 and code == 0
    check = next(c for c in t["checks"] if c["name"] == "quota")
    assert check["status"] == "skipped" and "namespace ml" in check["detail"]


def test_gang_on_a_cluster_with_an_unreadable_node_field():
    """A node whose GPU count cannot be read is left out of every replica's matrix
    (node-fit says so), and the gang is placed on the others."""
    from gpuctl.model.objects import Unreadable

    snap = load_snapshot(FIXTURES / "anti-affinity" / "snapshot")
    snap.malformed.append(Unreadable("Node", None, "gpu-h1", "status.allocatable['nvidia.com/gpu']", "not a quantity",
                                     path=("status", "allocatable", "nvidia.com/gpu")))
    doc, code = fit_report(snap, gpus=1, replicas=6)
    t = doc["workloads"][0]["templates"][0]
    assert "gpu-h1" not in {n["name"] for n in t["nodes"]} and "gpu-h1" not in {p["node"] for p in t["placements"]}
    assert t["placed"] == 6 and code == 0
    assert any(c["name"] == "node-fit" and c["status"] == "error" and "gpu-h1" in c["detail"] for c in t["checks"])
    assert doc["unreadable"]      # the document lists what could not be read


DRA_JOB = """
apiVersion: batch/v1
kind: Job
metadata: {name: dra-gang, namespace: inference}
spec:
  parallelism: 8
  completions: 8
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: main
        image: nvcr.io/nvidia/pytorch:25.01-py3
        resources: {claims: [{name: gpu}]}
      resourceClaims:
      - {name: gpu, resourceClaimTemplateName: single-gpu}
"""


def test_a_dra_gang_takes_devices_replica_by_replica(cli, tmp_path):
    """tests/capacity/dra: one node publishes 8 GPUs through DRA, 2 held by claims; a
    third claim is not allocated. Each replica's claim (from template single-gpu: 1 GPU)
    is allocated on the node it is placed on, so 6 fit and the 7th finds none; nodes
    without the devices never fit, whatever their CPU and memory say."""
    f = tmp_path / "job.yaml"
    f.write_text(DRA_JOB)
    r = cli("fit", "-f", str(f), "--snapshot", str(ROOT / "tests" / "capacity" / "dra" / "snapshot"), "-o", "json")
    w = r.json()["workloads"][0]
    t = w["templates"][0]
    assert r.code == 1 and w["fit"] == 6 and not w["fits"]
    assert {p["node"] for p in t["placements"]} == {"gpu-h100-dra-1"} and len(t["placements"]) == 6
    assert w["stoppedBy"]["code"] == "dra-claim-unallocatable" and w["stoppedBy"]["replica"] == 7
    assert [n["name"] for n in t["nodes"] if n["fits"]] == ["gpu-h100-dra-1"]
    assert all("dra-claim-unallocatable" in n["reasons"] for n in t["nodes"] if n["name"] != "gpu-h100-dra-1")
