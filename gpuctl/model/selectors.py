"""Label selectors, as the API server parses and matches them
(k8s.io/apimachinery/pkg/labels: equality- and set-based requirements, with the
apiserver's validation and 400 texts). Stdlib-only: gpuctl's offline `-l` filter
and the local API server the tests start both use it."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Mapping


class SelectorError(ValueError):
    """A label or field selector the real apiserver would reject with 400."""


_NAME_RE = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_DNS1123_SUBDOMAIN_RE = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_NAME_HINT = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
    "with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
    "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)


def _validate_label_key(key: str) -> None:
    prefix, _, name = key.rpartition("/")
    if "/" in key and not prefix:
        raise SelectorError(
            f'unable to parse requirement: <nil>: Invalid value: "{key}": prefix part must be non-empty')
    if prefix and (len(prefix) > 253 or not _DNS1123_SUBDOMAIN_RE.fullmatch(prefix)):
        raise SelectorError(
            f'unable to parse requirement: <nil>: Invalid value: "{key}": prefix part a lowercase RFC 1123 subdomain '
            "must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an "
            "alphanumeric character"
        )
    if not name or len(name) > 63 or not _NAME_RE.fullmatch(name):
        raise SelectorError(f'unable to parse requirement: <nil>: Invalid value: "{key}": {_NAME_HINT}')


def _validate_label_value(value: str) -> None:
    if value and (len(value) > 63 or not _NAME_RE.fullmatch(value)):
        raise SelectorError(
            f'unable to parse requirement: values[0][key]: Invalid value: "{value}": a valid label must be an empty '
            "string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
            "alphanumeric character"
        )


@dataclass(frozen=True)
class _LabelRequirement:
    """One requirement of a label selector (``labels.Requirement``)."""

    key: str
    op: str  # exists, !, =, !=, in, notin, >, <
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        has = self.key in labels
        value = labels.get(self.key)
        if self.op == "exists":
            return has
        if self.op == "!":
            return not has
        if self.op == "=":
            return has and value == self.values[0]
        if self.op == "!=":
            return not has or value != self.values[0]
        if self.op == "in":
            return has and value in self.values
        if self.op == "notin":
            return not has or value not in self.values
        if not has:  # > and <: numeric comparison, key must exist
            return False
        try:
            got = int(value)  # type: ignore[arg-type]
        except ValueError:
            return False
        want = int(self.values[0])
        return got > want if self.op == ">" else got < want


_LABEL_PUNCT = "!=<>(),"


def _lex_labels(text: str) -> list[tuple[str, str]]:
    """Tokens as (type, literal); types: ID, IN, NOTIN, OP, '(', ')', ',', '!'."""
    tokens: list[tuple[str, str]] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c.isspace():
            i += 1
        elif text.startswith(("!=", "=="), i):
            tokens.append(("OP", text[i : i + 2]))
            i += 2
        elif c in "=<>":
            tokens.append(("OP", c))
            i += 1
        elif c in "!(),":
            tokens.append((c, c))
            i += 1
        else:
            j = i
            while j < n and not text[j].isspace() and text[j] not in _LABEL_PUNCT:
                j += 1
            word = text[i:j]
            tokens.append(({"in": "IN", "notin": "NOTIN"}.get(word, "ID"), word))
            i = j
    return tokens


def parse_label_selector(text: str) -> list[_LabelRequirement]:
    """Parse a ``labelSelector`` (equality- and set-based); raise SelectorError."""
    tokens = _lex_labels(text or "")
    if not tokens:
        return []
    parser = _LabelParser(tokens)
    reqs: list[_LabelRequirement] = []
    while True:
        reqs.append(parser.requirement())
        sep_kind, sep = parser.take()
        if sep_kind == "EOS":
            return reqs
        if sep_kind != ",":
            raise SelectorError(f"found '{sep}', expected: ',' or 'end of string'")


class _LabelParser:
    """apimachinery's labels.Parser over the lexer's tokens, one requirement at a time."""

    def __init__(self, tokens: list[tuple[str, str]]) -> None:
        self.tokens, self.pos = tokens, 0

    def peek(self) -> tuple[str, str]:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else ("EOS", "")

    def take(self) -> tuple[str, str]:
        tok = self.peek()
        self.pos += 1
        return tok

    def value_token(self, expected: str) -> str:
        kind, lit = self.peek()
        if kind in ("ID", "IN", "NOTIN"):  # keywords are plain values in value position
            self.take()
            return lit
        raise SelectorError(f"found '{lit}', expected: {expected}")

    def requirement(self) -> _LabelRequirement:
        kind, lit = self.take()
        if kind == "!":
            key_kind, key = self.take()
            if key_kind != "ID":
                raise SelectorError(f"found '{key}', expected: identifier after '!'")
            _validate_label_key(key)
            return _LabelRequirement(key, "!")
        if kind != "ID":
            raise SelectorError(f"found '{lit}', expected: !, identifier")
        key = lit
        _validate_label_key(key)
        op_kind, op = self.peek()
        if op_kind in ("EOS", ","):
            return _LabelRequirement(key, "exists")
        if op_kind == "OP" and op in ("=", "==", "!="):
            self.take()
            value = "" if self.peek()[0] in ("EOS", ",") else self.value_token("identifier")
            _validate_label_value(value)
            return _LabelRequirement(key, "!=" if op == "!=" else "=", (value,))
        if op_kind in ("IN", "NOTIN"):
            self.take()
            return _LabelRequirement(key, op_kind.lower(), self.value_set())
        if op_kind == "OP" and op in ("<", ">"):
            self.take()
            value = self.value_token("integer")
            if not re.fullmatch(r"-?\d+", value):
                raise SelectorError(
                    f"unable to parse requirement: values[0]: Invalid value: \"{value}\": "
                    "for 'Gt', 'Lt' operators, the value must be an integer"
                )
            return _LabelRequirement(key, op, (value,))
        raise SelectorError(f"found '{op}', expected: =, !=, ==, in, notin")

    def value_set(self) -> tuple[str, ...]:
        """``(a, b, c)`` after in/notin: never empty, each a valid label value."""
        if self.take()[0] != "(":
            raise SelectorError(f"found '{self.peek()[1]}', expected: '('")
        values: list[str] = []
        while True:
            if self.peek()[0] == ")":
                self.take()
                break
            values.append(self.value_token("identifier"))
            sep = self.take()
            if sep[0] == ")":
                break
            if sep[0] != ",":
                raise SelectorError(f"found '{sep[1]}', expected: ',' or ')'")
        if not values:
            raise SelectorError(
                "unable to parse requirement: values: Invalid value: []: "
                "for 'in', 'notin' operators, values set can't be empty"
            )
        for v in values:
            _validate_label_value(v)
        return tuple(values)
