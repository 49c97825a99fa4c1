"""``gpuctl fit``: would this manifest's pods fit, before it is applied (docs/fit.md)."""

from __future__ import annotations

import sys
from typing import Optional

import typer
from typing_extensions import Annotated

from . import complete
from .complete import complete_assumption
from .common import Common, Output, Source, check_namespace, common_options, emit

FileOpt = Annotated[Optional[list[str]], typer.Option("--filename", "-f", help="A manifest to fit (YAML or JSON, multi-document; '-' reads stdin): Pod, Job, Deployment, StatefulSet, ReplicaSet, PyTorchJob, MPIJob, JobSet, Volcano Job; repeatable.", show_default=False, metavar="FILE")]
GpusOpt = Annotated[Optional[int], typer.Option("--gpus", help="Without a manifest: where could a pod with this many GPUs go right now?", show_default=False, metavar="N")]
ResourceOpt = Annotated[str, typer.Option("--resource", help="With --gpus: the GPU resource name.", metavar="NAME")]
SelectorOpt = Annotated[Optional[list[str]], typer.Option("--selector", help="With --gpus: a nodeSelector entry KEY=VALUE; repeatable.", show_default=False, metavar="KEY=VALUE")]
TolerationOpt = Annotated[Optional[list[str]], typer.Option("--toleration", help="With --gpus: a toleration KEY[=VALUE]:EFFECT; repeatable.", show_default=False, metavar="KEY[=VALUE]:EFFECT")]
ReplicasOpt = Annotated[int, typer.Option("--replicas", help="With --gpus: how many such pods must run at the same time.", metavar="N")]
AssumeOpt = Annotated[Optional[list[str]], typer.Option("--assume", help="Fit as if: uncordon=NODE, untaint=NODE:KEY, free=NODE (its non-DaemonSet pods gone); repeatable.", show_default=False, metavar="WHAT=NODE", autocompletion=complete_assumption)]

FitNamespaceOpt = Annotated[Optional[str], typer.Option("--namespace", "-n", help="Namespace of the pods whose manifest names none, and of --gpus (default: the context's, else 'default').", show_default=False, autocompletion=complete.complete_namespace, callback=check_namespace)]
FitOutputOpt = Annotated[Output, typer.Option("--output", "-o", help="Output format: table, wide (every node's fit of the first replica, every finding and check), json, yaml, markdown.", case_sensitive=False)]

def _read(path: str) -> tuple[str, str]:
    from ..model.manifests import read_manifest

    return read_manifest(path, sys.stdin.buffer)


@common_options()
def fit(
    opts: Common,
    filename: FileOpt = None,
    gpus: GpusOpt = None,
    resource: ResourceOpt = "nvidia.com/gpu",
    selector: SelectorOpt = None,
    toleration: TolerationOpt = None,
    replicas: ReplicasOpt = 1,
    assume: AssumeOpt = None,
    namespace: FitNamespaceOpt = None,
    output: FitOutputOpt = Output.table,
) -> int:
    """Would these pods fit now? Where each pod template would go, or why it would stay Pending."""
    from ..engine.fit import parse_assumptions
    from ..errors import UsageError
    from ..model.manifests import quick_template
    from ..reports.fit import collection_for, manifest_templates, report_for

    if bool(filename) == (gpus is not None):
        raise UsageError("give -f FILE (a manifest) or --gpus N (a quick fit), not both and not neither")
    if filename and (replicas != 1 or selector or toleration or resource != "nvidia.com/gpu"):
        raise UsageError("--replicas, --selector, --toleration and --resource go with --gpus; a manifest says its own")
    if filename and filename.count("-") > 1:
        raise UsageError("-f - (stdin) can be given once")
    assumptions = parse_assumptions(assume)
    src = Source(opts)
    ns = src.namespace()
    if gpus is not None:
        templates = [quick_template(gpus, resource, selector or [], toleration or [], replicas, ns)]
    else:
        templates = manifest_templates((_read(path) for path in filename or []), ns)
    snap = src.snapshot("collect_for_fit", spinner=True, **collection_for(templates, assumptions))
    doc, code = report_for(snap, templates, assumptions)
    from ..render import fit as R

    emit(opts, doc, lambda console, wide: R.render_fit(doc, console, wide=wide), markdown=lambda: R.fit_markdown(doc))
    return code
