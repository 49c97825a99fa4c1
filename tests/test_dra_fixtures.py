"""The DRA scenario fixtures (tests/scenarios/dra-*/), built from the reviewed
dra-claim-unallocatable cluster: two p4de nodes with NVIDIA's DRA driver
(kubernetes-sigs/dra-driver-nvidia-gpu) publishing 8 A100s each.

Run ``python tests/test_dra_fixtures.py`` to (re)write them; the test below fails
when a fixture on disk differs from what this file builds.

Sources for the shapes:
* ResourceSlice devices and attributes: cmd/gpu-kubelet-plugin/deviceinfo.go (GpuInfo.Attributes:
  type, uuid, productName, brand, architecture, cudaComputeCapability, driverVersion,
  cudaDriverVersion; capacity memory), partitions.go (KEP 4815: one counter set
  ``gpu-N-counter-set`` per GPU, counters per capacity plus ``memory-slice-N``; the full GPU
  consumes all of them), device_health.go (taint ``gpu.nvidia.com/xid`` with the Xid as value,
  NoSchedule for critical Xids);
* the chart's kubelet-plugin DaemonSet (templates/kubeletplugin.yaml: containers
  ``compute-domains`` and ``gpus``, component label ``kubelet-plugin``);
* scheduler wording: DynamicResources Filter "cannot allocate all claims", PostFilter
  "still not schedulable" (pkg/scheduler/framework/plugins/dynamicresources); a Filter
  error is wrapped "running %q filter plugin: %w" (pkg/scheduler/framework/runtime) and
  the allocator's errors read "claim %s: selector #%d on device %s: CEL runtime error: %w"
  and "claim %s: selector #%d: CEL compile error: %w"
  (staging/src/k8s.io/dynamic-resource-allocation/structured/internal/stable/allocator_stable.go).
"""

from __future__ import annotations

import copy
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SCEN = HERE / "scenarios"
BASE = SCEN / "dra-claim-unallocatable" / "snapshot" / "cluster.json"
POD = "notebook-eval-0"
CLAIM = "notebook-eval-0-gpu-grqt2"
UNSCHEDULABLE = ("0/2 nodes are available: 2 cannot allocate all claims. still not schedulable, preemption: "
                 "0/2 nodes are available: 2 Preemption is not helpful for scheduling.")
SCHED_SRC = ("kubernetes/kubernetes pkg/scheduler/framework/plugins/dynamicresources/dynamicresources.go "
             "(Filter 'cannot allocate all claims', PostFilter 'still not schedulable')")
ALLOC_SRC = ("kubernetes/kubernetes staging/src/k8s.io/dynamic-resource-allocation/structured/internal/stable/"
             "allocator_stable.go")
DRIVER_SRC = "kubernetes-sigs/dra-driver-nvidia-gpu cmd/gpu-kubelet-plugin/deviceinfo.go"


def _base() -> dict:
    return json.loads(BASE.read_text())


def _items(doc: dict, kind: str) -> list[dict]:
    return [i for i in doc["items"] if i["kind"] == kind]


def _one(doc: dict, kind: str, name: str) -> dict:
    return next(i for i in doc["items"] if i["kind"] == kind and i["metadata"]["name"] == name)


def _drop(doc: dict, kind: str, name: str) -> None:
    doc["items"] = [i for i in doc["items"] if not (i["kind"] == kind and i["metadata"]["name"] == name)]


def _set_request(doc: dict, request: dict) -> None:
    """The pod's claim and its template ask for ``request``."""
    for kind, name in (("ResourceClaim", CLAIM), ("ResourceClaimTemplate", "single-gpu")):
        obj = _one(doc, kind, name)
        spec = obj["spec"]["spec"] if kind == "ResourceClaimTemplate" else obj["spec"]
        spec["devices"]["requests"] = [copy.deepcopy(request)]


def _hold(doc: dict, claim: str, node: str, devices: list[str]) -> None:
    c = _one(doc, "ResourceClaim", claim)
    c["spec"]["devices"]["requests"][0]["exactly"]["count"] = len(devices)
    c["status"]["allocation"]["devices"]["results"] = [
        {"device": d, "driver": "gpu.nvidia.com", "pool": node, "request": "gpus"} for d in devices]


def _free_node(doc: dict, n: int) -> None:
    """Nothing holds node n's GPUs: its pretrain pod and claim are gone."""
    _drop(doc, "ResourceClaim", f"pretrain-node{n}-gpus")
    _drop(doc, "Pod", f"pretrain-13b-node{n}")


def _schedule_message(doc: dict, message: str, reason: str = "Unschedulable") -> None:
    pod = _one(doc, "Pod", POD)
    for c in pod["status"]["conditions"]:
        if c["type"] == "PodScheduled":
            c["message"], c["reason"] = message, reason
    for e in _items(doc, "Event"):
        if e["involvedObject"]["name"] == POD:
            e["message"] = message


def _selector(expr: str) -> dict:
    return {"cel": {"expression": expr}}


def _slice(doc: dict, node: str) -> dict:
    return next(s for s in _items(doc, "ResourceSlice") if s["spec"]["nodeName"] == node)


def _expected(top: str, about: str, evidence: list[str], codes: list[str] | None = None,
              fixes: list[str] | None = None, nodes: list[str] | None = None) -> dict:
    return {"pod": f"ml-research/{POD}", "top_code": top, "codes": codes or [top], "verdict": "blocked",
            "exit_code": 1, "evidence": evidence, "nodes": nodes or [], "fix_commands": fixes or [], "about": about}


# ---------------------------------------------------------------- scenarios


def selector_excludes_all() -> tuple[dict, dict]:
    doc = _base()
    _free_node(doc, 1)
    _set_request(doc, {"name": "gpu", "exactly": {
        "allocationMode": "ExactCount", "count": 1, "deviceClassName": "gpu.nvidia.com",
        "selectors": [_selector('device.attributes["gpu.nvidia.com"].productName == "NVIDIA H100 80GB HBM3"')]}})
    return doc, _expected(
        "dra-claim-unallocatable",
        "DRA v1: the claim's CEL selector asks for productName 'NVIDIA H100 80GB HBM3' but both nodes publish "
        f"A100-SXM4-80GB (attribute values as {DRIVER_SRC} publishes them); gpu-a100-2's 8 GPUs are free. "
        f"Wording: {SCHED_SRC}.",
        ['is false for 16 of the 16 devices', 'productName: "NVIDIA A100-SXM4-80GB" on 16'],
        fixes=["kubectl get resourceclaim -n ml-research notebook-eval-0-gpu-grqt2 -o yaml",
               "kubectl get deviceclass gpu.nvidia.com -o yaml", "kubectl get resourceslices -o yaml"])


def selector_invalid() -> tuple[dict, dict]:
    doc = _base()
    _free_node(doc, 0)
    _free_node(doc, 1)
    expr = 'device.attributes["gpu.nvidia.com"].memory.compareTo(quantity("40Gi")) >= 0'
    _set_request(doc, {"name": "gpu", "exactly": {
        "allocationMode": "ExactCount", "count": 1, "deviceClassName": "gpu.nvidia.com", "selectors": [_selector(expr)]}})
    _schedule_message(doc, f'running "DynamicResources" filter plugin: claim ml-research/{CLAIM}: selector #0 on device '
                           'gpu.nvidia.com/gpu-a100-1/gpu-0: CEL runtime error: no such key: memory', "SchedulerError")
    return doc, _expected(
        "dra-selector-invalid",
        "DRA v1: the claim selector reads memory from device.attributes, but NVIDIA's driver publishes memory as a "
        f"capacity ({DRIVER_SRC}, partitions.go fullGpuCapacity); the expression type-checks (attributes are dyn) and "
        "fails at runtime on every device with 'no such key: memory' (k8s.io/dynamic-resource-allocation/cel/compile.go "
        f"DeviceMatches), which aborts allocation ({ALLOC_SRC} selectorsMatch); the Filter error is wrapped "
        "'running \"DynamicResources\" filter plugin' and the pod condition reason is SchedulerError.",
        ["fails with a CEL runtime error on all 16 devices", "no such key: memory"],
        fixes=["kubectl get resourceclaim -n ml-research notebook-eval-0-gpu-grqt2 -o yaml"])


def selector_compile_error() -> tuple[dict, dict]:
    doc = _base()
    _free_node(doc, 1)
    expr = 'device.capacity["gpu.nvidia.com"].memory >= quantity("40Gi")'
    _set_request(doc, {"name": "gpu", "exactly": {
        "allocationMode": "ExactCount", "count": 1, "deviceClassName": "gpu.nvidia.com", "selectors": [_selector(expr)]}})
    _schedule_message(doc, f'running "DynamicResources" filter plugin: claim ml-research/{CLAIM}: selector #0: CEL compile '
                           "error: compilation failed: ERROR: <input>:1:42: found no matching overload for '_>=_' applied "
                           "to '(Quantity, Quantity)'", "SchedulerError")
    return doc, _expected(
        "dra-selector-invalid",
        "DRA v1: quantities have no >= operator in Kubernetes CEL (k8s.io/apiserver/pkg/cel/library/quantity.go: "
        "compareTo/isLessThan/isGreaterThan), so the selector does not type-check. API validation normally rejects it "
        f"at create time; the scheduler reports a stored one as 'CEL compile error' ({ALLOC_SRC} selectorsMatch, the "
        "comment there names a newer apiserver then a downgrade as the way such an object exists).",
        ["is not a valid DRA selector", "found no matching overload for '_>=_' applied to '(Quantity, Quantity)'"])


def all_mode_one_allocated() -> tuple[dict, dict]:
    doc = _base()
    _hold(doc, "pretrain-node0-gpus", "gpu-a100-1", ["gpu-3"])
    _hold(doc, "pretrain-node1-gpus", "gpu-a100-2", ["gpu-5"])
    _set_request(doc, {"name": "gpu", "exactly": {"allocationMode": "All", "deviceClassName": "gpu.nvidia.com"}})
    return doc, _expected(
        "dra-claim-unallocatable",
        "DRA v1: the claim asks for allocationMode All; each node has 8 matching GPUs and one of them is held by "
        f"another claim, so no node can give all of them ({ALLOC_SRC}: 'All' collects every matching device of the "
        f"node, then allocateDevice fails on one in use). Wording: {SCHED_SRC}.",
        ["allocationMode All takes every matching device of a node", "gpu-a100-1 has 8 matching, 1 not usable",
         "2 matching devices are allocated"])


def _mig_slices(doc: dict) -> None:
    """DynamicMIG (partitions.go): per GPU a counter set and 1g.10gb partitions consuming from it."""
    profile_slices = 8
    for s in _items(doc, "ResourceSlice"):
        gpus = s["spec"]["devices"]
        counters, devices = [], []
        for g in gpus:
            minor = g["attributes"]["minor"]["int"]
            cset = f"gpu-{minor}-counter-set"
            full = {f"memory-slice-{i}": {"value": "1"} for i in range(profile_slices)}
            full.update({"multiprocessors": {"value": "98"}, "memory": {"value": "80Gi"}})
            counters.append({"name": cset, "counters": full})
            g = copy.deepcopy(g)
            g["consumesCounters"] = [{"counterSet": cset, "counters": copy.deepcopy(full)}]
            devices.append(g)
            common = {k: g["attributes"][k] for k in ("architecture", "brand", "cudaComputeCapability",
                                                       "cudaDriverVersion", "driverVersion", "productName")}
            for start in range(7):
                attrs = dict(common, type={"string": "mig"}, profile={"string": "1g.10gb"},
                             parentUUID=g["attributes"]["uuid"])
                devices.append({"name": f"gpu-{minor}-mig-1g10gb-19-{start}", "attributes": attrs,
                                "capacity": {"multiprocessors": {"value": "14"}, "memory": {"value": "9856Mi"}},
                                "consumesCounters": [{"counterSet": cset, "counters": {
                                    "multiprocessors": {"value": "14"}, "memory": {"value": "9856Mi"},
                                    f"memory-slice-{start}": {"value": "1"}}}]})
        s["spec"]["devices"] = devices
        s["spec"]["sharedCounters"] = counters
    dc = copy.deepcopy(_one(doc, "DeviceClass", "gpu.nvidia.com"))
    dc["metadata"]["name"] = "mig.nvidia.com"
    dc["metadata"]["uid"] = "5b1d8c2e-3f61-4a8e-9b0e-2c4e8f1a7d93"
    dc["spec"]["selectors"] = [_selector("device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'mig'")]
    doc["items"].append(dc)


def mig_counters_exhausted() -> tuple[dict, dict]:
    doc = _base()
    _mig_slices(doc)
    _set_request(doc, {"name": "gpu", "exactly": {
        "allocationMode": "ExactCount", "count": 1, "deviceClassName": "mig.nvidia.com",
        "selectors": [_selector('device.attributes["gpu.nvidia.com"].profile == "1g.10gb"')]}})
    return doc, _expected(
        "dra-claim-unallocatable",
        "DRA v1 partitionable devices (KEP 4815, NVIDIA DynamicMIG: kubernetes-sigs/dra-driver-nvidia-gpu "
        "cmd/gpu-kubelet-plugin/partitions.go): each A100 has a counter set gpu-N-counter-set; the full GPU consumes all "
        "its counters, each 1g.10gb partition 14 SMs, 9856Mi and one memory slice. All 16 full GPUs are allocated to the "
        "pretrain claims, so all 112 free MIG partitions fail checkAvailableCounters "
        f"({ALLOC_SRC}). Wording: {SCHED_SRC}.",
        ["112 matching devices need shared counters their pool no longer has", "gpu-0-counter-set/memory"])


def taint_not_tolerated() -> tuple[dict, dict]:
    doc = _base()
    _hold(doc, "pretrain-node1-gpus", "gpu-a100-2", [f"gpu-{i}" for i in range(6)])
    devs = _slice(doc, "gpu-a100-2")["spec"]["devices"]
    devs[6]["taints"] = [{"key": "gpu.nvidia.com/xid", "value": "79", "effect": "NoSchedule",
                          "timeAdded": "2026-11-20T01:58:11Z"}]
    devs[7]["taints"] = [{"key": "gpu.nvidia.com/xid", "value": "48", "effect": "NoSchedule",
                          "timeAdded": "2026-11-20T02:31:40Z"}]
    return doc, _expected(
        "dra-claim-unallocatable",
        "DRA v1 (tests/test_dra_model.py serves the same cluster as v1beta1 and v1beta2): gpu-a100-1's GPUs and "
        "six of gpu-a100-2's are allocated; the two free GPUs carry the NVIDIA driver's health taint gpu.nvidia.com/xid "
        "(Xid 79 and 48, NoSchedule: kubernetes-sigs/dra-driver-nvidia-gpu cmd/gpu-kubelet-plugin/device_health.go) and "
        f"the request has no tolerations ({ALLOC_SRC} taintPreventsAllocation). Wording: {SCHED_SRC}.",
        ["2 matching devices carry a device taint the request does not tolerate", "gpu.nvidia.com/xid=79:NoSchedule"])


def first_available_falls_through() -> tuple[dict, dict]:
    doc = _base()
    _hold(doc, "pretrain-node1-gpus", "gpu-a100-2", [f"gpu-{i}" for i in range(7)])
    _set_request(doc, {"name": "gpu", "firstAvailable": [
        {"name": "h100", "deviceClassName": "gpu.nvidia.com", "allocationMode": "ExactCount", "count": 1,
         "selectors": [_selector('device.attributes["gpu.nvidia.com"].productName == "NVIDIA H100 80GB HBM3"')]},
        {"name": "a100-pair", "deviceClassName": "gpu.nvidia.com", "allocationMode": "ExactCount", "count": 2,
         "selectors": [_selector('device.attributes["gpu.nvidia.com"].architecture == "Ampere"')]}]})
    return doc, _expected(
        "dra-claim-unallocatable",
        "DRA v1 with a prioritized list (firstAvailable, KEP 4816; served as v1beta1/v1beta2 in tests/test_dra_model.py): subrequest h100 "
        "matches no device (all publish A100-SXM4-80GB), subrequest a100-pair needs 2 GPUs on one node and only "
        f"gpu-a100-2's gpu-7 is free ({ALLOC_SRC} allocateOne tries subrequests in order). Wording: {SCHED_SRC}.",
        ["none of its 2 firstAvailable subrequests fits", "request gpu/h100", "request gpu/a100-pair",
         "no node has 2 usable devices: gpu-a100-2 has 1"])


def kubelet_plugin_not_running() -> tuple[dict, dict]:
    doc = _base()
    _free_node(doc, 1)
    doc["items"] = [i for i in doc["items"] if not (i["kind"] == "ResourceSlice" and i["spec"]["nodeName"] == "gpu-a100-2")]
    plugin = next(p for p in _items(doc, "Pod") if p["metadata"]["name"].startswith("nvidia-dra-driver-gpu-kubelet-plugin")
                  and p["spec"]["nodeName"] == "gpu-a100-2")
    for cs in plugin["status"]["containerStatuses"]:
        if cs["name"] == "gpus":
            cs.update(ready=False, started=False, restartCount=14, state={"waiting": {
                "reason": "CrashLoopBackOff",
                "message": "back-off 5m0s restarting failed container=gpus pod=" + plugin["metadata"]["name"]
                           + "_nvidia-dra-driver-gpu(" + plugin["metadata"]["uid"] + ")"}},
                lastState={"terminated": {"exitCode": 1, "reason": "Error", "startedAt": "2026-11-20T03:04:12Z",
                                          "finishedAt": "2026-11-20T03:04:14Z"}})
    for c in plugin["status"].get("conditions", []):
        if c["type"] in ("Ready", "ContainersReady"):
            c.update(status="False", reason="ContainersNotReady",
                     message="containers with unready status: [gpus]")
    return doc, _expected(
        "dra-claim-unallocatable",
        "DRA v1: gpu-a100-1's GPUs are all allocated and gpu-a100-2 publishes no ResourceSlice because the gpus "
        "container of its NVIDIA DRA kubelet plugin (chart templates/kubeletplugin.yaml of "
        "kubernetes-sigs/dra-driver-nvidia-gpu) is in CrashLoopBackOff (kubelet wording "
        "'back-off 5m0s restarting failed container=...'). Wording: " + SCHED_SRC + ".",
        ["node gpu-a100-2: no ResourceSlice from driver gpu.nvidia.com, though its kubelet plugin pod "
         "nvidia-dra-driver-gpu/nvidia-dra-driver-gpu-kubelet-plugin-mlpz2 is Running"],
        fixes=["kubectl -n nvidia-dra-driver-gpu logs nvidia-dra-driver-gpu-kubelet-plugin-mlpz2 -c gpus --tail=50"])


CD_SRC = ("kubernetes-sigs/dra-driver-nvidia-gpu: api/nvidia.com/resource/v1beta1/computedomain.go (ComputeDomain "
          "spec.numNodes, spec.channel.resourceClaimTemplate.name, status.status NotReady), "
          "cmd/compute-domain-controller/resourceclaimtemplate.go (the workload ResourceClaimTemplate: labels "
          "resource.nvidia.com/computeDomain=<ComputeDomain UID> and resource.nvidia.com/computeDomainTarget=Workload, "
          "finalizer resource.nvidia.com/computeDomain, DeviceClass compute-domain-default-channel.nvidia.com, "
          "opaque ComputeDomainChannelConfig with domainID), the chart's "
          "templates/deviceclass-compute-domain-default-channel.yaml (selector device.driver == "
          "'compute-domain.nvidia.com' && device.attributes['compute-domain.nvidia.com'].type == 'channel' && "
          "device.attributes['compute-domain.nvidia.com'].id == 0) and templates/kubeletplugin.yaml (container "
          "compute-domains runs compute-domain-kubelet-plugin; the driver's docs: with "
          "resources.computeDomains.enabled=false the kubelet-plugin pod has only its gpus container)")
CD_UID = "5b1f3c0e-8d7a-4c52-9e1b-2f6a7d9c4e13"
CHANNEL_CLAIM = "notebook-eval-0-imex-channel-7hq2x"


def compute_domain_channel_unallocatable() -> tuple[dict, dict]:
    """A two-node NVLink (GB200-style) job: the pod claims an IMEX channel through
    the ResourceClaimTemplate a ComputeDomain's controller made; no node publishes
    compute-domain.nvidia.com channels (node 1's compute-domains container crashes
    after a chart upgrade enabled ComputeDomains; the DaemonSet's rolling update
    stalled on it, so node 2 still runs the old plugin pod without that container)."""
    doc = _base()
    _free_node(doc, 0)
    _free_node(doc, 1)
    ns = "ml-research"
    pod = _one(doc, "Pod", POD)
    pod["spec"]["resourceClaims"].append({"name": "imex-channel", "resourceClaimTemplateName": "pretrain-70b-channel"})
    pod["status"]["resourceClaimStatuses"].append({"name": "imex-channel", "resourceClaimName": CHANNEL_CLAIM})
    for c in pod["spec"]["containers"]:
        c["resources"]["claims"].append({"name": "imex-channel"})
    channel_cfg = {"opaque": {"driver": "compute-domain.nvidia.com", "parameters": {
        "apiVersion": "resource.nvidia.com/v1beta1", "kind": "ComputeDomainChannelConfig",
        "domainID": CD_UID, "allocationMode": "Single"}}, "requests": ["channel"]}
    request = {"name": "channel", "exactly": {"allocationMode": "ExactCount", "count": 1,
                                              "deviceClassName": "compute-domain-default-channel.nvidia.com"}}
    gpu_claim = _one(doc, "ResourceClaim", CLAIM)
    tmpl = copy.deepcopy(_one(doc, "ResourceClaimTemplate", "single-gpu"))
    tmpl["metadata"].update(name="pretrain-70b-channel", uid="3c8e2a41-77d0-4f1e-b5a9-0e6d2c1f8b37",
                            labels={"resource.nvidia.com/computeDomain": CD_UID,
                                    "resource.nvidia.com/computeDomainTarget": "Workload"},
                            finalizers=["resource.nvidia.com/computeDomain"])
    tmpl["spec"] = {"spec": {"devices": {"requests": [copy.deepcopy(request)], "config": [copy.deepcopy(channel_cfg)]}}}
    claim = copy.deepcopy(gpu_claim)
    claim["metadata"].update(name=CHANNEL_CLAIM, uid="9a4d7e20-1c3b-4f88-a6d2-5e7b0c9f1a64")
    claim["metadata"]["annotations"] = {"resource.kubernetes.io/pod-claim-name": "imex-channel"}
    claim["spec"] = {"devices": {"requests": [copy.deepcopy(request)], "config": [copy.deepcopy(channel_cfg)]}}
    doc["items"] += [tmpl, claim]
    doc["items"].append({
        "apiVersion": "resource.nvidia.com/v1beta1", "kind": "ComputeDomain",
        "metadata": {"name": "pretrain-70b", "namespace": ns, "uid": CD_UID,
                     "creationTimestamp": "2026-11-20T02:48:00Z", "finalizers": ["resource.nvidia.com/computeDomain"]},
        "spec": {"numNodes": 2, "channel": {"resourceClaimTemplate": {"name": "pretrain-70b-channel"},
                                            "allocationMode": "Single"}},
        "status": {"status": "NotReady"}})
    dc = copy.deepcopy(_one(doc, "DeviceClass", "gpu.nvidia.com"))
    dc["metadata"].update(name="compute-domain-default-channel.nvidia.com",
                          uid="uid-cluster-compute-domain-default-channel.nvidia.com")
    dc["spec"] = {"selectors": [_selector(
        "device.driver == 'compute-domain.nvidia.com' && device.attributes['compute-domain.nvidia.com'].type == "
        "'channel' && device.attributes['compute-domain.nvidia.com'].id == 0")]}
    doc["items"].append(dc)
    plugins = {p["spec"]["nodeName"]: p for p in _items(doc, "Pod")
               if p["metadata"]["name"].startswith("nvidia-dra-driver-gpu-kubelet-plugin")}
    new = plugins["gpu-a100-1"]   # the upgraded revision: compute-domains crashes
    new["metadata"]["labels"].update({"pod-template-generation": "2", "controller-revision-hash": "6d9f7c8b5"})
    for cs in new["status"]["containerStatuses"]:
        if cs["name"] == "compute-domains":
            cs.update(ready=False, started=False, restartCount=9, state={"waiting": {
                "reason": "CrashLoopBackOff",
                "message": "back-off 5m0s restarting failed container=compute-domains pod=" + new["metadata"]["name"]
                           + "_nvidia-dra-driver-gpu(" + new["metadata"]["uid"] + ")"}},
                lastState={"terminated": {"exitCode": 1, "reason": "Error", "startedAt": "2026-11-20T03:06:40Z",
                                          "finishedAt": "2026-11-20T03:06:41Z"}})
    for c in new["status"].get("conditions", []):
        if c["type"] in ("Ready", "ContainersReady"):
            c.update(status="False", reason="ContainersNotReady",
                     message="containers with unready status: [compute-domains]")
    old = plugins["gpu-a100-2"]   # the previous revision, rendered with resources.computeDomains.enabled=false
    old["spec"]["containers"] = [c for c in old["spec"]["containers"] if c["name"] != "compute-domains"]
    old["status"]["containerStatuses"] = [c for c in old["status"]["containerStatuses"] if c["name"] != "compute-domains"]
    text = json.dumps(doc)
    for a, b in (("gpu-a100-1", "gb200-node-1"), ("gpu-a100-2", "gb200-node-2")):
        text = text.replace(a, b)
    doc = json.loads(text)
    return doc, _expected(
        "dra-claim-unallocatable",
        "DRA v1, multi-node NVLink job: the pod's imex-channel claim comes from the ResourceClaimTemplate the "
        "ComputeDomain controller created for ComputeDomain pretrain-70b and asks for 1 device of DeviceClass "
        "compute-domain-default-channel.nvidia.com, but no node publishes a compute-domain.nvidia.com ResourceSlice: "
        "gb200-node-1's compute-domains container is in CrashLoopBackOff (kubelet wording 'back-off 5m0s restarting "
        "failed container=...') and gb200-node-2 still runs the kubelet-plugin pod of the DaemonSet's previous "
        "revision, without a compute-domains container. Sources: " + CD_SRC + ". Wording: " + SCHED_SRC + ".",
        ["resourceclaim/" + CHANNEL_CLAIM + " request channel: needs 1 device of DeviceClass "
         "compute-domain-default-channel.nvidia.com",
         "no ResourceSlice publishes devices of driver compute-domain.nvidia.com, which DeviceClass "
         "compute-domain-default-channel.nvidia.com selects",
         "resourceclaim/" + CHANNEL_CLAIM + " (generated from resourceclaimtemplate/pretrain-70b-channel) asks for an IMEX channel of the ComputeDomain with uid " + CD_UID,
         "node gb200-node-1: no ResourceSlice from driver compute-domain.nvidia.com, though its kubelet plugin pod "
         "nvidia-dra-driver-gpu/nvidia-dra-driver-gpu-kubelet-plugin-s7lg6 is Running, its compute-domains "
         "container CrashLoopBackOff",
         "node gb200-node-2: no ResourceSlice from driver compute-domain.nvidia.com, though its kubelet plugin pod "
         "nvidia-dra-driver-gpu/nvidia-dra-driver-gpu-kubelet-plugin-mlpz2 is Running, and it has no "
         "compute-domains container, which publishes them"],
        fixes=["kubectl -n nvidia-dra-driver-gpu logs nvidia-dra-driver-gpu-kubelet-plugin-s7lg6 -c compute-domains --tail=50",
               "kubectl -n nvidia-dra-driver-gpu describe pod nvidia-dra-driver-gpu-kubelet-plugin-mlpz2"])


def as_version(doc: dict, version: str) -> dict:
    """The same cluster as an API server that serves resource.k8s.io only at
    ``version`` stores it: v1beta2 has v1's shapes; v1beta1 has a request's fields
    flat on the request (no ``exactly``) and a device's fields under ``basic``
    (k8s.io/api/resource/v1beta1 types.go: DeviceRequest, Device.Basic)."""
    doc = copy.deepcopy(doc)
    for i in doc["items"]:
        if not i["apiVersion"].startswith("resource.k8s.io/"):
            continue
        i["apiVersion"] = f"resource.k8s.io/{version}"
        if version != "v1beta1":
            continue
        spec = i["spec"]["spec"] if i["kind"] == "ResourceClaimTemplate" else i["spec"]
        if i["kind"] in ("ResourceClaim", "ResourceClaimTemplate"):
            spec["devices"]["requests"] = [dict(name=r["name"], **r["exactly"]) if "exactly" in r else r
                                           for r in spec["devices"]["requests"]]
        if i["kind"] == "ResourceSlice":
            spec["devices"] = [{"name": d["name"], "basic": {k: v for k, v in d.items() if k != "name"}}
                               for d in spec["devices"]]
    return doc


SCENARIOS = {
    "dra-selector-excludes-all": selector_excludes_all,
    "dra-selector-invalid": selector_invalid,
    "dra-selector-compile-error": selector_compile_error,
    "dra-all-mode-one-allocated": all_mode_one_allocated,
    "dra-mig-counters-exhausted": mig_counters_exhausted,
    "dra-device-taint-not-tolerated": taint_not_tolerated,
    "dra-first-available-falls-through": first_available_falls_through,
    "dra-kubelet-plugin-not-running": kubelet_plugin_not_running,
    "dra-compute-domain-channel-unallocatable": compute_domain_channel_unallocatable,
}


def _render(name: str) -> dict[Path, str]:
    doc, expected = SCENARIOS[name]()
    d = SCEN / name
    return {d / "snapshot" / "cluster.json": json.dumps(doc, indent=1) + "\n",
            d / "snapshot" / "snapshot.json": (SCEN / "dra-claim-unallocatable" / "snapshot" / "snapshot.json").read_text(),
            d / "expected.json": json.dumps(expected, indent=2) + "\n"}


def test_fixtures_are_built_from_this_file():
    for name in SCENARIOS:
        for path, text in _render(name).items():
            assert path.is_file(), f"{path} missing: run python tests/test_dra_fixtures.py"
            assert path.read_text() == text, f"{path} differs from what tests/test_dra_fixtures.py builds"


if __name__ == "__main__":
    for name in sys.argv[1:] or SCENARIOS:
        for path, text in _render(name).items():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
            print("wrote", path)
