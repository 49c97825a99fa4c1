"""Runtime-message classification (gpuctl/knowledge/runtime.py) and GPU health
knowledge (gpuctl/knowledge/gpu_health.py: Xid catalog, kernel Xid lines).

Every line below is real text a component emitted, copied from the source named
in its comment, unless the comment says "format string": then it is the source's
printf format filled with plausible values (no capture of that exact error was
found)."""

from __future__ import annotations

import re
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpuctl.knowledge.gpu_health import (
    device_plugin_ignores,
    normalize_pci,
    parse_kernel_xid,
    pci_matches,
    xid_info,
    xids,
)
from gpuctl.knowledge.runtime import CODES, WHERE, RuntimeMatch, classify, patterns

# --------------------------------------------------------------------------- real lines
# (where, line, expected code, substring of the expected detail, substring of the pattern that must match it)

REAL = [
    # ---- kubelet device admission (KUBELET manager.go / admission errors)
    ("event",
     # a deployment note quoting the event (wrapped over two lines as in the source)
     "UnexpectedAdmissionError\n— Allocate failed due to cannot allocate unregistered device\nnvidia.com/gpu",
     "unexpected-admission-error", "unregistered device: no device plugin has registered nvidia.com/gpu",
     "cannot allocate unregistered device"),
    ("status",
     # openshift/instaslice-operator#140
     "Pod was rejected: Allocate failed due to no healthy devices present; cannot allocate unhealthy devices "
     "nvidia.com/mig-1g.5gb, which is unexpected",
     "unexpected-admission-error", "no healthy devices: the device plugin marks every nvidia.com/mig-1g.5gb device",
     "no healthy devices present"),
    ("event",
     # format string (kubelet manager.go "previously allocated devices are no longer healthy; cannot allocate unhealthy devices %s")
     "Allocate failed due to previously allocated devices are no longer healthy; cannot allocate unhealthy devices "
     "nvidia.com/gpu, which is unexpected",
     "unexpected-admission-error", "previously allocated unhealthy", "previously allocated devices"),
    ("event",
     # kubectl get events capture (trm-train-arc2-4gpu)
     "Allocate failed due to requested number of devices unavailable for nvidia.com/gpu. Requested: 4, Available: 0, "
     "which is unexpected",
     "unexpected-admission-error", "requested number unavailable: 4 nvidia.com/gpu requested but only 0 free",
     "requested number of devices unavailable"),
    ("status",
     # format string (kubelet manager.go "pod %q container %q changed request for resource %q from %d to %d")
     'Pod was rejected: Allocate failed due to pod "5c1e0b7e-1d0b-4c5e-9e43-2b0c1f1e3a11" container "train" changed '
     'request for resource "nvidia.com/gpu" from 1 to 2, which is unexpected',
     "unexpected-admission-error", "changed request: the container's nvidia.com/gpu request changed from 1 to 2",
     "changed request for resource"),
    ("event",
     # NVIDIA/k8s-device-plugin README.md (failRequestsGreaterThanOne)
     "Allocate failed due to rpc error: code = Unknown desc = request for 'nvidia.com/gpu: 2' too large: maximum "
     "request size for shared resources is 1, which is unexpected",
     "unexpected-admission-error", "shared resource request too large", "maximum request size"),
    ("event",
     # format string (kubelet manager.go "unexpectedly allocated less resources than required. Requested: %d, Got: %d")
     "Allocate failed due to unexpectedly allocated less resources than required. Requested: 2, Got: 1, which is unexpected",
     "unexpected-admission-error", "kubelet internal error: allocated 1 devices for 2 requested",
     "unexpectedly allocated less"),
    ("status",
     # kubernetes/kubernetes#97131
     "Pod Allocate failed due to device plugin GetPreferredAllocation rpc failed with err: rpc error: code = Unknown "
     "desc = Unable to retrieve list of available devices: error creating nvml.Device 5: nvml: GPU is lost, which is "
     "unexpected",
     "unexpected-admission-error", "the device plugin's Allocate call failed (gRPC Unknown)", "rpc error: code = "),
    ("event",
     # Project-HAMi/HAMi#39
     "Allocate failed due to rpc error: code = Unavailable desc = transport is closing, which is unexpected",
     "unexpected-admission-error", "(gRPC Unavailable)", "rpc error: code = "),
    ("event",
     # kubernetes/kubernetes#124010 (CPU manager, same kubelet wrapper)
     "UnexpectedAdmissionError: Allocate failed due to not enough cpus available to satisfy request: requested=2, "
     "available=1, which is unexpected",
     "unexpected-admission-error",
     "the kubelet's device manager refused the pod: not enough cpus available to satisfy request: requested=2, available=1",
     "(?P<inner>"),
    ("event",
     # kubernetes docs, topology manager troubleshooting
     "Warning  TopologyAffinityError  10m   kubelet, dell8  Resources cannot be allocated with Topology locality",
     "unexpected-admission-error", "TopologyAffinityError", "Topology locality"),
    # ---- NVIDIA container stack
    ("status",
     # Jetson capture: nvidia-container-runtime short form
     "`localai/localai:master-nvidia-l4t-arm64-cuda-13` fails `nvidia-container-runtime` with "
     "`unsatisfied condition: cuda>=13.0 (cuda=12.6)`",
     "driver-cuda-mismatch", "requires CUDA 13.0 (NVIDIA_REQUIRE_CUDA) but the driver supports only CUDA 12.6",
     "(cuda=(?P<have>"),
    ("event",
     # vllm-project/vllm#5635
     "docker: Error response from daemon: failed to create task for container: failed to create shim task: OCI runtime "
     "create failed: runc create failed: unable to start container process: error during container init: error running "
     "hook #0: error running hook: exit status 1, stdout: , stderr: Auto-detected mode as 'legacy'\nnvidia-container-cli: "
     "requirement error: unsatisfied condition: cuda>=12.4, please update your driver to a newer version, or use an "
     "earlier cuda container: unknown.",
     "driver-cuda-mismatch", "the image requires CUDA 12.4 (NVIDIA_REQUIRE_CUDA)", "requirement error"),
    ("event",
     # holohub issue capture
     "failed to create task for container: failed to create shim task: OCI runtime create failed: runc create failed: "
     "unable to start container process: error during container init: error running hook #0: error running hook: exit "
     "status 1, stdout: , stderr: Auto-detected mode as 'legacy'\nnvidia-container-cli: initialization error: nvml "
     "error: driver not loaded: unknown.",
     "nvidia-runtime-error", "driver not loaded", "driver not loaded"),
    ("event",
     # jellyfin compose capture
     "failed to create shim task: OCI runtime create failed: runc create failed: unable to start container process: "
     "error during container init: error running hook #0: error running hook: exit status 1, stdout: , stderr: "
     "Auto-detected mode as 'legacy'\nnvidia-container-cli: initialization error: nvml error: driver/library version "
     "mismatch: unknown",
     "nvidia-runtime-error", "driver/library version mismatch", "driver/library version mismatch"),
    ("event",
     # several captures (docker run --gpus on a host without the driver)
     "Error response from daemon: failed to create task for container: failed to create shim task: OCI runtime create "
     "failed: runc create failed: unable to start container process: error during container init: error running prestart "
     "hook #0: exit status 1, stdout: , stderr: Auto-detected mode as 'legacy'. nvidia-container-cli: initialization "
     "error: load library failed: libnvidia-ml.so.1: cannot open shared object file: no such file or directory: unknown",
     "nvidia-runtime-error", "load library failed: libnvidia-ml.so.1 is not on the node", "load library failed"),
    ("event",
     # tvstack troubleshooting capture
     "Error response from daemon: failed to create task for container: failed to create shim task: OCI runtime create "
     "failed: runc create failed: unable to start container process: error during container init: error running prestart "
     "hook #0: exit status 1, stdout: , stderr: Auto-detected mode as 'legacy'\nnvidia-container-cli: mount error: failed "
     "to add device rules: unable to find any existing device filters attached to the cgroup: "
     "bpf_prog_query(BPF_CGROUP_DEVICE) failed: operation not permitted",
     "nvidia-runtime-error", "nvidia-container-cli mount error: failed to add device rules", "(?P<kind>"),
    ("event",
     # NVIDIA/gpu-operator issue (CRI-O)
     "Warning  Failed     5s (x14 over 2m41s)  kubelet            Error: container create failed: error executing hook "
     "`/usr/bin/nvidia-container-toolkit` (exit code: 1)",
     "nvidia-runtime-error", "the NVIDIA OCI hook /usr/bin/nvidia-container-toolkit failed (exit code 1)",
     "error executing hook"),
    ("event",
     # nvidia-container-toolkit cmd/nvidia-container-runtime/README.md
     "failed to create shim: OCI runtime create failed: container_linux.go:380: starting container process caused: "
     "process_linux.go:545: container init caused: Running hook #0:: error running hook: exit status 1, stdout: , stderr: "
     "Auto-detected mode as 'legacy'\nerror running hook #0: error running hook: exit status 1, stdout: , stderr: "
     "Auto-detected mode as 'legacy'",
     "nvidia-runtime-error", "an OCI prestart hook", "error running (?:prestart )?hook"),
    # ---- RuntimeClass
    ("event",
     # NVIDIA GPU Operator troubleshooting docs
     "Warning  FailedCreatePodSandBox  8s (x21 over 9m2s)  kubelet  Failed to create pod sandbox: rpc error: code = "
     'Unknown desc = failed to get sandbox runtime: no runtime for "nvidia" is configured',
     "runtime-class-missing", "has no 'nvidia' handler", "no runtime for"),
    ("event",
     # Azure AKS docs capture (kubectl apply)
     'Error from server (Forbidden): pods "untrusted" is forbidden: pod rejected: RuntimeClass "kata-mshv-vm-isolation" '
     "not found",
     "runtime-class-missing", "RuntimeClass 'kata-mshv-vm-isolation' does not exist", 'RuntimeClass "'),
    # ---- CUDA / framework logs
    ("log",
     # CatBoost notebook capture
     "CatBoostError: catboost/cuda/cuda_lib/cuda_base.h:281: CUDA error 35: CUDA driver version is insufficient for "
     "CUDA runtime version",
     "driver-cuda-mismatch", "cudaErrorInsufficientDriver", "CUDA driver version is insufficient"),
    ("log",
     # Motphys/phys-bench#14 (torch cu130 on a CUDA 12.4 driver)
     "RuntimeError: The NVIDIA driver on your system is too old (found version 12040).",
     "driver-cuda-mismatch", "the driver supports CUDA 12.4", "too old"),
    ("log",
     # SLURM job README capture
     "RuntimeError: CUDA error: no CUDA-capable device is detected",
     "gpu-not-requested", "no CUDA-capable device is visible", "no CUDA-capable device"),
    ("log",
     # flash-linear-attention CI log capture
     "2026-06-21T11:35:36.7152616Z FAILED tests/models/test_modeling_forgetting_transformer.py::test_modeling"
     "[L4-B4-T1024-H4-D64-l2True-bsNone-torch.bfloat16] - RuntimeError: No CUDA GPUs are available",
     "gpu-not-requested", "PyTorch sees no GPU", "No CUDA GPUs"),
    ("log",
     # whisper preload log capture
     "2026-03-11 11:00:21,204 - ERROR - Failed to preload whisper: Found no NVIDIA driver on your system. Please check "
     "that you have an NVIDIA GPU and installed a driver from http://www.nvidia.com/Download/index.aspx",
     "gpu-not-requested", "PyTorch finds no NVIDIA driver", "Found no NVIDIA driver"),
    ("log",
     # training log capture
     "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 324.00 MiB. GPU 0 has a total capacity of 7.63 GiB "
     "of which 91.25 MiB is free. Including non-PyTorch memory, this process has 7.52 GiB memory in use.",
     "gpu-memory-exhausted", "could not allocate 324.00 MiB", "Tried to allocate"),
    ("log",
     # vLLM CI capture
     "[2025-06-28T09:19:58Z] FAILED spec_decode/e2e/test_eagle_correctness.py::test_llama3_eagle_e2e_greedy_correctness"
     "[1-1-32-test_llm_kwargs0] - torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 116.00 MiB.",
     "gpu-memory-exhausted", "116.00 MiB", r"torch\.(?:cuda\.)?OutOfMemoryError"),
    ("log",
     # GenCast walker capture (JAX)
     "jax.errors.JaxRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to allocate 19.59GiB. "
     "[executable_name='jit_concatenate']",
     "gpu-memory-exhausted", "XLA (JAX/TensorFlow) ran out of GPU memory allocating 19.59GiB", "RESOURCE_EXHAUSTED"),
    ("log",
     # JAX compile capture
     "RESOURCE_EXHAUSTED: Out of memory while trying to allocate 33762398024 bytes.",
     "gpu-memory-exhausted", "allocating 33762398024 bytes", "RESOURCE_EXHAUSTED"),
    ("log",
     # Keras/TF notebook capture
     "ResourceExhaustedError: OOM when allocating tensor with shape[200,75,75,64] and type float on "
     "/job:localhost/replica:0/task:0/device:GPU:0 by allocator GPU_0_bfc",
     "gpu-memory-exhausted", "TensorFlow ran out of GPU memory", "OOM when allocating"),
    ("log",
     # cuDF capture (RAPIDS rmm)
     "MemoryError: std::bad_alloc: out_of_memory: CUDA error at: /__w/cudf/cudf/python/cudf/build/cp310-cp310-"
     "manylinux_2_28_x86_64/_deps/rmm-src/include/rmm/mr/device/cuda_memory_resource.hpp:69: cudaErrorMemoryAllocation "
     "out of memory",
     "gpu-memory-exhausted", "cudaErrorMemoryAllocation", "cudaErrorMemoryAllocation"),
    ("log",
     # list of real PyTorch OOM wordings kept by a project's tests
     "RuntimeError: CUDA error: out of memory",
     "gpu-memory-exhausted", "CUDA error: out of memory", "CUDA error: out of memory"),
    ("log",
     # nvidia-smi in a container that lost its GPU (capture)
     "rc=255   Failed to initialize NVML: Unknown Error",
     "container-lost-gpu-access", "NVML lost the GPU inside a running container", "Unknown Error"),
    ("log",
     # vLLM capture
     "torch.AcceleratorError: CUDA error: an illegal memory access was encountered",
     "crash-loop", "CUDA illegal memory access: application bug or GPU fault; check Xid 13/31/43", "illegal memory"),
    ("event",
     # kubectl describe capture
     "Warning  BackOff    33s (x70 over 15m)  kubelet, minikube  Back-off restarting failed container",
     "crash-loop", "CrashLoopBackOff", "restarting failed container"),
    ("log",
     # vLLM serve.log capture
     "torch.AcceleratorError: CUDA error: uncorrectable ECC error encountered",
     "ecc-uncorrectable", "uncorrectable ECC memory error", "uncorrectable ECC error encountered"),
    ("log",
     # BigScience tr1-13B training log
     "RuntimeError: transform: failed to synchronize: cudaErrorECCUncorrectable: uncorrectable ECC error encountered",
     "ecc-uncorrectable", "cudaErrorECCUncorrectable", "cudaErrorECCUncorrectable"),
    ("log",
     # NVIDIA/gpu-operator discussion: dmesg on the driver pod
     "[ 3947.590120] NVRM: Xid (PCI:0000:61:00): 119, pid=123417, name=nv-hostengine, Timeout after 6s of waiting for "
     "RPC response from GPU0 GSP! Expected function 10 (FREE) (0xc0000005 0x0).",
     "xid-error", "kernel Xid 119", "NVRM: Xid"),
    ("log",
     # format string (k8s-device-plugin internal/rm/health.go "XidCriticalError: Xid=%d on Device=%s; marking device as unhealthy.")
     "XidCriticalError: Xid=79 on Device=GPU-aeab3757-56a6-7e30-3f7c-1f322454bde2; marking device as unhealthy.",
     "xid-error", "the device plugin saw Xid 79 on GPU-aeab3757-56a6-7e30-3f7c-1f322454bde2", "XidCriticalError"),
    # ---- not GPU problems
    ("event",
     # kubectl describe capture
     'Warning  Failed     62s (x5 over 4m22s)   kubelet            Failed to pull image "snj": failed to pull and unpack '
     'image "docker.io/library/snj:latest": failed to resolve reference "docker.io/library/snj:latest": pull access '
     "denied, repository does not exist or may require authorization: server message: insufficient_scope: authorization "
     "failed",
     "image-pull-failed", "pull access denied", "pull access denied"),
    ("event",
     # kubectl describe capture
     "Failed to pull image \"richardchesterwood/k8s-fleetman-webapp-angular:releassdfsdfsdfe0-5\": rpc error: code = "
     "NotFound desc = failed to pull and unpack image \"docker.io/richardchesterwood/k8s-fleetman-webapp-angular:"
     "releassdfsdfsdfe0-5\": failed to resolve reference \"docker.io/richardchesterwood/k8s-fleetman-webapp-angular:"
     "releassdfsdfsdfe0-5\": docker.io/richardchesterwood/k8s-fleetman-webapp-angular:releassdfsdfsdfe0-5 not found: "
     "manifest unknown: manifest unknown",
     "image-pull-failed", "the image tag does not exist", "manifest unknown"),
    ("event",
     # kubectl describe capture
     'Warning  Failed     Failed to pull image "nginx:1.27.1alpine": manifest for nginx:1.27.1alpine not found',
     "image-pull-failed", "the image tag does not exist", "manifest unknown"),
    ("event",
     # kubectl describe capture
     'Warning  Failed   19m (x112 over 9h)   kubelet  (combined from similar events): Failed to pull image '
     '"busybox:1.36.1": rpc error: code = Unknown desc = failed to pull and unpack image "docker.io/library/busybox:1.36.1":'
     ' failed to resolve reference "docker.io/library/busybox:1.36.1": failed to do request: Head '
     '"https://registry-1.docker.io/v2/library/busybox/manifests/1.36.1": read tcp 10.2.0.49:50840->3.91.167.191:443: '
     "read: connection reset by peer",
     "image-pull-failed", "containerd could not pull docker.io/library/busybox:1.36.1", "failed to pull and unpack"),
    ("event",
     # kubectl describe capture
     'Normal   BackOff  6m12s (x1656 over 11h)  kubelet  Back-off pulling image "busybox:1.36.1"',
     "image-pull-failed", "keeps failing to pull busybox:1.36.1", "Back-off pulling image"),
    ("event",
     # kubectl describe capture
     "Warning  Failed     62s (x5 over 4m22s)   kubelet            Error: ErrImagePull",
     "image-pull-failed", "ErrImagePull", "ErrImagePull"),
    ("status",
     # kubectl describe capture
     "Warning  Failed     9s (x4 over 94s)    kubelet            Error: ImagePullBackOff",
     "image-pull-failed", "ImagePullBackOff", "ImagePullBackOff"),
    ("status",
     # kubectl describe capture (Last State)
     "Last State:     Terminated\n      Reason:       OOMKilled\n      Exit Code:    137",
     "container-oom-killed", "host memory, not GPU memory", "OOMKilled"),
    ("log",
     # dmesg capture (OpenShift node)
     "[ 7753.023847] Memory cgroup out of memory: Killed process 184260 (mimir) total-vm:2462120kB, anon-rss:900908kB, "
     "file-rss:45968kB, shmem-rss:0kB, UID:1001240000 pgtables:2476kB oom_score_adj:999",
     "container-oom-killed", "the kernel killed mimir (pid 184260)", "Memory cgroup"),
    ("event",
     # NVIDIA/nvidia-container-toolkit#1239
     "Error: failed to create containerd task: failed to create shim task: failed to inject CDI devices: "
     "unresolvable CDI devices management.nvidia.com/gpu=GPU-e78e68c0-4e6a-737e-f9cc-4223fe50aead",
     "nvidia-runtime-error", "could not find the CDI device management.nvidia.com/gpu=GPU-e78e68c0", "unresolvable CDI devices"),
    ("event",
     # NVIDIA/gpu-operator#1298 (CRI-O)
     "Failed to create pod sandbox: rpc error: code = Unknown desc = failed to find runtime handler nvidia from "
     "runtime list map[crun:0xc000 runc:0xc000]",
     "runtime-class-missing", "CRI-O has no 'nvidia' runtime handler", "failed to find runtime handler"),
    ("log",
     # NVIDIA/gpu-operator#277 (cuda-validation init container)
     "Failed to allocate device vector A (error code forward compatibility was attempted on non supported HW)!",
     "driver-cuda-mismatch", "CUDA forward compatibility does not apply", "forward compatibility was attempted"),
    ("status",
     # Azure/AKS#5871 (CDI mode)
     "failed to create containerd task: failed to create shim task: OCI runtime create failed: runc create failed: "
     "error modifying OCI spec: failed to create the automatic CDI modifier: failed to generate CDI spec: "
     "failed to initialize NVML: Driver/library version mismatch",
     "nvidia-runtime-error", "driver/library version mismatch", "Driver/library version mismatch"),
]


def _entries_matching(fragment: str):
    return [e for e in patterns() if fragment in e.regex.pattern]


@pytest.mark.parametrize("where,line,code,detail,fragment", REAL, ids=[f"{r[2]}-{i}" for i, r in enumerate(REAL)])
def test_real_lines(where, line, code, detail, fragment):
    found = classify(line, where)
    codes = [m.code for m in found]
    assert code in codes, (codes, line)
    m = next(m for m in found if m.code == code)
    assert detail in m.detail, m.detail
    assert m.source and m.line
    # the entry the line was collected for matches it on its own
    entries = [e for e in _entries_matching(fragment) if e.code == code]
    assert entries, fragment
    assert any(e.regex.search(line) for e in entries), fragment


def test_every_pattern_has_a_real_line():
    lines = [(w, line) for w, line, *_ in REAL]
    for e in patterns():
        assert any(w in e.where and e.regex.search(line) for w, line in lines), e.regex.pattern


def test_schema():
    for e in patterns():
        assert e.code in CODES
        assert e.where and set(e.where) <= set(WHERE)
        assert e.source.strip() and e.detail.strip()
        # linear-time guard: no nested quantifiers over '.', no unbounded repetition
        assert not re.search(r"\.\*|\.\+|\)\*|\)\+", e.regex.pattern), e.regex.pattern
        assert not re.search(r"(?<!\\)[*+]", e.regex.pattern.replace("\\*", "").replace("\\+", "")), e.regex.pattern


def test_specific_beats_wrapper():
    line = REAL[12][1]   # vllm#5635: hook wrapper around a requirement error
    assert [m.code for m in classify(line, "event")] == ["driver-cuda-mismatch"]
    line = REAL[5][1]    # shared-resource error inside an rpc error inside the kubelet wrapper
    found = classify(line, "event")
    assert [m.code for m in found] == ["unexpected-admission-error"]
    assert found[0].detail.startswith("shared resource request too large")


def test_where_is_respected():
    oom = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"
    assert classify(oom, "event") == []
    assert [m.code for m in classify(oom, "log")] == ["gpu-memory-exhausted"]
    assert classify("Allocate failed due to cannot allocate unregistered device nvidia.com/gpu", "log") == []


def test_no_match_and_bad_input():
    assert classify("Successfully assigned default/gpu-pod to node-1", "event") == []
    assert classify("", "log") == []
    assert classify("OOMKilled", "nowhere") == []
    assert classify(None, "log") == []  # type: ignore[arg-type]


def test_line_is_the_matching_line():
    text = "first line\nRuntimeError: CUDA error: no CUDA-capable device is detected\nlast line"
    [m] = classify(text, "log")
    assert m.line == "RuntimeError: CUDA error: no CUDA-capable device is detected"
    assert isinstance(m, RuntimeMatch)


# --------------------------------------------------------------------------- Xid catalog


def test_xid_79_critical_restart_bm():
    x = xid_info(79)
    assert x is not None
    assert x.mnemonic == "ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS"
    assert x.immediate == "RESTART_BM" and x.severity == "critical"
    assert "drain and reboot the node" in x.action
    assert not x.ignored_by_device_plugin
    assert "gpud" in x.source.lower()


def test_xid_13_warning_ignored_by_device_plugin():
    x = xid_info(13)
    assert x is not None and x.severity == "warning"
    assert x.immediate == "RESTART_APP" and x.investigatory == "WORKFLOW_XID_13"
    assert x.ignored_by_device_plugin and x.ignored_since == "v0.14.0"
    assert device_plugin_ignores(13, "v0.14.0")


def test_xid_109_ignored_from_v0_18():
    x = xid_info(109)
    assert x is not None and x.immediate == "RESET_GPU" and x.severity == "critical"
    assert x.ignored_by_device_plugin and x.ignored_since == "v0.18.0"
    assert not device_plugin_ignores(109, "v0.17.1")
    assert device_plugin_ignores(109, "v0.18.0")
    assert device_plugin_ignores(109, "0.20.0")
    assert device_plugin_ignores(109)
    assert not device_plugin_ignores(79)


@pytest.mark.parametrize("n", [48, 64, 74, 79, 95, 119, 120, 140, 143, 144, 147, 150, 151])
def test_hardware_xids_are_critical(n):
    assert xid_info(n).severity == "critical"


# 94 (contained memory error): RESTART_APP, the GPU stays usable (NVIDIA/gpu-operator#1065)
@pytest.mark.parametrize("n", [13, 31, 32, 43, 45, 68, 69, 94])
def test_application_xids_are_warnings(n):
    x = xid_info(n)
    assert x.severity == "warning", (n, x.immediate)


def test_xid_actions_by_bucket():
    assert xid_info(31).action.startswith("restart the application; the GPU is fine; if it recurs, follow NVIDIA's Xid 31 workflow")
    assert "Xid 13 workflow" in xid_info(13).action
    assert xid_info(48).action.startswith("follow NVIDIA's Xid 48 workflow")
    assert xid_info(8).action == "restart the application; the GPU is fine"
    assert xid_info(46).action.startswith("drain the GPU's workloads and reset it (nvidia-smi -r) or reboot")
    assert xid_info(1).action.endswith("replace the card if it recurs (RMA)")
    assert xid_info(106).severity == "info" and xid_info(106).action.startswith("informational")
    assert xid_info(154).severity == "info"
    assert "Fabric Manager" in xid_info(45).action
    assert xid_info(160).verified is False and "disagree" in (xid_info(160).note or "")


def test_xid_catalog_complete_and_sourced():
    all_ = xids()
    assert [x.xid for x in all_] == list(range(1, 173))
    for x in all_:
        assert x.severity in ("critical", "warning", "info")
        assert x.action and x.source and x.mnemonic


@pytest.mark.parametrize("bad", [0, -1, 173, 10**9, None, "abc", "", "79x", True, 7.9, "9" * 50])
def test_xid_info_unknown(bad):
    assert xid_info(bad) is None


def test_xid_info_accepts_digit_string():
    assert xid_info("79").xid == 79
    assert xid_info(" 119 ").mnemonic == "GSP_RPC_TIMEOUT"


# --------------------------------------------------------------------------- kernel Xid lines

KERNEL = [
    # GPUD kmsg.go test data
    ("NVRM: Xid (PCI:0000:9b:00): 119, pid=2024380, name=nvidia-smi, Timeout after 6s of waiting for RPC response "
     "from GPU4 GSP! Expected function 76 (GSP_RM_CONTROL) (0x2080014b 0x5).", (119, "0000:9b:00")),
    ("[...] NVRM: Xid (0000:03:00): 14, Channel 00000001", (14, "0000:03:00")),
    ("[111111111.111] NVRM: Xid (PCI:0000:05:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.",
     (79, "0000:05:00")),
    ("NVRM: Xid (PCI:0000:01:00): 79, GPU has fallen off the bus.", (79, "0000:01:00")),
    ("[171167.620236] NVRM: Xid (PCI:0009:01:00): 149, NETIR_LINK_EVT  Fatal   XC0 i0 Link 01 (0x021425c6 0x00000000 "
     "0x00000000 0x00000000 0x00000000 0x00000000)", (149, "0009:01:00")),
    ("[171167.621162] NVRM: Xid (PCI:0009:01:00): 154, GPU recovery action changed from 0x0 (None) to 0x4 (Drain and "
     "Reset)", (154, "0009:01:00")),
    # gpu-operator discussion dmesg
    ("[ 4131.289367] NVRM: Xid (PCI:0000:61:00): 119, pid=126121, name=nvidia-smi, Timeout after 6s of waiting for RPC "
     "response from GPU0 GSP! Expected function 76 (GSP_RM_CONTROL) (0x2080a068 0x4).", (119, "0000:61:00")),
    # e2e test data with the syslog prefix
    ("kernel: [16450076.435595] NVRM: Xid (PCI:0002:00:00): 119, pid=1582259, name=nvc:[driver], Timeout after 6s of "
     "waiting for RPC response from GPU1 GSP! Expected function 76 (GSP_RM_CONTROL) (0x20802a02 0x8).",
     (119, "0002:00:00")),
    # fallen-off-the-bus without an Xid number (GPUD kmsg_test.go)
    ("NVRM: GPU 0000:29:00.0: GPU has fallen off the bus.", (79, "0000:29:00")),
    ("NVRM: GPU 18:00.0: GPU has fallen off the bus.", (79, "0000:18:00")),
    ("NVRM: The NVIDIA GPU 0000:18:00.0\nNVRM: (PCI ID: 10de:2901) installed in this system has\n"
     "NVRM: fallen off the bus and is not responding to commands.", (79, "0000:18:00")),
]


@pytest.mark.parametrize("line,expected", KERNEL)
def test_parse_kernel_xid(line, expected):
    assert parse_kernel_xid(line) == expected


@pytest.mark.parametrize("line", [
    "Regular log content without Xid errors",
    "NVRM: Xid error: xyz, invalid data",
    "NVRM: Xid (invalid): some error",
    "NVRM: The NVIDIA GPU invalid-bdf.0\nNVRM: fallen off the bus and is not responding to commands.",
    "NVRM: GPU 0000:41:00.0: RmInitAdapter failed! (0x62:0x40:2404)",
    "",
])
def test_parse_kernel_xid_rejects(line):
    assert parse_kernel_xid(line) is None


def test_pci_matches():
    assert pci_matches("0000:07:00", "00000000:07:00.0")
    assert pci_matches("PCI:0000:9b:00", "00000000:9B:00.0")
    assert pci_matches("0009:01:00", "00000009:01:00.0")
    assert not pci_matches("0000:07:00", "00000000:08:00.0")
    assert not pci_matches("0000:07:00", "garbage")
    assert not pci_matches(None, "00000000:07:00.0")  # type: ignore[arg-type]
    assert normalize_pci("00000000:07:00.0") == "0000:07:00"
    xid, pci = parse_kernel_xid(KERNEL[0][0])
    assert pci_matches(pci, "00000000:9B:00.0")


# --------------------------------------------------------------------------- properties

_FRAGMENTS = [line for _, line, *_ in REAL] + [line for line, _ in KERNEL] + [
    "\x1b[31mERROR\x1b[0m ", "\x00", "\ud800", "NVRM: Xid (", "Allocate failed due to ", ", which is unexpected",
    "cuda>=", "error running hook #", "RuntimeClass \"", "Tried to allocate ", "(found version ",
]
_ANY_CHAR = st.characters(blacklist_categories=())      # includes lone surrogates
_TEXT = st.one_of(
    st.text(alphabet=_ANY_CHAR, max_size=500),
    st.lists(st.one_of(st.sampled_from(_FRAGMENTS), st.text(alphabet=_ANY_CHAR, max_size=40)), max_size=12).map("".join),
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=_TEXT, where=st.sampled_from(list(WHERE) + ["other"]))
def test_classify_never_raises(text, where):
    start = time.perf_counter()
    out = classify(text, where)
    assert time.perf_counter() - start < 2.0
    assert isinstance(out, list)
    assert len({m.code for m in out}) == len(out)
    for m in out:
        assert m.code in CODES and isinstance(m.detail, str) and len(m.line) <= 402


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=_TEXT)
def test_kernel_parsers_never_raise(text):
    r = parse_kernel_xid(text)
    assert r is None or (isinstance(r[0], int) and re.fullmatch(r"[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}", r[1]))
    pci_matches(text, text)
    normalize_pci(text)
    xid_info(text)


def test_one_megabyte_lines_are_fast():
    lines = [
        "x" * 1_000_000,
        "Allocate failed due to " * 45_000,
        "NVRM: Xid (" * 90_000,
        "error executing hook `/" + "a" * 1_000_000,
        "\x1b[0m\x00\ud800" * 330_000,
        ("nvidia-container-cli: " + "a" * 50) * 14_000,
    ]
    for line in lines:
        start = time.perf_counter()
        for where in WHERE:
            classify(line, where)
        parse_kernel_xid(line)
        assert time.perf_counter() - start < 3.0, line[:40]
