"""CUDA versions, driver compatibility and the CUDA an image needs.

Data lives in ``cuda.yaml`` (toolkit -> driver table, minor-version and forward
compatibility, official-image requirement clauses) and ``images.yaml`` (image
reference -> CUDA); this module loads and queries them.

- ``parse_cuda(text)``: "12.4", "12.4.1", "cuda12.4", "V12.4", or NVML's integer
  form "12040" -> ``CudaVersion(12, 4)``.
- ``driver_cuda(driver)``: the highest CUDA a driver branch supports natively
  (550.x -> 12.4, 535 -> 12.2, 580 -> 13.0).
- ``check_compat(driver, driver_cuda, required)``: ok / minor-compat /
  forward-compat / unsupported (plus "unknown" when neither driver fact is known).
- ``required_cuda(env, image)``: the CUDA a container needs, from
  ``NVIDIA_REQUIRE_CUDA``, ``CUDA_VERSION`` or the image reference.
- ``runtime_refuses(driver_cuda, requirement)``: whether the NVIDIA container
  runtime refuses to start the container (its ``cuda>=X.Y`` check ignores
  minor-version compatibility; ``NVIDIA_DISABLE_REQUIRE`` turns it off).

All functions accept arbitrary text and never raise on it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Mapping, Optional

from .messages import load_yaml

__all__ = [
    "CudaVersion",
    "Compat",
    "Requirement",
    "CudaDataError",
    "COMPAT_STATUSES",
    "parse_cuda",
    "parse_driver",
    "driver_cuda",
    "driver_branch_for_cuda",
    "toolkit_driver",
    "check_compat",
    "required_cuda",
    "image_cuda",
    "runtime_refuses",
    "parse_require_cuda",
    "requirement_from_message",
]

COMPAT_STATUSES = ("ok", "minor-compat", "forward-compat", "unsupported", "unknown")

_MAX_TEXT = 16384         # longer inputs are cut before any regex runs
_MAX_IMAGE = 512          # OCI references are far shorter
_MAX_TAG = 128            # Docker tag length limit


class CudaDataError(ValueError):
    """cuda.yaml or images.yaml is malformed."""


@dataclass(frozen=True, order=True)
class CudaVersion:
    major: int
    minor: int = 0

    def __str__(self) -> str:
        return f"{self.major}.{self.minor}"


@dataclass(frozen=True)
class Compat:
    status: str     # one of COMPAT_STATUSES
    detail: str


@dataclass(frozen=True)
class Requirement:
    cuda: CudaVersion
    source: str                 # "NVIDIA_REQUIRE_CUDA" | "CUDA_VERSION" | "image <family>"
    raw: str                    # the env value or image reference it came from
    enforced: bool = False      # the NVIDIA runtime checks it at container start
    verified: bool = True       # False when it comes from an unverified table row
    # Driver-branch ranges [lo, hi) (hi None = open) that the ORed
    # brand/driver clauses admit even when the driver's CUDA is older.
    driver_ranges: tuple[tuple[int, Optional[int]], ...] = field(default=())
    note: Optional[str] = None


# --------------------------------------------------------------------------- parsing

_CUDA_TEXT = re.compile(r"(?:cuda|cu|v)?\s{0,2}(\d{1,2})\.(\d{1,2})(?:\.\d{1,5}){0,2}", re.I)
_NVML_INT = re.compile(r"\d{4,6}")
_CU_TAG = re.compile(r"cu(\d{1,2})(\d)", re.I)


def parse_cuda(text: Any) -> Optional[CudaVersion]:
    """A CUDA version from "12.4", "12.4.1", "cuda12.4", "cu124", "V12.4.131" or
    NVML's integer ("12040" / 12040: major = v // 1000, minor = v % 1000 // 10)."""
    if isinstance(text, bool):
        return None
    if isinstance(text, int):
        return _from_nvml_int(text)
    if not isinstance(text, str):
        return None
    t = text[:_MAX_TEXT].strip()
    if not t:
        return None
    if _NVML_INT.fullmatch(t):
        return _from_nvml_int(int(t))
    m = _CUDA_TEXT.fullmatch(t)
    if m:
        return CudaVersion(int(m.group(1)), int(m.group(2)))
    m = _CU_TAG.fullmatch(t)
    if m:
        return CudaVersion(int(m.group(1)), int(m.group(2)))
    if t.isascii() and t.isdigit() and len(t) <= 2:
        return CudaVersion(int(t), 0)
    return None


def _from_nvml_int(v: int) -> Optional[CudaVersion]:
    if not 1000 <= v < 100000:
        return None
    return CudaVersion(v // 1000, (v % 1000) // 10)


_DRIVER = re.compile(r"[rR]?(\d{2,4})(?:\.(\d{1,4}))?(?:\.(\d{1,4}))?")


def parse_driver(text: Any) -> Optional[tuple[int, int, int]]:
    """(branch, minor, patch) from "550.90.07", "570.26", "R535" or "535"."""
    if not isinstance(text, str):
        return None
    m = _DRIVER.fullmatch(text[:64].strip())
    if not m:
        return None
    a, b, c = m.groups()
    return int(a), int(b or 0), int(c or 0)


# --------------------------------------------------------------------------- data


@dataclass(frozen=True)
class _ToolkitRow:
    cuda: CudaVersion
    driver: tuple[int, int, int]
    release: str


@dataclass(frozen=True)
class _FwdRow:
    branch: int
    min_driver: tuple[int, int, int]
    max_cuda: CudaVersion
    source: str


class _CudaData:
    def __init__(self, data: Any) -> None:
        if not isinstance(data, dict):
            raise CudaDataError("cuda.yaml: not a mapping")
        try:
            self.toolkits: list[_ToolkitRow] = []
            for row in data["toolkit_drivers"]:
                cv, dv = parse_cuda(str(row["cuda"])), parse_driver(str(row["driver"]))
                if cv is None or dv is None:
                    raise CudaDataError(f"cuda.yaml: bad toolkit row {row!r}")
                self.toolkits.append(_ToolkitRow(cv, dv, str(row.get("release", ""))))
            self.branch_overrides: dict[int, CudaVersion] = {}
            for row in data.get("branch_overrides") or []:
                cv = parse_cuda(str(row["cuda"]))
                if cv is None:
                    raise CudaDataError(f"cuda.yaml: bad branch override {row!r}")
                self.branch_overrides[int(row["branch"])] = cv
            self.minor_floor: dict[int, tuple[int, int, int]] = {}
            for row in data["minor_compat"]:
                dv = parse_driver(str(row["min_driver"]))
                if dv is None:
                    raise CudaDataError(f"cuda.yaml: bad minor_compat row {row!r}")
                self.minor_floor[int(row["major"])] = dv
            self.forward: list[_FwdRow] = []
            for row in data.get("forward_compat") or []:
                dv, cv = parse_driver(str(row["min_driver"])), parse_cuda(str(row["max_cuda"]))
                if dv is None or cv is None:
                    raise CudaDataError(f"cuda.yaml: bad forward_compat row {row!r}")
                self.forward.append(_FwdRow(int(row["branch"]), dv, cv, str(row.get("source", ""))))
            self.official_branches: dict[CudaVersion, tuple[int, ...]] = {}
            for row in data.get("official_image_require_branches") or []:
                cv = parse_cuda(str(row["cuda"]))
                if cv is None:
                    raise CudaDataError(f"cuda.yaml: bad official_image_require_branches row {row!r}")
                self.official_branches[cv] = tuple(int(b) for b in row["branches"])
        except (KeyError, TypeError, ValueError) as exc:
            if isinstance(exc, CudaDataError):
                raise
            raise CudaDataError(f"cuda.yaml: malformed: {exc}") from exc
        # branch -> highest CUDA whose toolkit driver is in that branch
        self.branch_cuda: dict[int, CudaVersion] = {}
        for row in self.toolkits:
            b = row.driver[0]
            if b not in self.branch_cuda or row.cuda > self.branch_cuda[b]:
                self.branch_cuda[b] = row.cuda
        self.branch_cuda.update(self.branch_overrides)


@dataclass(frozen=True)
class _Family:
    name: str
    repositories: frozenset[str]
    tag: re.Pattern[str]
    table: Optional[str]
    enforced: bool
    source: str


@dataclass(frozen=True)
class _Row:
    cuda: CudaVersion
    source: str
    verified: bool
    only: tuple[str, ...] = ()


class _ImageData:
    def __init__(self, data: Any) -> None:
        if not isinstance(data, dict) or not isinstance(data.get("families"), list):
            raise CudaDataError("images.yaml: top-level 'families' list is missing")
        try:
            self.families: list[_Family] = []
            self.by_repo: dict[str, _Family] = {}
            for f in data["families"]:
                fam = _Family(
                    name=str(f["name"]),
                    repositories=frozenset(str(r).lower() for r in f["repositories"]),
                    tag=re.compile(str(f["tag"])),
                    table=f.get("table"),
                    enforced=bool(f.get("enforced", False)),
                    source=str(f["source"]),
                )
                if fam.table is not None and fam.table not in data:
                    raise CudaDataError(f"images.yaml: family {fam.name!r} names missing table {fam.table!r}")
                self.families.append(fam)
                for r in fam.repositories:
                    if r in self.by_repo:
                        raise CudaDataError(f"images.yaml: repository {r!r} in two families")
                    self.by_repo[r] = fam
            self.releases: dict[str, dict[str, _Row]] = {}
            for table in ("ngc", "nemo"):
                rows: dict[str, _Row] = {}
                for row in data.get(table) or []:
                    rows[str(row["release"])] = self._row(row, table)
                self.releases[table] = rows
            self.ranges: dict[str, list[tuple[tuple[int, ...], tuple[int, ...], _Row]]] = {}
            for row in data.get("vllm") or []:
                lo, hi = _semver(str(row["min"])), _semver(str(row["max"]))
                if lo is None or hi is None:
                    raise CudaDataError(f"images.yaml: bad vllm row {row!r}")
                self.ranges.setdefault("vllm", []).append((lo, hi, self._row(row, "vllm")))
            self.versions: dict[str, dict[str, _Row]] = {"tensorflow": {}}
            for row in data.get("tensorflow") or []:
                self.versions["tensorflow"][str(row["version"])] = self._row(row, "tensorflow")
        except (KeyError, TypeError, ValueError, re.error) as exc:
            if isinstance(exc, CudaDataError):
                raise
            raise CudaDataError(f"images.yaml: malformed: {exc}") from exc

    @staticmethod
    def _row(row: dict[str, Any], table: str) -> _Row:
        cv = parse_cuda(str(row["cuda"]))
        if cv is None:
            raise CudaDataError(f"images.yaml: {table}: bad cuda in {row!r}")
        return _Row(cv, str(row["source"]), bool(row.get("verified", True)), tuple(row.get("only") or ()))


@lru_cache(maxsize=None)
def _cuda_data() -> _CudaData:
    return _CudaData(load_yaml("cuda.yaml"))


@lru_cache(maxsize=None)
def _image_data() -> _ImageData:
    return _ImageData(load_yaml("images.yaml"))


def _semver(text: str) -> Optional[tuple[int, ...]]:
    m = re.fullmatch(r"v?(\d{1,4})\.(\d{1,4})(?:\.(\d{1,4}))?", text.strip())
    if not m:
        return None
    return tuple(int(g or 0) for g in m.groups())


# --------------------------------------------------------------------------- driver


def driver_cuda(driver_version: Any) -> Optional[CudaVersion]:
    """The highest CUDA a driver branch supports natively: the newest toolkit
    whose bundled driver is in the same or an older branch (550.90.07 -> 12.4).
    None for unparsable versions and branches older than the table (< R450)."""
    dv = parse_driver(driver_version)
    if dv is None:
        return None
    data = _cuda_data()
    branch = dv[0]
    if branch in data.branch_cuda:
        return data.branch_cuda[branch]
    older = [b for b in data.branch_cuda if b <= branch]
    if not older:
        return None
    return data.branch_cuda[max(older)]


def driver_branch_for_cuda(cuda: Optional[CudaVersion]) -> Optional[int]:
    """The driver branch whose native CUDA is exactly ``cuda`` (12.2 -> 535); None if none."""
    if cuda is None:
        return None
    for branch, cv in sorted(_cuda_data().branch_cuda.items()):
        if cv == cuda:
            return branch
    return None


def toolkit_driver(cuda: CudaVersion) -> Optional[str]:
    """The driver bundled with the first (GA) toolkit of ``cuda`` ("12.4" -> 550.54.14)."""
    rows = [r for r in _cuda_data().toolkits if r.cuda == cuda]
    if not rows:
        return None
    return _fmt_driver(min(r.driver for r in rows))


def _fmt_driver(dv: tuple[int, int, int]) -> str:
    """Driver version text (NVIDIA pads the minor and patch to two digits: 580.65.06)."""
    a, b, c = dv
    if not b and not c:
        return str(a)
    return f"{a}.{b:02d}" + (f".{c:02d}" if c else "")


def check_compat(driver_version: Optional[str], driver_cuda_version: Optional[CudaVersion],
                 required: Optional[CudaVersion]) -> Compat:
    """Whether a driver runs a container built for CUDA ``required`` (see _check_compat).
    Remembered per (driver, CUDA versions): a pending report asks it for every Pending
    pod on every node with a driver, and a cluster has a handful of drivers."""
    if (driver_version is None or type(driver_version) is str) \
            and (driver_cuda_version is None or type(driver_cuda_version) is CudaVersion) \
            and (required is None or type(required) is CudaVersion):
        return _check_compat_cached(driver_version, driver_cuda_version, required)
    return _check_compat(driver_version, driver_cuda_version, required)


def _check_compat(driver_version: Any, driver_cuda_version: Any, required: Any) -> Compat:
    """Whether a driver runs a container built for CUDA ``required``.

    ok              the driver's CUDA >= required.
    minor-compat    same major and the driver is at or above the major's floor
                    (525.60.13 for 12.x, 450.80.02 for 11.x, 580 for 13.x): runs with
                    limits (PTX JIT of newer PTX and newer driver APIs may fail), and
                    the NVIDIA runtime still refuses images whose NVIDIA_REQUIRE_CUDA
                    asks for the newer version (see runtime_refuses).
    forward-compat  an older driver branch NVIDIA lists for this CUDA: needs the
                    cuda-compat package in the image, data-center GPUs only.
    unsupported     none of these.
    unknown         neither the driver version nor its CUDA version is known.
    """
    if not isinstance(required, CudaVersion):
        return Compat("unknown", "the CUDA version the container needs is not known")
    dv = parse_driver(driver_version) if isinstance(driver_version, str) else None
    dc = driver_cuda_version if isinstance(driver_cuda_version, CudaVersion) else None
    if dc is None and dv is not None:
        dc = driver_cuda(driver_version)
    if dc is None:
        return Compat("unknown", f"the driver's CUDA version is not known (needs CUDA {required})")
    drv_txt = f"driver {driver_version}" if dv else f"the driver (CUDA {dc})"
    if dc >= required:
        return Compat("ok", f"{drv_txt} supports CUDA {dc}, at or above the CUDA {required} the container needs")
    data = _cuda_data()
    branch = dv[0] if dv else driver_branch_for_cuda(dc)
    floor = data.minor_floor.get(required.major)
    if dc.major == required.major and floor is not None:
        meets = dv >= floor if dv is not None else (dc > CudaVersion(11, 0) or required.major != 11)
        if meets:
            return Compat(
                "minor-compat",
                f"{drv_txt} supports CUDA {dc} natively; CUDA {required} runs through minor-version "
                f"compatibility (CUDA {required.major}.x needs a driver >= {_fmt_driver(floor)}), with limits: "
                f"JIT of newer PTX and newer driver APIs may fail. The NVIDIA runtime still refuses images "
                f"whose NVIDIA_REQUIRE_CUDA asks for cuda>={required} unless NVIDIA_DISABLE_REQUIRE is set",
            )
    for row in data.forward:
        if branch == row.branch and required <= row.max_cuda and (dv is None or dv >= row.min_driver):
            return Compat(
                "forward-compat",
                f"{drv_txt} (CUDA {dc}) is older than CUDA {required}; it runs only through forward "
                f"compatibility: the image must carry the cuda-compat-{required.major}-{required.minor} "
                f"package, and it works on data-center GPUs only (not GeForce). NVIDIA lists R{row.branch} "
                f">= {_fmt_driver(row.min_driver)} for CUDA up to {row.max_cuda}",
            )
    need = toolkit_driver(required)
    return Compat(
        "unsupported",
        f"{drv_txt} supports only CUDA {dc}; CUDA {required} needs a newer driver"
        + (f" (>= {need})" if need else "")
        + f", or an image built for CUDA {dc} or older",
    )


_check_compat_cached = lru_cache(maxsize=4096)(_check_compat)


# --------------------------------------------------------------------------- requirements

_TRUE = frozenset({"1", "t", "true"})   # Go strconv.ParseBool true values (case-folded)



def _disabled(env: Mapping[str, Any]) -> bool:
    v = env.get("NVIDIA_DISABLE_REQUIRE")
    return isinstance(v, str) and v.strip()[:8].lower() in _TRUE


_CUDA_GE = re.compile(r"cuda\s{0,3}>=?\s{0,3}(\d{1,2}(?:\.\d{1,2})?)", re.I)
_DRIVER_C = re.compile(r"driver\s{0,3}(>=|<=|<|>|=)\s{0,3}(\d{2,4})(?:\.\d{1,4}){0,2}", re.I)


def parse_require_cuda(value: Any) -> Optional[tuple[CudaVersion, tuple[tuple[int, Optional[int]], ...]]]:
    """(cuda, driver ranges) from an NVIDIA_REQUIRE_CUDA value such as
    ``cuda>=12.4 brand=tesla,driver>=470,driver<471 ...``.

    Space-separated terms are ORed and comma-separated constraints ANDed (NVIDIA
    container toolkit docs): ``cuda`` is the lowest ``cuda>=X.Y`` term, and each
    term with driver bounds gives a branch range [lo, hi) it admits.
    """
    if not isinstance(value, str):
        return None
    cudas: list[CudaVersion] = []
    ranges: list[tuple[int, Optional[int]]] = []
    for term in value[:_MAX_TEXT].split():
        lo: Optional[int] = None
        hi: Optional[int] = None
        term_cuda: Optional[CudaVersion] = None
        for part in term.split(",")[:16]:
            p = part.strip()
            m = _CUDA_GE.fullmatch(p)
            if m:
                term_cuda = parse_cuda(m.group(1))
                continue
            m = _DRIVER_C.fullmatch(p)
            if m:
                op, b = m.group(1), int(m.group(2))
                if op in (">=", ">", "="):
                    lo = b if lo is None else max(lo, b)
                if op in ("<", "="):
                    hi = (b if op == "<" else b + 1) if hi is None else min(hi, b if op == "<" else b + 1)
                if op == "<=":
                    hi = b + 1 if hi is None else min(hi, b + 1)
        if term_cuda is not None and lo is None and hi is None:
            cudas.append(term_cuda)
        elif lo is not None:
            ranges.append((lo, hi))
    if not cudas:
        return None
    return min(cudas), tuple(ranges)


def required_cuda(env: Optional[Mapping[str, Any]], image: Optional[str]) -> Optional[Requirement]:
    """The CUDA version a container needs, and whether the NVIDIA runtime enforces it.

    Order: ``NVIDIA_REQUIRE_CUDA`` (its ``cuda>=X.Y`` term), ``CUDA_VERSION`` (the
    toolkit checks it as ``cuda>=major.minor`` in "legacy" images that set no
    NVIDIA_REQUIRE_CUDA), then the image reference (images.yaml). A truthy
    ``NVIDIA_DISABLE_REQUIRE`` keeps the requirement but marks it not enforced.
    """
    env = env if isinstance(env, Mapping) else {}
    disabled = _disabled(env)
    req_val = env.get("NVIDIA_REQUIRE_CUDA")
    if isinstance(req_val, str) and req_val.strip():
        parsed = parse_require_cuda(req_val)
        if parsed is not None:
            cv, ranges = parsed
            return Requirement(cv, "NVIDIA_REQUIRE_CUDA", req_val[:_MAX_TEXT], enforced=not disabled,
                               driver_ranges=ranges)
    ver = env.get("CUDA_VERSION")
    if isinstance(ver, str) and ver.strip():
        cv = parse_cuda(ver)
        if cv is not None:
            return Requirement(cv, "CUDA_VERSION", ver[:_MAX_TEXT], enforced=not disabled,
                               note="legacy image rule: the NVIDIA runtime requires cuda>=major.minor of CUDA_VERSION "
                                    "when NVIDIA_REQUIRE_CUDA is not set (the image's own env may set it)")
    found = image_cuda(image)
    if found is None:
        return None
    fam, row = found
    enforced = fam.enforced and not disabled
    ranges: tuple[tuple[int, Optional[int]], ...] = ()
    if enforced:
        branches = _cuda_data().official_branches.get(row.cuda)
        if branches:
            ranges = tuple((b, b + 1) for b in branches)
    return Requirement(row.cuda, f"image {fam.name}", str(image)[:_MAX_IMAGE], enforced=enforced,
                       verified=row.verified, driver_ranges=ranges, note=row.source)


_UNSATISFIED = re.compile(r"unsatisfied condition: cuda>=(\d{1,2}(?:\.\d{1,2})?)")


def requirement_from_message(text: Any) -> Optional[Requirement]:
    """The requirement the NVIDIA runtime reported refusing, from its error text
    (``requirement error: unsatisfied condition: cuda>=12.4, please update your
    driver ...``), for containers whose image env is not visible in the pod spec."""
    if not isinstance(text, str):
        return None
    m = _UNSATISFIED.search(text[: 4 * _MAX_TEXT])
    if not m:
        return None
    cv = parse_cuda(m.group(1))
    if cv is None:
        return None
    return Requirement(cv, "runtime error", m.group(0), enforced=True,
                       note="reported by nvidia-container-cli when it refused to start the container")


def _split_image(image: str) -> Optional[tuple[str, str]]:
    ref = image.strip().lower()
    if not ref or "@" in ref or len(ref) > _MAX_IMAGE or any(c.isspace() for c in ref):
        return None
    slash = ref.rfind("/")
    colon = ref.rfind(":")
    if colon <= slash:
        return None            # no tag: "latest" says nothing about CUDA
    repo, tag = ref[:colon], ref[colon + 1:]
    for prefix in ("docker.io/", "index.docker.io/", "registry-1.docker.io/"):
        if repo.startswith(prefix):
            repo = repo[len(prefix):]
            break
    if repo.startswith("library/"):
        repo = repo[len("library/"):]
    if not tag or len(tag) > _MAX_TAG:
        return None
    return repo, tag


def image_cuda(image: Optional[str]) -> Optional[tuple[_Family, _Row]]:
    """(family, row) for an image reference images.yaml knows; None otherwise."""
    if not isinstance(image, str):
        return None
    return _image_cuda(image)


@lru_cache(maxsize=4096)
def _image_cuda(image: str) -> Optional[tuple[_Family, _Row]]:
    """``image_cuda`` of a string: a function of the reference and images.yaml (itself
    loaded once), asked once per container of every GPU pod a report diagnoses."""
    parts = _split_image(image)
    if parts is None:
        return None
    repo, tag = parts
    data = _image_data()
    fam = data.by_repo.get(repo)
    if fam is None:
        return None
    m = fam.tag.match(tag)
    if not m:
        return None
    groups = m.groupdict()
    if groups.get("cuda"):
        cv = parse_cuda(groups["cuda"])
        return (fam, _Row(cv, fam.source, True)) if cv is not None else None
    if groups.get("release") and fam.table in data.releases:
        row = data.releases[fam.table].get(groups["release"])
        if row is None or (row.only and fam.name not in row.only):
            return None
        return fam, row
    if groups.get("version") and fam.table == "vllm":
        v = _semver(groups["version"])
        if v is None:
            return None
        for lo, hi, row in data.ranges.get("vllm", []):
            if lo <= v <= hi:
                return fam, row
        return None
    if groups.get("version") and fam.table in data.versions:
        row = data.versions[fam.table].get(groups["version"])
        return (fam, row) if row is not None else None
    return None


def runtime_refuses(driver_cuda_version: Optional[CudaVersion], requirement: Optional[Requirement],
                    driver_version: Optional[str] = None) -> bool:
    """Whether the NVIDIA container runtime refuses to start the container.

    The runtime checks the requirement against the CUDA version the driver itself
    supports, so minor-version compatibility does not help: driver CUDA 12.2 with
    ``cuda>=12.4`` is refused (``requirement error: unsatisfied condition:
    cuda>=12.4``). ORed ``brand=...,driver>=B,driver<B+1`` clauses admit those
    driver branches; the branch comes from ``driver_version`` or, without it, from
    the driver's CUDA version. False when the requirement is not enforced
    (NVIDIA_DISABLE_REQUIRE, or an image not known to carry NVIDIA_REQUIRE_CUDA)
    or when the driver's CUDA is unknown.
    """
    if not isinstance(requirement, Requirement) or not requirement.enforced:
        return False
    if not isinstance(driver_cuda_version, CudaVersion):
        return False
    if driver_cuda_version >= requirement.cuda:
        return False
    if requirement.driver_ranges:
        dv = parse_driver(driver_version) if isinstance(driver_version, str) else None
        branch = dv[0] if dv else driver_branch_for_cuda(driver_cuda_version)
        if branch is None:
            return False     # cannot tell whether a clause admits it
        for lo, hi in requirement.driver_ranges:
            if branch >= lo and (hi is None or branch < hi):
                return False
    return True
