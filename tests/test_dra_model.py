"""gpuctl/model/dra.py: the allocator's rules on variants of the DRA scenarios
(tests/test_dra_fixtures.py builds them), and ``dra_devices`` for capacity reports."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

import test_dra_fixtures as F
from gpuctl.collect.files import load_snapshot
from gpuctl.model import dra as D

SCEN = Path(__file__).resolve().parent / "scenarios"


def _snap(doc: dict, tmp_path: Path):
    d = tmp_path / "snapshot"
    d.mkdir(exist_ok=True)
    (d / "cluster.json").write_text(json.dumps(doc))
    (d / "snapshot.json").write_text((SCEN / "dra-claim-unallocatable" / "snapshot" / "snapshot.json").read_text())
    return load_snapshot(str(d))


def _claim(snap):
    return snap.find("ResourceClaim", "ml-research", F.CLAIM)


def _only(reports):
    assert len(reports) == 1
    return reports[0]


def test_dra_devices_all_allocated():
    snap = load_snapshot(str(SCEN / "dra-claim-unallocatable" / "snapshot"))
    devs = D.dra_devices(snap)
    assert len(devs) == 16 and all(d.gpu and d.allocated and d.kind == "gpu" for d in devs)
    assert {d.node for d in devs} == {"gpu-a100-1", "gpu-a100-2"}
    assert {d.claims for d in devs} == {("ml-research/pretrain-node0-gpus",), ("ml-research/pretrain-node1-gpus",)}


def test_dra_devices_mig_partitions_blocked_by_counters():
    snap = load_snapshot(str(SCEN / "dra-mig-counters-exhausted" / "snapshot"))
    devs = D.dra_devices(snap)
    migs = [d for d in devs if d.kind == "mig"]
    assert len(devs) == 128 and len(migs) == 112
    assert all(d.gpu and not d.allocated and d.blocked_by_counters for d in migs)
    assert all(d.allocated and not d.blocked_by_counters for d in devs if d.kind == "gpu")


def test_dra_devices_free_partitions_when_parent_free(tmp_path):
    doc = F._base()
    F._free_node(doc, 0)
    F._free_node(doc, 1)
    F._mig_slices(doc)
    devs = D.dra_devices(_snap(doc, tmp_path))
    assert not any(d.allocated or d.blocked_by_counters for d in devs)


def test_v1beta1_shapes_read_like_v1():
    v1 = load_snapshot(str(SCEN / "dra-claim-unallocatable" / "snapshot"))
    beta = load_snapshot(str(SCEN / "dra-device-taint-not-tolerated" / "snapshot"))
    a = {d.id: d.attributes for d in D.slice_devices(v1) if d.node == "gpu-a100-1"}
    b = {d.id: d.attributes for d in D.slice_devices(beta) if d.node == "gpu-a100-1"}
    assert a == b and len(a) == 8
    req = _only(D.claim_requests(_claim(beta).spec))
    assert req.alternatives[0].device_class == "gpu.nvidia.com" and req.alternatives[0].count == 1


def test_admin_access_may_use_allocated_devices(tmp_path):
    doc = F._base()
    F._set_request(doc, {"name": "gpu", "exactly": {"allocationMode": "ExactCount", "count": 1,
                                                    "deviceClassName": "gpu.nvidia.com", "adminAccess": True}})
    rr = _only(D.analyse_claim(_snap(doc, tmp_path), _claim(_snap(doc, tmp_path))))
    assert rr.chosen is not None and rr.chosen.nodes_ok == ["gpu-a100-1", "gpu-a100-2"]


def test_a_toleration_makes_tainted_devices_usable(tmp_path):
    doc, _ = F.taint_not_tolerated()
    for kind, name in (("ResourceClaim", F.CLAIM),):
        F._one(doc, kind, name)["spec"]["devices"]["requests"][0]["exactly"]["tolerations"] = [
            {"key": "gpu.nvidia.com/xid", "operator": "Exists", "effect": "NoSchedule"}]
    snap = _snap(doc, tmp_path)
    rr = _only(D.analyse_claim(snap, _claim(snap)))
    assert rr.chosen is not None and not rr.chosen.tainted and len(rr.chosen.usable) == 2


@pytest.mark.parametrize("tol, taint, ok", [
    ({"key": "k", "operator": "Exists"}, {"key": "k", "effect": "NoSchedule"}, True),
    ({"key": "k", "value": "v"}, {"key": "k", "value": "v", "effect": "NoExecute"}, True),
    ({"key": "k", "value": "v"}, {"key": "k", "value": "w", "effect": "NoSchedule"}, False),
    ({"operator": "Exists"}, {"key": "any", "effect": "NoSchedule"}, True),
    ({"key": "k", "operator": "Exists", "effect": "NoExecute"}, {"key": "k", "effect": "NoSchedule"}, False),
])
def test_toleration_rules(tol, taint, ok):
    assert D.tolerates(tol, taint) is ok


def test_none_effect_taint_does_not_block():
    d = D.Device("gpu.nvidia.com", "p", "gpu-0", "n", "s", taints=[{"key": "gpu.nvidia.com/xid", "value": "31", "effect": "None"}])
    assert D.blocking_taint(d, []) is None


def test_match_attribute_constraint(tmp_path):
    doc = F._base()
    F._free_node(doc, 1)
    F._set_request(doc, {"name": "gpu", "exactly": {"allocationMode": "ExactCount", "count": 2, "deviceClassName": "gpu.nvidia.com"}})
    F._one(doc, "ResourceClaim", F.CLAIM)["spec"]["devices"]["constraints"] = [
        {"requests": ["gpu"], "matchAttribute": "resource.kubernetes.io/pcieRoot"}]
    snap = _snap(doc, tmp_path)
    alt = _only(D.analyse_claim(snap, _claim(snap))).alternatives[0]
    assert not alt.nodes_ok and alt.constraint == "resource.kubernetes.io/pcieRoot" and len(alt.usable) == 8
    # the same request without the constraint fits
    del F._one(doc, "ResourceClaim", F.CLAIM)["spec"]["devices"]["constraints"]
    snap = _snap(doc, tmp_path)
    assert _only(D.analyse_claim(snap, _claim(snap))).chosen.nodes_ok == ["gpu-a100-2"]


def test_runtime_error_on_some_devices_is_counted_not_invalid(tmp_path):
    doc = F._base()
    F._free_node(doc, 1)
    for d in F._slice(doc, "gpu-a100-2")["spec"]["devices"][:3]:
        del d["attributes"]["architecture"]
    F._set_request(doc, {"name": "gpu", "exactly": {"allocationMode": "ExactCount", "count": 1, "deviceClassName": "gpu.nvidia.com",
                                                    "selectors": [F._selector('device.attributes["gpu.nvidia.com"].architecture == "Hopper"')]}})
    snap = _snap(doc, tmp_path)
    alt = _only(D.analyse_claim(snap, _claim(snap))).alternatives[0]
    sel = alt.selectors[-1]
    assert (sel.evaluated, sel.failed, sel.errors) == (16, 13, 3) and sel.first_error == "no such key: architecture"
    assert not alt.invalid and len(alt.errors_on) == 3


def test_only_the_newest_pool_generation_counts(tmp_path):
    doc = F._base()
    old = copy.deepcopy(F._slice(doc, "gpu-a100-1"))
    old["metadata"]["name"] = "gpu-a100-1-gpu.nvidia.com-old01"
    old["spec"]["pool"]["generation"] = 0
    for s in F._items(doc, "ResourceSlice"):
        s["spec"]["pool"]["generation"] = 1
    doc["items"].append(old)
    assert len(D.slice_devices(_snap(doc, tmp_path))) == 16


def test_plugin_pods_by_node():
    snap = load_snapshot(str(SCEN / "dra-kubelet-plugin-not-running" / "snapshot"))
    pods = D.plugin_pods(snap)
    assert sorted(pods) == ["gpu-a100-1", "gpu-a100-2"]
    assert D.slice_nodes(snap, "gpu.nvidia.com") == {"gpu-a100-1"}


def test_first_available_takes_the_first_fitting_subrequest(tmp_path):
    doc, _ = F.first_available_falls_through()
    F._hold(doc, "pretrain-node1-gpus", "gpu-a100-2", ["gpu-0"])
    snap = _snap(doc, tmp_path)
    rr = _only(D.analyse_claim(snap, _claim(snap)))
    assert [a.alt.name for a in rr.alternatives] == ["gpu/h100", "gpu/a100-pair"]
    assert rr.chosen.alt.name == "gpu/a100-pair" and rr.chosen.nodes_ok == ["gpu-a100-2"]


@pytest.mark.parametrize("version", ["v1beta1", "v1beta2"])
@pytest.mark.parametrize("scenario", ["dra-device-taint-not-tolerated", "dra-first-available-falls-through",
                                      "dra-selector-excludes-all", "dra-mig-counters-exhausted"])
def test_older_api_versions_diagnose_like_v1(cli, serve, tmp_path, scenario, version):
    """The cluster served only at resource.k8s.io/v1beta1 (or v1beta2), live through the
    real kubernetes client and from the files, gives the v1 scenario's diagnosis."""
    doc = F.as_version(json.loads((SCEN / scenario / "snapshot" / "cluster.json").read_text()), version)
    assert {i["apiVersion"] for i in doc["items"] if i["apiVersion"].startswith("resource.k8s.io")} == {f"resource.k8s.io/{version}"}
    _snap(doc, tmp_path)
    snapdir = tmp_path / "snapshot"
    argv = ["diagnose", "pod", F.POD, "-n", "ml-research", "-o", "json"]
    want = cli(*argv, "--snapshot", str(SCEN / scenario / "snapshot")).json()["findings"]
    offline = cli(*argv, "--snapshot", str(snapdir)).json()["findings"]
    srv, kubeconfig = serve(snapdir)
    live = cli(*argv, "--kubeconfig", kubeconfig).json()["findings"]
    assert offline == want
    assert live == want
    assert any(r.path.startswith(f"/apis/resource.k8s.io/{version}/") for r in srv.requests)


def test_devices_allowing_multiple_allocations_stay_usable(tmp_path):
    doc = F._base()
    for s in F._items(doc, "ResourceSlice"):
        for d in s["spec"]["devices"]:
            d["allowMultipleAllocations"] = True
    F._set_request(doc, {"name": "gpu", "exactly": {"allocationMode": "ExactCount", "count": 1, "deviceClassName": "gpu.nvidia.com",
                                                    "selectors": [F._selector("device.allowMultipleAllocations")]}})
    snap = _snap(doc, tmp_path)
    rr = _only(D.analyse_claim(snap, _claim(snap)))
    assert rr.chosen is not None and not rr.chosen.allocated and len(rr.chosen.usable) == 16


def _diagnose(cli, doc, tmp_path):
    _snap(doc, tmp_path)
    r = cli("diagnose", "pod", F.POD, "-n", "ml-research", "--snapshot", str(tmp_path / "snapshot"), "-o", "json")
    return r.json()["findings"]


def test_selector_gpuctl_cannot_run_is_named_not_judged(cli, tmp_path):
    doc = F._base()
    F._free_node(doc, 1)
    F._set_request(doc, {"name": "gpu", "exactly": {"allocationMode": "ExactCount", "count": 1, "deviceClassName": "gpu.nvidia.com",
                                                    "selectors": [F._selector('cel.bind(g, device.attributes["gpu.nvidia.com"], g.type == "gpu")')]}})
    findings = _diagnose(cli, doc, tmp_path)
    dra = [f for f in findings if f["code"].startswith("dra-")]
    assert [f["code"] for f in dra] == ["dra-claim-unallocatable"]   # the scheduler's words, not gpuctl's judgement
    text = " ".join(dra[0]["evidence"])
    assert "was not evaluated: cel.bind()" in text and "usable" not in text


def test_partial_runtime_errors_in_the_evidence(cli, tmp_path):
    doc = F._base()
    for d in F._slice(doc, "gpu-a100-2")["spec"]["devices"][:3]:
        del d["attributes"]["architecture"]
    F._set_request(doc, {"name": "gpu", "exactly": {"allocationMode": "ExactCount", "count": 1, "deviceClassName": "gpu.nvidia.com",
                                                    "selectors": [F._selector('device.attributes["gpu.nvidia.com"].architecture == "Hopper"')]}})
    top = _diagnose(cli, doc, tmp_path)[0]
    text = " ".join(top["evidence"])
    assert top["code"] == "dra-claim-unallocatable"
    assert "fails with a CEL runtime error on 3 devices (no such key: architecture" in text
    assert 'is false for 13 of the 16 devices it ran on (architecture: "Ampere" on 13)' in text


def test_claim_that_fits_is_not_called_unallocatable_by_this_check(cli, tmp_path):
    doc = F._base()
    F._free_node(doc, 1)
    findings = _diagnose(cli, doc, tmp_path)
    # the scheduler's old words still reach the report through its own check, never with gpuctl's device counts
    assert not any("usable" in " ".join(f["evidence"]) for f in findings)


from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_junk = st.recursive(st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.text(max_size=6)),
                     lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=5), inner, max_size=3)),
                     max_leaves=6)


def _paths(node, prefix=()):
    yield prefix
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _paths(v, prefix + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node[:3]):
            yield from _paths(v, prefix + (i,))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_malformed_dra_objects_never_crash_the_model(data, tmp_path):
    doc, _ = F.taint_not_tolerated()
    dra = [i for i in doc["items"] if i["kind"] in ("ResourceSlice", "ResourceClaim", "DeviceClass", "ResourceClaimTemplate")]
    for _ in range(3):
        obj = data.draw(st.sampled_from(dra))
        path = data.draw(st.sampled_from([p for p in _paths(obj.get("spec", {})) if p]))
        node = obj["spec"]
        for k in path[:-1]:
            node = node[k]
        node[path[-1]] = data.draw(_junk)
    snap = _snap(doc, tmp_path)
    D.dra_devices(snap)
    claim = _claim(snap)
    if claim is not None:
        D.analyse_claim(snap, claim)


def test_plugin_knowledge_matches_the_model():
    """The DRA kubelet plugin's label and containers are data with a source
    (gpuctl/knowledge/device_plugins.yaml dra_kubelet_plugins); the model uses the same."""
    import yaml

    rows = yaml.safe_load((Path(D.__file__).parents[1] / "knowledge" / "device_plugins.yaml").read_text())["dra_kubelet_plugins"]
    nvidia = next(r for r in rows if r["name"] == "nvidia-dra-driver-gpu-kubelet-plugin")
    assert nvidia["label_selector"] == "=".join(D.PLUGIN_LABEL) and nvidia["source"]
    assert nvidia["containers"] == D.PLUGIN_CONTAINERS
    from gpuctl.knowledge.catalog import device_plugin_selectors

    assert nvidia["name"] not in {k.name for k in device_plugin_selectors()}   # not a device plugin


def test_node_without_any_kubelet_plugin_pod_is_named(cli, tmp_path):
    doc, _ = F.kubelet_plugin_not_running()
    F._drop(doc, "Pod", "nvidia-dra-driver-gpu-kubelet-plugin-mlpz2")
    top = _diagnose(cli, doc, tmp_path)[0]
    assert top["code"] == "dra-claim-unallocatable"
    assert ("node gpu-a100-2: no ResourceSlice from driver gpu.nvidia.com and no gpu.nvidia.com kubelet-plugin pod "
            "(the DRA counterpart of the device plugin) runs there") in top["evidence"]


from test_dra_cel import attribute_sets, capacities, drivers, expressions  # noqa: E402


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(expression=expressions, devs=st.lists(st.tuples(drivers, attribute_sets, capacities), min_size=1, max_size=4))
def test_shared_outcomes_equal_evaluating_each_device(expression, devs):
    """The per-value outcome cache gives what evaluating every device would."""
    from gpuctl.model.cel_env import compile_selector, evaluate

    compiled = compile_selector(expression)
    for i, (driver, attrs, caps) in enumerate(devs):
        d = D.Device(driver, "pool", f"dev-{i}", "node", "slice",
                     {k: v for k, v in ((k, D.attribute_value(v)) for k, v in attrs.items()) if v is not None}, dict(caps))
        rep = D.SelectorReport("claim ns/c", 0, expression, compiled)
        ok, err = D._selector_pass([rep], d)
        want = evaluate(compiled, d.driver, d.attributes, d.capacity)
        assert (ok, err) == (want.matches and not want.error, want.error), (expression, d)


def test_api_server_serves_dra_at_every_version_converted(serve):
    """As kube-apiserver 1.34+: objects written at v1 read back at v1beta2 (same shape)
    and v1beta1 (request fields flat, device fields under basic)."""
    import urllib.request

    srv, kubeconfig = serve(SCEN / "dra-device-taint-not-tolerated" / "snapshot")
    token = srv.token

    def get(path):
        req = urllib.request.Request(srv.url + path, headers={"Authorization": f"Bearer {token}"})
        return json.loads(urllib.request.urlopen(req, timeout=5).read())

    for version in ("v1", "v1beta2", "v1beta1"):
        slices = get(f"/apis/resource.k8s.io/{version}/resourceslices")["items"]
        claim = get(f"/apis/resource.k8s.io/{version}/namespaces/ml-research/resourceclaims/{F.CLAIM}")
        assert {s["apiVersion"] for s in slices} == {claim["apiVersion"]} == {f"resource.k8s.io/{version}"}
        dev = next(d for s in slices for d in s["spec"]["devices"] if d["name"] == "gpu-6" and s["spec"]["nodeName"] == "gpu-a100-2")
        req = claim["spec"]["devices"]["requests"][0]
        if version == "v1beta1":
            assert dev["basic"]["taints"][0]["key"] == "gpu.nvidia.com/xid" and req["deviceClassName"] == "gpu.nvidia.com"
        else:
            assert dev["taints"][0]["key"] == "gpu.nvidia.com/xid" and req["exactly"]["deviceClassName"] == "gpu.nvidia.com"


def test_a_template_is_analysed_like_its_claim():
    snap = load_snapshot(str(SCEN / "dra-selector-excludes-all" / "snapshot"))
    tmpl = snap.find("ResourceClaimTemplate", "ml-research", "single-gpu")
    a, b = _only(D.analyse_template(snap, tmpl)), _only(D.analyse_claim(snap, _claim(snap)))
    assert a.chosen is None and b.chosen is None
    assert [(s.failed, s.evaluated) for s in a.alternatives[0].selectors] == [(s.failed, s.evaluated) for s in b.alternatives[0].selectors] == [(0, 16), (16, 16)]


@pytest.mark.parametrize("version", ["v1beta1", "v1beta2"])
def test_snapshot_save_keeps_dra_objects_a_cluster_serves_at_an_older_version(cli, serve, tmp_path, version):
    """A 1.32/1.33 cluster serves DRA at v1beta1/v1beta2 only: `snapshot save` falls back
    through the versions as the live collector does, and the bundle diagnoses as live."""
    scenario = "dra-selector-excludes-all"
    doc = F.as_version(json.loads((SCEN / scenario / "snapshot" / "cluster.json").read_text()), version)
    _snap(doc, tmp_path)
    srv, kubeconfig = serve(tmp_path / "snapshot")
    bundle = tmp_path / "bundle"
    saved = cli("snapshot", "save", str(bundle), "--kubeconfig", kubeconfig)
    assert saved.code == 0, saved.err
    assert (bundle / "resourceslices.json").is_file() and (bundle / "resourceclaims.json").is_file()
    argv = ["diagnose", "pod", F.POD, "-n", "ml-research", "-o", "json"]
    live = cli(*argv, "--kubeconfig", kubeconfig).json()["findings"]
    offline = cli(*argv, "--snapshot", str(bundle)).json()["findings"]
    assert offline == live and [f["code"] for f in live][:1] == ["dra-claim-unallocatable"]
    assert any(r.path.startswith(f"/apis/resource.k8s.io/{version}/resourceslices") for r in srv.requests)
