"""What every command shares: the options it accepts after the subcommand
(docs/commands.md), defined once and added to a command by ``@common_options``;
the ``Common`` they make; ``Source``, the two ways to get a Snapshot (a live
cluster or ``--snapshot PATH``); and ``emit``, the document out in the format
``-o`` asks for.

Heavy modules (kubernetes, msgspec, the checks) are imported inside functions so
``gpuctl --help`` stays instant."""

from __future__ import annotations

import functools
import inspect
import os
import re
import sys
from contextlib import contextmanager
from dataclasses import dataclass
from enum import Enum
from typing import Any, Callable, Iterator, Optional

import typer
from typing_extensions import Annotated

from ..model.names import valid_name  # noqa: F401  (re-exported: the commands import it from here)
from . import complete


class Output(str, Enum):
    table = "table"
    wide = "wide"
    json = "json"
    yaml = "yaml"
    markdown = "markdown"


class ReportOutput(str, Enum):
    """-o of the cluster reports (nodes capacity, diagnose pending)."""
    table = "table"
    wide = "wide"
    json = "json"
    yaml = "yaml"
    csv = "csv"
    markdown = "markdown"


WIDE_PIPE_COLUMNS = 120
MIN_REQUEST_TIMEOUT = 0.5
MAX_REQUEST_TIMEOUT = 3600.0
_DURATION_UNITS = {"ns": 1e-9, "us": 1e-6, "\u00b5s": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
_DURATION = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|\u00b5s|ms|s|m|h)")


def parse_request_timeout(value) -> float:
    """``--request-timeout``: seconds (``15``, ``2.5``) or a kubectl/Go duration
    (``30s``, ``1m``, ``1m30s``, ``500ms``), between 0.5 s and 1 h. ``0`` (kubectl's
    "no timeout"), ``inf``, ``nan`` and negatives are refused: gpuctl never waits
    without bound."""
    if isinstance(value, (int, float)):
        seconds = float(value)
    else:
        text = str(value).strip()
        try:
            seconds = float(text)
            if not re.fullmatch(r"[0-9.]+", text):     # 'inf', 'nan', '1e3', '-1'
                raise ValueError(text)
        except ValueError:
            pos, seconds = 0, 0.0
            for m in _DURATION.finditer(text):
                if m.start() != pos:
                    break
                seconds += float(m.group(1)) * _DURATION_UNITS[m.group(2)]
                pos = m.end()
            if pos != len(text) or not text:
                raise typer.BadParameter(f"{text!r} is not a duration: use seconds (15) or a duration (30s, 1m, 1m30s)")
    if not (MIN_REQUEST_TIMEOUT <= seconds <= MAX_REQUEST_TIMEOUT):
        raise typer.BadParameter(f"{value!r} is outside {MIN_REQUEST_TIMEOUT:g}s..{MAX_REQUEST_TIMEOUT:g}s "
                                 "(gpuctl always bounds its requests)")
    return seconds


_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def parse_as(value: Optional[str]) -> Optional[str]:
    """``--as``: a user name becomes an HTTP header: no control characters."""
    if value is not None and (not value.strip() or _CONTROL.search(value)):
        raise typer.BadParameter("the user name is empty or holds control characters")
    return value


def parse_token(value: Optional[str]) -> Optional[str]:
    """``--token``: a bearer token is visible ASCII (RFC 6750 b64token) and never empty."""
    if value is not None and not re.fullmatch(r"[\x21-\x7e]+", value):
        raise typer.BadParameter("the token is empty or holds spaces, control or non-ASCII characters")
    return value


def check_namespace(value: Optional[str]) -> Optional[str]:
    return valid_name("namespace", value)


KubeconfigOpt = Annotated[Optional[str], typer.Option("--kubeconfig", help="Path to the kubeconfig file (default: KUBECONFIG, then ~/.kube/config).", show_default=False)]
ContextOpt = Annotated[Optional[str], typer.Option("--context", help="The kubeconfig context to use.", show_default=False)]
NamespaceOpt = Annotated[Optional[str], typer.Option("--namespace", "-n", help="Namespace of the target (default: the context's, else 'default').", show_default=False, autocompletion=complete.complete_namespace, callback=check_namespace)]
OutputOpt = Annotated[Output, typer.Option("--output", "-o", help="Output format: table, wide (adds every node's fit to the pod, all evidence and every check), json, yaml, markdown.", case_sensitive=False)]
SnapshotOpt = Annotated[Optional[str], typer.Option("--snapshot", help="Diagnose offline from a snapshot: a kubectl JSON/YAML dump, a directory, or a .tar.gz bundle.", show_default=False)]
TimeoutOpt = Annotated[float, typer.Option("--request-timeout", help="How long each API request may take, whole answer included: seconds or a duration (30s, 1m), 0.5s to 1h.", parser=parse_request_timeout, metavar="DURATION")]
NoColorOpt = Annotated[bool, typer.Option("--no-color", help="Plain text output, no colour or styles (NO_COLOR is honoured too).")]
AsOpt = Annotated[Optional[str], typer.Option("--as", help="Username to impersonate, as kubectl --as.", show_default=False, callback=parse_as)]
TokenOpt = Annotated[Optional[str], typer.Option("--token", help="Bearer token for the API server.", show_default=False, callback=parse_token)]
DebugOpt = Annotated[bool, typer.Option("--debug", help="Show a traceback when something fails.")]


@dataclass
class Common:
    kubeconfig: Optional[str] = None
    context: Optional[str] = None
    namespace: Optional[str] = None
    output: Output = Output.table
    snapshot: Optional[str] = None
    request_timeout: float = 15.0
    no_color: bool = False
    as_user: Optional[str] = None
    token: Optional[str] = None
    debug: bool = False

    @property
    def wide(self) -> bool:
        return self.output == Output.wide

    def console(self, stderr: bool = False, wide: bool = False):
        """Rich console: colour only on a terminal, NO_COLOR/--no-color honoured; a
        wide report written to a file or pipe gets $COLUMNS, else 120 columns
        instead of 80. Standard output goes through TrimmedWriter: no line ends
        in padding."""
        from rich.console import Console

        from ..render.stream import TrimmedWriter

        plain = self.no_color or bool(os.environ.get("NO_COLOR"))
        out = sys.stderr if stderr else TrimmedWriter(sys.stdout)
        width = None
        if wide and not out.isatty() and not os.environ.get("COLUMNS", "").isdigit():
            width = WIDE_PIPE_COLUMNS
        return Console(file=out, color_system=None if self.no_color else "auto",
                       no_color=plain, highlight=False, soft_wrap=False, width=width)

    def api(self):
        from ..collect.kube import KubeAPI

        return KubeAPI(self.kubeconfig, self.context, self.request_timeout, self.as_user, self.token)

    def resolve_namespace(self, api=None) -> str:
        if self.namespace:
            return self.namespace
        if api is not None and getattr(api, "default_namespace", None):
            return api.default_namespace
        return "default"


def set_debug(flag: bool) -> None:
    """Start of every command: --debug, and the user's config read up front so a
    broken config file is one clear error (exit 4), not a failure inside checks."""
    if flag:
        os.environ["GPUCTL_DEBUG"] = "1"
    from ..config import load

    load()


# The snapshots of a one-shot process (``gpuctl.cli.app.run`` sets a list): kept until
# the process leaves with os._exit, so that a 150,000-pod snapshot is not freed object
# by object (about 0.1 s) when nobody needs the memory back. None in-process (tests,
# the MCP server): snapshots are freed as usual.
KEPT_UNTIL_EXIT: Optional[list] = None


def load_offline(path: str, collector: Optional[str] = None, args: Optional[dict[str, Any]] = None):
    """The snapshot at ``path``; given the live collector a command would call (and
    its arguments), only what that collector would read (collect/files.py need_for)."""
    from ..collect.files import load_snapshot, need_for

    return load_snapshot(path, need_for(collector, args) if collector else None)


# ------------------------------------------------------------------ the shared options, once

# Each shared option: its definition and default. A command names the ones it takes.
SHARED_OPTIONS: dict[str, tuple[Any, Any]] = {
    "snapshot": (SnapshotOpt, None),
    "kubeconfig": (KubeconfigOpt, None),
    "context": (ContextOpt, None),
    "request_timeout": (TimeoutOpt, 15.0),
    "no_color": (NoColorOpt, False),
    "as_user": (AsOpt, None),
    "token": (TokenOpt, None),
}
CLUSTER_OPTIONS = tuple(SHARED_OPTIONS)     # commands that read a cluster (or its snapshot)
LOCAL_OPTIONS = ("no_color",)               # commands that read nothing of a cluster
OWN_FIELDS = ("namespace", "output")        # Common's fields whose help and place are the command's


def common_options(*names: str, after: str = "output") -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Give a command the shared options ``names`` (default: CLUSTER_OPTIONS), in
    this order right after its own parameter ``after``, and ``--debug`` last, in the
    signature Typer reads. The command's first parameter, ``opts``, receives them as
    one ``Common``, with the command's own ``namespace`` and ``output`` (declared
    where and with the help the command wants; it receives them as well). Every
    command starts the same way: ``set_debug`` first."""
    names = names or CLUSTER_OPTIONS

    def decorate(fn: Callable[..., Any]) -> Callable[..., Any]:
        sig = inspect.signature(fn, eval_str=True)
        own = [p for p in sig.parameters.values() if p.name != "opts"]
        shared = [inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=SHARED_OPTIONS[n][0],
                                    default=SHARED_OPTIONS[n][1]) for n in names]
        at = next(i + 1 for i, p in enumerate(own) if p.name == after)
        debug = inspect.Parameter("debug", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=DebugOpt, default=False)
        params = own[:at] + shared + own[at:] + [debug]

        @functools.wraps(fn)
        def command(**kwargs: Any) -> Any:
            flag = kwargs.pop("debug")
            set_debug(flag)
            values = {n: kwargs.pop(n) for n in names}
            values.update({f: kwargs[f] for f in OWN_FIELDS if f in kwargs})
            return fn(Common(debug=flag, **values), **kwargs)

        command.__signature__ = sig.replace(parameters=params)  # type: ignore[attr-defined]
        command.__annotations__ = {p.name: p.annotation for p in params}
        if sig.return_annotation is not inspect.Signature.empty:
            command.__annotations__["return"] = sig.return_annotation
        return command

    return decorate


# ------------------------------------------------------------------ snapshot or live


class Source:
    """Where a command's Snapshot comes from: ``--snapshot PATH``, read offline, or
    the live cluster, through one API client made on first use (``api``; None
    offline)."""

    def __init__(self, opts: Common):
        self.opts = opts
        self._api = None

    @property
    def offline(self) -> bool:
        return bool(self.opts.snapshot)

    @property
    def api(self):
        if self._api is None and not self.offline:
            self._api = self.opts.api()
        return self._api

    def namespace(self, all_namespaces: bool = False, pod: Optional[str] = None) -> Optional[str]:
        """-n, else the context's namespace (live) or 'default'. With -A: None (every
        namespace); for a pod name, live, the namespace the cluster finds it in
        (offline it is found in the snapshot once read)."""
        if not all_namespaces:
            return self.opts.resolve_namespace(self.api)
        if pod is None or self.offline:
            return None
        from ..collect.live import find_pod_namespace

        return find_pod_namespace(self.api, pod)

    def snapshot(self, collector: str, spinner: bool = False, probes: Optional[list[str]] = None, **args: Any):
        """The Snapshot. Live: ``gpuctl.collect.live.<collector>(api, **args)``, with
        a spinner on a terminal when ``spinner`` (the collector takes ``progress``).
        Offline: the ``--snapshot``, narrowed by ``args['selector']`` as the API server
        would. Either way the probe documents ``probes`` join it."""
        if self.offline:
            snap = load_offline(self.opts.snapshot, collector, args)
            if args.get("selector"):
                keep_selected(snap, args["selector"])
        else:
            from ..collect import live

            collect = getattr(live, collector)
            if spinner:
                with progress(self.opts) as say:
                    snap = collect(self.api, progress=say, **args)
            else:
                snap = collect(self.api, **args)
        add_probes(snap, probes)
        if KEPT_UNTIL_EXIT is not None:
            KEPT_UNTIL_EXIT.append(snap)
        return snap


@contextmanager
def progress(opts: Common) -> Iterator:
    """A spinner on stderr while a large cluster is read, only on a terminal."""
    if not sys.stderr.isatty():
        yield None
        return
    with opts.console(stderr=True).status("reading the cluster") as status:
        yield lambda msg: status.update(msg)


def keep_selected(snap, selector: str) -> None:
    """Apply a label selector to a snapshot's nodes, as the API server would."""
    from ..model.selectors import parse_label_selector

    try:
        reqs = parse_label_selector(selector)
    except ValueError as e:
        from ..errors import UsageError

        raise UsageError(f"invalid label selector {selector!r}: {e}") from None
    snap.nodes = {k: n for k, n in snap.nodes.items() if all(r.matches(n.metadata.labels) for r in reqs)}


def add_probes(snap, paths: Optional[list[str]]) -> None:
    """Probe documents given on the command line join the snapshot, by node name."""
    import json

    from ..errors import SourceError

    for path in paths or []:
        try:
            with open(path, encoding="utf-8") as f:
                doc = json.load(f)
        except (OSError, ValueError) as e:
            raise SourceError(f"probe {path}: cannot be read ({e})") from None
        if not isinstance(doc, dict) or doc.get("schema") != "gpuctl/probe/v1" or not isinstance(doc.get("node"), str):
            raise SourceError(f"probe {path}: not a gpuctl/probe/v1 document with a node name")
        snap.probes[doc["node"]] = doc


# ------------------------------------------------------------------ the document out


def emit(opts: Common, doc: Any, table: Callable[[Any, bool], None], markdown: Optional[Callable[[], str]] = None,
         csv: Optional[Callable[[], None]] = None) -> None:
    """A command's result in the format ``opts.output`` names: json and yaml, the
    document ``doc`` (a function making it is called only then); markdown, the text
    ``markdown()`` makes; csv, what ``csv()`` writes; table and wide,
    ``table(console, wide)``."""
    fmt = getattr(opts.output, "value", opts.output)
    if fmt in ("json", "yaml"):
        from ..render.data import dump_json, dump_yaml

        (dump_json if fmt == "json" else dump_yaml)(doc() if callable(doc) else doc)
    elif fmt == "markdown" and markdown is not None:
        sys.stdout.write(markdown())
    elif fmt == "csv" and csv is not None:
        csv()
    else:
        wide = fmt == "wide"
        table(opts.console(wide=wide), wide)
