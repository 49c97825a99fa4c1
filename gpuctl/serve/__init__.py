"""`gpuctl serve`: the diagnosis as a service (docs/serve.md).

* ``state.py``    one recompute: the pending report, the capacity report and the node
                  findings of one snapshot, reduced to what the metrics and the API serve
* ``metrics.py``  the Prometheus families of a state (prometheus-client's exposition)
* ``server.py``   the recompute loop over the watch cache (collect/watch.py) and the
                  read-only HTTP server: /metrics, /api/v1/..., /healthz, /readyz

Floor 6 of docs/architecture.md: above reports (whose documents it serves), below cli.
"""
