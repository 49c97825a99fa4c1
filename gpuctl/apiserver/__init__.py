"""The read-only, Kubernetes-API-compatible HTTP server behind ``gpuctl snapshot serve``.

It serves a snapshot's objects, pod logs and DCGM metrics on 127.0.0.1 so kubectl,
k9s or gpuctl can browse a cluster as it was; every write verb answers 405. See
:mod:`gpuctl.apiserver.server` for what is served and how closely. gpuctl's tests
extend it (auth, RBAC, faults, request recording, write emulation) in
``tests/support/kubeapi.py``, outside the installed package.
"""

from gpuctl.apiserver.server import ReadOnlyAPIServer, status_body

__all__ = ["ReadOnlyAPIServer", "status_body"]
