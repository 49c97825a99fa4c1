"""Options every command accepts after the subcommand (shared/spec/interfaces.md),
and the two ways to get a Snapshot: a live cluster or ``--snapshot PATH``.

Heavy modules (kubernetes, msgspec, the checks) are imported inside functions so
``gpuctl --help`` stays instant."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from enum import Enum
from typing import Optional

import typer
from typing_extensions import Annotated

from . import complete


class Output(str, Enum):
    table = "table"
    wide = "wide"
    json = "json"
    yaml = "yaml"
    markdown = "markdown"


KubeconfigOpt = Annotated[Optional[str], typer.Option("--kubeconfig", help="Path to the kubeconfig file (default: KUBECONFIG, then ~/.kube/config).", show_default=False)]
ContextOpt = Annotated[Optional[str], typer.Option("--context", help="The kubeconfig context to use.", show_default=False)]
NamespaceOpt = Annotated[Optional[str], typer.Option("--namespace", "-n", help="Namespace of the target (default: the context's, else 'default').", show_default=False, autocompletion=complete.complete_namespace)]
OutputOpt = Annotated[Output, typer.Option("--output", "-o", help="Output format: table, wide (table plus the per-node fit matrix), json, yaml, markdown.", case_sensitive=False)]
SnapshotOpt = Annotated[Optional[str], typer.Option("--snapshot", help="Diagnose offline from a snapshot: a kubectl JSON/YAML dump, a directory, or a .tar.gz bundle.", show_default=False)]
TimeoutOpt = Annotated[float, typer.Option("--request-timeout", help="Seconds to wait for each API request.", min=0.5)]
NoColorOpt = Annotated[bool, typer.Option("--no-color", help="Plain text output, no colour or styles (NO_COLOR is honoured too).")]
AsOpt = Annotated[Optional[str], typer.Option("--as", help="Username to impersonate, as kubectl --as.", show_default=False)]
TokenOpt = Annotated[Optional[str], typer.Option("--token", help="Bearer token for the API server.", show_default=False)]
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
        wide report written to a file or pipe gets 200 columns instead of 80."""
        from rich.console import Console

        plain = self.no_color or bool(os.environ.get("NO_COLOR"))
        out = sys.stderr if stderr else sys.stdout
        width = 200 if wide and not out.isatty() else None
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


def load_offline(path: str):
    from ..collect.files import load_snapshot

    return load_snapshot(path)
