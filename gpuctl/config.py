"""The user's gpuctl configuration: ``$GPUCTL_CONFIG``, else
``$XDG_CONFIG_HOME/gpuctl/config.yaml`` (``~/.config/gpuctl/config.yaml``).

Today it holds extra device-plugin selectors, so a cluster that runs a plugin
gpuctl does not know (a vendor add-on, a fork, a renamed Helm release) is not
diagnosed as "device plugin missing"::

    devicePlugins:
      - name: acme-gpu-plugin
        labelSelector: app=acme-gpu-device-plugin
        namespaces: [acme-system]          # omit for any namespace
        resources: [nvidia.com/gpu]

A missing file is fine; an unreadable one is an error naming the file (exit 4).
"""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path
from typing import Any, Optional

from .errors import SourceError


def config_path() -> Optional[Path]:
    explicit = os.environ.get("GPUCTL_CONFIG")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    p = Path(base) / "gpuctl" / "config.yaml"
    return p if p.is_file() else None


@lru_cache(maxsize=None)
def load() -> dict[str, Any]:
    p = config_path()
    if p is None:
        return {}
    import yaml

    try:
        data = yaml.safe_load(p.read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError) as e:
        raise SourceError(f"config {p}: cannot be read ({str(e).splitlines()[0]})", "fix or remove the file") from None
    if not isinstance(data, dict):
        raise SourceError(f"config {p}: expected a mapping at the top")
    return data


def extra_device_plugins() -> list[dict[str, Any]]:
    rows = load().get("devicePlugins") or []
    out = []
    for i, r in enumerate(rows):
        if not isinstance(r, dict) or not isinstance(r.get("labelSelector"), str):
            raise SourceError(f"config {config_path()}: devicePlugins[{i}] needs a labelSelector string")
        out.append(r)
    return out
