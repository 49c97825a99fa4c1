"""The ``gpuctl/probe/v1`` document (docs/probe.md) and what in it needs attention.

Built from what the collectors read on the node (``gpuctl.collect.nvml``'s part,
``gpuctl.collect.kernel_log``'s Xid lines); this module reads nothing itself."""

from __future__ import annotations

from typing import Any

from ..knowledge.gpu_health import xid_info

SCHEMA = "gpuctl/probe/v1"


def probe_document(node: str, captured_at: str, nvml_part: dict[str, Any], xids: list[dict[str, Any]],
                   kernel_log_source: str) -> dict[str, Any]:
    """The whole document: NVML's part (``probe_gpus``), the Xid lines
    (``xids_from_lines``) and where they were read from."""
    return {
        "schema": SCHEMA,
        "node": node,
        "capturedAt": captured_at,
        "driverVersion": nvml_part["driverVersion"],
        "cudaDriverVersion": nvml_part["cudaDriverVersion"],
        "nvmlVersion": nvml_part["nvmlVersion"],
        "gpus": nvml_part["gpus"],
        "xids": xids,
        "kernelLogSource": kernel_log_source,
        "unsupported": nvml_part["unsupported"],
        "errors": nvml_part["errors"],
    }


def _num(v: Any) -> float:
    try:
        return float(v)
    except (TypeError, ValueError):
        return 0.0


def _sub(d: Any, *keys: str) -> Any:
    for k in keys:
        if not isinstance(d, dict):
            return None
        d = d.get(k)
    return d


def problems(doc: dict[str, Any]) -> list[str]:
    """Why the probe exits 1: one sentence per problem; empty when healthy."""
    out: list[str] = []
    for g in doc.get("gpus") or []:
        if not isinstance(g, dict):
            continue
        ref = f"GPU {g.get('index')}"
        unc = _sub(g, "ecc", "volatile", "uncorrected")
        if _num(unc) > 0:
            out.append(f"{ref}: {unc} uncorrectable ECC error(s) since the driver loaded")
        if _sub(g, "remappedRows", "failure"):
            out.append(f"{ref}: row remapping failed (no spare rows left): drain, reset, plan replacement")
        if _sub(g, "remappedRows", "pending"):
            out.append(f"{ref}: row remapping pending: reset the GPU to apply it")
        if _sub(g, "retiredPages", "pending"):
            out.append(f"{ref}: page retirement pending: reset the GPU to apply it")
        action = g.get("recoveryAction")
        if action and action != "NONE":
            out.append(f"{ref}: NVML asks for recovery action {action}")
    seen: dict[tuple[int, str], int] = {}
    actions: dict[tuple[int, str], str] = {}
    for x in doc.get("xids") or []:
        info = xid_info(x.get("xid")) if isinstance(x, dict) else None
        if info is not None and info.severity == "critical":
            where = f"GPU {x['gpuIndex']}" if x.get("gpuIndex") is not None else f"PCI {x.get('pciBusId')}"
            key = (info.xid, where)
            seen[key] = seen.get(key, 0) + 1
            actions[key] = f"Xid {info.xid} ({info.mnemonic}) on {where}"
            actions[key] += "{times}: " + info.action
    for key, n in seen.items():
        out.append(actions[key].replace("{times}", f" ({n} lines)" if n > 1 else "", 1))
    return out
