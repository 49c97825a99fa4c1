"""Kubernetes object-name rules, as the API server enforces them.

Names become URL paths (``/api/v1/nodes/NAME``) and file names in bundles
(``logs/NS/POD/CONTAINER.log``, ``metrics/NODE.prom``). A name typed by the user or
sent by a (possibly hostile or broken) server is checked against these rules
before it is used as either, so ``../../api/v1/secrets`` never becomes a request
and ``../../etc/x`` never becomes a file.

Rules (k8s.io/apimachinery/pkg/util/validation/validation.go):

* DNS-1123 label: at most 63 characters, ``[a-z0-9]([-a-z0-9]*[a-z0-9])?``:
  namespaces (ValidateNamespaceName) and container names.
* DNS-1123 subdomain: at most 253 characters, dot-separated DNS-1123 labels
  (``[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*``): pods,
  nodes (ValidateNodeName), jobs, deployments and most other objects.
"""

from __future__ import annotations

import re
from typing import Optional

DNS1123_LABEL_MAX = 63
DNS1123_SUBDOMAIN_MAX = 253
_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_LABEL_RE = re.compile(rf"{_LABEL}\Z")
_SUBDOMAIN_RE = re.compile(rf"{_LABEL}(\.{_LABEL})*\Z")

# what each kind of name must be: (rule, maximum length)
LABEL = "DNS-1123 label"
SUBDOMAIN = "DNS-1123 subdomain"
RULES = {
    "namespace": LABEL,
    "container": LABEL,
    "node": SUBDOMAIN,
    "pod": SUBDOMAIN,
    "object": SUBDOMAIN,
}


def is_dns1123_label(value: str) -> bool:
    return isinstance(value, str) and len(value) <= DNS1123_LABEL_MAX and _LABEL_RE.match(value) is not None


def is_dns1123_subdomain(value: str) -> bool:
    return isinstance(value, str) and len(value) <= DNS1123_SUBDOMAIN_MAX and _SUBDOMAIN_RE.match(value) is not None


def name_problem(what: str, value: object) -> Optional[str]:
    """Why ``value`` is not a valid name for ``what`` (a key of RULES), or None."""
    rule = RULES.get(what, SUBDOMAIN)
    check = is_dns1123_label if rule == LABEL else is_dns1123_subdomain
    if not isinstance(value, str):
        return f"{what} name must be a string, not {type(value).__name__}"
    if check(value):
        return None
    limit = DNS1123_LABEL_MAX if rule == LABEL else DNS1123_SUBDOMAIN_MAX
    return (f"{what} name {value[:80]!r} is not a valid Kubernetes name (a {rule}: lower-case letters, digits"
            f"{', dots' if rule == SUBDOMAIN else ''} and '-', starting and ending with a letter or digit, "
            f"at most {limit} characters)")


def is_valid(what: str, value: object) -> bool:
    return name_problem(what, value) is None


def close_names(name: str, candidates, limit: int = 3) -> list[str]:
    """Names a user probably meant, best first: a node's full name for its short
    one (``ip-10-0-1-2`` → ``ip-10-0-1-2.ec2.internal``), a pod for its controller's
    name or a prefix (``train`` → ``train-0``, ``train-x7k2p``), then close spellings."""
    import difflib

    names = sorted(set(candidates) - {name})
    prefixed = [n for n in names if n != name and (n.startswith(name + ".") or n.startswith(name + "-"))]
    prefixed.sort(key=lambda n: (len(n), n))
    out = prefixed[:limit]
    for n in difflib.get_close_matches(name, names, n=limit, cutoff=0.6):
        if n not in out and len(out) < limit:
            out.append(n)
    return out


def did_you_mean(name: str, candidates) -> Optional[str]:
    close = close_names(name, candidates)
    return f"did you mean {', '.join(close)}?" if close else None
