"""deploy/ keeps the fleet's labels right without giving any GPU node a write right
(docs/fleet.md): the manifests parse, the probe DaemonSet holds no rights at all and
runs unprivileged, the labeller holds exactly its rights and runs off the GPU
nodes, the ValidatingAdmissionPolicy names every gpuctl key and only the
labeller, and the probe loop prints one JSON document per line. No cluster needed."""

from __future__ import annotations

import ast
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
DEPLOY = ROOT / "deploy"
LABELLER_USER = "system:serviceaccount:gpuctl:gpuctl-labeller"
GPUCTL_KEYS = ["gpu-type", "gpu-memory", "gpu-count", "gpu-family", "gpu-memory-gib"]
WRITE_VERBS = {"create", "update", "patch", "delete", "deletecollection", "escalate", "bind", "impersonate", "*"}


def _files() -> list[Path]:
    return sorted(p for p in DEPLOY.iterdir() if p.suffix in (".yaml", ".yml", ".json"))


def _docs(path: Path) -> list[dict]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d is not None]


def _all() -> list[tuple[Path, dict]]:
    return [(p, d) for p in _files() for d in _docs(p)]


def _one(kind: str, name: str, path: Path | None = None) -> dict:
    found = [d for p, d in _all() if d["kind"] == kind and d["metadata"]["name"] == name
             and (path is None or p == path)]
    assert found, f"no {kind} {name} in deploy/"
    return found[0]


def _pod_specs() -> list[tuple[str, dict]]:
    out = []
    for _, d in _all():
        spec = d.get("spec") or {}
        if d["kind"] == "CronJob":
            out.append((f"CronJob/{d['metadata']['name']}", spec["jobTemplate"]["spec"]["template"]["spec"]))
        elif d["kind"] in ("DaemonSet", "Deployment", "StatefulSet", "Job", "ReplicaSet"):
            out.append((f"{d['kind']}/{d['metadata']['name']}", spec["template"]["spec"]))
        elif d["kind"] == "Pod":
            out.append((f"Pod/{d['metadata']['name']}", spec))
    return out


def _probe_pod() -> dict:
    return _one("DaemonSet", "gpuctl-probe")["spec"]["template"]["spec"]


def _labeller_pod() -> dict:
    return _one("CronJob", "gpuctl-labeller")["spec"]["jobTemplate"]["spec"]["template"]["spec"]


def _vap() -> dict:
    return _one("ValidatingAdmissionPolicy", "gpuctl-labeller-node-labels")


# ------------------------------------------------------------------ every document


def test_the_manifests_are_there():
    names = {p.name for p in _files()}
    assert {"probe-daemonset.yaml", "labeller.yaml", "validating-admission-policy.yaml", "rbac.yaml"} <= names
    assert (DEPLOY / "Dockerfile").is_file()


@pytest.mark.parametrize("path", _files(), ids=lambda p: p.name)
def test_every_document_parses_and_names_itself(path):
    docs = _docs(path)
    assert docs, f"{path.name} holds no document"
    for d in docs:
        assert isinstance(d, dict), path.name
        assert isinstance(d.get("apiVersion"), str) and d["apiVersion"], (path.name, d)
        assert isinstance(d.get("kind"), str) and d["kind"], (path.name, d)
        assert isinstance((d.get("metadata") or {}).get("name"), str) and d["metadata"]["name"], (path.name, d)


def _model_round_trip(doc: dict):
    """The document read into the official client's model for its kind and written
    back: a misspelled or misplaced field (readOnlyRootFileSystem, a
    securityContext field at the wrong level) is dropped on the way and shows as a
    difference. No cluster needed: the models are generated from the API schema."""
    from kubernetes import client

    api = client.ApiClient()
    deserialize = getattr(api, "_ApiClient__deserialize", None)
    if deserialize is None:
        pytest.skip("this kubernetes client has no model deserializer")
    version = doc["apiVersion"].rpartition("/")[2]
    klass = f"{version[:1].upper()}{version[1:]}{doc['kind']}"
    return api.sanitize_for_serialization(deserialize(doc, klass))


@pytest.mark.parametrize("path", _files(), ids=lambda p: p.name)
def test_every_field_is_a_real_api_field(path):
    for d in _docs(path):
        assert _model_round_trip(d) == d, f"{path.name}: {d['kind']} {d['metadata']['name']} has unknown fields"


def test_no_object_is_defined_twice_differently():
    seen: dict[tuple, dict] = {}
    for path, d in _all():
        key = (d["apiVersion"], d["kind"], d["metadata"].get("namespace"), d["metadata"]["name"])
        if key in seen:
            assert seen[key] == d, f"{key} differs between files"
        seen[key] = d


def test_the_namespace_comes_with_both_workload_files():
    # kubectl apply -f deploy/ applies files in name order: labeller.yaml first.
    a = _one("Namespace", "gpuctl", DEPLOY / "labeller.yaml")
    b = _one("Namespace", "gpuctl", DEPLOY / "probe-daemonset.yaml")
    assert a == b
    for _, d in _all():
        ns = d["metadata"].get("namespace")
        assert ns in (None, "gpuctl"), d["metadata"]


def test_images_agree():
    images = {c["image"] for _, spec in _pod_specs() for c in spec["containers"]}
    assert len(images) == 1, images


# ------------------------------------------------------------------ the probe: no rights


def _subjects() -> list[tuple[dict, dict]]:
    return [(d, s) for _, d in _all() if d["kind"] in ("RoleBinding", "ClusterRoleBinding")
            for s in d.get("subjects") or []]


def test_probe_service_account_is_bound_to_nothing():
    _one("ServiceAccount", "gpuctl-probe")
    for binding, s in _subjects():
        assert not (s.get("kind") == "ServiceAccount" and s.get("name") == "gpuctl-probe"), binding["metadata"]
        assert not (s.get("kind") == "User" and s.get("name") == "system:serviceaccount:gpuctl:gpuctl-probe"), \
            binding["metadata"]
        # Nor through a group that contains it.
        assert s.get("name") not in ("system:serviceaccounts", "system:serviceaccounts:gpuctl"), binding["metadata"]


def test_probe_pod_has_no_token_and_uses_its_own_account():
    sa = _one("ServiceAccount", "gpuctl-probe")
    pod = _probe_pod()
    assert pod["serviceAccountName"] == "gpuctl-probe"
    assert sa.get("automountServiceAccountToken") is False
    assert pod.get("automountServiceAccountToken") is False


def test_no_pod_in_deploy_runs_privileged_or_as_root_or_with_a_capability():
    for what, spec in _pod_specs():
        for key in ("hostNetwork", "hostPID", "hostIPC"):
            assert not spec.get(key), (what, key)
        psc = spec.get("securityContext") or {}
        assert psc.get("runAsNonRoot") is True and psc.get("runAsUser", 0) != 0, what
        assert (psc.get("seccompProfile") or {}).get("type") == "RuntimeDefault", what
        for c in spec.get("initContainers", []) + spec["containers"]:
            sc = c.get("securityContext") or {}
            assert sc.get("privileged") is not True, (what, c["name"])
            assert sc.get("allowPrivilegeEscalation") is False, (what, c["name"])
            assert sc.get("readOnlyRootFilesystem") is True, (what, c["name"])
            caps = sc.get("capabilities") or {}
            assert caps.get("drop") == ["ALL"] and not caps.get("add"), (what, c["name"])
            assert sc.get("runAsUser", 65532) != 0, (what, c["name"])


def test_probe_daemonset_runs_only_on_gpu_nodes_and_tolerates_their_taint():
    pod = _probe_pod()
    terms = pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert terms and all(t.get("matchExpressions") for t in terms)
    # Every term (they are ORed) must select GPU nodes: the first is GFD's label.
    assert {"key": "nvidia.com/gpu.present", "operator": "In", "values": ["true"]} in terms[0]["matchExpressions"]
    assert any(t.get("key") == "nvidia.com/gpu" and t.get("operator") == "Exists" for t in pod["tolerations"])


def test_probe_container_reads_nvml_through_the_runtime_and_requests_no_gpu():
    pod = _probe_pod()
    c = pod["containers"][0]
    assert c["name"] == "probe"   # the labeller reads the first container's log
    env = {e["name"]: e for e in c["env"]}
    assert env["NODE_NAME"]["valueFrom"]["fieldRef"]["fieldPath"] == "spec.nodeName"
    assert env["NVIDIA_VISIBLE_DEVICES"]["value"] == "all"
    assert env["NVIDIA_DRIVER_CAPABILITIES"]["value"] == "utility"
    assert pod.get("runtimeClassName") == "nvidia"
    for section in ("requests", "limits"):
        assert not any(k.startswith("nvidia.com/") for k in (c["resources"].get(section) or {}))
    assert c["resources"]["limits"]["memory"] and c["resources"]["requests"]["cpu"]


def test_probe_host_mounts_are_read_only_and_only_var_log():
    pod = _probe_pod()
    host = {v["name"]: v["hostPath"] for v in pod["volumes"] if "hostPath" in v}
    assert {h["path"] for h in host.values()} == {"/var/log"}
    mounts = [m for c in pod["containers"] for m in c.get("volumeMounts", []) if m["name"] in host]
    assert mounts and all(m.get("readOnly") is True for m in mounts)
    env = {e["name"]: e.get("value") for e in pod["containers"][0]["env"]}
    assert any(env["KERNEL_LOG"] == m["mountPath"].rstrip("/") + "/kern.log" for m in mounts)


def test_probe_runs_the_node_probe_every_ten_minutes():
    c = _probe_pod()["containers"][0]
    script = c["args"][0]
    assert c["command"][:2] == ["/bin/sh", "-c"]
    assert "gpuctl node probe -o json --node \"$NODE_NAME\"" in script
    assert "--kernel-log \"$KERNEL_LOG\"" in script
    env = {e["name"]: e.get("value") for e in c["env"]}
    assert env["PROBE_INTERVAL_SECONDS"] == "600"


# ------------------------------------------------------------------ the probe loop, run


def _fake_bin(tmp_path: Path, body: str) -> Path:
    bindir = tmp_path / "bin"
    bindir.mkdir()
    fake = bindir / "gpuctl"
    fake.write_text("#!/bin/sh\necho \"$*\" >> \"$CALLS\"\n" + body)
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    (bindir / "python").symlink_to(sys.executable)
    return bindir


def _run_loop(tmp_path: Path, body: str, kernel_log: str) -> tuple[list[str], str, list[str], float]:
    """Start the DaemonSet's script with a fake gpuctl, wait for its first probe,
    stop it as the kubelet would (SIGTERM) and return (stdout lines, stderr,
    gpuctl calls, seconds from SIGTERM to exit)."""
    script = _probe_pod()["containers"][0]["args"][0]
    bindir = _fake_bin(tmp_path, body)
    calls = tmp_path / "calls"
    env = dict(os.environ, PATH=f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}", NODE_NAME="gpu-a100-3",
               PROBE_INTERVAL_SECONDS="600", KERNEL_LOG=kernel_log, CALLS=str(calls))
    proc = subprocess.Popen(["/bin/sh", "-c", script], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not calls.exists():
            time.sleep(0.05)
        time.sleep(0.5)   # let it print and reach the sleep
        t0 = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=10)
        took = time.monotonic() - t0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    return out.splitlines(), err, calls.read_text().splitlines() if calls.exists() else [], took


needs_sh = pytest.mark.skipif(not Path("/bin/sh").exists() or shutil.which("sleep") is None,
                              reason="needs a POSIX shell")

DOC = """{
  "schema": "gpuctl/probe/v1",
  "node": "gpu-a100-3",
  "gpus": [
    {"index": 0, "name": "NVIDIA A100-SXM4-80GB", "memoryTotalMiB": 81920}
  ]
}"""


@needs_sh
@pytest.mark.parametrize("code", [0, 1])
def test_probe_loop_prints_one_document_per_line(tmp_path, code):
    kern = tmp_path / "kern.log"
    kern.write_text("Nov 20 02:58:11 gpu-a100-3 kernel: NVRM: Xid (PCI:0000:07:00): 79, GPU has fallen off the bus.\n")
    lines, err, calls, took = _run_loop(tmp_path, f"cat <<'EOF'\n{DOC}\nEOF\nexit {code}\n", str(kern))
    assert len(lines) == 1, lines
    assert json.loads(lines[0]) == json.loads(DOC)
    assert calls == [f"node probe -o json --node gpu-a100-3 --kernel-log {kern}"]
    assert err == ""
    assert took < 5   # within terminationGracePeriodSeconds


@needs_sh
def test_probe_loop_without_a_readable_kernel_log_lets_the_probe_choose(tmp_path):
    lines, _, calls, _ = _run_loop(tmp_path, f"cat <<'EOF'\n{DOC}\nEOF\n", str(tmp_path / "missing.log"))
    assert calls == ["node probe -o json --node gpu-a100-3"]
    assert len(lines) == 1 and json.loads(lines[0])["schema"] == "gpuctl/probe/v1"


@needs_sh
def test_probe_loop_without_a_driver_logs_only_gpuctls_one_line(tmp_path):
    body = "echo 'gpuctl: error: no NVIDIA driver on this machine: NVML library not found' >&2\nexit 4\n"
    lines, err, calls, took = _run_loop(tmp_path, body, str(tmp_path / "missing.log"))
    assert lines == []
    assert err.strip().splitlines() == ["gpuctl: error: no NVIDIA driver on this machine: NVML library not found"]
    assert len(calls) == 1 and took < 5


@needs_sh
def test_probe_loop_never_prints_a_non_document_on_stdout(tmp_path):
    lines, err, _, _ = _run_loop(tmp_path, "echo 'Traceback (most recent call last):'\nexit 1\n",
                                 str(tmp_path / "missing.log"))
    assert lines == []
    assert "not JSON" in err
    assert not any(ln.lstrip().startswith("{") for ln in err.splitlines())


# ------------------------------------------------------------------ the labeller


def _rules(kind: str, name: str) -> list[dict]:
    return _one(kind, name, DEPLOY / "labeller.yaml")["rules"]


def test_labeller_cluster_role_patches_nodes_and_writes_nothing_else():
    rules = _rules("ClusterRole", "gpuctl-labeller")
    assert any("patch" in r["verbs"] and "nodes" in r["resources"] and r["apiGroups"] == [""] for r in rules)
    for r in rules:
        assert r["apiGroups"] == [""] and "*" not in r["resources"], r
        assert not r.get("resourceNames"), r
        for res in r["resources"]:
            allowed = {"get", "list", "patch"} if res == "nodes" else {"get", "list"}
            assert set(r["verbs"]) <= allowed, (res, r["verbs"])
            assert res != "nodes" or not (set(r["verbs"]) & (WRITE_VERBS - {"patch"})), r
    granted = {(res, v) for r in rules for res in r["resources"] for v in r["verbs"]}
    assert granted == {("nodes", "get"), ("nodes", "list"), ("nodes", "patch")}


def test_labeller_reads_probe_logs_only_in_its_namespace():
    role = _one("Role", "gpuctl-labeller", DEPLOY / "labeller.yaml")
    assert role["metadata"]["namespace"] == "gpuctl"
    granted = {(res, v) for r in role["rules"] for res in r["resources"] for v in r["verbs"]}
    assert granted == {("pods", "list"), ("pods/log", "get")}


def test_labeller_bindings_name_its_account_and_nothing_else_is_bound_to_it():
    for kind in ("ClusterRoleBinding", "RoleBinding"):
        b = _one(kind, "gpuctl-labeller", DEPLOY / "labeller.yaml")
        assert b["roleRef"]["name"] == "gpuctl-labeller"
        assert b["roleRef"]["kind"] == ("ClusterRole" if kind == "ClusterRoleBinding" else "Role")
        assert b["subjects"] == [{"kind": "ServiceAccount", "name": "gpuctl-labeller", "namespace": "gpuctl"}]
    bound = [b["metadata"]["name"] for b, s in _subjects()
             if s.get("kind") == "ServiceAccount" and s.get("name") == "gpuctl-labeller"]
    assert sorted(bound) == ["gpuctl-labeller", "gpuctl-labeller"]


def test_labeller_cronjob_applies_from_probe_pods_off_the_gpu_nodes():
    cj = _one("CronJob", "gpuctl-labeller")
    assert cj["spec"]["schedule"] == "*/15 * * * *"
    assert cj["spec"]["concurrencyPolicy"] == "Forbid"
    pod = _labeller_pod()
    assert pod["serviceAccountName"] == "gpuctl-labeller"
    c = pod["containers"][0]
    argv = (c.get("command") or ["gpuctl"]) + c.get("args", [])
    line = " ".join(argv)
    assert "label-nodes --apply" in line and "--overwrite" in line
    sel = argv[argv.index("--probes-from-pods") + 1]
    ns, _, selector = sel.partition("/")
    # The selector finds exactly the probe DaemonSet's pods, in its namespace.
    ds = _one("DaemonSet", "gpuctl-probe")
    assert ns == ds["metadata"]["namespace"]
    key, _, value = selector.partition("=")
    assert ds["spec"]["template"]["metadata"]["labels"][key] == value
    assert ds["spec"]["selector"]["matchLabels"][key] == value
    terms = pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert terms and all({"key": "nvidia.com/gpu.present", "operator": "DoesNotExist"} in t["matchExpressions"]
                         for t in terms)
    assert not pod.get("tolerations")


def test_manifest_flags_exist_in_the_cli():
    typer_main = pytest.importorskip("typer.main")
    from gpuctl.cli.app import app

    root = typer_main.get_command(app)
    commands = getattr(root, "commands", {})
    if "label-nodes" not in commands or "node" not in commands:
        pytest.skip("label-nodes / node probe not in this build")
    label = {o for p in commands["label-nodes"].params for o in getattr(p, "opts", [])}
    assert {"--apply", "--overwrite", "--probes-from-pods"} <= label
    probe = {o for p in commands["node"].commands["probe"].params for o in getattr(p, "opts", [])}
    assert {"--node", "--kernel-log", "-o"} <= probe


# ------------------------------------------------------------------ the admission policy


def _expressions(spec: dict) -> str:
    parts = [v["expression"] for v in spec.get("variables", [])]
    parts += [v["expression"] for v in spec.get("validations", [])]
    parts += [m["expression"] for m in spec.get("matchConditions", [])]
    return "\n".join(parts)


def test_vap_names_every_allowed_key_and_only_the_labeller():
    vap = _vap()
    spec = vap["spec"]
    assert vap["apiVersion"] == "admissionregistration.k8s.io/v1"
    text = _expressions(spec)
    for key in GPUCTL_KEYS:
        assert key in text, key
    variables = {v["name"]: v["expression"] for v in spec["variables"]}
    assert ast.literal_eval(variables["gpuctlKeys"]) == GPUCTL_KEYS
    assert ast.literal_eval(variables["prefix"]) == ""     # the CronJob passes no --prefix
    assert [m["expression"] for m in spec["matchConditions"]] == [f"request.userInfo.username == '{LABELLER_USER}'"]
    assert LABELLER_USER in text


def test_vap_keys_match_what_label_nodes_writes():
    labels = pytest.importorskip("gpuctl.reports.labels")
    keys = getattr(labels, "KEYS", None)
    if not isinstance(keys, dict):
        pytest.skip("gpuctl.reports.labels has no KEYS table")
    assert sorted(keys.values()) == sorted(GPUCTL_KEYS)


def test_vap_fails_closed_on_nodes_and_compares_old_and_new():
    spec = _vap()["spec"]
    assert spec["failurePolicy"] == "Fail"
    rules = spec["matchConstraints"]["resourceRules"]
    assert any(r["apiGroups"] == [""] and "nodes" in r["resources"] and "UPDATE" in r["operations"] for r in rules)
    validations = [v["expression"] for v in spec["validations"]]
    assert "request.operation == 'UPDATE'" in validations
    text = _expressions(spec)
    for field in ("metadata.labels", "metadata.annotations", "metadata.ownerReferences", "metadata.finalizers",
                  "spec"):
        assert f"object.{field}" in text and f"oldObject.{field}" in text, field
    for v in spec["validations"]:
        assert v.get("message"), v["expression"]
        assert "\n" not in v["message"]


def test_vap_binding_denies():
    b = _one("ValidatingAdmissionPolicyBinding", "gpuctl-labeller-node-labels")
    assert b["apiVersion"] == "admissionregistration.k8s.io/v1"
    assert b["spec"]["policyName"] == _vap()["metadata"]["name"]
    assert b["spec"]["validationActions"] == ["Deny"]
    assert "paramRef" not in b["spec"]


# ------------------------------------------------------------------ the image


def test_dockerfile_builds_a_small_non_root_gpuctl_image():
    text = (DEPLOY / "Dockerfile").read_text()
    froms = [ln.split()[1] for ln in text.splitlines() if ln.startswith("FROM ")]
    assert froms and all(f == "python:3.12-slim" for f in froms)
    assert 'ENTRYPOINT ["gpuctl"]' in text
    users = [ln.split()[1] for ln in text.splitlines() if ln.startswith("USER ")]
    assert users and users[-1].split(":")[0].isdigit() and users[-1].split(":")[0] != "0"
    uid = int(users[-1].split(":")[0])
    for _, spec in _pod_specs():
        assert spec["securityContext"]["runAsUser"] == uid
    assert "libnvidia-ml.so.1" in text
    # Dockerfile.dockerignore: exclude everything, then bring back what the wheel needs.
    ignore = [ln.strip() for ln in (DEPLOY / "Dockerfile.dockerignore").read_text().splitlines()
              if ln.strip() and not ln.startswith("#")]
    assert ignore[0] == "*"
    for needed in ("pyproject.toml", "README.md", "gpuctl", "docs/runbooks"):
        assert f"!{needed}" in ignore, needed


# The policy's CEL, evaluated. Kubernetes' evaluator (cel-go) is not available to
# Python; cel-python (`pip install cel-python`) implements the same CEL core the
# expressions use (has, in, all/filter/map macros, ternaries, list and map
# equality). Skipped when it is not installed. Variables are evaluated lazily in
# Kubernetes; here those that fail (object is null on DELETE) are left out, which
# only matters to expressions guarded by `request.operation != 'UPDATE' || …`.

_NODE = {"apiVersion": "v1", "kind": "Node",
         "metadata": {"name": "gpu-a100-3",
                      "labels": {"kubernetes.io/hostname": "gpu-a100-3", "gpu-type": "a100",
                                 "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB"},
                      "annotations": {"node.alpha.kubernetes.io/ttl": "0"}},
         "spec": {"podCIDR": "10.0.3.0/24", "taints": [{"key": "nvidia.com/gpu", "effect": "NoSchedule"}]}}


def _changed(path: str, value=None, remove: bool = False) -> dict:
    import copy

    node = copy.deepcopy(_NODE)
    *parents, last = path.split("|")
    target = node
    for p in parents:
        target = target.setdefault(p, {})
    if remove:
        target.pop(last, None)
    else:
        target[last] = value
    return node


_CASES = [
    # (name, operation, old, new, number of failed validations)
    ("nothing changes", "UPDATE", _NODE, _NODE, 0),
    ("set gpu-memory", "UPDATE", _NODE, _changed("metadata|labels|gpu-memory", "80Gi"), 0),
    ("change gpu-type", "UPDATE", _NODE, _changed("metadata|labels|gpu-type", "h100"), 0),
    ("remove gpu-type", "UPDATE", _NODE, _changed("metadata|labels|gpu-type", remove=True), 0),
    ("set every gpuctl key", "UPDATE", _NODE,
     _changed("metadata|labels", {**_NODE["metadata"]["labels"], **{k: "1" for k in GPUCTL_KEYS}}), 0),
    ("first labels on a bare node", "UPDATE", {"metadata": {"name": "n"}}, {"metadata": {"name": "n", "labels": {"gpu-type": "t4"}}}, 0),
    ("add another label", "UPDATE", _NODE, _changed("metadata|labels|team", "ml"), 1),
    ("change another label", "UPDATE", _NODE, _changed("metadata|labels|kubernetes.io/hostname", "x"), 1),
    ("remove another label", "UPDATE", _NODE, _changed("metadata|labels|nvidia.com/gpu.product", remove=True), 1),
    ("a prefixed key with no prefix configured", "UPDATE", _NODE, _changed("metadata|labels|example.com/gpu-type", "a100"), 1),
    ("a key that only starts like one", "UPDATE", _NODE, _changed("metadata|labels|gpu-type-override", "a100"), 1),
    ("add an annotation", "UPDATE", _NODE, _changed("metadata|annotations|x", "y"), 1),
    ("drop the annotations", "UPDATE", _NODE, _changed("metadata|annotations", remove=True), 1),
    ("add an ownerReference", "UPDATE", _NODE,
     _changed("metadata|ownerReferences", [{"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": "u"}]), 1),
    ("add a finalizer", "UPDATE", _NODE, _changed("metadata|finalizers", ["example.com/block"]), 1),
    ("remove the taint", "UPDATE", _NODE, _changed("spec|taints", []), 1),
    ("cordon", "UPDATE", _NODE, _changed("spec|unschedulable", True), 1),
    ("label and cordon", "UPDATE", _NODE, _changed("spec|unschedulable", True) | {"metadata": _changed("metadata|labels|team", "ml")["metadata"]}, 2),
    ("delete", "DELETE", _NODE, None, 1),
    ("create", "CREATE", None, _NODE, 1),
]


def _evaluate(celpy, operation, old, new, username=LABELLER_USER):
    from celpy import celtypes

    spec = _vap()["spec"]
    env = celpy.Environment()

    def run(expr, act):
        return env.program(env.compile(expr)).evaluate(act)

    act = {"request": celpy.json_to_cel({"operation": operation, "userInfo": {"username": username}}),
           "object": celpy.json_to_cel(new) if new is not None else None,
           "oldObject": celpy.json_to_cel(old) if old is not None else None}
    if not all(run(m["expression"], act) == celtypes.BoolType(True) for m in spec["matchConditions"]):
        return None
    variables = {}
    for v in spec["variables"]:
        try:
            value = run(v["expression"], {**act, "variables": celtypes.MapType(variables)})
        except Exception:   # noqa: BLE001 - an error here is an error only if referenced
            continue
        if not isinstance(value, celpy.CELEvalError):
            variables[celtypes.StringType(v["name"])] = value
    act["variables"] = celtypes.MapType(variables)
    return [v["expression"] for v in spec["validations"] if run(v["expression"], act) != celtypes.BoolType(True)]


@pytest.mark.parametrize("name,operation,old,new,failures", _CASES, ids=[c[0] for c in _CASES])
def test_vap_cel_allows_only_gpuctl_label_changes(name, operation, old, new, failures):
    celpy = pytest.importorskip("celpy")
    failed = _evaluate(celpy, operation, old, new)
    assert failed is not None and len(failed) == failures, failed


def test_vap_cel_ignores_everyone_but_the_labeller():
    celpy = pytest.importorskip("celpy")
    assert _evaluate(celpy, "UPDATE", _NODE, _changed("spec|unschedulable", True), username="system:node:gpu-a100-3") is None
    assert _evaluate(celpy, "UPDATE", _NODE, _NODE, username="system:serviceaccount:gpuctl:gpuctl-probe") is None
