"""A local, Kubernetes-API-compatible HTTP server that serves a snapshot.

The real ``kubernetes`` Python client (or kubectl) talks to it over real HTTP
with a real kubeconfig, so gpuctl's collectors can be tested end to end without
patching the client, and a captured snapshot can be served back
(``gpuctl snapshot serve``). See :mod:`gpuctl.apiserver.server` for what is
emulated and how closely.
"""

from gpuctl.apiserver.server import Fault, RequestRecord, SnapshotAPIServer

__all__ = ["Fault", "RequestRecord", "SnapshotAPIServer"]
