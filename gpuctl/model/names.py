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


def valid_name(what: str, value: Optional[str]) -> Optional[str]:
    """``value`` when it is a valid name for ``what`` (or None), else UsageError with
    name_problem's one line: a name a user or a tool call gives is checked before it
    can become part of a URL path (exit 2)."""
    from ..errors import UsageError

    if value is None:
        return None
    problem = name_problem(what, value)
    if problem:
        raise UsageError(problem)
    return value


def close_targets(name: str, candidates, limit: int = 3) -> list[str]:
    """Names the user probably meant, best first, from the first rule that finds
    any: a name ``name`` is the short form of (a node's ``ip-10-0-1-2`` for
    ``ip-10-0-1-2.ec2.internal``; a pod's controller name for ``train-0``,
    ``train-x7k2p``); a name it is a prefix of (a pod name typed without the end of
    its random suffix); close spellings (difflib), of full and of short names.
    ``NS/NAME`` candidates (``diagnose pod -A``) are matched on NAME."""
    import difflib

    pool = sorted(set(candidates) - {name}, key=lambda n: (len(n), n))
    base = {full: full.rsplit("/", 1)[-1] for full in pool}
    for rule in (lambda b: b.startswith(name + ".") or b.startswith(name + "-"),
                 lambda b: len(name) >= 3 and b.startswith(name)):
        hits = [full for full in pool if rule(base[full])]
        if hits:
            return hits[:limit]
    spelled: dict[str, str] = {}
    for full in pool:
        spelled.setdefault(base[full], full)
        spelled.setdefault(base[full].split(".", 1)[0], full)
    out: list[str] = []
    for near in difflib.get_close_matches(name, list(spelled), n=limit * 2, cutoff=0.6):
        if spelled[near] not in out:
            out.append(spelled[near])
    return out[:limit]


def suggest(name: str, candidates) -> Optional[str]:
    """"did you mean A, B?" for a target that was not found, or None."""
    close = close_targets(name, candidates)
    return f"did you mean {', '.join(close)}?" if close else None


def workload_of_pods(name: str, owners) -> list[str]:
    """``KIND/NAME`` of the workload called ``name``, from (owner kind, owner name,
    pod-template-hash label) of pods: a Job or StatefulSet of that name, or a
    Deployment whose ReplicaSet is ``name-HASH`` (the Deployment controller's
    naming): the workload's name typed where a pod's was expected."""
    found = set()
    for kind, owner, template_hash in owners:
        if owner == name and kind in ("Job", "StatefulSet"):
            found.add(f"{kind.lower()}/{name}")
        elif kind == "ReplicaSet" and template_hash and owner == f"{name}-{template_hash}":
            found.add(f"deployment/{name}")
    return sorted(found)
