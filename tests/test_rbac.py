"""deploy/rbac.yaml is enough: every scenario, diagnosed live under exactly the
gpuctl-reader ClusterRole (enforced by the local API server), gets no 403 and the
same diagnosis as offline; under a namespace-only role it degrades honestly."""

from __future__ import annotations

import os

import pytest
import yaml

from conftest import ROOT, SCENARIOS, argv_of, probe_args, expected_of, scenario_dirs, snapshot_of, target_of


def _role(name: str) -> list[dict]:
    docs = [d for d in yaml.safe_load_all((ROOT / "deploy" / "rbac.yaml").read_text()) if d]
    return next(d for d in docs if d["kind"] == "ClusterRole" and d["metadata"]["name"] == name)["rules"]


def test_reader_role_is_read_only():
    for rule in _role("gpuctl-reader"):
        assert set(rule["verbs"]) <= {"get", "list"}, rule
        assert "secrets" not in rule["resources"]


@pytest.mark.parametrize("scenario", scenario_dirs(), ids=[p.name for p in scenario_dirs()])
def test_reader_role_is_enough(cli, serve, scenario):
    exp = expected_of(scenario)
    srv, kc = serve(snapshot_of(scenario))
    srv.allow_only(_role("gpuctl-reader"))
    live = cli(*argv_of(exp), "--kubeconfig", kc, *probe_args(snapshot_of(scenario)), "-o", "json")
    offline = cli(*argv_of(exp), "--snapshot", str(snapshot_of(scenario)), "-o", "json")
    assert [r.path for r in srv.requests if r.status == 403] == []
    assert live.json()["findings"] == offline.json()["findings"]


def test_namespace_only_role_degrades_and_names_the_missing_permission(cli, serve):
    scenario = SCENARIOS / "untolerated-taint"
    ns, target = target_of(expected_of(scenario))
    srv, kc = serve(snapshot_of(scenario))
    srv.allow_only([{"apiGroups": [""], "resources": ["pods", "pods/log", "events", "resourcequotas",
                                                      "persistentvolumeclaims"],
                     "verbs": ["get", "list"], "namespaces": [ns]}])
    r = cli("diagnose", "pod", target, "-n", ns, "--kubeconfig", kc, "-o", "json")
    d = r.json()
    assert r.code == 1 and d["verdict"] == "inconclusive"
    details = " ".join(c["detail"] for c in d["checks"] if c["status"] == "skipped")
    assert "'list' on 'nodes'" in details and "cluster-wide" in details
    assert d["findings"][0]["code"] == "untolerated-taint"


# ------------------------------------------------------------- every read command

TESTS = ROOT / "tests"
SCENARIO_SNAP = SCENARIOS / "untolerated-taint" / "snapshot"

# (id, snapshot, argv): every read command besides diagnose pod/node (those are the
# scenarios above), on fixtures that exercise what it reads (DRA, logs, metrics).
READ_COMMANDS = [
    ("diagnose-pending-A", TESTS / "pending" / "mixed-causes" / "snapshot", ("diagnose", "pending", "-A", "-o", "json")),
    *[(f"nodes-capacity-{p.name}", p / "snapshot", ("nodes", "capacity", "-o", "json"))
      for p in sorted((TESTS / "capacity").iterdir()) if (p / "snapshot").is_dir()],
    ("label-nodes", TESTS / "capacity" / "pools-and-selector" / "snapshot", ("label-nodes", "-o", "json")),
    ("snapshot-save-pending", SCENARIO_SNAP, ("snapshot", "save", "{out}")),
    ("snapshot-save-failing", SCENARIOS / "nvidia-runtime-error" / "snapshot", ("snapshot", "save", "{out}")),
    ("snapshot-save-xid", SCENARIOS / "node-xid-79" / "snapshot", ("snapshot", "save", "{out}")),
]


def _bundle(path) -> dict:
    """A saved bundle as {member: bytes}, snapshot.json without its capture time."""
    import json
    import tarfile

    with tarfile.open(path) as tf:
        out = {m.name: tf.extractfile(m).read() for m in tf.getmembers() if m.isfile()}
    for name in [n for n in out if n.endswith("snapshot.json")]:
        meta = json.loads(out[name])
        meta.pop("capturedAt", None)
        out[name] = meta
    return out


@pytest.mark.parametrize("snap,argv", [pytest.param(s, a, id=i) for i, s, a in READ_COMMANDS])
def test_reader_role_is_enough_for_every_read_command(cli, serve, tmp_path, snap, argv):
    """Under exactly gpuctl-reader, each read command gets no 403 and the same result
    as with no RBAC at all."""
    results = []
    for restricted in (False, True):
        srv, kc = serve(snap)
        if restricted:
            srv.allow_only(_role("gpuctl-reader"))
        out = tmp_path / str(restricted) / "bundle.tar.gz"
        out.parent.mkdir()
        r = cli(*[a.replace("{out}", str(out)) for a in argv], "--kubeconfig", kc)
        assert [(q.method, q.path) for q in srv.requests if q.status == 403] == []
        assert {q.method for q in srv.requests} == {"GET"}
        results.append((r.code, _bundle(out) if out.exists() else r.json()))
    assert results[0][0] in (0, 1)
    assert results[1] == results[0]


def test_label_nodes_apply_needs_the_label_role_and_only_it(cli, serve):
    """--apply works under gpuctl-reader + gpuctl-label-nodes; under the reader role
    alone it stops at the first patch, names the missing ClusterRole and changes nothing."""
    demo = ROOT / "examples" / "demo-cluster"
    srv, kc = serve(demo)
    srv.allow_only(_role("gpuctl-reader"))
    denied = cli("label-nodes", "--kubeconfig", kc, "--apply")
    assert denied.code == 4
    assert "gpuctl-label-nodes" in denied.err and "'patch' on 'nodes'" in denied.err
    assert len(denied.err.strip().splitlines()) == 1
    assert [q for q in srv.requests if q.method == "PATCH" and q.status != 403] == []

    srv, kc = serve(demo)
    srv.allow_only(_role("gpuctl-reader") + _role("gpuctl-label-nodes"))
    r = cli("label-nodes", "--kubeconfig", kc, "--apply", "-o", "json")
    assert r.code == 0 and r.json()["applied"] is True
    assert [q.path for q in srv.requests if q.status == 403] == []
    assert any(q.method == "PATCH" and q.status == 200 for q in srv.requests)


# ------------------------------------------------------------ a namespace-only role

ML_NS = "ml-research"
NAMESPACE_ROLE = [{"apiGroups": [""], "resources": ["pods", "pods/log", "events", "resourcequotas",
                                                    "persistentvolumeclaims"],
                   "verbs": ["get", "list"], "namespaces": [ML_NS]}]


def _ml_user(serve, snap):
    """A typical ML user: a Role in their own namespace, the kubeconfig context set to it."""
    srv, kc = serve(snap)
    srv.allow_only(NAMESPACE_ROLE)
    kc = srv.write_kubeconfig(kc + "-ml", context="ml", namespace=ML_NS)
    return srv, kc


@pytest.mark.parametrize("argv,needs", [
    (("diagnose", "node", "gpu-a100-0"), "ask for RBAC 'get' on 'nodes' cluster-wide"),
    (("nodes", "capacity"), "needs RBAC verb 'list' on 'nodes' cluster-wide"),
    (("label-nodes",), "ask for RBAC 'list' on 'nodes' cluster-wide"),
], ids=["diagnose-node", "nodes-capacity", "label-nodes"])
def test_namespace_only_role_node_commands_say_which_permission(cli, serve, argv, needs):
    """Commands that cannot say anything true without nodes end in one line, exit 4,
    naming the verb, the resource and that it is cluster-scoped (a ClusterRole)."""
    srv, kc = _ml_user(serve, SCENARIO_SNAP)
    r = cli(*argv, "--kubeconfig", kc)
    assert r.code == 4 and r.out == ""
    lines = r.err.strip().splitlines()
    assert len(lines) == 1 and needs in lines[0], r.err
    assert "in this namespace" not in r.err


def test_namespace_only_role_pending_degrades_and_names_the_permission(cli, serve):
    srv, kc = _ml_user(serve, TESTS / "pending" / "mixed-causes" / "snapshot")
    r = cli("diagnose", "pending", "--kubeconfig", kc, "-o", "json")
    d = r.json()
    assert r.code == 1 and d["scope"] == ML_NS and d["pods"] > 0
    verdicts = {p["verdict"] for g in d["groups"] for p in g["pods"]}
    assert verdicts == {"inconclusive"}
    skipped = {c["name"]: c["detail"] for c in d["checks"] if c["status"] == "skipped"}
    assert "needs RBAC verb 'list' on 'nodes' cluster-wide" in skipped["node-fit"], skipped
    assert all("could not be read" in g["summary"] for g in d["groups"] if g["code"] == "untolerated-taint")


def test_namespace_only_role_snapshot_save_keeps_the_namespace_and_the_gaps(cli, serve, tmp_path):
    """The bundle holds what the user may read (their namespace), says what it lacks,
    and reads back to the same diagnosis as the live run under the same role: the
    missing nodes and pods are skipped checks, never "no pods, all GPUs free"."""
    srv, kc = _ml_user(serve, SCENARIO_SNAP)
    ns, target = target_of(expected_of(SCENARIOS / "untolerated-taint"))
    assert ns == ML_NS
    out = tmp_path / "ml.tar.gz"
    saved = cli("snapshot", "save", str(out), "--kubeconfig", kc)
    assert saved.code == 0, saved.err
    assert "pods: forbidden cluster-wide" in saved.err and f"collected namespace {ML_NS} only" in saved.err
    live = cli("diagnose", "pod", target, "-n", ns, "--kubeconfig", kc, "-o", "json")
    back = cli("diagnose", "pod", target, "-n", ns, "--snapshot", str(out), "-o", "json")
    assert back.code == live.code == 1
    a, b = live.json(), back.json()
    assert b["verdict"] == a["verdict"] == "inconclusive"
    assert [f["code"] for f in b["findings"]] == [f["code"] for f in a["findings"]]
    skipped = {c["name"]: c["detail"] for c in b["checks"] if c["status"] == "skipped"}
    assert "'list' on 'nodes' cluster-wide" in skipped["node-fit"]
    assert "'list' on 'pods' cluster-wide" in skipped["node-fit"]
    # capacity from that bundle refuses to count rather than report every GPU free
    cap = cli("nodes", "capacity", "--snapshot", str(out))
    assert cap.code == 4 and "'list' on 'nodes' cluster-wide" in cap.err
    # a pod of a namespace the bundle does not hold: not found, and why
    other = cli("diagnose", "pod", "dcgm-exporter", "-n", "gpu-operator", "--snapshot", str(out))
    assert other.code == 3 and f"holds namespace(s) {ML_NS} only" in other.err


def test_rbac_doc_transcript_is_what_gpuctl_prints(cli, serve):
    """docs/rbac.md shows a diagnosis under a RoleBinding of gpuctl-reader in one
    namespace; it is the real output (trailing spaces aside), so it cannot drift."""
    doc = (ROOT / "docs" / "rbac.md").read_text()
    cmd = "$ gpuctl diagnose pod rlhf-reward-model-2kfjd -n ml-research\n"
    start = doc.index(cmd) + len(cmd)
    shown = doc[start:doc.index("$ echo $?", start)]
    srv, kc = serve(SCENARIO_SNAP)
    # a RoleBinding to the ClusterRole grants its namespaced rules in that namespace only
    srv.allow_only([dict(rule, namespaces=[ML_NS]) for rule in _role("gpuctl-reader")])
    kc = srv.write_kubeconfig(kc + "-ml", context="ml", namespace=ML_NS)
    r = cli("diagnose", "pod", "rlhf-reward-model-2kfjd", "-n", ML_NS, "--kubeconfig", kc)
    assert r.code == 1
    printed = "\n".join(line.rstrip() for line in r.out.splitlines()) + "\n"
    if os.environ.get("GPUCTL_UPDATE_DOCS") == "1":   # rewrite the transcript from what gpuctl prints now
        (ROOT / "docs" / "rbac.md").write_text(doc[:start] + printed + doc[start + len(shown):])
        shown = printed
    assert printed == shown


def test_namespace_only_role_pending_all_namespaces_never_says_nothing_pending(cli, serve):
    """-A without the right to list pods cluster-wide: the count is unknown, and every
    output format says so instead of "Nothing Pending"."""
    srv, kc = _ml_user(serve, TESTS / "pending" / "mixed-causes" / "snapshot")
    table = cli("diagnose", "pending", "-A", "--kubeconfig", kc)
    assert table.code == 1
    assert "Nothing Pending" not in table.out and "could not be listed" in table.out
    assert "'list' on 'pods' cluster-wide" in " ".join(table.out.split())
    md = cli("diagnose", "pending", "-A", "--kubeconfig", kc, "-o", "markdown")
    assert "could not be listed" in md.out and "'list' on 'pods' cluster-wide" in md.out
    d = cli("diagnose", "pending", "-A", "--kubeconfig", kc, "-o", "json").json()
    assert d["pods"] == 0 and any(c["name"] == "read pending-pods" for c in d["checks"])
