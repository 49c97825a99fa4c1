"""The DRA CEL environment: compile and evaluate DeviceClass / ResourceClaim
selectors the way Kubernetes does, with cel-python (``celpy``) as the evaluator.

What Kubernetes does (k8s.io/dynamic-resource-allocation/cel/compile.go,
https://github.com/kubernetes/kubernetes/blob/master/staging/src/k8s.io/dynamic-resource-allocation/cel/compile.go):

* one variable, ``device``, with ``driver`` (string), ``attributes`` and
  ``capacity``: maps from a domain to maps from an identifier to a value. An
  attribute without a domain prefix lives under the driver's name as domain.
  Looking up a domain that no attribute has gives an empty map (``mapper.Find``);
  looking up a missing identifier in a domain is the runtime error
  ``no such key: NAME``;
* attribute values are int, bool, string or a semantic version (``semver``);
  capacities are ``resource.Quantity`` values (``quantity("40Gi")``, compared
  with ``compareTo``/``isLessThan``/``isGreaterThan``, not with ``<``);
* the expression must type-check (undeclared names, no matching overload are
  compile errors) and evaluate to ``bool`` or the unknown type ("must evaluate
  to bool or the unknown type, not string");
* ``==`` between values of different types is ``false`` at runtime (CEL's
  heterogeneous equality), ordering them is the error ``no such overload``.

cel-python has no type checker, so :func:`compile_selector` adds a small one
for this environment; it rejects what cel-go's checker rejects for the common
cases (syntax, undeclared identifiers, mismatched operand types, a non-bool
result) and leaves the unknown type (``dyn``) alone, as cel-go does. What
cel-python cannot run (``cel.bind``, optional ``.?`` syntax) is reported as
*unsupported here*, never as invalid.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Optional

import celpy
from celpy import celtypes
from celpy.evaluation import CELEvalError

from .dra import AttrValue, Quantity, Semver, split_qualified

# ---------------------------------------------------------------- value types


def _err(message: str) -> CELEvalError:
    return CELEvalError(message, TypeError, None)


def _cmp(a: Any, b: Any) -> int:
    if isinstance(a, Quantity) and isinstance(b, Quantity):
        return (a.value > b.value) - (a.value < b.value)
    if isinstance(a, Semver) and isinstance(b, Semver):
        return (a.key() > b.key()) - (a.key() < b.key())
    raise TypeError("no such overload")


def _guard(fn):
    def call(*args: Any) -> Any:
        for a in args:
            if isinstance(a, CELEvalError):
                return a
        try:
            return fn(*args)
        except (TypeError, ValueError) as exc:
            return _err(str(exc) or "no such overload")
    return call


def _quantity(text: Any) -> Quantity:
    if not isinstance(text, str):
        raise TypeError("no such overload")
    try:
        return Quantity(text)
    except ValueError:
        raise ValueError(f"quantities must match the regular expression: {text}") from None


def _is_quantity(text: Any) -> celtypes.BoolType:
    try:
        _quantity(text)
        return celtypes.BoolType(True)
    except (TypeError, ValueError):
        return celtypes.BoolType(False)


def _semver(text: Any, normalize: Any = False) -> Semver:
    if not isinstance(text, str):
        raise TypeError("no such overload")
    return Semver(text)


def _is_semver(text: Any, normalize: Any = False) -> celtypes.BoolType:
    try:
        _semver(text)
        return celtypes.BoolType(True)
    except (TypeError, ValueError):
        return celtypes.BoolType(False)


def _numeric(v: Any) -> bool:
    return isinstance(v, (celtypes.IntType, celtypes.UintType, celtypes.DoubleType)) and not isinstance(v, celtypes.BoolType)


def _hetero_eq(a: Any, b: Any) -> Any:
    """CEL heterogeneous equality: values of different types are not equal."""
    if isinstance(a, CELEvalError):
        return a
    if isinstance(b, CELEvalError):
        return b
    if _numeric(a) and _numeric(b):
        return celtypes.BoolType(float(a) == float(b))
    if isinstance(a, celtypes.BoolType) != isinstance(b, celtypes.BoolType):
        return celtypes.BoolType(False)
    if type(a) is not type(b) and not (isinstance(a, celtypes.MapType) and isinstance(b, celtypes.MapType)):
        return celtypes.BoolType(False)
    return celtypes.BoolType(a == b)


def _hetero_ne(a: Any, b: Any) -> Any:
    r = _hetero_eq(a, b)
    return r if isinstance(r, CELEvalError) else celtypes.BoolType(not r)


def _ordered(op):
    """CEL ordering: numbers with numbers (cross-type numeric comparison is on in
    Kubernetes), bool with bool, string with string, bytes with bytes; else an error."""
    def compare(a: Any, b: Any) -> Any:
        if isinstance(a, CELEvalError):
            return a
        if isinstance(b, CELEvalError):
            return b
        if _numeric(a) and _numeric(b):
            return celtypes.BoolType(op(float(a), float(b)))
        for kind in (celtypes.BoolType, celtypes.StringType, celtypes.BytesType,
                     celtypes.TimestampType, celtypes.DurationType):
            if isinstance(a, kind) and isinstance(b, kind):
                return celtypes.BoolType(op(a, b))
        return _err("no such overload")
    return compare


def _add(a: Any, b: Any) -> Any:
    if isinstance(a, Quantity):
        other = b if isinstance(b, Quantity) else Quantity(str(int(b))) if isinstance(b, celtypes.IntType) else None
        if other is None:
            raise TypeError("no such overload")
        return Quantity(_fmt(a.value + other.value))
    raise TypeError("no such overload")


def _sub(a: Any, b: Any) -> Any:
    if isinstance(a, Quantity):
        other = b if isinstance(b, Quantity) else Quantity(str(int(b))) if isinstance(b, celtypes.IntType) else None
        if other is None:
            raise TypeError("no such overload")
        return Quantity(_fmt(a.value - other.value))
    raise TypeError("no such overload")


def _fmt(v: float) -> str:
    return str(int(v)) if float(v).is_integer() else repr(v)


def _version_part(i: int):
    def part(v: Any) -> celtypes.IntType:
        if not isinstance(v, Semver):
            raise TypeError("no such overload")
        return celtypes.IntType(v.parts[i])
    return part


def _as_integer(q: Any) -> celtypes.IntType:
    if not isinstance(q, Quantity):
        raise TypeError("no such overload")
    if not float(q.value).is_integer():
        raise ValueError("cannot convert value to integer")
    return celtypes.IntType(int(q.value))


def _string_fn(fn):
    def call(s: Any, *rest: Any) -> Any:
        if not isinstance(s, str):
            raise TypeError("no such overload")
        return fn(s, *rest)
    return call


FUNCTIONS: dict[str, Any] = {
    "quantity": _guard(_quantity), "isQuantity": _guard(_is_quantity),
    "semver": _guard(_semver), "isSemver": _guard(_is_semver),
    "compareTo": _guard(lambda a, b: celtypes.IntType(_cmp(a, b))),
    "isLessThan": _guard(lambda a, b: celtypes.BoolType(_cmp(a, b) < 0)),
    "isGreaterThan": _guard(lambda a, b: celtypes.BoolType(_cmp(a, b) > 0)),
    "add": _guard(_add), "sub": _guard(_sub),
    "asInteger": _guard(_as_integer),
    "asApproximateFloat": _guard(lambda q: celtypes.DoubleType(q.value) if isinstance(q, Quantity) else _err("no such overload")),
    "sign": _guard(lambda q: celtypes.IntType((q.value > 0) - (q.value < 0)) if isinstance(q, Quantity) else _err("no such overload")),
    "isInteger": _guard(lambda q: celtypes.BoolType(float(q.value).is_integer()) if isinstance(q, Quantity) else _err("no such overload")),
    "major": _guard(_version_part(0)), "minor": _guard(_version_part(1)), "patch": _guard(_version_part(2)),
    "lowerAscii": _guard(_string_fn(lambda s: celtypes.StringType(s.lower()))),
    "upperAscii": _guard(_string_fn(lambda s: celtypes.StringType(s.upper()))),
    "trim": _guard(_string_fn(lambda s: celtypes.StringType(s.strip()))),
    "_==_": _hetero_eq, "_!=_": _hetero_ne,
    "_<_": _ordered(lambda a, b: a < b), "_<=_": _ordered(lambda a, b: a <= b),
    "_>_": _ordered(lambda a, b: a > b), "_>=_": _ordered(lambda a, b: a >= b),
}

# ---------------------------------------------------------------- the device variable


class _DomainMap(celtypes.MapType):
    """``device.attributes`` / ``device.capacity``: a missing domain is an empty map."""

    def __getitem__(self, key: Any) -> Any:
        try:
            return super().__getitem__(key)
        except KeyError:
            return celtypes.MapType()


def _cel_value(v: AttrValue) -> Any:
    if isinstance(v, bool):
        return celtypes.BoolType(v)
    if isinstance(v, int):
        return celtypes.IntType(v)
    if isinstance(v, str):
        return celtypes.StringType(v)
    return v


def activation(driver: str, attributes: dict[str, AttrValue], capacity: dict[str, str],
               allow_multiple: bool = False) -> dict[str, Any]:
    """The ``device`` variable for one device, as DeviceMatches builds it
    (``allowMultipleAllocations``: DRAConsumableCapacity, Kubernetes 1.34+)."""
    attrs: dict[Any, Any] = {}
    # a fully qualified name wins over the same bare name (as model/dra.py Device.attr reads it)
    for name, value in sorted(attributes.items(), key=lambda kv: "/" in kv[0]):
        dom, ident = split_qualified(name, driver)
        attrs.setdefault(celtypes.StringType(dom), {})[celtypes.StringType(ident)] = _cel_value(value)
    caps: dict[Any, Any] = {}
    for name, text in sorted(capacity.items(), key=lambda kv: "/" in kv[0]):
        dom, ident = split_qualified(name, driver)
        try:
            q = Quantity(text)
        except ValueError:
            continue
        caps.setdefault(celtypes.StringType(dom), {})[celtypes.StringType(ident)] = q
    return {"device": celtypes.MapType({
        celtypes.StringType("driver"): celtypes.StringType(driver),
        celtypes.StringType("attributes"): _DomainMap({k: celtypes.MapType(v) for k, v in attrs.items()}),
        celtypes.StringType("capacity"): _DomainMap({k: celtypes.MapType(v) for k, v in caps.items()}),
        celtypes.StringType("allowMultipleAllocations"): celtypes.BoolType(allow_multiple),
    })}


# ---------------------------------------------------------------- compile


@dataclass(frozen=True)
class Compiled:
    expression: str
    error: Optional[str] = None         # the API server / scheduler would reject it: its text
    unsupported: Optional[str] = None   # valid CEL that cel-python cannot run here
    program: Any = None

    @property
    def ok(self) -> bool:
        return self.error is None and self.unsupported is None


class _CheckError(Exception):
    def __init__(self, message: str, node: Any = None) -> None:
        super().__init__(message)
        self.node = node


_NUM = ("int", "uint", "double")
_FIELDS = {"device": {"driver": "string", "attributes": "attrs", "capacity": "caps", "allowMultipleAllocations": "bool"}}
_GLOBAL = {  # name: (arity set, argument type or None, result)
    "quantity": ({1}, "string", "Quantity"), "isQuantity": ({1}, "string", "bool"),
    "semver": ({1, 2}, "string", "Semver"), "isSemver": ({1, 2}, "string", "bool"),
    "size": ({1}, None, "int"), "int": ({1}, None, "int"), "uint": ({1}, None, "uint"),
    "double": ({1}, None, "double"), "string": ({1}, None, "string"), "bool": ({1}, None, "bool"),
    "bytes": ({1}, None, "bytes"), "dyn": ({1}, None, "dyn"), "type": ({1}, None, "type"),
}
_METHODS = {  # receiver: {name: (arity, argument type or None, result)}
    "Quantity": {"compareTo": (1, "Quantity", "int"), "isLessThan": (1, "Quantity", "bool"),
                 "isGreaterThan": (1, "Quantity", "bool"), "add": (1, None, "Quantity"), "sub": (1, None, "Quantity"),
                 "asInteger": (0, None, "int"), "asApproximateFloat": (0, None, "double"), "sign": (0, None, "int"),
                 "isInteger": (0, None, "bool")},
    "Semver": {"compareTo": (1, "Semver", "int"), "isLessThan": (1, "Semver", "bool"),
               "isGreaterThan": (1, "Semver", "bool"), "major": (0, None, "int"), "minor": (0, None, "int"),
               "patch": (0, None, "int")},
    "string": {"startsWith": (1, "string", "bool"), "endsWith": (1, "string", "bool"),
               "contains": (1, "string", "bool"), "matches": (1, "string", "bool"), "size": (0, None, "int"),
               "lowerAscii": (0, None, "string"), "upperAscii": (0, None, "string"), "trim": (0, None, "string")},
    "list": {"size": (0, None, "int"), "contains": (1, None, "bool")},
    "map": {"size": (0, None, "int")},
}
_MACROS = {"all": "bool", "exists": "bool", "exists_one": "bool", "map": "list", "filter": "list"}
_MAPLIKE = ("map", "attrs", "attrdomain", "caps", "capdomain")
_OPS = {"relation_lt": "_<_", "relation_le": "_<=_", "relation_gt": "_>_", "relation_ge": "_>=_",
        "relation_eq": "_==_", "relation_ne": "_!=_", "relation_in": "@in",
        "addition_add": "_+_", "addition_sub": "_-_", "multiplication_mul": "_*_",
        "multiplication_div": "_/_", "multiplication_mod": "_%_"}


def _public(t: str) -> str:
    return {"attrs": "map(string, map(string, dyn))", "attrdomain": "map(string, dyn)",
            "caps": "map(string, map(string, Quantity))", "capdomain": "map(string, Quantity)",
            "device": "kubernetes.DRADevice"}.get(t, t)


def _no_overload(op: str, *types: str) -> _CheckError:
    return _CheckError(f"found no matching overload for '{op}' applied to '({', '.join(_public(t) for t in types)})'")


class _Checker:
    """Types of a celpy parse tree in the DRA environment (a subset of cel-go's checker)."""

    def __init__(self) -> None:
        self.scopes: list[set[str]] = []

    def kids(self, node: Any) -> list[Any]:
        return [c for c in node.children if c is not None]

    def check(self, node: Any) -> str:
        fn = getattr(self, "t_" + node.data, None)
        if fn is None:
            kids = self.kids(node)
            if len(kids) == 1 and hasattr(kids[0], "data"):
                return self.check(kids[0])
            raise _CheckError(f"unsupported syntax ({node.data})", node)
        return fn(node)

    def t_expr(self, node: Any) -> str:
        k = self.kids(node)
        if len(k) == 1:
            return self.check(k[0])
        cond, a, b = (self.check(x) for x in k)
        if cond not in ("bool", "dyn"):
            raise _no_overload("_?_:_", cond, a, b)
        if a == b:
            return a
        if "dyn" in (a, b) or (a in _MAPLIKE and b in _MAPLIKE):
            return "dyn"
        raise _no_overload("_?_:_", cond, a, b)

    def _logic(self, node: Any, op: str) -> str:
        k = self.kids(node)
        if len(k) == 1:
            return self.check(k[0])
        a, b = self.check(k[0]), self.check(k[1])
        if a not in ("bool", "dyn") or b not in ("bool", "dyn"):
            raise _no_overload(op, a, b)
        return "bool"

    def t_conditionalor(self, node: Any) -> str:
        return self._logic(node, "_||_")

    def t_conditionaland(self, node: Any) -> str:
        return self._logic(node, "_&&_")

    def _binary(self, node: Any) -> str:
        k = self.kids(node)
        if len(k) == 1:
            return self.check(k[0])
        optree, right = k
        op = _OPS[optree.data]
        a, b = self.check(self.kids(optree)[0]), self.check(right)
        if op == "@in":
            if b not in ("list", "dyn", *_MAPLIKE):
                raise _no_overload("@in", a, b)
            return "bool"
        if op in ("_==_", "_!=_"):
            if "dyn" in (a, b) or a == b or (a in _MAPLIKE and b in _MAPLIKE) or "null" in (a, b) and (a in _MAPLIKE + ("list",) or b in _MAPLIKE + ("list",)):
                return "bool"
            raise _no_overload(op, a, b)
        if op in ("_<_", "_<=_", "_>_", "_>=_"):
            if "dyn" in (a, b):
                ok = all(t in ("dyn", *_NUM, "string", "bytes", "bool", "timestamp", "duration") for t in (a, b))
            else:
                ok = (a in _NUM and b in _NUM) or (a == b and a in ("string", "bytes", "bool", "timestamp", "duration"))
            if not ok:
                raise _no_overload(op, a, b)
            return "bool"
        if "dyn" in (a, b):
            other = b if a == "dyn" else a
            if other not in ("dyn", *_NUM, "string", "bytes", "list") or (op != "_+_" and other not in ("dyn", *_NUM)):
                raise _no_overload(op, a, b)
            return "dyn"
        if a != b or a not in _NUM + (("string", "bytes", "list") if op == "_+_" else ()):
            raise _no_overload(op, a, b)
        return a

    t_relation = _binary
    t_addition = _binary
    t_multiplication = _binary

    def t_unary(self, node: Any) -> str:
        k = self.kids(node)
        if len(k) == 1:
            return self.check(k[0])
        t = self.check(k[1])
        if k[0].data == "unary_not":
            if t not in ("bool", "dyn"):
                raise _no_overload("!_", t)
            return "bool"
        if t not in ("int", "double", "dyn"):
            raise _no_overload("-_", t)
        return t

    def t_member_dot(self, node: Any) -> str:
        target, name = self.kids(node)
        t = self.check(target)
        return self._select(t, str(name), node)

    def _select(self, t: str, name: str, node: Any) -> str:
        if t == "device":
            if name not in _FIELDS["device"]:
                raise _CheckError(f"undefined field '{name}'", node)
            return _FIELDS["device"][name]
        return {"attrs": "attrdomain", "attrdomain": "dyn", "caps": "capdomain", "capdomain": "Quantity",
                "map": "dyn", "dyn": "dyn"}.get(t) or self._no_select(t, node)

    def _no_select(self, t: str, node: Any) -> str:
        raise _CheckError(f"type '{_public(t)}' does not support field selection", node)

    def t_member_index(self, node: Any) -> str:
        target, index = self.kids(node)
        t, i = self.check(target), self.check(index)
        if t in ("attrs", "caps", "attrdomain", "capdomain"):
            if i not in ("string", "dyn"):
                raise _no_overload("_[_]", t, i)
            return self._select(t, "", node)
        if t == "list":
            if i not in ("int", "uint", "dyn"):
                raise _no_overload("_[_]", t, i)
            return "dyn"
        if t in ("map", "dyn"):
            return "dyn"
        raise _no_overload("_[_]", t, i)

    def _args(self, node: Optional[Any]) -> list[Any]:
        return self.kids(node) if node is not None else []

    def t_member_dot_arg(self, node: Any) -> str:
        kids = node.children
        target, name, args = kids[0], str(kids[1]), self._args(kids[2] if len(kids) > 2 else None)
        if name in _MACROS and len(args) in (2, 3):
            t = self.check(target)
            if t not in ("list", "dyn", *_MAPLIKE):
                raise _no_overload(name, t)
            var = self._ident_name(args[0])
            if var is None:
                raise _CheckError(f"{name}() variable name must be a simple identifier", node)
            self.scopes.append({var})
            try:
                for a in args[1:]:
                    r = self.check(a)
                    if name in ("all", "exists", "exists_one") and r not in ("bool", "dyn"):
                        raise _no_overload("_&&_" if name == "all" else "_||_", r, "bool")
            finally:
                self.scopes.pop()
            return _MACROS[name]
        if name == "bind" and self._ident_name(target) == "cel" and not self._bound("cel"):
            if len(args) != 3 or self._ident_name(args[0]) is None:
                raise _CheckError("cel.bind() variable name must be a simple identifier", node)
            self.check(args[1])
            self.scopes.append({self._ident_name(args[0])})
            try:
                return self.check(args[2])
            finally:
                self.scopes.pop()
        t = self.check(target)
        types = [self.check(a) for a in args]
        key = "string" if t == "string" else t if t in _METHODS else "map" if t in _MAPLIKE else None
        if t == "dyn":
            sigs = [m[name] for m in _METHODS.values() if name in m]
            if not sigs:
                raise _CheckError(f"undeclared reference to '{name}' (in container '')", node)
            results = {s[2] for s in sigs if s[0] == len(types)}
            if not results:
                raise _no_overload(name, t, *types)
            return results.pop() if len(results) == 1 else "dyn"
        if key is None or name not in _METHODS.get(key, {}):
            if not any(name in m for m in _METHODS.values()):
                raise _CheckError(f"undeclared reference to '{name}' (in container '')", node)
            raise _no_overload(name, t, *types)
        arity, argtype, result = _METHODS[key][name]
        if len(types) != arity or (argtype and types and types[0] not in (argtype, "dyn")):
            raise _no_overload(name, t, *types)
        return result

    def _ident_name(self, node: Any) -> Optional[str]:
        """The name if this subtree is a bare identifier."""
        while hasattr(node, "data") and len(self.kids(node)) == 1 and node.data != "ident":
            node = self.kids(node)[0]
        if hasattr(node, "data") and node.data == "ident":
            return str(self.kids(node)[0])
        return None

    def _bound(self, name: str) -> bool:
        return any(name in s for s in self.scopes)

    def t_primary(self, node: Any) -> str:
        return self.check(self.kids(node)[0])

    def t_member(self, node: Any) -> str:
        return self.check(self.kids(node)[0])

    def t_ident(self, node: Any) -> str:
        name = str(self.kids(node)[0])
        if self._bound(name):
            return "dyn"
        if name == "device":
            return "device"
        if name in ("int", "uint", "double", "string", "bool", "bytes", "list", "map", "null_type", "type"):
            return "type"
        raise _CheckError(f"undeclared reference to '{name}' (in container '')", node)

    def t_ident_arg(self, node: Any) -> str:
        kids = node.children
        name, args = str(kids[0]), self._args(kids[1] if len(kids) > 1 else None)
        if name == "has":
            if len(args) != 1 or not self._is_select(args[0]):
                raise _CheckError("invalid argument to has() macro", node)
            self.check(args[0])
            return "bool"
        if name not in _GLOBAL:
            raise _CheckError(f"undeclared reference to '{name}' (in container '')", node)
        arity, argtype, result = _GLOBAL[name]
        types = [self.check(a) for a in args]
        if len(types) not in arity or (argtype and types[0] not in (argtype, "dyn")):
            raise _no_overload(name, *types)
        return result

    def _is_select(self, node: Any) -> bool:
        while hasattr(node, "data") and node.data not in ("member_dot",) and len(self.kids(node)) == 1:
            node = self.kids(node)[0]
        return hasattr(node, "data") and node.data == "member_dot"

    def t_paren_expr(self, node: Any) -> str:
        return self.check(self.kids(node)[0])

    def t_list_lit(self, node: Any) -> str:
        for e in self._args(self.kids(node)[0] if self.kids(node) else None):
            self.check(e)
        return "list"

    def t_map_lit(self, node: Any) -> str:
        for e in self._args(self.kids(node)[0] if self.kids(node) else None):
            self.check(e)
        return "map"

    def t_literal(self, node: Any) -> str:
        tok = self.kids(node)[0]
        return {"INT_LIT": "int", "UINT_LIT": "uint", "FLOAT_LIT": "double", "STRING_LIT": "string",
                "MLSTRING_LIT": "string", "BYTES_LIT": "bytes", "BOOL_LIT": "bool", "NULL_LIT": "null"}[tok.type]

    def t_member_object(self, node: Any) -> str:
        raise _CheckError("undeclared reference to message type (in container '')", node)

    def t_dot_ident(self, node: Any) -> str:
        raise _CheckError(f"undeclared reference to '{self.kids(node)[0]}' (in container '')", node)

    t_dot_ident_arg = t_dot_ident


def _position(node: Any) -> tuple[int, int]:
    meta = getattr(node, "meta", None)
    if meta is not None and not getattr(meta, "empty", True):
        return meta.line, meta.column
    for tok in getattr(node, "scan_values", lambda f: [])(lambda v: hasattr(v, "line")):
        return tok.line, tok.column
    return 1, 1


_ENV = celpy.Environment()


@lru_cache(maxsize=2048)
def compile_selector(expression: str) -> Compiled:
    """Compile a selector as the API server's validation and the scheduler do:
    ``error`` holds the text Kubernetes reports ("compilation failed: ERROR:
    <input>:L:C: ..." or "must evaluate to bool or the unknown type, not T")."""
    if not isinstance(expression, str) or not expression.strip():
        return Compiled(str(expression or ""), error="compilation failed: ERROR: <input>:1:1: Syntax error: mismatched input '<EOF>'")
    if re.search(r"\.\?|\[\?", _strip_strings(expression)):
        return Compiled(expression, unsupported="optional field syntax (.? / [?]) is valid CEL that cel-python cannot parse")
    try:
        ast = _ENV.compile(expression)
    except Exception as exc:   # celpy.CELParseError, lark errors
        line, col = getattr(exc, "line", 1) or 1, getattr(exc, "column", 1) or 1
        return Compiled(expression, error=f"compilation failed: ERROR: <input>:{line}:{col}: Syntax error: {_first_line(exc)}")
    try:
        out = _Checker().check(ast)
    except _CheckError as exc:
        line, col = _position(exc.node) if exc.node is not None else (1, 1)
        return Compiled(expression, error=f"compilation failed: ERROR: <input>:{line}:{col}: {exc}")
    if out not in ("bool", "dyn"):
        return Compiled(expression, error=f"must evaluate to bool or the unknown type, not {_public(out)}")
    if "cel.bind" in _strip_strings(expression):
        return Compiled(expression, unsupported="cel.bind() is valid here but cel-python cannot run it")
    return Compiled(expression, program=_ENV.program(ast, functions=FUNCTIONS))


def _strip_strings(expression: str) -> str:
    return re.sub(r"""(?s)(\"\"\".*?\"\"\"|'''.*?'''|"(?:\\.|[^"\\])*"|'(?:\\.|[^'\\])*')""", '""', expression)


def _first_line(exc: Exception) -> str:
    text = str(exc.args[0] if exc.args else exc).strip().splitlines()
    return text[0].strip() if text else "syntax error"


# ---------------------------------------------------------------- evaluate


@dataclass(frozen=True)
class Outcome:
    matches: bool
    error: Optional[str] = None   # a CEL runtime error, in cel-go's words where they differ


def runtime_message(err: Any) -> str:
    args = getattr(err, "args", ()) or (str(err),)
    text, kind, extra = (list(args) + [None, None])[:3]
    text = str(text)
    if kind is KeyError or "no such key" in text or "no such member" in text:
        key = extra[0] if isinstance(extra, tuple) and extra else None
        m = re.search(r"no such member in mapping: '([^']*)'", text)
        return f"no such key: {key if key is not None else m.group(1) if m else text}"
    if "no matching overload" in text or "no such overload" in text:
        return "no such overload"
    if kind is ZeroDivisionError:
        return "division by zero"
    return text


def evaluate(compiled: Compiled, driver: str, attributes: dict[str, AttrValue], capacity: dict[str, str],
             allow_multiple: bool = False) -> Outcome:
    """``DeviceMatches``: run a compiled selector against one device."""
    if not compiled.ok:
        raise ValueError(compiled.error or compiled.unsupported)
    try:
        result = compiled.program.evaluate(activation(driver, attributes, capacity, allow_multiple))
    except CELEvalError as exc:
        return Outcome(False, runtime_message(exc))
    except Exception as exc:   # celpy internals raising plain Python errors
        return Outcome(False, runtime_message(exc))
    if isinstance(result, CELEvalError):
        return Outcome(False, runtime_message(result))
    if not isinstance(result, celtypes.BoolType):
        return Outcome(False, f"CEL result of type {type(result).__name__.replace('Type', '').lower() or 'dyn'} "
                              f"could not be converted to bool")
    return Outcome(bool(result))
