"""The DRA CEL environment (gpuctl/model/cel_env.py) against cel-python itself and
against Kubernetes' rules, with hypothesis: random ResourceSlice attribute sets and
random selectors.

* evaluate() agrees with cel-python run directly on an activation this test builds
  on its own from the ResourceSlice shape (domains split here, absent domains given
  as empty maps, as k8s.io/dynamic-resource-allocation/cel/compile.go's mapper does);
* single comparisons agree with a plain-Python model of the Kubernetes semantics
  (missing attribute: runtime error; == across types: false; ordering across types:
  error);
* what the API server rejects is rejected here: syntax errors, undeclared
  identifiers, unknown device fields, mismatched operand types, non-bool results;
  and what it accepts (the well-typed generator) always compiles.
"""

from __future__ import annotations

import celpy
import pytest
from celpy import celtypes
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from gpuctl.model import cel_env as C
from gpuctl.model.dra import attribute_value

DOMAINS = ["gpu.nvidia.com", "example.com", "resource.kubernetes.io"]
NAMES = ["productName", "type", "index", "uuid", "architecture", "count", "enabled", "driverVersion"]
SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

versions = st.tuples(st.integers(0, 600), st.integers(0, 200), st.integers(0, 20)).map(lambda t: "%d.%d.%d" % t)
values = st.one_of(
    st.integers(-5, 100).map(lambda v: {"int": v}),
    st.booleans().map(lambda v: {"bool": v}),
    st.sampled_from(["gpu", "mig", "NVIDIA A100-SXM4-80GB", "NVIDIA H100 80GB HBM3", "Ampere", ""]).map(lambda v: {"string": v}),
    versions.map(lambda v: {"version": v}),
)
qualified = st.tuples(st.sampled_from(DOMAINS + [""]), st.sampled_from(NAMES)).map(
    lambda t: f"{t[0]}/{t[1]}" if t[0] else t[1])
attribute_sets = st.dictionaries(qualified, values, max_size=8)
capacities = st.dictionaries(st.sampled_from(["memory", "gpu.nvidia.com/memory", "example.com/slots"]),
                             st.sampled_from(["80Gi", "40Gi", "9856Mi", "1", "0"]), max_size=3)
drivers = st.sampled_from(["gpu.nvidia.com", "example.com"])

literals = st.one_of(st.integers(-5, 100).map(str), st.booleans().map(lambda b: "true" if b else "false"),
                     st.sampled_from(['"gpu"', '"mig"', '"NVIDIA A100-SXM4-80GB"', '"Ampere"', '""']))
attr_refs = st.tuples(st.sampled_from(DOMAINS), st.sampled_from(NAMES)).map(
    lambda t: f'device.attributes["{t[0]}"].{t[1]}')


def _atoms() -> st.SearchStrategy[str]:
    return st.one_of(
        st.tuples(attr_refs, st.sampled_from(["==", "!="]), literals).map(" ".join),
        st.tuples(attr_refs, st.sampled_from(["<", ">", "<=", ">="]), st.integers(-5, 100).map(str)).map(" ".join),
        attr_refs.map(lambda r: f"has({r})"),
        st.tuples(st.sampled_from(NAMES), st.sampled_from(DOMAINS)).map(lambda t: f'"{t[0]}" in device.attributes["{t[1]}"]'),
        drivers.map(lambda d: f'device.driver == "{d}"'),
        st.tuples(st.sampled_from(["gpu.nvidia.com", "example.com"]), st.sampled_from(["memory", "slots"]),
                  st.sampled_from(["40Gi", "1", "100Gi"])).map(
            lambda t: f'device.capacity["{t[0]}"].{t[1]}.compareTo(quantity("{t[2]}")) >= 0'),
        st.tuples(attr_refs, versions).map(lambda t: f'{t[0]}.isGreaterThan(semver("{t[1]}"))'),
        st.sampled_from(["true", "false"]),
    )


expressions = st.recursive(
    _atoms(),
    lambda inner: st.one_of(
        st.tuples(inner, st.sampled_from(["&&", "||"]), inner).map(lambda t: f"({t[0]} {t[1]} {t[2]})"),
        inner.map(lambda e: f"!({e})"),
    ),
    max_leaves=4,
)


def _oracle_activation(driver: str, attrs: dict, caps: dict, expression: str) -> dict:
    """Built here, from the ResourceSlice shape, without gpuctl's activation()."""
    domains: dict[str, dict] = {d: {} for d in DOMAINS}   # every referenced domain: absent ones empty
    # a device with both "type" and "<driver>/type" is ambiguous in the API; the qualified one wins here
    for name, raw in sorted(attrs.items(), key=lambda kv: "/" in kv[0]):
        dom, _, ident = name.rpartition("/")
        dom = dom or driver
        if "int" in raw:
            v = celtypes.IntType(raw["int"])
        elif "bool" in raw:
            v = celtypes.BoolType(raw["bool"])
        elif "string" in raw:
            v = celtypes.StringType(raw["string"])
        else:
            v = C.Semver(raw["version"])
        domains.setdefault(dom, {})[celtypes.StringType(ident)] = v
    capdoms: dict[str, dict] = {d: {} for d in DOMAINS}
    for name, q in sorted(caps.items(), key=lambda kv: "/" in kv[0]):
        dom, _, ident = name.rpartition("/")
        capdoms.setdefault(dom or driver, {})[celtypes.StringType(ident)] = C.Quantity(q)
    return {"device": celtypes.MapType({
        celtypes.StringType("driver"): celtypes.StringType(driver),
        celtypes.StringType("attributes"): celtypes.MapType({celtypes.StringType(k): celtypes.MapType(v) for k, v in domains.items()}),
        celtypes.StringType("capacity"): celtypes.MapType({celtypes.StringType(k): celtypes.MapType(v) for k, v in capdoms.items()}),
    })}


def _celpy(expression: str, activation: dict):
    env = celpy.Environment()
    prog = env.program(env.compile(expression), functions=C.FUNCTIONS)
    try:
        out = prog.evaluate(activation)
    except celpy.evaluation.CELEvalError:
        return "error"
    if isinstance(out, celpy.evaluation.CELEvalError) or not isinstance(out, celtypes.BoolType):
        return "error"
    return bool(out)


def _decoded(attrs: dict) -> dict:
    return {k: attribute_value(v) for k, v in attrs.items()}


@SETTINGS
@given(driver=drivers, attrs=attribute_sets, caps=capacities, expression=expressions)
def test_evaluator_agrees_with_cel_python(driver, attrs, caps, expression):
    compiled = C.compile_selector(expression)
    assert compiled.ok, (expression, compiled.error, compiled.unsupported)
    got = C.evaluate(compiled, driver, _decoded(attrs), caps)
    want = _celpy(expression, _oracle_activation(driver, attrs, caps, expression))
    assert ("error" if got.error else got.matches) == want, (expression, attrs, got)


def _model(value, op: str, literal: str):
    """Kubernetes' answer for `device.attributes[D].N OP LITERAL` (None: the attribute is missing)."""
    if value is None:
        return "error"   # no such key
    lit = int(literal) if literal.lstrip("-").isdigit() else literal == "true" if literal in ("true", "false") else literal[1:-1]
    same = type(value) is type(lit)
    if op in ("==", "!="):
        eq = same and value == lit
        return eq if op == "==" else not eq
    if not same:
        return "error"   # no such overload (bool < bool, string < string, int < int are defined)
    return {"<": value < lit, ">": value > lit, "<=": value <= lit, ">=": value >= lit}[op]


@SETTINGS
@given(driver=drivers, attrs=attribute_sets, dom=st.sampled_from(DOMAINS), name=st.sampled_from(NAMES),
       op=st.sampled_from(["==", "!=", "<", ">"]), literal=literals)
def test_single_comparison_follows_kubernetes_semantics(driver, attrs, dom, name, op, literal):
    # "uuid" and "<driver>/uuid" name the same attribute: a slice with both is ambiguous (the
    # scheduler's map of them keeps whichever Go's map order gives last), so not a case to judge
    assume(not any("/" not in k and f"{driver}/{k}" in attrs for k in attrs))
    expression = f'device.attributes["{dom}"].{name} {op} {literal}'
    compiled = C.compile_selector(expression)
    assert compiled.ok, compiled   # the attribute is dyn: every literal type-checks
    decoded = _decoded(attrs)
    value = next((v for k, v in decoded.items() if (k if "/" in k else f"{driver}/{k}") == f"{dom}/{name}"), None)
    if isinstance(value, C.Semver):
        return   # versions compare through semver() methods, covered above
    got = C.evaluate(compiled, driver, decoded, {})
    want = _model(value, op, literal)
    assert ("error" if got.error else got.matches) == want, (expression, value, got)
    if value is None:
        assert got.error == f"no such key: {name}"


def test_missing_domain_is_an_empty_map_not_an_error():
    c = C.compile_selector('device.attributes["absent.example.com"].size() == 0')
    assert C.evaluate(c, "gpu.nvidia.com", {"type": "gpu"}, {}).matches
    c = C.compile_selector('has(device.attributes["absent.example.com"].type)')
    assert C.evaluate(c, "gpu.nvidia.com", {}, {}) == C.Outcome(False)


def test_unqualified_attribute_lives_under_the_driver_domain():
    c = C.compile_selector('device.attributes["gpu.nvidia.com"].productName == "NVIDIA A100-SXM4-80GB"')
    assert C.evaluate(c, "gpu.nvidia.com", {"productName": "NVIDIA A100-SXM4-80GB"}, {}).matches
    assert C.evaluate(c, "example.com", {"productName": "NVIDIA A100-SXM4-80GB"}, {}).error == "no such key: productName"


def test_quantities_and_versions():
    caps = {"memory": "80Gi"}
    for expr, want in [('device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("40Gi")) >= 0', True),
                       ('device.capacity["gpu.nvidia.com"].memory.isLessThan(quantity("81920Mi"))', False),
                       ('device.capacity["gpu.nvidia.com"].memory == quantity("81920Mi")', True),
                       ('device.attributes["gpu.nvidia.com"].driverVersion.isGreaterThan(semver("550.90.7"))', True),
                       ('device.attributes["gpu.nvidia.com"].driverVersion.major() == 550', True),
                       ('semver("1.2.3-rc.1").isLessThan(semver("1.2.3"))', True)]:
        c = C.compile_selector(expr)
        assert c.ok, (expr, c.error)
        out = C.evaluate(c, "gpu.nvidia.com", {"driverVersion": C.Semver("550.127.5")}, caps)
        assert out == C.Outcome(want), (expr, out)


# ---------------------------------------------------------------- what the API server rejects

identifiers = st.from_regex(r"[a-z][a-zA-Z0-9_]{0,8}", fullmatch=True).filter(
    lambda s: s not in {"device", "true", "false", "null", "in", "has", "int", "uint", "double", "string", "bool",
                        "bytes", "list", "map", "type", "dyn", "size", "quantity", "semver", "isQuantity",
                        "isSemver", "null_type", "cel", "as", "break", "const", "continue", "else", "for",
                        "function", "if", "import", "let", "loop", "package", "namespace", "return", "var",
                        "void", "while"})


@SETTINGS
@given(expression=expressions, ident=identifiers)
def test_undeclared_identifiers_are_rejected(expression, ident):
    bad = expression.replace("device.", f"{ident}.", 1) if "device." in expression else f"{ident} == 1"
    c = C.compile_selector(bad)
    assert c.error and f"undeclared reference to '{ident}'" in c.error, (bad, c)


@SETTINGS
@given(expression=expressions, cut=st.sampled_from(["(", "&&", "||", "==", ".", "!"]))
def test_syntax_errors_are_rejected(expression, cut):
    c = C.compile_selector(f"{expression} {cut}")
    assert c.error and c.error.startswith("compilation failed: ERROR: <input>:"), c


@pytest.mark.parametrize("expression, result", [
    ("device.driver", "string"), ('device.driver + "-x"', "string"), ("1 + 2", "int"), ('"gpu"', "string"),
    ("size(device.driver)", "int"), ('quantity("1Gi")', "Quantity"), ('device.attributes["gpu.nvidia.com"]', "map(string, dyn)"),
    ('device.capacity["gpu.nvidia.com"].memory', "Quantity"), ("device.attributes", "map(string, map(string, dyn))"),
])
def test_non_bool_results_are_rejected(expression, result):
    assert C.compile_selector(expression).error == f"must evaluate to bool or the unknown type, not {result}"


@SETTINGS
@given(lit=st.one_of(st.integers(-5, 100).map(str), st.sampled_from(["true", "1.5", "[1]"])),
       op=st.sampled_from(["==", "!=", "<", ">="]))
def test_type_errors_are_rejected(lit, op):
    c = C.compile_selector(f"device.driver {op} {lit}")
    assert c.error and "found no matching overload for" in c.error, c


@pytest.mark.parametrize("expression, needle", [
    ('device.capacity["gpu.nvidia.com"].memory >= quantity("40Gi")', "'_>=_' applied to '(Quantity, Quantity)'"),
    ('!device.driver', "'!_' applied to '(string)'"),
    ('device.driver && true', "'_&&_' applied to '(string, bool)'"),
    ('1 + "a" == 2', "'_+_' applied to '(int, string)'"),
    ('device.drivr == "x"', "undefined field 'drivr'"),
    ('quantity(1) == quantity("1")', "'quantity' applied to '(int)'"),
    ('device.driver.startsWith(1)', "'startsWith' applied to '(string, int)'"),
    ('device.driver.fooBar()', "undeclared reference to 'fooBar'"),
    ('has(device)', "invalid argument to has() macro"),
])
def test_known_type_errors(expression, needle):
    c = C.compile_selector(expression)
    assert c.error and needle in c.error, c


@pytest.mark.parametrize("expression", [
    'cel.bind(gpu, device.attributes["gpu.nvidia.com"], gpu.type == "gpu")',
    'device.attributes["gpu.nvidia.com"].?type.orValue("") == "gpu"',
])
def test_valid_cel_celpy_cannot_run_is_unsupported_not_invalid(expression):
    c = C.compile_selector(expression)
    assert c.error is None and c.unsupported, c


def test_runtime_type_error_and_non_bool_dyn():
    c = C.compile_selector('device.attributes["gpu.nvidia.com"].productName > 80')
    assert c.ok
    assert C.evaluate(c, "gpu.nvidia.com", {"productName": "A100"}, {}).error == "no such overload"
    c = C.compile_selector('device.attributes["gpu.nvidia.com"].type')
    assert c.ok   # dyn: accepted at compile time
    assert "could not be converted to bool" in C.evaluate(c, "gpu.nvidia.com", {"type": "gpu"}, {}).error


def test_allow_multiple_allocations_is_a_bool_field():
    c = C.compile_selector("device.allowMultipleAllocations")
    assert c.ok   # bool: a valid selector on its own
    assert C.evaluate(c, "gpu.nvidia.com", {}, {}, allow_multiple=True).matches
    assert C.evaluate(c, "gpu.nvidia.com", {}, {}) == C.Outcome(False)
    assert "found no matching overload" in C.compile_selector("device.allowMultipleAllocations == 1").error
