"""What ``gpuctl snapshot save`` redacts, and how: on parsed objects, and on JSON text.

Bundles get pasted into tickets, so by default they are redacted (docs/snapshots.md
"What is redacted"): env ``value``s (except the CUDA runtime variables in KEEP_ENV),
secret-looking flags in container arguments, the last-applied-configuration
annotation, ConfigMap data other than the GPU stack's own, Secret data wherever it
sits, and credentials in logs.

Two ways to the same result:

* :func:`redact_object` walks a parsed object (a dict) in place: any object, any kind.
* :func:`rewrite_item` works on an item's JSON text as the API server or a snapshot
  file holds it, and parses only the values it changes (``env``, ``command`` and
  ``args`` lists, the last-applied annotation, ``metadata.managedFields``). A
  150,000-pod cluster is re-bundled without building a dict of every pod: most of
  an object stays the bytes it was. Objects it cannot prove it handles exactly as
  :func:`redact_object` would (Secrets and ConfigMaps, Lists, keys written with
  escapes) are returned as ``None`` and take the parsed path instead;
  ``tests/test_redaction_text.py`` checks both agree.
"""

from __future__ import annotations

import json
import re
from typing import Any, Optional

import msgspec

REDACTED = "REDACTED"
# Env values kept by redaction: the NVIDIA container runtime's documented variables,
# configuration and never credentials. The CUDA checks read NVIDIA_REQUIRE_CUDA,
# CUDA_VERSION and NVIDIA_DISABLE_REQUIRE (gpuctl/knowledge/cuda.py); the others say
# which GPUs and capabilities a container asked the runtime for. Everything else
# (NVIDIA_API_KEY included) is redacted.
KEEP_ENV = frozenset({
    "NVIDIA_REQUIRE_CUDA", "CUDA_VERSION", "NVIDIA_DISABLE_REQUIRE",
    "NVIDIA_VISIBLE_DEVICES", "NVIDIA_DRIVER_CAPABILITIES", "NVIDIA_MIG_CONFIG_DEVICES",
    "NVIDIA_MIG_MONITOR_DEVICES", "CUDA_VISIBLE_DEVICES", "NVIDIA_DRIVER_VERSION", "NVIDIA_PRODUCT_NAME",
    "CUDA_DRIVER_VERSION",
})
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


# Words that make a variable, key or flag name secret-looking, matched against each
# word of the name (split at '_', '-', '.' and camelCase): a word that *ends* with one
# (HF_TOKEN, hfToken, AWSSecretKey, DB_PASSWORD), or KEY after one of _KEY_QUALIFIERS
# (OPENAI_API_KEY, access-key). Names with a word of _NOT_SECRET (max_tokens,
# secret_name, TOKEN_FILE, token_count) name something about a secret, not the secret.
_SECRET_ENDINGS = ("password", "passwd", "passphrase", "secret", "token", "credential", "credentials", "apikey",
                   "accesskey", "privatekey", "secretkey", "signature", "sessionkey")
_KEY_QUALIFIERS = frozenset({"api", "access", "private", "secret", "session", "signing", "encryption", "master",
                             "account", "storage", "client", "auth"})
_NOT_SECRET = frozenset({"name", "names", "file", "files", "path", "dir", "ref", "type", "kind", "count", "max",
                         "min", "num", "total", "limit", "limits", "length", "len", "size", "ttl", "expiry",
                         "expires", "expiration", "lifetime", "url", "uri", "endpoint", "header", "usage", "used",
                         "per", "budget", "rate", "format", "namespace", "mount", "volume", "keyref"})
# values that are not credentials even after a secret-looking name
_NOT_A_VALUE = re.compile(r"(?i)(true|false|null|none|nil|yes|no|\*+|redacted|<redacted>|\$\{?[A-Za-z_][A-Za-z0-9_]*\}?"
                          r"|\$\([A-Za-z_][A-Za-z0-9_]*\))\Z")
_WORDS = re.compile(r"[^A-Za-z0-9]+|(?<=[a-z0-9])(?=[A-Z])")


def is_secret_name(name: str) -> bool:
    """Does a variable, key or flag name look like it holds a credential?"""
    words = [w.lower() for w in _WORDS.split(name) if w]
    if not words or any(w in _NOT_SECRET for w in words):
        return False
    for i, w in enumerate(words):
        if w.endswith(_SECRET_ENDINGS):
            return True
        if w == "key" and i and words[i - 1] in _KEY_QUALIFIERS:
            return True
    return False


def _kv(m: re.Match[str]) -> str:
    if not is_secret_name(m.group("key")) or _NOT_A_VALUE.match(m.group("val")):
        return m.group(0)
    return m.group(0)[: m.start("val") - m.start(0)] + REDACTED


# Credentials in free text (logs, container arguments), most specific first.
_TOKEN_PATTERNS: list[tuple[re.Pattern[str], Any]] = [
    # PEM private keys
    (re.compile(r"-----BEGIN ([A-Z0-9 ]*)PRIVATE KEY-----.*?(-----END [A-Z0-9 ]*PRIVATE KEY-----|\Z)", re.S),
     r"-----BEGIN \1PRIVATE KEY-----" + REDACTED + r"\2"),
    # tokens recognisable by their prefix: GitHub, Hugging Face, OpenAI/Anthropic, NGC, Slack, AWS key IDs, JWTs
    (re.compile(r"(?<![A-Za-z0-9_\-])(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,}|hf_[A-Za-z0-9]{30,}"
                r"|sk-[A-Za-z0-9_\-]{20,}|nvapi-[A-Za-z0-9_\-]{20,}|xox[abposr]-[A-Za-z0-9\-]{10,}"
                r"|(?:AKIA|ASIA)[0-9A-Z]{16})\b"), REDACTED),
    (re.compile(r"(?<![A-Za-z0-9_\-])eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]+"), REDACTED),
    # Authorization / Proxy-Authorization headers: the credential after the scheme
    (re.compile(r"(?i)(\b(?:proxy-)?authorization\\?[\"']?\s*[:=]\s*\\?[\"']?)"
                r"((?:basic|bearer|digest|negotiate|token|apikey|sharedkey|aws4-hmac-sha256)\s+)?[^\s\"'\\,;]+"),
     r"\1\2" + REDACTED),
    # a bearer token elsewhere (prose such as "the bearer of" is left alone)
    (re.compile(r"(?i)(\bbearer\s+)(?:(?=[A-Za-z0-9\-._~+/]*[0-9\-._~+/])[A-Za-z0-9\-._~+/]{8,}|[A-Za-z]{20,})=*"),
     r"\1" + REDACTED),
    # user:password@ in URLs
    (re.compile(r"(?i)(?<![a-z0-9+.\-])([a-z][a-z0-9+.\-]*://)([^/\s:@'\"]+):([^/\s@'\"]+)@"), r"\1\2:" + REDACTED + "@"),
    # --password VALUE, --token=VALUE, -api-key VALUE
    (re.compile(r"(?<![A-Za-z0-9_\-])(?P<key>--?[A-Za-z][A-Za-z0-9_.\-]*)(?:=|[ \t]+)(?P<val>(?!-)[^\s\"']+)"), _kv),
    # NAME=value, NAME: value, "name": "value", name = 'value' (any secret-looking NAME, prefixes included)
    (re.compile(r"(?<![A-Za-z0-9_.\-])(?P<key>[A-Za-z_][A-Za-z0-9_.\-]*)\\?[\"']?[ \t]*[=:][ \t]*(?P<open>\\?[\"'])?"
                r"(?P<val>(?(open)[^\"'\\\n]+|[^\s\"'\\,;&=:}\])][^\s\"'\\,;&}\])]*))"), _kv),
]


def redact_log(text: str) -> str:
    """Credentials in free text replaced by REDACTED (what is redacted: docs/snapshots.md)."""
    for rx, repl in _TOKEN_PATTERNS:
        text = rx.sub(repl, text)
    return text


_FLAG = re.compile(r"--?([A-Za-z][A-Za-z0-9_.\-]*)")


def _flag_name(arg: str) -> Optional[str]:
    m = _FLAG.fullmatch(arg)
    return m.group(1) if m else None


# one argument -> (its flag is secret-looking, its redacted text): the jobs of a
# cluster repeat most arguments (--nproc_per_node=8, train.py), bounded like _MEMO
_ARG_MEMO: dict[str, tuple[bool, str]] = {}


def _arg(a: str) -> tuple[bool, str]:
    done = _ARG_MEMO.get(a)
    if done is None:
        flag = _flag_name(a)
        secret = bool(flag and is_secret_name(flag))
        done = (secret, a if secret else redact_log(a))
        if len(_ARG_MEMO) >= 20_000:
            _ARG_MEMO.clear()
        _ARG_MEMO[a] = done
    return done


def _redact_args(args: list[Any]) -> None:
    """Container command/args: ``--token VALUE`` (two items), ``--token=VALUE`` and
    credentials inside a shell line; ``--max-tokens 512`` is left alone."""
    secret_flag = False
    for i, a in enumerate(args):
        if not isinstance(a, str):
            secret_flag = False
            continue
        if secret_flag and not a.startswith("-") and not _NOT_A_VALUE.match(a):
            args[i] = REDACTED
            secret_flag = False
            continue
        secret_flag, text = _arg(a)
        if not secret_flag:
            args[i] = text


def _redact_env(env: list[Any]) -> None:
    for e in env:
        if isinstance(e, dict) and "value" in e:
            name = e.get("name")
            if not (isinstance(name, str) and name in KEEP_ENV):
                e["value"] = REDACTED


def redact_object(obj: dict[str, Any]) -> dict[str, Any]:
    """Redact in place, walking the whole object (pod specs sit in ``spec``,
    ``spec.template``, ``spec.jobTemplate.spec.template``, replicaSpecs, a
    PodTemplate's top-level ``template``, or anywhere in a kind gpuctl does not know):
    every ``env`` list, container ``command``/``args``, the last-applied annotation
    (under that key in any map), Secret data and ConfigMap data other than the GPU
    stack's own."""
    stack: list[Any] = [obj]
    pop, push = stack.pop, stack.append
    while stack:
        node = pop()
        if type(node) is list or isinstance(node, list):
            for v in node:
                t = type(v)
                if t is dict or t is list or (t is not str and isinstance(v, (dict, list))):
                    push(v)
            continue
        if not isinstance(node, dict):
            continue
        if LAST_APPLIED in node:       # metadata.annotations, or any map that copies them
            node[LAST_APPLIED] = REDACTED
        kind = node.get("kind")
        if kind == "Secret" or (kind == "ConfigMap" and not is_gpu_stack_config(node)):
            for key in ("data", "binaryData", "stringData"):
                if isinstance(node.get(key), dict):
                    node[key] = {k: REDACTED for k in node[key]}
        env = node.get("env")
        if env is not None and isinstance(env, list):
            _redact_env(env)
        for key in ("command", "args"):
            v = node.get(key)
            if v is not None and isinstance(v, list):
                _redact_args(v)
        for v in node.values():
            t = type(v)
            if t is dict or t is list or (t is not str and isinstance(v, (dict, list))):
                push(v)
    return obj


# Namespaces that belong to the GPU stack alone: those device_plugins.yaml names,
# less the shared ones (kube-system hosts the static plugin, and aws-auth too).
_SHARED_NAMESPACES = frozenset({"kube-system", "kube-public", "kube-node-lease", "default"})
# Helm charts / app names of the GPU stack (the nvidia-device-plugin chart's labels)
_GPU_STACK_APPS = frozenset({"nvidia-device-plugin", "gpu-operator", "gpu-feature-discovery", "nvidia-dcgm-exporter",
                             "dcgm-exporter", "nvidia-mig-manager"})
_GPU_STACK_CHARTS = ("nvidia-device-plugin-", "gpu-operator-")


def _gpu_stack_namespaces() -> frozenset[str]:
    from ..knowledge import catalog

    return frozenset(ns for k in catalog.device_plugin_selectors() for ns in k.namespaces
                     if ns not in _SHARED_NAMESPACES and ns != "*")


def _gpu_stack_daemonsets() -> frozenset[str]:
    from ..knowledge import catalog

    return frozenset(k.daemonset for k in catalog.device_plugin_selectors() if k.daemonset and "<" not in k.daemonset)


def is_gpu_stack_config(cm: dict[str, Any]) -> bool:
    """A ConfigMap of the GPU stack itself (device-plugin, time-slicing, MIG
    configs), whose data is kept: in a namespace that only the GPU Operator or
    device plugin uses; labelled by the nvidia-device-plugin / gpu-operator Helm
    charts; or owned by a ClusterPolicy (GPU Operator) or a device-plugin DaemonSet.
    Not because of its name: an ``mps-config`` in a team's namespace is the team's."""
    md = cm.get("metadata")
    if not isinstance(md, dict):
        return False
    if md.get("namespace") in _gpu_stack_namespaces():
        return True
    labels = md.get("labels")
    if isinstance(labels, dict):
        if labels.get("app.kubernetes.io/name") in _GPU_STACK_APPS:
            return True
        if str(labels.get("helm.sh/chart", "")).startswith(_GPU_STACK_CHARTS):
            return True
    for ref in md.get("ownerReferences") or []:
        if not isinstance(ref, dict):
            continue
        api_version, kind, name = str(ref.get("apiVersion", "")), ref.get("kind"), str(ref.get("name", ""))
        if kind in ("ClusterPolicy", "NVIDIADriver") and api_version.startswith("nvidia.com/"):
            return True
        if kind == "DaemonSet" and (name in _gpu_stack_daemonsets() or name.endswith("-nvidia-device-plugin")):
            return True
    return False


def strip_managed(obj: dict[str, Any]) -> dict[str, Any]:
    md = obj.get("metadata")
    if isinstance(md, dict):
        md.pop("managedFields", None)
    return obj


# ------------------------------------------------------------------ on JSON text

# The keys the text path looks at, found with str.find (a regex scan of every object
# costs more than everything else the path does): the values it rewrites, and "kind",
# whose value Secret or ConfigMap (at any depth) sends the object to the parsed path.
_KIND = '"kind"'
_KEYS = ('"env"', '"command"', '"args"', '"' + LAST_APPLIED + '"', _KIND)
_DATA_KINDS = ('"Secret"', '"ConfigMap"')
_WS = " \t\r\n"
# Escapes that could spell a key _KEYS would not find (a letter written as \u00XX, or
# "\/" in the annotation's name) also send an object to the parsed path.
_ESCAPED_LETTER = re.compile(r"\\u00(?:4[1-9A-Fa-f]|5[0-9Aa]|6[1-9A-Fa-f]|7[0-9Aa])")
_MANAGED = b'"managedFields"'
_REDACTED_JSON = json.dumps(REDACTED)
_json_value = json.JSONDecoder().raw_decode
_top_dec = msgspec.json.Decoder(dict[str, msgspec.Raw])
_enc = msgspec.json.Encoder()
# value text -> redacted text, per key: the pods of one template share their env and
# arguments, so each distinct list is parsed and redacted once (bounded)
_MEMO: dict[tuple[str, str], str] = {}
_MEMO_MAX = 20_000


def _redacted_list(key: str, text: str) -> Optional[str]:
    """The redacted text of one ``env``/``command``/``args`` list, or None when the
    value is not a list (nothing to redact at this key; what it holds is scanned)."""
    memo_key = (key, text)
    done = _MEMO.get(memo_key)
    if done is not None:
        return done
    value = json.loads(text)
    if not isinstance(value, list):
        return None
    if key == "env":
        _redact_env(value)
    else:
        _redact_args(value)
    redact_object(value)           # whatever sits inside the list, as the walk would
    done = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    if len(_MEMO) >= _MEMO_MAX:
        _MEMO.clear()
    _MEMO[memo_key] = done
    return done


def _value_start(text: str, at: int, key: str) -> int:
    """Where the value of the key ``key`` found at ``at`` starts, or -1 when the text
    there is not a key: a key follows '{' or ',' and is followed by ':' (inside a JSON
    string every '"' is escaped, so string content never passes)."""
    i = at - 1
    while i >= 0 and text[i] in _WS:
        i -= 1
    if i < 0 or text[i] not in "{,":
        return -1
    j, n = at + len(key), len(text)
    while j < n and text[j] in _WS:
        j += 1
    if j >= n or text[j] != ":":
        return -1
    j += 1
    while j < n and text[j] in _WS:
        j += 1
    return j


def redact_text(text: str) -> Optional[str]:
    """``text`` (one object's JSON) as :func:`redact_object` would leave it, or None
    when only the parsed path can be sure: a Secret or ConfigMap inside, or a key
    that an escape could hide."""
    if "\\" in text and ("\\/" in text or ("\\u00" in text and _ESCAPED_LETTER.search(text))):
        return None
    hits = []
    for key in _KEYS:
        i = text.find(key)
        while i >= 0:
            hits.append((i, key))
            i = text.find(key, i + len(key))
    if not hits:
        return text
    hits.sort()
    out: list[str] = []
    emitted = 0
    for at, key in hits:
        if at < emitted:
            continue                  # inside a value already rewritten
        start = _value_start(text, at, key)
        if start < 0:
            continue
        if key is _KIND:
            if text.startswith(_DATA_KINDS, start):
                return None
            continue
        name = key[1:-1]
        # a list seen before (the pods of one template share most), known by its text up
        # to the first ']': a complete JSON value is never the prefix of another, so a
        # remembered list that the text starts with is the whole value
        close = text.find("]", start) + 1 if text.startswith("[", start) and name != LAST_APPLIED else 0
        replacement: Optional[str] = _MEMO.get((name, text[start:close])) if close else None
        if replacement is not None:
            end = close
        else:
            try:
                _, end = _json_value(text, start)
            except ValueError:
                return None
            replacement = _REDACTED_JSON if name == LAST_APPLIED else _redacted_list(name, text[start:end])
        if replacement is None:       # not a list: what it holds is looked at by the later hits
            continue
        out.append(text[emitted:start])
        out.append(replacement)
        emitted = end
    if not out:
        return text
    out.append(text[emitted:])
    return "".join(out)


def rewrite_item(raw: Any, kind: str, api_version: Optional[str] = None, redact: bool = True
                 ) -> Optional[tuple[str, str]]:
    """(kind, text) of one List item (its text, or its top-level fields as
    ``dict[str, msgspec.Raw]``) as the bundle keeps it: ``kind`` (and
    ``api_version``) filled in when the item lacks them, ``metadata.managedFields``
    dropped, redacted when ``redact``. None: take the parsed path (an item that is not
    an object, a List, a Secret or ConfigMap, text that is not UTF-8, or an escape
    that only parsing reads right). The item's own kind wins over ``kind``."""
    if isinstance(raw, dict):
        top = raw
    else:
        try:
            top = _top_dec.decode(raw)
        except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
            return None
    changed = False
    if "kind" in top:
        own = msgspec.json.decode(top["kind"])
        if not isinstance(own, str) or own.endswith("List") or own in ("Secret", "ConfigMap"):
            return None
        kind = own or kind
    else:
        top = {"kind": msgspec.Raw(_enc.encode(kind)), **top}
        changed = True
    if api_version is not None and "apiVersion" not in top:
        top = {"apiVersion": msgspec.Raw(_enc.encode(api_version)), **top}
        changed = True
    md = top.get("metadata")
    if md is not None and _MANAGED in bytes(md):
        try:
            meta = _top_dec.decode(md)
        except (msgspec.DecodeError, msgspec.ValidationError):
            return None
        if meta.pop("managedFields", None) is not None:
            top["metadata"] = msgspec.Raw(_enc.encode(meta))
            changed = True
    data = _enc.encode(top) if changed or isinstance(raw, dict) else raw
    try:
        text = bytes(data).decode("utf-8")
    except UnicodeDecodeError:
        return None
    if not redact:
        return kind, text
    redacted = redact_text(text)
    return None if redacted is None else (kind, redacted)
