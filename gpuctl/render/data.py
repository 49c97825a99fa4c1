"""Machine output: one JSON (or YAML) document on stdout, written plainly —
never through Rich, which hard-wraps at 80 columns when stdout is not a terminal."""

from __future__ import annotations

import json
import sys
from typing import Any, Optional, TextIO

from .safe import clean_data, json_needs_clean


def camel(key: str) -> str:
    head, *rest = key.split("_")
    return head + "".join(w[:1].upper() + w[1:] for w in rest)


def with_camel_keys(doc: Any) -> Any:
    """Keys are camelCase, as Kubernetes names its fields. The snake_case keys the
    v1 documents first shipped with (``largest_free_block``, ``free_histogram``,
    ``pool_label``, ``consolidation_hint``, ...) stay beside their camelCase twin
    as deprecated aliases until the schema's next version (docs/output.md). Keys
    that are data, not field names (node names, resource names, histogram buckets,
    label keys), are never renamed: only identifiers made of lower-case words."""
    if isinstance(doc, list):
        return [with_camel_keys(v) for v in doc]
    if not isinstance(doc, dict):
        return doc
    out: dict = {}
    for k, v in doc.items():
        v = with_camel_keys(v) if k not in _DATA_KEYS else v
        if isinstance(k, str) and "_" in k and k.replace("_", "").isalpha() and k.islower():
            out.setdefault(camel(k), v)
        out[k] = v
    return out


# Maps whose keys are data (label keys, node names, free-GPU buckets), left as they are.
_DATA_KEYS = frozenset({"labels", "free_histogram", "freeHistogram", "apply", "requests", "free", "operands",
                        "drivers", "annotations", "env", "metrics"})


def json_text(doc: Any) -> str:
    """``doc`` as -o json writes it, without the final newline: camelCase keys
    (``with_camel_keys``), cluster text cleaned (``clean_data``), indented by 2,
    non-ASCII as itself. The same text as ``json.dumps(clean_data(with_camel_keys(doc)),
    indent=2, ensure_ascii=False)``, made faster: the compact text comes from json's C
    encoder (json.dumps indents in Python), is searched for anything ``clean`` would
    remove (cleaned and encoded again only then), and is indented by msgspec, which
    copies numbers and strings as they are. A NaN or infinity (which msgspec does not
    read) takes json's own way."""
    data = with_camel_keys(doc)
    try:
        compact = json.dumps(data, ensure_ascii=False, allow_nan=False)
    except ValueError:
        return json.dumps(clean_data(data), indent=2, ensure_ascii=False)
    if json_needs_clean(compact):
        data = clean_data(data)
        compact = json.dumps(data, ensure_ascii=False, allow_nan=False)
    import msgspec

    try:
        raw = compact.encode()
    except UnicodeEncodeError:   # a lone surrogate: json's own way, as before
        return json.dumps(data, indent=2, ensure_ascii=False)
    return msgspec.json.format(raw, indent=2).decode()


def dump_json(doc: Any, out: Optional[TextIO] = None) -> None:
    out = out or sys.stdout
    out.write(json_text(doc))
    out.write("\n")


def dump_yaml(doc: Any, out: Optional[TextIO] = None) -> None:
    import yaml

    out = out or sys.stdout
    dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    out.write(yaml.dump(clean_data(with_camel_keys(doc)), Dumper=dumper, sort_keys=False, allow_unicode=True, width=100))
