"""gpuctl: why won't my GPU pod run? A ranked diagnosis for GPU workloads on Kubernetes."""

__version__ = "0.1.0"
