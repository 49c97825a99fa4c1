"""Shell completion.

* Static scripts for bash, zsh and fish live in ``completions/``; regenerate them
  with ``python -m gpuctl.cli.complete --write`` (a test fails when they are stale).
  ``gpuctl --install-completion`` installs one for the current shell.
* Pod, node, namespace and runbook names complete dynamically: from the cluster
  with a short timeout, and silently to nothing when it cannot be reached.
* ``kubectl gpu <TAB>``: kubectl (1.26+) runs ``kubectl_complete-gpu ARGS…`` (the
  words after ``kubectl gpu``, the last one being completed) and reads Cobra's
  ``__complete`` format: one candidate a line, then ``:<directive>``. The
  ``kubectl_complete-gpu`` entry point answers in that format.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
from pathlib import Path
from typing import Any, Optional

COMPLETION_TIMEOUT = 2.0
MAX_NAMES = 500
SHELLS = ("bash", "zsh", "fish")
COBRA_NO_FILE_COMP = 4   # ShellCompDirectiveNoFileComp


def _param(ctx: Any, name: str) -> Optional[str]:
    while ctx is not None:
        value = (getattr(ctx, "params", None) or {}).get(name)
        if value:
            return value
        ctx = getattr(ctx, "parent", None)
    return None


def _names(ctx: Any, path: str, incomplete: str, namespaced: bool = False) -> list[str]:
    """Object names from the cluster, silently [] on any failure (no cluster, no
    kubeconfig, RBAC, timeout): completion must never print an error."""
    try:
        with contextlib.redirect_stderr(io.StringIO()):
            from ..collect.kube import KubeAPI

            api = KubeAPI(_param(ctx, "kubeconfig"), _param(ctx, "context"), COMPLETION_TIMEOUT)
            if namespaced:
                ns = _param(ctx, "namespace") or api.default_namespace or "default"
                path = path.format(ns=ns)
            import msgspec

            data = msgspec.json.decode(api.get_bytes(path, {"limit": MAX_NAMES}))
            names = [i["metadata"]["name"] for i in data.get("items", []) if isinstance(i, dict)]
    except BaseException:  # noqa: BLE001 - completion swallows everything, KeyboardInterrupt included
        return []
    return sorted(n for n in names if n.startswith(incomplete))


def complete_pod(ctx: Any, incomplete: str) -> list[str]:
    if "/" in incomplete:
        return []
    return _names(ctx, "/api/v1/namespaces/{ns}/pods", incomplete, namespaced=True)


def complete_node(ctx: Any, incomplete: str) -> list[str]:
    return _names(ctx, "/api/v1/nodes", incomplete)


def complete_assumption(ctx: Any, incomplete: str) -> list[str]:
    """``gpuctl fit --assume``: the three forms, then the cluster's node names after
    ``uncordon=``, ``untaint=`` or ``free=``."""
    what, eq, node = incomplete.partition("=")
    if not eq:
        return [f"{w}=" for w in ("uncordon", "untaint", "free") if w.startswith(what)]
    if what not in ("uncordon", "untaint", "free"):
        return []
    return [f"{what}={n}" + (":" if what == "untaint" else "") for n in complete_node(ctx, node)]


def complete_namespace(ctx: Any, incomplete: str) -> list[str]:
    return _names(ctx, "/api/v1/namespaces", incomplete)


def complete_runbook(incomplete: str) -> list[str]:
    from ..findings import CODES

    return [c for c in CODES if c.startswith(incomplete)]


# ------------------------------------------------------------------ scripts


def script(shell: str, prog: str = "gpuctl") -> str:
    """The completion script Typer/Click generate for ``prog`` in ``shell``."""
    import typer.main

    from .app import app

    try:  # Typer registers its own shell classes (with its completion scripts) on init
        from typer._completion_classes import completion_init
        from typer._click.shell_completion import get_completion_class
    except ImportError:  # older Typer on Click
        from click.shell_completion import get_completion_class
        from typer._completion_classes import completion_init
    completion_init()
    cls = get_completion_class(shell)
    var = f"_{prog}_COMPLETE".replace("-", "_").upper()
    return cls(typer.main.get_command(app), {}, prog, var).source()


def write_all(directory: Path) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    out = []
    for shell in SHELLS:
        p = directory / f"gpuctl.{shell}"
        p.write_text(script(shell))
        out.append(p)
    return out


# ------------------------------------------------------------------ kubectl plugin


def kubectl_complete(argv: Optional[list[str]] = None) -> int:
    """Entry point ``kubectl_complete-gpu``: Cobra's __complete answer for kubectl."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] == "__complete":
        args = args[1:]
    incomplete = args[-1] if args else ""
    words = args[:-1]
    import typer.main
    from typer._completion_classes import BashComplete, completion_init

    from .app import app

    try:
        completion_init()
        with contextlib.redirect_stderr(io.StringIO()):
            items = BashComplete(typer.main.get_command(app), {}, "kubectl gpu", "_KUBECTL_GPU_COMPLETE") \
                .get_completions(words, incomplete)
    except Exception:  # noqa: BLE001 - a completion never fails loudly
        items = []
    for item in items:
        help_text = (getattr(item, "help", None) or "").splitlines()[0] if getattr(item, "help", None) else ""
        sys.stdout.write(f"{item.value}\t{help_text}\n" if help_text else f"{item.value}\n")
    sys.stdout.write(f":{COBRA_NO_FILE_COMP}\n")
    return 0


def run_kubectl_complete() -> None:
    sys.exit(kubectl_complete())


if __name__ == "__main__":
    if "--write" in sys.argv:
        for path in write_all(Path(os.environ.get("GPUCTL_COMPLETIONS_DIR", Path(__file__).resolve().parents[2] / "completions"))):
            print(path)
    else:
        print("usage: python -m gpuctl.cli.complete --write", file=sys.stderr)
        sys.exit(2)
