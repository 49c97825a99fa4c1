"""``gpuctl mcp``: gpuctl's read-only diagnoses as Model Context Protocol tools
(docs/mcp.md).

* ``tools.py``   the tools' work, without the SDK: the same calls into collect,
  engine and reports the CLI commands make, the document each returns (as
  ``-o json`` prints it), a short text summary, the caches (one API client per
  context, loaded snapshots by path and modification time)
* ``server.py``  the MCP server over the official ``mcp`` SDK: typed tool schemas,
  the per-call deadline, errors as MCP tool errors; stdio or streamable HTTP

Never writes: no tool sends anything but GETs, and ``label_plan`` only plans."""
