"""`gpuctl snapshot save` writes what `--snapshot` reads back, redacted by
default, and never collects Secrets."""

from __future__ import annotations

import json
import tarfile

from conftest import SCENARIOS, snapshot_of
from support.kubeapi import SnapshotAPIServer
from gpuctl.collect.files import iter_raw_objects, raw_logs

TAINT = SCENARIOS / "untolerated-taint"
SECRET_VALUES = ("hunter2-env", "s3cr3t-cm", "c2VjcmV0LWRhdGE=", "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4eHh4In0.c2lnbmF0dXJl", "last-applied-secret")


def _planted(snapdir):
    objs = list(iter_raw_objects(snapdir))
    for o in objs:
        if o["kind"] == "Pod":
            c = o["spec"]["containers"][0]
            c["env"] = [{"name": "DB_PASSWORD", "value": "hunter2-env"}, {"name": "NVIDIA_REQUIRE_CUDA", "value": "cuda>=12.4"}]
            o["metadata"].setdefault("annotations", {})["kubectl.kubernetes.io/last-applied-configuration"] = '{"x": "last-applied-secret"}'
            o["metadata"]["managedFields"] = [{"manager": "kubectl"}]
            break
    objs.append({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "app-config", "namespace": "ml"}, "data": {"db": "s3cr3t-cm"}})
    objs.append({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "time-slicing-config", "namespace": "gpu-operator"},
                 "data": {"any": "version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 4\n"}})
    objs.append({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "db", "namespace": "ml"}, "data": {"password": "c2VjcmV0LWRhdGE="}})
    logs = raw_logs(snapdir)
    dp = next(o for o in objs if o["kind"] == "Pod" and o["metadata"].get("labels", {}).get("app") == "nvidia-device-plugin-daemonset")
    logs[(dp["metadata"]["namespace"], dp["metadata"]["name"], dp["spec"]["containers"][0]["name"], False)] = (
        "I1120 03:00:00.000000 1 main.go:1] Starting\n"
        "E1120 03:00:01.000000 1 x.go:2] auth: Authorization: Bearer eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4eHh4In0.c2lnbmF0dXJl\n")
    return objs, logs


def _bundle_text(path) -> str:
    with tarfile.open(path) as tf:
        return "\n".join(tf.extractfile(m).read().decode() for m in tf.getmembers() if m.isfile())


def test_save_live_reads_back_to_the_same_diagnosis_and_is_redacted(cli, tmp_path, monkeypatch):
    exp = json.loads((TAINT / "expected.json").read_text())
    ns, name = exp["pod"].split("/", 1)
    objs, logs = _planted(snapshot_of(TAINT))
    with SnapshotAPIServer(objs, logs=logs) as srv:
        kc = srv.write_kubeconfig(str(tmp_path / "kc"), context="incident")
        out = tmp_path / "incident.tar.gz"
        monkeypatch.setenv("GPUCTL_NOW", json.loads((snapshot_of(TAINT) / "snapshot.json").read_text())["capturedAt"])
        r = cli("snapshot", "save", str(out), "--kubeconfig", kc)
        assert r.code == 0, r.err
        assert "wrote" in r.err
        assert {x.method for x in srv.requests} == {"GET"}
        assert not any("/secrets" in x.path for x in srv.requests)
        live = cli("diagnose", "pod", name, "-n", ns, "--kubeconfig", kc, "-o", "json").json()
    text = _bundle_text(out)
    for secret in SECRET_VALUES:
        assert secret not in text, secret
    assert "cuda>=12.4" in text                # NVIDIA_*/CUDA_* env kept for the CUDA checks
    assert "replicas: 4" in text               # device-plugin config kept
    assert "managedFields" not in text
    back = cli("diagnose", "pod", name, "-n", ns, "--snapshot", str(out), "-o", "json")
    assert back.code == exp["exit_code"]
    assert [f["code"] for f in back.json()["findings"]] == [f["code"] for f in live["findings"]]
    meta = json.loads(next(line for line in [_member(out, "snapshot.json")]))
    assert meta["schema"] == "gpuctl/snapshot/v1" and meta["redacted"] is True


def _member(path, name) -> str:
    with tarfile.open(path) as tf:
        m = next(m for m in tf.getmembers() if m.name.endswith("/" + name))
        return tf.extractfile(m).read().decode()


def test_no_redact_keeps_values_and_existing_file_is_not_overwritten(cli, tmp_path):
    objs, logs = _planted(snapshot_of(TAINT))
    with SnapshotAPIServer(objs, logs=logs) as srv:
        kc = srv.write_kubeconfig(str(tmp_path / "kc"), context="incident")
        out = tmp_path / "raw"
        assert cli("snapshot", "save", str(out), "--kubeconfig", kc, "--no-redact").code == 0
        text = "".join(p.read_text() for p in out.rglob("*.json"))
        assert "hunter2-env" in text and "c2VjcmV0LWRhdGE=" not in text   # Secrets: never collected
        before = sorted(p.name for p in out.rglob("*"))
        again = cli("snapshot", "save", str(out), "--kubeconfig", kc)
        assert again.code == 2 and "--force" in again.err
        assert sorted(p.name for p in out.rglob("*")) == before


def test_resave_of_a_kubectl_dump_redacts_it(cli, tmp_path):
    objs, _ = _planted(snapshot_of(TAINT))
    dump = tmp_path / "dump.json"
    dump.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": objs}))
    out = tmp_path / "clean.tar.gz"
    assert cli("snapshot", "save", str(out), "--snapshot", str(dump)).code == 0
    text = _bundle_text(out)
    assert "hunter2-env" not in text and "c2VjcmV0LWRhdGE=" not in text


def test_what_was_not_collected_reads_back_as_the_same_gap(cli, serve, tmp_path):
    """A bundle saved while a list failed reads back with that list's gap, as the live
    run had it: the checks are skipped with the reason, not fed an empty list; a
    re-bundle keeps the gaps; a `-n` bundle knows it lacks other namespaces' pods."""
    exp = json.loads((TAINT / "expected.json").read_text())
    ns, name = exp["pod"].split("/", 1)
    srv, kc = serve(snapshot_of(TAINT))
    srv.forbid("pods", "list")                      # cluster-wide and namespaced: nothing to fall back to
    out = tmp_path / "partial.tar.gz"
    saved = cli("snapshot", "save", str(out), "--kubeconfig", kc)
    assert saved.code == 0 and "not collected: pods: forbidden" in saved.err
    meta = json.loads(_member(out, "snapshot.json"))
    assert meta["gaps"]["pods"]["verb"] == "list" and meta["gaps"]["pods"]["resource"] == "pods"
    cap = cli("nodes", "capacity", "--snapshot", str(out))
    assert cap.code == 4 and "needs RBAC verb 'list' on 'pods'" in cap.err      # not "every GPU free"
    again = tmp_path / "again.tar.gz"
    assert cli("snapshot", "save", str(again), "--snapshot", str(out)).code == 0
    assert json.loads(_member(again, "snapshot.json"))["gaps"] == meta["gaps"]

    srv, kc = serve(snapshot_of(TAINT))
    scoped = tmp_path / "scoped.tar.gz"
    assert cli("snapshot", "save", str(scoped), "-n", ns, "--kubeconfig", kc).code == 0
    assert json.loads(_member(scoped, "snapshot.json"))["namespaces"] == [ns]
    back = cli("diagnose", "pod", name, "-n", ns, "--snapshot", str(scoped), "-o", "json").json()
    assert back["verdict"] == "inconclusive"
    detail = next(c["detail"] for c in back["checks"] if c["name"] == "node-fit")
    assert f"saved with -n {ns}" in detail
    assert cli("nodes", "capacity", "--snapshot", str(scoped)).code == 4


def test_malformed_gap_records_do_not_break_loading(cli, tmp_path):
    """snapshot.json is input like any other: odd gap records are reported, not trusted."""
    import shutil

    d = tmp_path / "snap"
    shutil.copytree(snapshot_of(TAINT), d)
    meta = json.loads((d / "snapshot.json").read_text())
    meta["gaps"] = {"pods": {"what": 3, "reason": None}, "nodes": "forbidden", "events": {"what": "x", "reason": "forbidden",
                                                                                       "verb": ["list"]}}
    meta["logGaps"] = ["not", "a", "map"]
    meta["namespaces"] = "ml-research"
    (d / "snapshot.json").write_text(json.dumps(meta))
    exp = json.loads((TAINT / "expected.json").read_text())
    ns, name = exp["pod"].split("/", 1)
    r = cli("diagnose", "pod", name, "-n", ns, "--snapshot", str(d), "-o", "json")
    assert r.code == exp["exit_code"] and "Traceback" not in r.err
    d = r.json()
    assert d["findings"][0]["code"] == exp["top_code"]
    # the malformed records are not turned into gaps: every check ran as in the full bundle
    assert not [c for c in d["checks"] if c["status"] == "skipped"]
