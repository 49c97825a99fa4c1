"""``gpuctl mcp``: the engine as Model Context Protocol tools (docs/mcp.md).
Thin: options in, ``gpuctl.mcp`` does the work. The ``mcp`` SDK is an optional
extra (``pip install 'gpuctl[mcp]'``), imported only when this command runs."""

from __future__ import annotations

from typing import Optional

import typer
from typing_extensions import Annotated

from .common import Common, common_options

MCP_OPTIONS = ("kubeconfig", "context", "request_timeout", "as_user", "token")
MIN_CALL_TIMEOUT, MAX_CALL_TIMEOUT = 1.0, 3600.0


@common_options(*MCP_OPTIONS, after="call_timeout")
def mcp(
    opts: Common,
    http: Annotated[Optional[str], typer.Option("--http", metavar="[HOST]:PORT", help="Serve streamable HTTP at http://HOST:PORT/mcp instead of stdio (HOST defaults to 127.0.0.1; there is no authentication, so keep it on loopback).", show_default=False)] = None,
    call_timeout: Annotated[float, typer.Option("--call-timeout", min=MIN_CALL_TIMEOUT, max=MAX_CALL_TIMEOUT, metavar="SECONDS", help="How long one tool call may take; past it the call returns an error and the server stays up.")] = 60.0,
) -> int:
    """Serve gpuctl's read-only diagnoses as MCP tools over stdio (or streamable HTTP), for AI assistants; never writes."""
    import importlib
    import sys

    from ..errors import SourceError, UsageError

    try:
        importlib.import_module("mcp.server.mcpserver")     # the optional extra, only now
    except ImportError:
        raise SourceError("gpuctl mcp needs the MCP SDK (the mcp package), which is not installed",
                          "install with pip install 'gpuctl[mcp]'") from None
    from ..mcp.server import build, listen, parse_http, serve_http, serve_stdio
    from ..mcp.tools import Connection, Gpuctl
    from ..render.safe import clean

    tools = Gpuctl(Connection(opts.kubeconfig, opts.context, opts.request_timeout, opts.as_user, opts.token))
    server = build(tools, call_timeout=call_timeout, debug=opts.debug)
    if http is None:
        if sys.stdin.isatty():
            sys.stderr.write("gpuctl mcp speaks the Model Context Protocol on stdin/stdout: an MCP client starts it "
                             "(docs/mcp.md); --http [HOST]:PORT serves HTTP instead; Ctrl-C stops\n")
        serve_stdio(server)
        return 0
    try:
        host, port = parse_http(http)
    except ValueError as e:
        raise UsageError(str(e)) from None
    try:
        sock = listen(host, port)
    except OSError as e:
        raise UsageError(f"cannot listen on {host}:{port}: {e.strerror or e}", "choose another --http port") from None

    def say(line: str) -> None:
        sys.stderr.write(clean(line) + "\n")
        if host not in ("127.0.0.1", "localhost", "::1"):
            sys.stderr.write(f"gpuctl: warning: {clean(host)} is not loopback: anyone who can reach it can read the "
                             "cluster with these credentials (no authentication)\n")
        sys.stderr.flush()

    serve_http(server, sock, say)
    return 0
