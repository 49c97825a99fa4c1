"""Reading kubeconfig files as kubectl reads them, before the official client sees them.

Why not the client's own loader alone: it falls back silently to ``$KUBECONFIG`` or
``~/.kube/config`` when given a path list (so ``--kubeconfig A:B`` could reach
*another cluster*), lets the *last* file's ``current-context`` win where kubectl
lets the first win, reports broken files as tracebacks, and runs exec credential
plugins with no time limit. Here:

* **Which files** (client-go ``ClientConfigLoadingRules``): ``--kubeconfig`` names
  one file or a path list (``A:B``); every file named there must exist. Otherwise
  ``KUBECONFIG`` (a path list; missing entries ignored, as kubectl does), otherwise
  ``~/.kube/config``.
* **Merging** (client-go ``loader.go``): for clusters, contexts and users the first
  file that defines a name wins; the first file that sets ``current-context`` wins.
  Relative file references (``certificate-authority``, ``client-certificate``,
  ``client-key``, ``tokenFile``, an exec ``command`` holding a path separator)
  are resolved against the directory of the file that holds them.
* **Errors** name the file: invalid YAML, wrong types, a missing file.
* **Exec credential plugins** (client.authentication.k8s.io) run here, bounded by
  ``--request-timeout``; a plugin that is missing, fails, hangs or answers garbage
  is reported in its own words (exit 4), never as "the cluster refused the
  credentials". The credential it returns is handed to the client as a static token
  or client certificate for the command's lifetime.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from dataclasses import dataclass, field
from typing import Any, Optional

from ..errors import SourceError

NAMED_LISTS = (("clusters", "cluster"), ("contexts", "context"), ("users", "user"))
_PATH_FIELDS = {"clusters": ("certificate-authority",), "users": ("client-certificate", "client-key", "tokenFile")}


@dataclass
class Kubeconfig:
    """The merged kubeconfig and where each named entry came from."""

    config: dict[str, Any]
    files: list[str]
    origin: dict[tuple[str, str], str] = field(default_factory=dict)   # (list, name) -> file

    @property
    def where(self) -> str:
        return self.files[0] if len(self.files) == 1 else os.pathsep.join(self.files)

    def names(self, section: str) -> list[str]:
        return [e["name"] for e in self.config.get(section) or []]

    def entry(self, section: str, name: str) -> Optional[dict[str, Any]]:
        return next((e for e in self.config.get(section) or [] if e["name"] == name), None)


def candidate_files(flag: Optional[str]) -> tuple[list[str], bool]:
    """(files, explicit): the kubeconfig files to merge, in precedence order."""
    if flag:
        paths = [os.path.expanduser(p) for p in flag.split(os.pathsep) if p]
        if not paths:
            raise SourceError(f"--kubeconfig {flag!r}: no file named")
        for p in paths:
            if not os.path.exists(p):
                raise SourceError(f"kubeconfig {p}: no such file")
        return paths, True
    env = os.environ.get("KUBECONFIG")
    if env:
        return [os.path.expanduser(p) for p in env.split(os.pathsep) if p and os.path.exists(os.path.expanduser(p))], False
    home = os.path.expanduser("~/.kube/config")
    return ([home] if os.path.exists(home) else []), False


def load(files: list[str]) -> Kubeconfig:
    """Merge the files as kubectl merges them (first definition wins)."""
    merged: dict[str, Any] = {"apiVersion": "v1", "kind": "Config", "clusters": [], "contexts": [], "users": []}
    kc = Kubeconfig(merged, list(files))
    for path in files:
        doc = _read(path)
        for section, inner in NAMED_LISTS:
            entries = doc.get(section)
            if entries is None:
                continue
            if not isinstance(entries, list):
                raise SourceError(f"kubeconfig {path}: '{section}' must be a list, not {_type(entries)}")
            for i, entry in enumerate(entries):
                if not isinstance(entry, dict) or not isinstance(entry.get("name"), str) or not entry.get("name"):
                    raise SourceError(f"kubeconfig {path}: {section}[{i}] must be a map with a 'name'")
                body = entry.get(inner)
                if body is None:
                    body = {}
                if not isinstance(body, dict):
                    raise SourceError(f"kubeconfig {path}: {section}[{i}] ({entry['name']}): '{inner}' must be a map, "
                                      f"not {_type(body)}")
                if (section, entry["name"]) in kc.origin:
                    continue
                kc.origin[(section, entry["name"])] = path
                merged[section].append({"name": entry["name"], inner: _resolve_paths(section, dict(body), path)})
        current = doc.get("current-context")
        if current is not None and not isinstance(current, str):
            raise SourceError(f"kubeconfig {path}: 'current-context' must be a string, not {_type(current)}")
        if current and not merged.get("current-context"):
            merged["current-context"] = current
    return kc


def _read(path: str) -> dict[str, Any]:
    import yaml

    try:
        with open(path, "rb") as f:
            data = f.read(16 * 2**20 + 1)
    except OSError as e:
        raise SourceError(f"kubeconfig {path} could not be read: {e.strerror or e}") from None
    if len(data) > 16 * 2**20:
        raise SourceError(f"kubeconfig {path}: larger than 16 MiB; not a kubeconfig")
    try:
        doc = yaml.load(data, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
        problem = getattr(e, "problem", None) or str(e).splitlines()[0]
        raise SourceError(f"kubeconfig {path}: not valid YAML{where}: {problem}") from None
    except RecursionError:
        raise SourceError(f"kubeconfig {path}: nested too deeply; not a kubeconfig") from None
    if doc is None:
        return {}          # an empty file is an empty config (kubectl)
    if not isinstance(doc, dict):
        raise SourceError(f"kubeconfig {path}: must be a map (apiVersion, clusters, contexts, users), not {_type(doc)}")
    return doc


def _type(v: Any) -> str:
    return {dict: "a map", list: "a list", str: "a string", int: "a number", float: "a number", bool: "a boolean"}.get(
        type(v), type(v).__name__)


def _resolve_paths(section: str, body: dict[str, Any], path: str) -> dict[str, Any]:
    base = os.path.dirname(os.path.abspath(path))
    for key in _PATH_FIELDS.get(section, ()):
        v = body.get(key)
        if isinstance(v, str) and v and not os.path.isabs(v):
            body[key] = os.path.join(base, os.path.expanduser(v))
    ex = body.get("exec")
    if section == "users" and isinstance(ex, dict):
        cmd = ex.get("command")
        if isinstance(cmd, str) and os.sep in cmd and not os.path.isabs(cmd):
            body["exec"] = dict(ex, command=os.path.join(base, cmd))
    return body


def choose_context(kc: Kubeconfig, context: Optional[str]) -> tuple[str, dict[str, Any]]:
    """(name, context body) of ``--context`` or the current context."""
    names = kc.names("contexts")
    available = ", ".join(sorted(names)) or "none"
    if context:
        entry = kc.entry("contexts", context)
        if entry is None:
            raise SourceError(f"context {context!r} not found in kubeconfig {kc.where}", f"available contexts: {available}")
    else:
        current = kc.config.get("current-context")
        if not current:
            raise SourceError(f"kubeconfig {kc.where} has no current-context", f"pass --context (available: {available})")
        entry = kc.entry("contexts", current)
        if entry is None:
            raise SourceError(f"kubeconfig {kc.where}: current-context {current!r} is not among its contexts",
                              f"pass --context (available: {available})")
    body = entry["context"]
    for key in ("cluster", "user", "namespace"):
        if body.get(key) is not None and not isinstance(body.get(key), str):
            raise SourceError(f"kubeconfig {kc.origin[('contexts', entry['name'])]}: context {entry['name']!r}: "
                              f"'{key}' must be a string, not {_type(body.get(key))}")
    return entry["name"], body


# ------------------------------------------------------------------ exec plugins


def resolve_exec(kc: Kubeconfig, ctx_body: dict[str, Any], timeout: float) -> None:
    """If the context's user authenticates with an exec plugin, run it now (bounded
    by ``timeout``) and replace the ``exec`` stanza by the credential it returned."""
    user_name = ctx_body.get("user")
    user = kc.entry("users", user_name) if user_name else None
    if user is None or not isinstance(user["user"].get("exec"), dict):
        return
    source = kc.origin[("users", user_name)]
    cluster = kc.entry("clusters", ctx_body.get("cluster") or "")
    status = run_exec_plugin(user["user"]["exec"], cluster["cluster"] if cluster else None, timeout, source)
    creds = {k: v for k, v in user["user"].items() if k != "exec"}
    if isinstance(status.get("token"), str) and status["token"]:
        creds["token"] = status["token"]
    if isinstance(status.get("clientCertificateData"), str) and isinstance(status.get("clientKeyData"), str):
        creds["client-certificate-data"] = base64.b64encode(status["clientCertificateData"].encode()).decode()
        creds["client-key-data"] = base64.b64encode(status["clientKeyData"].encode()).decode()
    user["user"] = creds


def run_exec_plugin(ex: dict[str, Any], cluster: Optional[dict[str, Any]], timeout: float, source: str) -> dict[str, Any]:
    """Run an exec credential plugin as client-go does (KUBERNETES_EXEC_INFO, its
    env and args), within ``timeout`` seconds; returns its ExecCredential status."""
    command = ex.get("command")
    if not isinstance(command, str) or not command:
        raise SourceError(f"kubeconfig {source}: the user's exec plugin has no command")
    api_version = ex.get("apiVersion") or "client.authentication.k8s.io/v1beta1"
    args = ex.get("args") or []
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        raise SourceError(f"kubeconfig {source}: exec plugin {command}: 'args' must be a list of strings")
    env = dict(os.environ)
    for item in ex.get("env") or []:
        if isinstance(item, dict) and isinstance(item.get("name"), str):
            env[item["name"]] = str(item.get("value", ""))
    interactive = ex.get("interactiveMode") != "Never" and sys.stdin is not None and _isatty(sys.stdin)
    info: dict[str, Any] = {"apiVersion": api_version, "kind": "ExecCredential", "spec": {"interactive": interactive}}
    if ex.get("provideClusterInfo") and cluster:
        info["spec"]["cluster"] = {k: v for k, v in {"server": cluster.get("server"),
                                                     "tls-server-name": cluster.get("tls-server-name"),
                                                     "insecure-skip-tls-verify": cluster.get("insecure-skip-tls-verify"),
                                                     "certificate-authority-data": cluster.get("certificate-authority-data"),
                                                     "proxy-url": cluster.get("proxy-url")}.items() if v}
    env["KUBERNETES_EXEC_INFO"] = json.dumps(info)
    name = os.path.basename(command)
    try:
        proc = subprocess.run([command, *args], env=env, stdin=None if interactive else subprocess.DEVNULL,
                              stdout=subprocess.PIPE, stderr=None if interactive else subprocess.PIPE,
                              timeout=timeout)
    except FileNotFoundError:
        hint = ex.get("installHint")
        raise SourceError(f"exec credential plugin {command!r} (kubeconfig {source}) was not found",
                          _one_line(hint) if isinstance(hint, str) and hint.strip() else
                          "install it or put it on PATH") from None
    except PermissionError:
        raise SourceError(f"exec credential plugin {command!r} (kubeconfig {source}) is not executable") from None
    except subprocess.TimeoutExpired:
        raise SourceError(f"exec credential plugin {name} did not answer within {timeout:g}s (it was stopped)",
                          "raise --request-timeout if it waits for a login, or run it by hand to see why") from None
    except OSError as e:
        raise SourceError(f"exec credential plugin {command!r} could not be started: {e.strerror or e}") from None
    words = _one_line((proc.stderr or b"").decode("utf-8", "replace")) if proc.stderr else ""
    if proc.returncode != 0:
        raise SourceError(f"exec credential plugin {name} failed (exit {proc.returncode})"
                          + (f": {words}" if words else ""),
                          "fix the plugin's login (run it by hand), or choose another --context")
    try:
        doc = json.loads(proc.stdout)
    except ValueError:
        raise SourceError(f"exec credential plugin {name} did not print an ExecCredential (not JSON)"
                          + (f": {words}" if words else "")) from None
    status = doc.get("status") if isinstance(doc, dict) else None
    if not isinstance(status, dict):
        raise SourceError(f"exec credential plugin {name} printed no ExecCredential status")
    if doc.get("apiVersion") != api_version:
        raise SourceError(f"exec credential plugin {name} answered apiVersion {doc.get('apiVersion')!r}, "
                          f"the kubeconfig asks for {api_version!r}")
    if not status.get("token") and not (status.get("clientCertificateData") and status.get("clientKeyData")):
        raise SourceError(f"exec credential plugin {name} returned neither a token nor a client certificate")
    return status


def _isatty(f: Any) -> bool:
    try:
        return f.isatty()
    except (ValueError, AttributeError, OSError):
        return False


def _one_line(text: str, limit: int = 300) -> str:
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    line = lines[-1] if lines else ""
    return line[:limit]
