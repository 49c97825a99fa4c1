"""gpuctl benchmarks: a synthetic cluster (synth), a server for it (serve), the measurements (run)."""
