"""Regenerate the SVG screenshots in docs/img/ from the bundled example snapshots.

    python docs/screenshots.py           # rewrite docs/img/*.svg
    python docs/screenshots.py --check   # exit 1 if any file on disk differs from a fresh render

Each picture is rendered in-process by the same renderers the CLI uses, on a recording Rich
console (100 columns, truecolor), and exported with ``Console.save_svg``. Snapshots carry their
capture time, so ages do not depend on the clock and the output is byte-for-byte reproducible.
"""

from __future__ import annotations

import argparse
import io
import os
import sys
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parent.parent
IMG = ROOT / "docs" / "img"


def _console():
    from rich.console import Console

    return Console(record=True, width=100, force_terminal=True, color_system="truecolor", file=io.StringIO(),
                   highlight=False, soft_wrap=False, legacy_windows=False)


def _diagnose_pod(console) -> None:
    from gpuctl.collect.files import load_snapshot
    from gpuctl.engine import diagnose
    from gpuctl.render.diagnosis import render_diagnosis

    render_diagnosis(diagnose(load_snapshot("examples/demo-cluster"), "ml-research", "llama-finetune-0"), console)


def _diagnose_node(console) -> None:
    from gpuctl.collect.files import load_snapshot
    from gpuctl.engine import diagnose_node
    from gpuctl.render.diagnosis import render_diagnosis

    render_diagnosis(diagnose_node(load_snapshot("tests/scenarios/node-xid-79/snapshot"), "gpu-a100-5"), console)


def _capacity(console) -> None:
    from gpuctl.collect.files import load_snapshot
    from gpuctl.render.capacity import render_capacity
    from gpuctl.reports.capacity import capacity_report

    snap = load_snapshot("examples/demo-cluster")
    doc = capacity_report(snap, None)
    gaps = [g.describe() for g in snap.gaps.values()]
    if gaps:
        doc["not_read"] = gaps
    render_capacity(doc, console)


def _pending(console) -> None:
    from gpuctl.collect.files import load_snapshot
    from gpuctl.render.capacity import render_pending
    from gpuctl.reports.pending import pending_report

    doc, _ = pending_report(load_snapshot("examples/demo-cluster"), None)
    render_pending(doc, console)


SHOTS: dict[str, tuple[str, Callable]] = {
    "diagnose-pod.svg": ("gpuctl diagnose pod llama-finetune-0 -n ml-research --snapshot examples/demo-cluster",
                         _diagnose_pod),
    "diagnose-node.svg": ("gpuctl diagnose node gpu-a100-5 --snapshot tests/scenarios/node-xid-79/snapshot",
                          _diagnose_node),
    "nodes-capacity.svg": ("gpuctl nodes capacity --snapshot examples/demo-cluster", _capacity),
    "diagnose-pending.svg": ("gpuctl diagnose pending -A --snapshot examples/demo-cluster", _pending),
}


def render(name: str) -> str:
    title, fn = SHOTS[name]
    console = _console()
    fn(console)
    return console.export_svg(title=title)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="compare with docs/img/ instead of writing; exit 1 if stale")
    args = ap.parse_args(argv)
    os.chdir(ROOT)          # snapshot paths above are relative to the repository root
    os.environ.setdefault("GPUCTL_NOW", "2025-01-01T00:00:00Z")   # live-clock fallback only; snapshots carry capturedAt
    stale = []
    for name in SHOTS:
        svg = render(name)
        path = IMG / name
        if args.check:
            if not path.exists() or path.read_text(encoding="utf-8") != svg:
                stale.append(name)
        else:
            IMG.mkdir(parents=True, exist_ok=True)
            path.write_text(svg, encoding="utf-8")
            print(f"wrote {path.relative_to(ROOT)}")
    if stale:
        print("stale screenshots (run: python docs/screenshots.py): " + ", ".join(stale), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
