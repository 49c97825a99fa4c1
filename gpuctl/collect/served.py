"""Asking a running ``gpuctl serve`` instead of the API server (``diagnose ... --server
URL``, docs/serve.md): one GET of its read-only JSON API, with a deadline, a size cap
and at most one retry after a refused or dropped connection (the same transport as the
DCGM fetch in ``metrics``). Its answers are the documents ``-o json`` prints."""

from __future__ import annotations

import json
from typing import Any, Optional
from urllib.parse import quote, urlsplit

from ..errors import SourceError, TargetNotFound
from .metrics import MetricsUnavailable, http_get

SCHEMAS = {"pod": "gpuctl/diagnosis/v1", "node": "gpuctl/diagnosis/v1", "pending": "gpuctl/pending/v1"}


def _base(server: str) -> str:
    url = server if "://" in server else "http://" + server
    try:
        parts = urlsplit(url)
    except ValueError:
        parts = None
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
        raise SourceError(f"--server {server!r}: expected the URL of a gpuctl serve, e.g. http://gpuctl-serve.gpuctl:9402")
    return url.rstrip("/")


def path_of(kind: str, name: str = "", namespace: Optional[str] = None) -> str:
    if kind == "pod":
        return f"/api/v1/pods/{quote(namespace or 'default', safe='')}/{quote(name, safe='')}/diagnosis"
    if kind == "node":
        return f"/api/v1/nodes/{quote(name, safe='')}/diagnosis"
    return "/api/v1/pending"


def served_document(server: str, kind: str, timeout: float, name: str = "",
                    namespace: Optional[str] = None) -> dict[str, Any]:
    """The document ``gpuctl serve`` at ``server`` holds for a pod, a node or the
    pending report (``namespace`` None: every namespace). Raises TargetNotFound for
    its 404 (the pod is not a Pending pod it watches, or the node is unknown) and
    SourceError when it cannot be reached, is not ready, or answers something else."""
    base = _base(server)
    params = {"namespace": namespace} if kind == "pending" and namespace else None
    url = base + path_of(kind, name, namespace)
    try:
        status, body = http_get(url, timeout, params=params, accept_status=(200, 404, 503))
    except MetricsUnavailable as e:
        raise SourceError(f"gpuctl serve at {base}: {e.detail}",
                          "is gpuctl serve running there? (kubectl port-forward -n gpuctl svc/gpuctl-serve 9402)") from None
    try:
        doc = json.loads(body)
    except ValueError:
        doc = None
    if not isinstance(doc, dict):
        raise SourceError(f"gpuctl serve at {base}: {url} did not answer a JSON document (HTTP {status})")
    if status == 404:
        raise TargetNotFound(str(doc.get("error") or f"not found: {url}"))
    if status == 503:
        raise SourceError(f"gpuctl serve at {base} is not ready: {doc.get('error') or 'no diagnosis yet'}",
                          "it answers once its watch cache has synced; try again shortly")
    if doc.get("schema") != SCHEMAS[kind]:
        raise SourceError(f"gpuctl serve at {base}: {url} answered schema {doc.get('schema')!r}, "
                          f"expected {SCHEMAS[kind]} (a different gpuctl version?)")
    return doc
