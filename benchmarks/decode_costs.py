"""Where gpuctl's time and memory go when it decodes the cluster-wide pod list.

``gpuctl diagnose pod`` on a big cluster spends most of its time in one call:
msgspec decoding the ~135,000 non-terminated pods (pages of 500) into
``gpuctl.model.objects.Pod``, and holds them all until the checks run. This script
decodes the same pages (built by ``benchmarks.synth``, as the server would send
them) in a fresh process per variant and reports time and memory kept:

* ``floor``: the floor's Structs (``benchmarks.floor``: only what a fit needs)
* ``floor-gc-paused``: the same with the GC paused while decoding (see below)
* ``Pod``: ``gpuctl.model.objects.Pod``, the full pod record
* ``BoundPod``: ``gpuctl.model.objects.BoundPod``, the slim record gpuctl uses
  for pods listed in bulk when the target has pod (anti-)affinity terms, and
  ``BoundPodLite`` (no labels), the one it uses otherwise (a variant fails
  cleanly when objects.py has no such record)
* ``*-gc-paused``: the same with the cyclic GC disabled while decoding and the
  result frozen afterwards (what ``KubeAPI.list`` does)
* ``Pod-structs-gc-false``: the Pod classes declared ``gc=False`` (msgspec does
  not track the Struct instances; loaded from a modified copy of objects.py)

For ``floor``, ``BoundPod`` and ``BoundPodLite`` it also attributes the memory kept to field paths.

Usage::

    python -m benchmarks.decode_costs --nodes 5000 --pods 150000
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

VARIANTS = ("floor", "floor-gc-paused", "Pod", "Pod-gc-paused", "BoundPod", "BoundPod-gc-paused", "BoundPodLite",
            "BoundPodLite-gc-paused", "Pod-structs-gc-false")


def _rss_mb() -> float:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def _objects_module(variant: str):
    """gpuctl.model.objects, or (``*-structs-gc-false``) a copy whose Structs are declared ``gc=False``."""
    from gpuctl.model import objects as O

    if not variant.endswith("-structs-gc-false"):
        return O
    src = Path(O.__file__).read_text(encoding="utf-8")
    old = "class _S(Struct, kw_only=True, omit_defaults=True, forbid_unknown_fields=False"
    if old not in src:
        raise SystemExit("objects.py's _S base changed: update benchmarks/decode_costs.py")
    src = src.replace(old, old + ", gc=False", 1).replace(", gc=False, gc=False", ", gc=False")
    path = Path(tempfile.mkdtemp()) / "objects_variant.py"
    path.write_text(src, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("objects_variant", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["objects_variant"] = mod
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    return mod


def _page_decoder(variant: str):
    import msgspec

    if variant.startswith("floor"):
        from benchmarks import floor

        return msgspec.json.Decoder(floor.PodPage)
    O = _objects_module(variant)
    record = getattr(O, variant.split("-")[0], None)
    if record is None:
        raise SystemExit(f"gpuctl.model.objects has no {variant.split('-')[0]}")

    class ListMeta(msgspec.Struct):
        continue_: str = msgspec.field(name="continue", default="")

    page = msgspec.defstruct("Page", [("metadata", ListMeta, msgspec.field(default_factory=ListMeta)),
                                      ("items", list[record], msgspec.field(default_factory=list))])
    return msgspec.json.Decoder(page)


def attribute(items: list) -> dict[str, int]:
    """Bytes held under each field path of the decoded records (each object counted once)."""
    seen: set[int] = set()
    out: dict[str, int] = {}

    def size(x: Any, path: str) -> None:
        if id(x) in seen:
            return
        seen.add(id(x))
        out[path] = out.get(path, 0) + sys.getsizeof(x)
        fields = getattr(type(x), "__struct_fields__", None)
        if fields is not None:
            for f in fields:
                v = getattr(x, f, None)
                if v is not None and not isinstance(v, (bool, int, float)):
                    size(v, f"{path}.{f}" if path else f)
        elif isinstance(x, dict):
            for k, v in x.items():
                size(k, path + "{}")
                size(v, path + "{}")
        elif isinstance(x, (list, tuple)):
            for v in x:
                size(v, path + "[]")

    for it in items:
        size(it, "")
    return dict(sorted(out.items(), key=lambda kv: -kv[1]))


def one(variant: str, pages_file: str, attribute_fields: bool) -> dict:
    data = Path(pages_file).read_bytes()
    pages, off = [], 0
    while off < len(data):
        n = int.from_bytes(data[off:off + 8], "little")
        pages.append(data[off + 8: off + 8 + n])
        off += 8 + n
    del data
    dec = _page_decoder(variant)
    gc.collect()
    before = _rss_mb()
    paused = variant.endswith("-gc-paused")
    if paused:  # as gpuctl's KubeAPI.list does: no collections while decoding, then freeze what was built
        gc.disable()
    kept: list = []
    t0 = time.perf_counter()
    for p in pages:
        kept += dec.decode(p).items
    if paused:
        gc.freeze()
        gc.enable()
    dt = time.perf_counter() - t0
    after = _rss_mb()
    out = {"variant": variant, "pods": len(kept), "decode_s": round(dt, 2), "kept_mb": round(after - before, 1),
           "per_pod_bytes": round((after - before) * 2**20 / max(1, len(kept))),
           "gc_tracked_per_pod": round(sum(1 for _ in gc.get_objects()) / max(1, len(kept)), 1) if not paused
           else None}
    if attribute_fields:
        total = attribute(kept)
        out["by_field_mb"] = {k: round(v / 2**20, 1) for k, v in total.items() if v >= 2**20}
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--nodes", type=int, default=5000)
    ap.add_argument("--pods", type=int, default=150_000)
    ap.add_argument("--variants", default=",".join(VARIANTS))
    ap.add_argument("--one", help=argparse.SUPPRESS)
    ap.add_argument("--pages", help=argparse.SUPPRESS)
    ap.add_argument("--attribute", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.one:
        print(json.dumps(one(args.one, args.pages, args.attribute)))
        return 0
    from benchmarks import synth

    c = synth.generate(args.nodes, args.pods)
    # what the server answers to spec.nodeName!=,status.phase!=Succeeded,status.phase!=Failed, in pages of 500
    pods = sorted((json.loads(s)["metadata"]["namespace"], json.loads(s)["metadata"]["name"], s) for s in c.pods
                  if '"nodeName"' in s and '"phase":"Succeeded"' not in s and '"phase":"Failed"' not in s)
    items = [s for _, _, s in pods]
    del c, pods
    with tempfile.NamedTemporaryFile(delete=False, suffix=".pages") as fh:
        for i in range(0, len(items), 500):
            page = ('{"kind":"PodList","apiVersion":"v1","metadata":{"continue":"x"},"items":['
                    + ",".join(items[i:i + 500]) + "]}").encode()
            fh.write(len(page).to_bytes(8, "little") + page)
        pages_file = fh.name
    n = len(items)
    del items
    print(f"{n} non-terminated bound pods in {(n + 499) // 500} pages", file=sys.stderr)
    print("| variant | decode (s) | memory kept (MB) | per pod (bytes) |")
    print("| --- | --- | --- | --- |")
    rows = []
    try:
        for v in args.variants.split(","):
            cmd = [sys.executable, "-m", "benchmarks.decode_costs", "--one", v, "--pages", pages_file]
            if v in ("BoundPod", "BoundPodLite", "floor"):
                cmd.append("--attribute")
            out = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
            if out.returncode != 0:
                print(f"| {v} | failed: {out.stderr.strip().splitlines()[-1]} | | |")
                continue
            r = json.loads(out.stdout)
            rows.append(r)
            print(f"| {v} | {r['decode_s']} | {r['kept_mb']} | {r['per_pod_bytes']} |", flush=True)
    finally:
        os.unlink(pages_file)
    for r in rows:
        if r.get("by_field_mb"):
            print(f"\n{r['variant']}: memory by field path (MB, >= 1 MB; an object is counted under the first "
                  f"path that reaches it)")
            for k, v in r["by_field_mb"].items():
                print(f"  {v:8.1f}  {k or '(the record itself)'}")
    out_dir = HERE / "out"
    out_dir.mkdir(exist_ok=True)
    (out_dir / "decode_costs.json").write_text(json.dumps(rows, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
