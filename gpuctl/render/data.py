"""Machine output: one JSON (or YAML) document on stdout, written plainly —
never through Rich, which hard-wraps at 80 columns when stdout is not a terminal."""

from __future__ import annotations

import json
import sys
from typing import Any, Optional, TextIO

from .safe import clean_data


def dump_json(doc: Any, out: Optional[TextIO] = None) -> None:
    out = out or sys.stdout
    out.write(json.dumps(clean_data(doc), indent=2, ensure_ascii=False))
    out.write("\n")


def dump_yaml(doc: Any, out: Optional[TextIO] = None) -> None:
    import yaml

    out = out or sys.stdout
    dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    out.write(yaml.dump(clean_data(doc), Dumper=dumper, sort_keys=False, allow_unicode=True, width=100))
