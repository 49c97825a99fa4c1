"""NVML, read on the node itself: the driver/CUDA/GPU part of a ``gpuctl/probe/v1``
document (docs/probe.md).

This is the only module that imports ``pynvml`` (NVIDIA's official
``nvidia-ml-py`` binding), and it does so inside ``probe_gpus`` so that
``gpuctl --help`` never pays for it. ``probe_gpus(nvml=...)`` takes any object
with the same API (a test's fake NVML module); it is the one boundary where a
test double stands in.

Every per-GPU call is wrapped on its own and is never fatal:

- ``NVMLError_NotSupported``, ``NVMLError_NoPermission``,
  ``NVMLError_FunctionNotFound`` (the driver lacks the symbol) and a function the
  binding itself does not have (an older ``nvidia-ml-py``) make the value ``null``
  and add the call's name, once, to ``unsupported``;
- any other error (``GPU is lost``, ``Unknown Error``, …) makes the value ``null``
  and adds ``{"gpuIndex", "call", "error"}`` to ``errors``.

Only ``nvmlInit`` failing stops the probe: ``NvmlUnavailable`` (exit 4 in the CLI)
names the NVML error. ``nvmlShutdown`` always follows a successful ``nvmlInit``.
"""

from __future__ import annotations

from typing import Any, Callable, Optional

from ..errors import SourceError

__all__ = ["NvmlUnavailable", "probe_gpus", "RECOVERY_ACTIONS", "THROTTLE_REASONS", "cuda_version"]

# nvmlReturn_t codes (GONVML nvml.h), used when a binding lacks the constant.
_NOT_SUPPORTED = 3
_NO_PERMISSION = 4
_DRIVER_NOT_LOADED = 9
_LIBRARY_NOT_FOUND = 12
_FUNCTION_NOT_FOUND = 13
_LIB_RM_VERSION_MISMATCH = 18
_UNSUPPORTED_CODES = {_NOT_SUPPORTED, _NO_PERMISSION, _FUNCTION_NOT_FOUND}

# nvmlDeviceGpuRecoveryAction_t (BUS_RESET and SYSTEM_REBOOT from nvidia-ml-py 13).
RECOVERY_ACTIONS = {
    0: "NONE",
    1: "GPU_RESET",
    2: "NODE_REBOOT",
    3: "DRAIN_P2P",
    4: "DRAIN_AND_RESET",
    5: "RECOVER_IMEX_DOMAIN",
    6: "BUS_RESET",
    7: "SYSTEM_REBOOT",
}
_FI_DEV_GET_GPU_RECOVERY_ACTION = 230

# nvmlClocksEventReason* bits (BoardLimit and Reliability from nvidia-ml-py 13).
THROTTLE_REASONS = (
    (0x1, "GpuIdle"),
    (0x2, "ApplicationsClocksSetting"),
    (0x4, "SwPowerCap"),
    (0x8, "HwSlowdown"),
    (0x10, "SyncBoost"),
    (0x20, "SwThermalSlowdown"),
    (0x40, "HwThermalSlowdown"),
    (0x80, "HwPowerBrakeSlowdown"),
    (0x100, "DisplayClockSetting"),
    (0x200, "BoardLimit"),
    (0x400, "Reliability"),
)

_INIT_REASONS = {
    _LIBRARY_NOT_FOUND: "no NVIDIA driver: NVML library not found",
    _DRIVER_NOT_LOADED: "NVIDIA driver not loaded",
    _LIB_RM_VERSION_MISMATCH: "driver/library version mismatch",
    _NO_PERMISSION: "no permission to use NVML",
}
_INIT_HINTS = {
    _LIBRARY_NOT_FOUND: "run it on a GPU node, or in a pod that runs with the NVIDIA container runtime",
    _DRIVER_NOT_LOADED: "load the kernel module (nvidia) or check the driver installation",
    _LIB_RM_VERSION_MISMATCH: "the user-space driver was upgraded without reloading the kernel module: reboot the node",
    _NO_PERMISSION: "run it as root or in a privileged pod",
}


class NvmlUnavailable(SourceError):
    """``nvmlInit`` failed (or no NVML binding is installed): nothing can be probed.

    ``reason`` is the plain sentence (``"no NVIDIA driver: NVML library not found"``),
    ``code`` the nvmlReturn_t value (None when there is none), ``error`` the NVML
    error's name and text (``"NVML_ERROR_LIBRARY_NOT_FOUND: NVML Shared Library Not Found"``).
    """

    def __init__(self, reason: str, code: Optional[int] = None, error: str = "", hint: Optional[str] = None):
        super().__init__(f"{reason} ({error})" if error else reason, hint)
        self.reason = reason
        self.code = code
        self.error = error

    @property
    def no_driver(self) -> bool:
        return self.code == _LIBRARY_NOT_FOUND


def cuda_version(v: Any) -> Optional[str]:
    """``12040`` -> ``"12.4"`` (major = v // 1000, minor = (v % 1000) // 10)."""
    if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
        return None
    return f"{v // 1000}.{(v % 1000) // 10}"


def _text(value: Any) -> Optional[str]:
    if value is None:
        return None
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).decode("utf-8", "replace").rstrip("\x00")
    return str(value)


def _error_name(nv: Any, code: Any) -> str:
    if isinstance(code, int):
        for name in dir(nv):
            if name.startswith("NVML_ERROR_") and getattr(nv, name, None) == code:
                return name
        return f"NVML error {code}"
    return "NVML error"


def _error_text(exc: BaseException) -> str:
    try:
        return str(exc)
    except Exception:  # a binding whose __str__ needs the library
        return type(exc).__name__


class _Probe:
    """One probe run: the module, and the unsupported/errors lists calls append to."""

    def __init__(self, nv: Any):
        self.nv = nv
        self.unsupported: list[str] = []
        self.errors: list[dict[str, Any]] = []
        self.nvml_error = getattr(nv, "NVMLError", None)
        if not (isinstance(self.nvml_error, type) and issubclass(self.nvml_error, BaseException)):
            self.nvml_error = _NoSuchError

    def const(self, name: str, default: Any) -> Any:
        value = getattr(self.nv, name, default)
        return value if isinstance(value, int) else default

    def _unsupported(self, name: str) -> None:
        if name not in self.unsupported:
            self.unsupported.append(name)

    def _fail(self, name: str, gpu: Optional[int], error: str) -> None:
        self.errors.append({"gpuIndex": gpu, "call": name, "error": error})

    def call(self, name: str, gpu: Optional[int], *args: Any, fallbacks: tuple[str, ...] = (),
             label: Optional[str] = None) -> tuple[bool, Any]:
        """(ok, value) of ``nv.<name>(*args)``; a missing function tries ``fallbacks``
        (a newer name before its deprecated one). Never raises."""
        label = label or name
        for fname in (name,) + fallbacks:
            fn = getattr(self.nv, fname, None)
            if not callable(fn):
                continue
            try:
                return True, fn(*args)
            except self.nvml_error as e:
                code = getattr(e, "value", None)
                if code == self.const("NVML_ERROR_FUNCTION_NOT_FOUND", _FUNCTION_NOT_FOUND):
                    continue   # the driver lacks this symbol: try the older name
                if code in (self.const("NVML_ERROR_NOT_SUPPORTED", _NOT_SUPPORTED),
                            self.const("NVML_ERROR_NO_PERMISSION", _NO_PERMISSION)):
                    self._unsupported(label)
                else:
                    self._fail(label, gpu, f"{_error_name(self.nv, code)}: {_error_text(e)}")
                return False, None
            except Exception as e:  # ctypes or binding trouble: this value only
                self._fail(label, gpu, f"{type(e).__name__}: {_error_text(e)}")
                return False, None
        self._unsupported(label)
        return False, None

    def value(self, name: str, gpu: Optional[int], *args: Any, convert: Callable[[Any], Any] = lambda v: v,
              fallbacks: tuple[str, ...] = (), label: Optional[str] = None) -> Any:
        ok, raw = self.call(name, gpu, *args, fallbacks=fallbacks, label=label)
        if not ok:
            return None
        try:
            return convert(raw)
        except Exception as e:
            self._fail(label or name, gpu, f"unexpected value {raw!r} ({type(e).__name__}: {e})"[:300])
            return None


class _NoSuchError(Exception):
    pass


def _load() -> Any:
    import warnings

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")   # the deprecated `pynvml` wrapper warns on import
            import pynvml  # noqa: PLC0415 - the one place gpuctl imports NVML
    except ImportError as e:
        raise NvmlUnavailable("no NVML binding: nvidia-ml-py is not installed", None, f"import pynvml: {e}",
                              hint="pip install nvidia-ml-py") from None
    return pynvml


def _init(nv: Any) -> None:
    nvml_error = getattr(nv, "NVMLError", None)
    if not (isinstance(nvml_error, type) and issubclass(nvml_error, BaseException)):
        nvml_error = _NoSuchError
    init = getattr(nv, "nvmlInit", None)
    if not callable(init):
        raise NvmlUnavailable("the NVML binding has no nvmlInit", None, type(nv).__name__)
    try:
        init()
    except nvml_error as e:
        code = getattr(e, "value", None)
        reason = _INIT_REASONS.get(code, "NVML could not be initialised")   # type: ignore[arg-type]
        raise NvmlUnavailable(reason, code if isinstance(code, int) else None,
                              f"nvmlInit: {_error_name(nv, code)}: {_error_text(e)}",
                              hint=_INIT_HINTS.get(code)) from None   # type: ignore[arg-type]
    except OSError as e:   # a broken libnvidia-ml.so that ctypes cannot load
        raise NvmlUnavailable("the NVML library cannot be loaded", None, f"nvmlInit: {e}") from None


def probe_gpus(nvml: Any = None) -> dict[str, Any]:
    """The probe document's NVML part.

    Returns ``{"driverVersion", "cudaDriverVersion", "nvmlVersion", "gpus",
    "unsupported", "errors"}`` with the fields of docs/probe.md. Raises
    ``NvmlUnavailable`` when NVML cannot start.
    """
    nv = nvml if nvml is not None else _load()
    _init(nv)
    try:
        return _probe(nv)
    finally:
        shutdown = getattr(nv, "nvmlShutdown", None)
        if callable(shutdown):
            try:
                shutdown()
            except Exception:  # nothing left to do about it
                pass


def _probe(nv: Any) -> dict[str, Any]:
    p = _Probe(nv)
    doc: dict[str, Any] = {
        "driverVersion": p.value("nvmlSystemGetDriverVersion", None, convert=_text),
        "cudaDriverVersion": p.value("nvmlSystemGetCudaDriverVersion_v2", None, convert=cuda_version,
                                     fallbacks=("nvmlSystemGetCudaDriverVersion",)),
        "nvmlVersion": p.value("nvmlSystemGetNVMLVersion", None, convert=_text),
        "gpus": [],
    }
    count = p.value("nvmlDeviceGetCount", None, convert=int)
    for i in range(min(count or 0, 64)):
        doc["gpus"].append(_gpu(p, i))
    doc["unsupported"] = p.unsupported
    doc["errors"] = p.errors
    return doc


def _all_null(d: dict[str, Any]) -> Optional[dict[str, Any]]:
    """A group whose every value is null is itself null (docs/probe.md: ``"retiredPages": null``)."""
    return None if all(v is None for v in d.values()) else d


def _enabled(p: _Probe, value: Any) -> Optional[str]:
    if value is None:
        return None
    return "enabled" if int(value) == p.const("NVML_FEATURE_ENABLED", 1) else "disabled"


def _pair(p: _Probe, raw: Any) -> tuple[Optional[str], Optional[str]]:
    cur, pend = raw[0], raw[1]
    return _enabled(p, cur), _enabled(p, pend)


def _pci(info: Any) -> Optional[str]:
    for attr in ("busId", "busIdLegacy"):
        text = _text(getattr(info, attr, None))
        if text:
            return text
    if isinstance(info, dict):
        return _text(info.get("busId"))
    return None


def _reasons(mask: Any) -> list[str]:
    mask = int(mask)
    names = [name for bit, name in THROTTLE_REASONS if mask & bit]
    known = 0
    for bit, _ in THROTTLE_REASONS:
        known |= bit
    extra = mask & ~known
    if extra:
        names.append(f"0x{extra:x}")
    return names


def _field_number(fv: Any) -> Any:
    value = getattr(fv, "value", None)
    kind = getattr(fv, "valueType", 1)
    attr = {0: "dVal", 1: "uiVal", 2: "ulVal", 3: "ullVal", 4: "sllVal", 5: "siVal", 6: "usVal"}.get(kind, "uiVal")
    return getattr(value, attr, value)


def _recovery_action(p: _Probe, handle: Any, index: int) -> Optional[str]:
    label = "nvmlDeviceGetFieldValues(NVML_FI_DEV_GET_GPU_RECOVERY_ACTION)"
    field_id = getattr(p.nv, "NVML_FI_DEV_GET_GPU_RECOVERY_ACTION", None)
    if not isinstance(field_id, int):   # a binding older than the field
        p._unsupported(label)
        return None
    ok, values = p.call("nvmlDeviceGetFieldValues", index, handle, [field_id], label=label)
    if not ok:
        return None
    try:
        fv = values[0]
        ret = int(getattr(fv, "nvmlReturn", 0) or 0)
        if ret in (p.const("NVML_ERROR_NOT_SUPPORTED", _NOT_SUPPORTED), p.const("NVML_ERROR_NO_PERMISSION", _NO_PERMISSION),
                   p.const("NVML_ERROR_FUNCTION_NOT_FOUND", _FUNCTION_NOT_FOUND), p.const("NVML_ERROR_INVALID_ARGUMENT", 2)):
            p._unsupported(label)   # INVALID_ARGUMENT: the driver does not know the field id
            return None
        if ret != 0:
            p._fail(label, index, _error_name(p.nv, ret))
            return None
        n = int(_field_number(fv))
    except Exception as e:
        p._fail(label, index, f"unexpected field value ({type(e).__name__}: {e})"[:300])
        return None
    return RECOVERY_ACTIONS.get(n, f"UNKNOWN_{n}")


def _gpu(p: _Probe, index: int) -> dict[str, Any]:
    gpu: dict[str, Any] = {
        "index": index, "name": None, "uuid": None, "pciBusId": None, "memoryTotalMiB": None,
        "persistenceMode": None, "migMode": None, "ecc": None, "retiredPages": None, "remappedRows": None,
        "recoveryAction": None, "throttleReasons": None, "temperatureC": None,
    }
    ok, h = p.call("nvmlDeviceGetHandleByIndex", index, index)
    if not ok:
        return gpu
    gpu["name"] = p.value("nvmlDeviceGetName", index, h, convert=_text)
    gpu["uuid"] = p.value("nvmlDeviceGetUUID", index, h, convert=_text)
    gpu["pciBusId"] = p.value("nvmlDeviceGetPciInfo", index, h, convert=_pci, fallbacks=("nvmlDeviceGetPciInfo_v3",))
    gpu["memoryTotalMiB"] = p.value("nvmlDeviceGetMemoryInfo", index, h, convert=lambda m: int(m.total) // (1024 * 1024))
    gpu["persistenceMode"] = p.value("nvmlDeviceGetPersistenceMode", index, h,
                                     convert=lambda v: int(v) == p.const("NVML_FEATURE_ENABLED", 1))
    mig = p.value("nvmlDeviceGetMigMode", index, h, convert=lambda r: _pair(p, r))
    gpu["migMode"] = {"current": mig[0], "pending": mig[1]} if mig else None

    corrected = p.const("NVML_MEMORY_ERROR_TYPE_CORRECTED", 0)
    uncorrected = p.const("NVML_MEMORY_ERROR_TYPE_UNCORRECTED", 1)
    mode = p.value("nvmlDeviceGetEccMode", index, h, convert=lambda r: _pair(p, r))
    ecc: dict[str, Any] = {"mode": {"current": mode[0], "pending": mode[1]} if mode else None}
    for key, counter in (("volatile", p.const("NVML_VOLATILE_ECC", 0)), ("aggregate", p.const("NVML_AGGREGATE_ECC", 1))):
        ecc[key] = _all_null({
            "corrected": p.value("nvmlDeviceGetTotalEccErrors", index, h, corrected, counter, convert=int),
            "uncorrected": p.value("nvmlDeviceGetTotalEccErrors", index, h, uncorrected, counter, convert=int),
        })
    gpu["ecc"] = _all_null(ecc)

    sbe = p.const("NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS", 0)
    dbe = p.const("NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR", 1)
    gpu["retiredPages"] = _all_null({
        "singleBit": p.value("nvmlDeviceGetRetiredPages", index, h, sbe, convert=len),
        "doubleBit": p.value("nvmlDeviceGetRetiredPages", index, h, dbe, convert=len),
        "pending": p.value("nvmlDeviceGetRetiredPagesPendingStatus", index, h,
                           convert=lambda v: int(v) == p.const("NVML_FEATURE_ENABLED", 1)),
    })
    rows = p.value("nvmlDeviceGetRemappedRows", index, h, convert=lambda r: tuple(int(x) for x in r[:4]))
    gpu["remappedRows"] = ({"corrected": rows[0], "uncorrected": rows[1], "pending": bool(rows[2]), "failure": bool(rows[3])}
                           if rows else None)
    gpu["recoveryAction"] = _recovery_action(p, h, index)
    gpu["throttleReasons"] = p.value("nvmlDeviceGetCurrentClocksEventReasons", index, h, convert=_reasons,
                                     fallbacks=("nvmlDeviceGetCurrentClocksThrottleReasons",))
    gpu["temperatureC"] = p.value("nvmlDeviceGetTemperature", index, h, p.const("NVML_TEMPERATURE_GPU", 0), convert=int,
                                  fallbacks=("nvmlDeviceGetTemperatureV",))
    return gpu
