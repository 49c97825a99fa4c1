"""Every fix command of every scenario, executed with kubectl against the local API server.

For each scenario the cluster is served over real HTTP (token-less: kubectl does not
send a bearer token over plain HTTP), the diagnosis is taken *live* through that
server as a user would, and then each command of each fix is pasted into bash with
the kubeconfig, one after the other, as printed. A command must exit 0 (a trailing
``grep`` that finds nothing is the one accepted 1; ``gpuctl diagnose`` exits 1 when
it finds a problem, by contract) and must change what it claims: a taint removed,
a node uncordoned, a label set, a patch applied, a Job or pod re-created with the
change, a pod deleted, a Deployment rolled back.

Commands that cannot run as printed (an editor, an interactive shell, a drain, a
watch, a placeholder) are not executed; the test asserts their fix says so
(``needsJudgement``).

Scenario snapshots come from ``kubectl get nodes,pods,events -A``, without the
workloads owning the pods; the harness adds the one owning the diagnosed pod (a Job,
or a Deployment with its ReplicaSet), built from the pod as its controller would
have made it, so the fixes have the object they change.
"""

from __future__ import annotations

import copy
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import argv_of, captured_at, expected_of, raw_logs, raw_metrics, scenario_dirs, snapshot_of
from support.kubeapi import SnapshotAPIServer, json_patch
from gpuctl.collect.files import iter_raw_objects
from gpuctl.findings import _judgement_of

KUBECTL = shutil.which("kubectl")


def _kubectl_minor() -> int:
    try:
        out = subprocess.run([KUBECTL, "version", "--client", "-o", "json"], capture_output=True, text=True, timeout=30)
        return int(re.sub(r"\D", "", json.loads(out.stdout)["clientVersion"]["minor"]) or 0)
    except (OSError, ValueError, KeyError, subprocess.SubprocessError):
        return 0


# kubectl older than 1.27 validates with the OpenAPI v2 document the local server does
# not serve, and is outside the skew kubectl supports against the server's v1.31.
KUBECTL_MINOR = _kubectl_minor() if KUBECTL else 0
pytestmark = [pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed (.ci/run installs it where it can)"),
              pytest.mark.skipif(KUBECTL is not None and KUBECTL_MINOR < 27,
                                 reason=f"kubectl 1.{KUBECTL_MINOR} is too old for the server (needs 1.27+)")]

ADMISSION_KEYS = ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable")
JOB_LABELS = ("batch.kubernetes.io/controller-uid", "controller-uid", "batch.kubernetes.io/job-name", "job-name")


def _template_from_pod(pod: dict) -> dict:
    spec = copy.deepcopy(pod.get("spec") or {})
    for k in ("nodeName", "serviceAccount"):
        spec.pop(k, None)
    spec["tolerations"] = [t for t in spec.get("tolerations") or []
                           if not (t.get("key") in ADMISSION_KEYS and t.get("tolerationSeconds") == 300)]
    requested = {r for c in spec.get("containers") or [] for part in ("limits", "requests")
                 for r in ((c.get("resources") or {}).get(part) or {}) if "/" in r}
    spec["tolerations"] = [t for t in spec["tolerations"]
                           if not (t.get("key") in requested and t.get("operator") == "Exists" and not t.get("value"))]
    if not spec["tolerations"]:
        del spec["tolerations"]
    return spec


def owners_for(objs: list[dict], ns: str, pod_name: str) -> list[dict]:
    """The workload objects that own the pod, as its controller would have made them,
    when the snapshot lacks them."""
    have = {(o.get("kind"), (o.get("metadata") or {}).get("namespace"), o["metadata"]["name"]) for o in objs}
    pod = next((o for o in objs if o.get("kind") == "Pod" and o["metadata"].get("namespace") == ns
                and o["metadata"]["name"] == pod_name), None)
    if pod is None:
        return []
    out = []
    for ref in pod["metadata"].get("ownerReferences") or []:
        if (ref["kind"], ns, ref["name"]) in have:
            continue
        labels = dict(pod["metadata"].get("labels") or {})
        if ref["kind"] == "Job":
            uid = ref.get("uid") or labels.get("batch.kubernetes.io/controller-uid") or "00000000-job"
            out.append({"apiVersion": "batch/v1", "kind": "Job",
                        "metadata": {"name": ref["name"], "namespace": ns, "uid": uid,
                                     "labels": {k: v for k, v in labels.items() if k in JOB_LABELS}},
                        "spec": {"backoffLimit": 6, "completions": 1, "parallelism": 1,
                                 "selector": {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}},
                                 "template": {"metadata": {"labels": labels}, "spec": _template_from_pod(pod)}},
                        "status": {"active": 1}})
        elif ref["kind"] in ("StatefulSet", "DaemonSet"):
            sel = {k: v for k, v in labels.items() if k not in ("controller-revision-hash", "pod-template-generation",
                                                                "statefulset.kubernetes.io/pod-name",
                                                                "apps.kubernetes.io/pod-index")}
            out.append({"apiVersion": "apps/v1", "kind": ref["kind"],
                        "metadata": {"name": ref["name"], "namespace": ns, "uid": ref.get("uid") or f"uid-{ref['name']}"},
                        "spec": {"selector": {"matchLabels": sel},
                                 **({"replicas": 1, "serviceName": ref["name"]} if ref["kind"] == "StatefulSet" else {}),
                                 "template": {"metadata": {"labels": sel}, "spec": _template_from_pod(pod)}}})
        elif ref["kind"] == "ReplicaSet":
            dep = ref["name"].rsplit("-", 1)[0]
            sel = {k: v for k, v in labels.items() if k != "pod-template-hash"}
            template = {"metadata": {"labels": labels}, "spec": _template_from_pod(pod)}
            dep_uid = f"dep-{dep}"
            out.append({"apiVersion": "apps/v1", "kind": "ReplicaSet",
                        "metadata": {"name": ref["name"], "namespace": ns, "uid": ref.get("uid") or f"rs-{dep}",
                                     "labels": labels, "annotations": {"deployment.kubernetes.io/revision": "1"},
                                     "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": dep,
                                                          "uid": dep_uid, "controller": True}]},
                        "spec": {"replicas": 1, "selector": {"matchLabels": labels}, "template": template}})
            if ("Deployment", ns, dep) not in have:
                out.append({"apiVersion": "apps/v1", "kind": "Deployment",
                            "metadata": {"name": dep, "namespace": ns, "uid": dep_uid, "generation": 1,
                                         "annotations": {"deployment.kubernetes.io/revision": "1"}},
                            "spec": {"replicas": 1, "selector": {"matchLabels": sel},
                                     "template": {"metadata": {"labels": sel}, "spec": _template_from_pod(pod)}}})
    return out


def _find(objs: list[dict], kind: str, ns: str, name: str) -> dict | None:
    for o in objs:
        m = o.get("metadata") or {}
        if o.get("kind", "").lower() == kind.lower() and m.get("name") == name and (m.get("namespace") or "") in (ns, ""):
            return o
    return None


_KIND = {"job": "Job", "deployment": "Deployment", "statefulset": "StatefulSet", "daemonset": "DaemonSet",
         "replicaset": "ReplicaSet", "pod": "Pod", "node": "Node", "nodes": "Node"}


def _ops_in(cmd: str) -> list[dict]:
    m = re.search(r"-p '((?:[^']|'\\'')*)'", cmd)
    return json.loads(m.group(1).replace("'\\''", "'")) if m else []


def _ns_of(words: list[str]) -> str:
    return words[words.index("-n") + 1] if "-n" in words else "default"


def check_claim(cmd: str, before: list[dict], after: list[dict]) -> None:
    """What the command claims to change, read back from the server."""
    words = shlex.split(cmd.split("|", 1)[0].split("#", 1)[0])
    if not words or words[0] != "kubectl":
        return
    ns = _ns_of(words)
    verb_at = next(i for i, w in enumerate(words[1:], 1) if not w.startswith("-") and words[i - 1] != "-n")
    verb = words[verb_at]
    if "| kubectl replace --force -f -" in cmd or (verb == "replace" and "--force" in words):
        kind, _, name = words[verb_at + 1].partition("/") if verb == "get" else ("", "", "")
        if verb == "get":
            old, new = _find(before, _KIND[kind], ns, name), _find(after, _KIND[kind], ns, name)
            assert new is not None, f"{kind}/{name} is gone after {cmd}"
            assert new["metadata"]["uid"] != old["metadata"]["uid"], f"{kind}/{name} was not re-created by {cmd}"
            for op in _ops_in(cmd):
                if op["op"] == "add" and "/labels/" not in op["path"] and op["path"] != "/spec/selector":
                    target = op["path"].removesuffix("/-")
                    got = new
                    for tok in target.strip("/").split("/"):
                        tok = tok.replace("~1", "/").replace("~0", "~")
                        got = got[int(tok)] if isinstance(got, list) else got[tok]
                    want = op["value"]
                    assert (want in got) if op["path"].endswith("/-") else (got == want), (cmd, got, want)
        return
    if verb == "taint":
        node = _find(after, "Node", "", words[verb_at + 2])
        spec = words[verb_at + 3]
        key = re.split(r"[=:]", spec)[0]
        effect = spec.rstrip("-").rsplit(":", 1)[-1]
        present = any(t.get("key") == key and t.get("effect") == effect for t in node["spec"].get("taints") or [])
        assert present != spec.endswith("-"), f"{cmd}: taint {'still there' if present else 'missing'}"
    elif verb == "uncordon":
        node = _find(after, "Node", "", words[verb_at + 1])
        assert not node["spec"].get("unschedulable"), f"{cmd}: node still cordoned"
    elif verb == "label":
        node = _find(after, "Node", "", words[verb_at + 2])
        for pair in words[verb_at + 3:]:
            if "=" in pair and not pair.startswith("-"):
                k, v = pair.split("=", 1)
                assert node["metadata"]["labels"].get(k) == v, f"{cmd}: label {k} not set"
    elif verb == "patch":
        kind, _, name = words[verb_at + 1].partition("/")
        old, new = _find(before, _KIND[kind], ns, name), _find(after, _KIND[kind], ns, name)
        want = json_patch(copy.deepcopy(old), _ops_in(cmd))
        assert new["spec"] == want["spec"], f"{cmd}: the patch is not what the object holds now"
        assert new["spec"] != old["spec"], f"{cmd}: changed nothing"
    elif verb == "delete":
        kind = words[verb_at + 1]
        name = words[verb_at + 2]
        assert _find(after, _KIND.get(kind, kind), ns, name) is None, f"{cmd}: {name} still there"
    elif verb == "rollout" and words[verb_at + 1] == "undo":
        name = words[verb_at + 2].partition("/")[2]
        rev = next(w.split("=", 1)[1] for w in words if w.startswith("--to-revision="))
        dep = _find(after, "Deployment", ns, name)
        rs = next(o for o in after if o.get("kind") == "ReplicaSet"
                  and (o["metadata"].get("annotations") or {}).get("deployment.kubernetes.io/revision") == rev
                  and any(r.get("name") == name for r in o["metadata"].get("ownerReferences") or []))
        assert dep["spec"]["template"]["spec"] == rs["spec"]["template"]["spec"], f"{cmd}: template not rolled back"


READ_VERBS = ("get", "describe", "logs")
_SERVED_AS = {"configmap": "ConfigMap", "configmaps": "ConfigMap", "nodepools": "NodePool", "nodeclaims": "NodeClaim",
              "priorityclass": "PriorityClass", "runtimeclass": "RuntimeClass", "resourceclaims": "ResourceClaim",
              "deviceclasses": "DeviceClass", "resourceslices": "ResourceSlice", "clusterqueue": "ClusterQueue",
              "localqueue": "LocalQueue", "workloads.kueue.x-k8s.io": "Workload", "podgroup": "PodGroup",
              "queues.scheduling.volcano.sh": "Queue", "ds": "DaemonSet", "resourcequota": "ResourceQuota",
              "pvc": "PersistentVolumeClaim", "statefulset": "StatefulSet"}


def _reads_unsnapshotted_kind(cmd: str, stderr: str, objs: list[dict]) -> bool:
    """A read of a kind the snapshot does not hold at all (snapshots are
    ``kubectl get nodes,pods,events`` plus what the case needs): the server
    answers 404 for it as a cluster without that API would. Only reads qualify."""
    words = shlex.split(cmd.split("|", 1)[0].split("#", 1)[0])
    verbs = [w for i, w in enumerate(words[1:], 1) if not w.startswith("-") and words[i - 1] != "-n"]
    if len(verbs) < 2 or verbs[0] not in READ_VERBS:
        return False
    if verbs[0] == "logs":   # a crashed container's previous log the snapshot did not keep
        return "--previous" in words and "previous terminated container" in stderr
    kind = _SERVED_AS.get(verbs[1].split("/")[0])
    held = {o.get("kind") for o in objs}
    return kind is not None and kind not in held and ("NotFound" in stderr or "doesn't have a resource type" in stderr)


def _gpuctl_shim(bin_dir: Path) -> None:
    bin_dir.mkdir(exist_ok=True)
    shim = bin_dir / "gpuctl"
    shim.write_text(f"#!/bin/sh\nexec {shlex.quote(sys.executable)} -m gpuctl \"$@\"\n")
    shim.chmod(0o755)


def _run(cmd: str, env: dict, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "-c", "set -o pipefail; " + cmd], env=env, cwd=cwd, capture_output=True,
                          text=True, timeout=60)


def fixes_of(doc: dict) -> list[dict]:
    return [fx for f in doc["findings"] for fx in f["fixes"]]


def _serve(objs: list[dict], snapdir: Path, tmp_path: Path, tag: str) -> tuple[SnapshotAPIServer, dict]:
    srv = SnapshotAPIServer(objs, logs=raw_logs(snapdir), metrics=raw_metrics(snapdir), token=None)
    srv.start()
    kubeconfig = srv.write_kubeconfig(str(tmp_path / f"kubeconfig-{tag}"), context="incident")
    env = {**os.environ, "KUBECONFIG": kubeconfig, "PATH": f"{tmp_path / 'bin'}:{os.environ.get('PATH', '')}",
           "NO_COLOR": "1", "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    now = captured_at(snapdir)
    if now:
        env["GPUCTL_NOW"] = now
    return srv, env


def run_every_fix(snapdir: Path, argv: list[str], tmp_path: Path, expect_findings: bool) -> list[str]:
    """Serve the case, diagnose it live, then run each fix's runnable commands in
    order, each fix on a fresh copy of the cluster (fixes are alternatives, not
    steps of one plan). Returns the commands run."""
    objs = list(iter_raw_objects(snapdir))
    if argv[1] == "pod" and "/" not in argv[2]:
        objs += owners_for(objs, argv[4], argv[2])
    _gpuctl_shim(tmp_path / "bin")
    srv, env = _serve(objs, snapdir, tmp_path, "diagnose")
    try:
        live = subprocess.run([sys.executable, "-m", "gpuctl", *argv, "-o", "json"], env=env, capture_output=True,
                              text=True, timeout=120)
    finally:
        srv.stop()
    assert live.returncode in (0, 1), live.stderr
    doc = json.loads(live.stdout)
    assert doc["findings"] or not expect_findings, doc
    executed = []
    for i, fx in enumerate(fixes_of(doc)):
        srv, env = _serve(objs, snapdir, tmp_path, str(i))
        try:
            for cmd in fx["commands"]:
                form = _judgement_of([cmd])
                if form:
                    assert fx.get("needsJudgement"), f"{cmd!r} cannot run as printed ({form}) but its fix does not say so"
                    continue
                before = copy.deepcopy(srv.objects)
                r = _run(cmd, env, tmp_path)
                grep_miss = r.returncode == 1 and re.search(r"\|\s*grep [^|]*$", cmd) and not r.stderr.strip()
                gpuctl_found = r.returncode == 1 and cmd.startswith("gpuctl ")
                unserved = _reads_unsnapshotted_kind(cmd, r.stderr, objs)
                assert r.returncode == 0 or grep_miss or gpuctl_found or unserved, f"{cmd}\nexit {r.returncode}\n{r.stderr}"
                check_claim(cmd, before, srv.objects)
                executed.append(cmd)
        finally:
            srv.stop()
    return executed


@pytest.mark.parametrize("scenario", scenario_dirs(), ids=lambda p: p.name)
def test_every_fix_runs_and_does_what_it_says(scenario, tmp_path):
    exp = expected_of(scenario)
    run_every_fix(snapshot_of(scenario), argv_of(exp), tmp_path, bool(exp.get("codes")))


DEMO = Path(__file__).resolve().parents[1] / "examples" / "demo-cluster"
DEMO_CASES = json.loads((DEMO.parent / "demo-cluster.expected.json").read_text())["cases"]


@pytest.mark.parametrize("case", DEMO_CASES, ids=lambda c: c["pod"])
def test_every_fix_of_the_demo_runs(case, tmp_path):
    ns, name = case["pod"].split("/", 1)
    ran = run_every_fix(DEMO, ["diagnose", "pod", name, "-n", ns], tmp_path, True)
    assert ran


def test_a_dropped_toleration_is_rolled_back_to_the_revision_that_had_it(tmp_path):
    """The demo's vllm-7b: revision 7 dropped the GPU pool's toleration; the first fix
    rolls back to revision 6 and the Deployment's template is revision 6's again."""
    ran = run_every_fix(DEMO, ["diagnose", "pod", "vllm-7b-5c8d-pq2lm", "-n", "inference"], tmp_path, True)
    assert "kubectl -n inference rollout undo deployment/vllm-7b --to-revision=6" in ran


def test_a_job_copied_with_its_generated_selector_is_refused_like_on_a_cluster(tmp_path):
    """Why the re-create pipeline strips fields: the plain get -o yaml / replace --force
    recipe fails against the server exactly as against a cluster."""
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": "train-x", "namespace": "ml", "labels": {"batch.kubernetes.io/controller-uid": "u1",
                                                                        "controller-uid": "u1", "job-name": "train"},
                        "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": "train", "uid": "u1",
                                             "controller": True}]},
           "spec": {"containers": [{"name": "c", "image": "i"}]}, "status": {"phase": "Pending"}}
    objs = [pod] + owners_for([pod], "ml", "train-x")
    with SnapshotAPIServer(objs, token=None) as srv:
        kc = srv.write_kubeconfig(str(tmp_path / "kc"), context="t")
        env = {**os.environ, "KUBECONFIG": kc}
        r = _run("kubectl -n ml get job/train -o json | kubectl replace --force -f -", env, tmp_path)
        assert r.returncode != 0 and "selector" in r.stderr, r.stderr
        assert _find(srv.objects, "Job", "ml", "train") is None   # deleted first, then refused: the Job is lost
    with SnapshotAPIServer(objs, token=None) as srv:
        kc = srv.write_kubeconfig(str(tmp_path / "kc"), context="t")
        env = {**os.environ, "KUBECONFIG": kc}
        r = _run("kubectl -n ml get job/train -o json | kubectl patch --local -f - --type=json -p "
                 "'[{\"op\":\"remove\",\"path\":\"/spec/selector\"},"
                 "{\"op\":\"remove\",\"path\":\"/spec/template/metadata/labels/batch.kubernetes.io~1controller-uid\"},"
                 "{\"op\":\"remove\",\"path\":\"/spec/template/metadata/labels/controller-uid\"}]' -o json"
                 " | kubectl replace --force -f -", env, tmp_path)
        assert r.returncode == 0, r.stderr
        job = _find(srv.objects, "Job", "ml", "train")
        assert job["metadata"]["uid"] != "u1"
        assert job["spec"]["selector"]["matchLabels"]["batch.kubernetes.io/controller-uid"] == job["metadata"]["uid"]
