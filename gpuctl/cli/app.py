"""The root of the CLI and its one error boundary (httpie style).

``main()`` maps every exception to the contract's exit codes: GpuctlError subclasses
carry theirs (2 usage, 3 not found, 4 source unreadable); Click usage errors exit 2;
anything unexpected is one line on stderr and exit 1. ``--debug`` re-raises so a
traceback shows (without local variables: they may hold tokens). ``typer.Exit`` is
a RuntimeError subclass and is passed through, never swallowed."""

from __future__ import annotations

import os
import sys
from typing import Optional

import typer

try:  # Typer >= 0.2x vendors Click as typer._click; older releases use Click itself.
    from typer._click import exceptions as click_exc
except ImportError:  # pragma: no cover
    from click import exceptions as click_exc


class _Never(Exception):
    """Stands in for an exception class this Typer/Click generation does not have."""


# Exit codes requested by typer.Exit / ctx.exit(): typer.Exit is a RuntimeError
# subclass and must never be swallowed by a generic handler.
_EXITS = tuple({typer.Exit, getattr(click_exc, "Exit", typer.Exit)})
_ABORT = tuple({getattr(typer, "Abort", _Never), getattr(click_exc, "Abort", _Never)})
_CLICK_ERROR = getattr(click_exc, "ClickException", _Never)
_USAGE_ERROR = getattr(click_exc, "UsageError", _Never)

from .. import __version__
from . import diagnose, label_nodes, nodes, runbook, snapshot
from . import node_probe
from . import serve as serve_cmd
from . import fit as fit_cmd
from . import mcp as mcp_cmd

app = typer.Typer(
    name="gpuctl",
    help="Why won't my GPU pod run? A ranked diagnosis for GPU workloads on Kubernetes.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    pretty_exceptions_show_locals=False,
    context_settings={"help_option_names": ["-h", "--help"]},
    epilog="As with kubectl, the common options (--kubeconfig, --context, -n, -o, --snapshot, --request-timeout, "
           "--as, --token, --no-color, -A) may also come before the command (gpuctl -n ml diagnose pod x), "
           "and -o=json, -ojson, -n=ml work; a -n before a command without namespaces is ignored.",
)
app.add_typer(diagnose.app, name="diagnose")
app.add_typer(nodes.app, name="nodes")
app.add_typer(snapshot.app, name="snapshot")
app.add_typer(node_probe.app, name="node")
app.command("runbook")(runbook.runbook)
app.command("label-nodes")(label_nodes.label_nodes)
app.command("serve")(serve_cmd.serve)
app.command("fit")(fit_cmd.fit)
app.command("mcp")(mcp_cmd.mcp)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"gpuctl {__version__}")
        raise typer.Exit(0)


@app.callback()
def root(
    version: Optional[bool] = typer.Option(None, "--version", help="Print the version and exit.", callback=_version, is_eager=True),
    debug: bool = typer.Option(False, "--debug", help="Show a traceback when something fails (also accepted after the subcommand)."),
) -> None:
    """gpuctl: diagnose GPU workloads on Kubernetes."""
    if debug:
        os.environ["GPUCTL_DEBUG"] = "1"


def _error(message: str) -> None:
    from ..render.safe import clean

    sys.stderr.write(f"gpuctl: error: {clean(message)}\n")


# The full command paths, and the options every command of a cluster takes: kubectl
# users put them first (`gpuctl -n ml diagnose pod x`, `gpuctl --context prod nodes capacity`).
COMMAND_PATHS = {("diagnose", "pod"), ("diagnose", "node"), ("diagnose", "pending"), ("nodes", "capacity"),
                 ("snapshot", "save"), ("snapshot", "serve"), ("node", "probe"), ("runbook",), ("label-nodes",), ("fit",), ("mcp",)}
LEADING_WITH_VALUE = {"--kubeconfig", "--context", "-n", "--namespace", "-o", "--output", "--snapshot",
                      "--request-timeout", "--as", "--token", "-l", "--selector"}
LEADING_FLAGS = {"--no-color", "-A", "--all-namespaces"}
_GROUPS = {p[0] for p in COMMAND_PATHS if len(p) == 2}
ROOT_OPTIONS = {"--debug", "--version", "-h", "--help"}
SHORT_WITH_VALUE = ("-o", "-n", "-l")
# kubectl ignores a namespace given to a cluster-scoped command (`kubectl -n ml get
# nodes`): a leading -n is dropped for the commands that take none.
NAMESPACE_OPTIONS = ("-n", "--namespace")


def command_options(path: tuple[str, ...]) -> set[str]:
    """Every option name the command at ``path`` accepts, read from the command
    tree itself (so a new option is never forgotten here)."""
    import typer.main

    cmd = typer.main.get_command(app)
    for word in path:
        cmd = cmd.commands[word]
    return {o for p in cmd.params for o in (*p.opts, *p.secondary_opts) if o.startswith("-")}


def _split_short(tok: str) -> Optional[tuple[str, str]]:
    """``-o=json`` and ``-ojson`` as (``-o``, ``json``) for the short options that
    take a value; None for anything else."""
    head = tok[:2]
    if head in SHORT_WITH_VALUE and len(tok) > 2 and not tok.startswith("--"):
        return head, tok[3:] if tok[2] == "=" else tok[2:]
    return None


def kubectl_argv(args: list[str]) -> list[str]:
    """Arguments as a kubectl user types them, made Click's: ``-o=json`` and
    ``-n=ml`` (Click would read ``=json``); the common options before the command
    (``gpuctl -n ml --context prod diagnose pod x``) moved after the full command
    path, ``-ojson``/``-nml`` included; a leading ``-n`` dropped for a command
    without namespaces, as kubectl ignores it for nodes. ``--`` ends the rewriting."""
    out: list[str] = []
    for i, tok in enumerate(args):
        if tok == "--":
            out += args[i:]
            break
        head, eq, value = tok.partition("=")
        if eq and head in SHORT_WITH_VALUE:
            out += [head, value]
        else:
            out.append(tok)
    root, moved, i = [], [], 0
    while i < len(out) and out[i].startswith("-") and out[i] != "--":
        tok = out[i]
        name = tok.split("=", 1)[0]
        short = _split_short(tok)
        if tok in ROOT_OPTIONS:
            root.append(tok)
            i += 1
        elif short is not None:
            moved += [short[0], short[1]]
            i += 1
        elif name in LEADING_WITH_VALUE and ("=" in tok or i + 1 < len(out)):
            moved += [tok] if "=" in tok else [tok, out[i + 1]]
            i += 1 if "=" in tok else 2
        elif tok in LEADING_FLAGS:
            moved.append(tok)
            i += 1
        else:
            break
    rest = out[i:]
    depth = 2 if tuple(rest[:2]) in COMMAND_PATHS else 1 if tuple(rest[:1]) in COMMAND_PATHS else 0
    if moved and not depth and (not rest or rest[0] in _GROUPS or set(root) & {"-h", "--help", "--version"}):
        return root + rest      # `gpuctl -n ml -h`, `gpuctl -n ml diagnose`: the help, or Click's word on the command
    if not moved or not depth:
        return out
    accepted = command_options(tuple(rest[:depth]))
    kept, j = [], 0
    while j < len(moved):
        tok = moved[j]
        name = tok.split("=", 1)[0]
        width = 1 if ("=" in tok or name in LEADING_FLAGS) else 2
        if name in NAMESPACE_OPTIONS and name not in accepted:
            j += width
            continue
        kept += moved[j:j + width]
        j += width
    return root + rest[:depth] + kept + rest[depth:]


def main(argv: Optional[list[str]] = None) -> int:
    args = kubectl_argv(list(sys.argv[1:] if argv is None else argv))
    debug = "--debug" in args or os.environ.get("GPUCTL_DEBUG") == "1"
    prog = os.path.basename(sys.argv[0]) if argv is None and sys.argv and sys.argv[0] else "gpuctl"
    if prog in ("__main__.py", "app.py"):
        prog = "gpuctl"
    if prog.startswith("kubectl-"):
        prog = "kubectl " + prog[len("kubectl-"):]
    from ..errors import GpuctlError

    try:
        rv = app(args=args, prog_name=prog, standalone_mode=False)
        code = rv if isinstance(rv, int) else 0
    except _EXITS as e:
        code = e.exit_code
    except _ABORT:
        _error("aborted")
        code = 130
    except _CLICK_ERROR as e:  # usage errors: Click's usage line, then one line
        e.show()
        code = 2 if isinstance(e, _USAGE_ERROR) else e.exit_code
    except GpuctlError as e:
        if debug or os.environ.get("GPUCTL_DEBUG") == "1":
            raise
        _error(e.line())
        code = e.exit_code
    except KeyboardInterrupt:
        _error("interrupted")
        code = 130
    except BrokenPipeError:
        code = 0
    except Exception as e:
        if debug or os.environ.get("GPUCTL_DEBUG") == "1":
            raise
        _error(f"unexpected {type(e).__name__}: {e} (run with --debug for a traceback)")
        code = 1
    return code


def run() -> None:
    """The console script: ``main()``, then leave at once. What was written is flushed
    first; nothing else is torn down (no atexit work is registered by gpuctl, and every
    thread it starts is finished or a daemon by then), so a process that read a
    150,000-pod snapshot exits without freeing it object by object."""
    from . import common

    common.KEPT_UNTIL_EXIT = []
    code = main()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (BrokenPipeError, ValueError, OSError):
            pass          # the reader went away (as main() treats it) or the stream was closed
    os._exit(code)
