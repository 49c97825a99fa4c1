"""The floor: the leanest Python fetch of the node and pod lists ``gpuctl diagnose pod`` reads.

One process, the official ``kubernetes`` client's ``ApiClient`` as transport (as
gpuctl uses it), raw responses (``param_serialize`` + ``call_api`` + ``read()`` on
kubernetes >= 33, ``_preload_content=False`` before), pages of 500 followed
through ``metadata.continue``, each page decoded by msgspec straight into Structs
that hold only what a fit computation needs (pod: nodeName, phase, container
resources; node: name, labels, allocatable). The lists are the ones gpuctl's live
collector asks for when more than 20 nodes are candidates:

* ``GET /api/v1/nodes?limit=500``
* ``GET /api/v1/pods?fieldSelector=spec.nodeName!=,status.phase!=Succeeded,status.phase!=Failed&limit=500``

Run as a subprocess by ``benchmarks.run`` (which measures its wall time and peak
RSS from outside); prints one JSON line with the in-process figures::

    python -m benchmarks.floor --kubeconfig benchmarks/out/bench.kubeconfig [--encoding gzip|identity]
    python -m benchmarks.floor --kubeconfig K --gc-paused          # no GC passes while decoding (leaner)
    python -m benchmarks.floor --kubeconfig K --mode client-model   # CoreV1Api().list_pod_for_all_namespaces()
"""

from __future__ import annotations

import argparse
import gc
import json
import resource
import time

T_START = time.perf_counter()

import msgspec  # noqa: E402


# Only the fields a fit computation needs; msgspec skips the rest of each object unparsed.
class Resources(msgspec.Struct):
    requests: dict[str, str] = {}
    limits: dict[str, str] = {}


class Container(msgspec.Struct):
    resources: Resources = msgspec.field(default_factory=Resources)


class PodMeta(msgspec.Struct):
    name: str = ""
    namespace: str = ""


class PodSpec(msgspec.Struct):
    nodeName: str = ""
    containers: list[Container] = []
    initContainers: list[Container] = []


class PodStatus(msgspec.Struct):
    phase: str = ""


class Pod(msgspec.Struct):
    metadata: PodMeta
    spec: PodSpec
    status: PodStatus


class NodeMeta(msgspec.Struct):
    name: str = ""
    labels: dict[str, str] = {}


class NodeStatus(msgspec.Struct):
    allocatable: dict[str, str] = {}


class Node(msgspec.Struct):
    metadata: NodeMeta
    status: NodeStatus


class ListMeta(msgspec.Struct):
    continue_: str = msgspec.field(name="continue", default="")


class PodPage(msgspec.Struct):
    metadata: ListMeta
    items: list[Pod] = []


class NodePage(msgspec.Struct):
    metadata: ListMeta
    items: list[Node] = []


NON_TERMINATED = "spec.nodeName!=,status.phase!=Succeeded,status.phase!=Failed"
PAGE = 500


def lean(kubeconfig: str, encoding: str, gc_paused: bool = False) -> dict:
    from kubernetes import client, config

    t_import = time.perf_counter()
    cfg = client.Configuration()
    config.load_kube_config(config_file=kubeconfig, client_configuration=cfg, persist_config=False)
    api = client.ApiClient(cfg)
    stats = {"requests": 0, "bytes": 0}

    def fetch_all(path: str, page_type: type, query: list[tuple[str, str]]) -> list:
        dec = msgspec.json.Decoder(page_type)
        out: list = []
        token = ""
        while True:
            q = query + [("limit", str(PAGE))] + ([("continue", token)] if token else [])
            headers = {"Accept": "application/json", "Accept-Encoding": encoding}
            if hasattr(api, "param_serialize"):  # kubernetes >= 33: serialize, then an unread response
                method, url, headers, _, _ = api.param_serialize("GET", path, query_params=q, header_params=headers,
                                                                 auth_settings=["BearerToken"])
                resp = api.call_api(method, url, header_params=headers)
                data = resp.read()
                if resp.status != 200:
                    raise RuntimeError(f"GET {path}: HTTP {resp.status}: {data[:300]!r}")
            else:  # older clients
                data = api.call_api(path, "GET", query_params=q, header_params=headers, auth_settings=["BearerToken"],
                                    _preload_content=False, _return_http_data_only=True).data
            stats["requests"] += 1
            stats["bytes"] += len(data)
            page = dec.decode(data)
            out += page.items
            token = page.metadata.continue_
            if not token:
                return out

    t0 = time.perf_counter()
    if gc_paused:  # no cyclic-GC passes over the records being built (gpuctl's KubeAPI.list does the same)
        gc.disable()
    nodes = fetch_all("/api/v1/nodes", NodePage, [])
    t1 = time.perf_counter()
    pods = fetch_all("/api/v1/pods", PodPage, [("fieldSelector", NON_TERMINATED)])
    if gc_paused:
        gc.freeze()
        gc.enable()
    t2 = time.perf_counter()
    gpus = sum(int(c.resources.requests.get("nvidia.com/gpu", "0")) for p in pods for c in p.spec.containers)
    return {"mode": "lean", "encoding": encoding, "gc_paused": gc_paused, "nodes": len(nodes), "pods": len(pods), "gpus_requested": gpus,
            "import_s": round(t_import - T_START, 3), "nodes_s": round(t1 - t0, 3), "pods_s": round(t2 - t1, 3),
            "fetch_s": round(t2 - t0, 3), **stats}


def client_model(kubeconfig: str) -> dict:
    """The 'obvious' way: the client's own models, one unpaged call (what the reference table measured)."""
    from kubernetes import client, config

    t_import = time.perf_counter()
    cfg = client.Configuration()
    config.load_kube_config(config_file=kubeconfig, client_configuration=cfg, persist_config=False)
    core = client.CoreV1Api(client.ApiClient(cfg))
    t0 = time.perf_counter()
    nodes = core.list_node().items
    t1 = time.perf_counter()
    pods = core.list_pod_for_all_namespaces().items
    t2 = time.perf_counter()
    return {"mode": "client-model", "nodes": len(nodes), "pods": len(pods), "import_s": round(t_import - T_START, 3),
            "nodes_s": round(t1 - t0, 3), "pods_s": round(t2 - t1, 3), "fetch_s": round(t2 - t0, 3)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Leanest fetch of gpuctl's node and pod lists (the floor).")
    ap.add_argument("--kubeconfig", required=True)
    ap.add_argument("--encoding", choices=("gzip", "identity"), default="gzip",
                    help="Accept-Encoding to ask for (gpuctl asks for gzip)")
    ap.add_argument("--mode", choices=("lean", "client-model"), default="lean")
    ap.add_argument("--gc-paused", action="store_true",
                    help="disable the cyclic GC while decoding, then freeze the records (as gpuctl does)")
    args = ap.parse_args(argv)
    out = lean(args.kubeconfig, args.encoding, args.gc_paused) if args.mode == "lean" else client_model(args.kubeconfig)
    out["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    out["total_s"] = round(time.perf_counter() - T_START, 3)
    print(json.dumps(out), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
