"""The fault matrix (issue 7): every read command against the local API server with
each fault injected, persistently, on each endpoint the command calls.

Shared by tests/test_fault_matrix.py; kept free of pytest so it can also be run by
hand (``python tests/fault_matrix.py`` prints the table).

Each cell runs gpuctl in its own process (a fork of a preloaded forkserver, see
tests/cell_runner.py) against its own SnapshotAPIServer (started in this process),
so cells can run in parallel: most of a cell's wall time is spent waiting
(backoff, request timeouts, hangs), not computing.
"""

from __future__ import annotations

import json
import os
import re
import sys
import tarfile
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Optional

import cell_runner

ROOT = Path(__file__).resolve().parent.parent
TESTS = ROOT / "tests"
DOC = ROOT / "docs" / "reliability.md"

REQUEST_TIMEOUT = 1.0
MAX_ATTEMPTS = 3            # gpuctl's bounded retries (gpuctl.collect.kube.MAX_ATTEMPTS)
HANG_DELAY = 3.0            # longer than the request timeout
TRICKLE_INTERVAL = 0.25     # one byte per interval: every read well inside the request timeout
PAGE_SIZE = 2               # page size cap for the 410-mid-pagination column
MAX_ENDPOINTS = 64         # every endpoint a command calls (snapshot save: 34)
WORKERS = 24               # parallel cells (mostly sleeping on backoff and timeouts; forks are cheap)
ERROR_CODES = {2, 3, 4}

# --------------------------------------------------------------------- commands


@dataclass(frozen=True)
class Command:
    key: str
    title: str
    snapshot: Path
    argv: tuple[str, ...]
    json_output: bool = True


def _pod_argv(scenario: str) -> tuple[str, ...]:
    exp = json.loads((TESTS / "scenarios" / scenario / "expected.json").read_text())
    if exp.get("pod"):
        ns, name = exp["pod"].split("/", 1)
    else:
        ns, name = exp["namespace"], exp["target"]
    return ("diagnose", "pod", name, "-n", ns)


COMMANDS: tuple[Command, ...] = (
    Command("diagnose-pod-pending", "`diagnose pod` (Pending pod: scenarios/untolerated-taint)",
            TESTS / "scenarios" / "untolerated-taint" / "snapshot", _pod_argv("untolerated-taint")),
    Command("diagnose-pod-failing", "`diagnose pod` (failing pod: scenarios/nvidia-runtime-error)",
            TESTS / "scenarios" / "nvidia-runtime-error" / "snapshot", _pod_argv("nvidia-runtime-error")),
    Command("diagnose-node", "`diagnose node gpu-a100-5` (scenarios/node-xid-79)",
            TESTS / "scenarios" / "node-xid-79" / "snapshot", ("diagnose", "node", "gpu-a100-5")),
    Command("diagnose-pending", "`diagnose pending -A` (pending/mixed-causes)",
            TESTS / "pending" / "mixed-causes" / "snapshot", ("diagnose", "pending", "-A")),
    Command("nodes-capacity", "`nodes capacity` (capacity/fragmentation-stranded)",
            TESTS / "capacity" / "fragmentation-stranded" / "snapshot", ("nodes", "capacity")),
    Command("label-nodes", "`label-nodes` dry run (capacity/pools-and-selector)",
            TESTS / "capacity" / "pools-and-selector" / "snapshot", ("label-nodes",)),
    Command("snapshot-save", "`snapshot save OUT.tar.gz` (scenarios/untolerated-taint)",
            TESTS / "scenarios" / "untolerated-taint" / "snapshot", ("snapshot", "save", "{out}"), json_output=False),
    Command("label-nodes-apply", "`label-nodes --apply` (the one write; capacity/pools-and-selector)",
            TESTS / "capacity" / "pools-and-selector" / "snapshot", ("label-nodes", "--apply")),
    Command("fit", "`fit -f manifest.yaml` (a 6-pod gang with topology spread; fit/topology-spread)",
            TESTS / "fit" / "topology-spread" / "snapshot",
            ("fit", "-f", str(TESTS / "fit" / "topology-spread" / "manifest.yaml"))),
)
COMMANDS_BY_KEY = {c.key: c for c in COMMANDS}

# ----------------------------------------------------------------------- faults


@dataclass(frozen=True)
class FaultSpec:
    key: str
    kind: str
    status: Optional[int] = None
    headers: Optional[tuple[tuple[str, str], ...]] = None
    delay: float = 0.0


FAULTS: tuple[FaultSpec, ...] = (
    FaultSpec("401", "status", 401),
    FaultSpec("403", "status", 403),
    FaultSpec("404", "status", 404),
    FaultSpec("410", "gone"),                      # on the continue= requests of paged lists
    FaultSpec("429", "status", 429, headers=(("Retry-After", "0"),)),
    FaultSpec("500", "status", 500),
    FaultSpec("503", "status", 503),
    FaultSpec("reset", "reset"),
    FaultSpec("hang", "hang", delay=HANG_DELAY),
    FaultSpec("trickle", "trickle"),
    FaultSpec("badjson", "badjson"),
    FaultSpec("endless", "endless"),               # lists only: page one again, with a new continue token, forever
    FaultSpec("429-bad", "status", 429, headers=(("Retry-After", "-1"),)),
    FaultSpec("slow", "slow", delay=HANG_DELAY),   # the work is done (a PATCH applied), the answer comes too late
)
FAULTS_BY_KEY = {f.key: f for f in FAULTS}

# cells whose outcome varies from run to run (a bug in itself); rendered as such
FLAKY: set[tuple[str, str, str]] = set()

# -------------------------------------------------------------------- endpoints

_NAMESPACED = re.compile(r"^(/api/v1|/apis/[^/]+/[^/]+)/namespaces/[^/]+/([^/]+)(/[^/]+)?$")
_CLUSTER_NAMED = re.compile(r"^(/api/v1|/apis/[^/]+/[^/]+)/([^/]+)/[^/]+$")


def endpoint_of(path: str) -> str:
    """A request path normalised to the regex of its endpoint (names and
    namespaces become ``[^/]+``; API versions of one group collapse)."""
    if path.endswith("/log"):
        return "/log$"
    if "/proxy/" in path:
        return "/proxy/"
    m = _NAMESPACED.match(path)
    if m:
        prefix = _version_free(m.group(1))
        name = "/[^/]+" if m.group(3) else ""
        return f"^{prefix}/namespaces/[^/]+/{re.escape(m.group(2))}{name}$"
    parts = path.strip("/").split("/")
    if parts[0] == "api" and len(parts) == 4 or parts[0] == "apis" and len(parts) == 5:
        m = _CLUSTER_NAMED.match(path)
        if m:
            return f"^{_version_free(m.group(1))}/{re.escape(m.group(2))}/[^/]+$"
    if parts[0] == "apis" and len(parts) == 4:
        return f"^{_version_free('/' + '/'.join(parts[:3]))}/{re.escape(parts[3])}$"
    return f"^{re.escape(path)}$"


def _version_free(prefix: str) -> str:
    if prefix == "/api/v1":
        return "/api/v1"
    _, _, group, _version = prefix.split("/")
    return f"/apis/{re.escape(group)}/[^/]+"


# the most important endpoints first: the target object, then nodes, pods,
# events, logs, metrics, then whatever refines a diagnosis
_PRIORITY = ("/pods/[^/]+$", "/nodes/[^/]+$", "^/api/v1/nodes$", "^/api/v1/pods$", "/events$",
             "/log$", "/proxy/", "resourcequotas", "replicasets", "workloads", "persistentvolumeclaims",
             "resourceslices", "namespaces$", "jobs")


def _rank(ep: str) -> int:
    for i, needle in enumerate(_PRIORITY):
        if ep.endswith(needle) or needle in ep:
            return i
    return len(_PRIORITY)


def select_endpoints(paths: list[str], cap: int = MAX_ENDPOINTS) -> list[str]:
    seen: list[str] = []
    for p in paths:
        ep = endpoint_of(p)
        if ep not in seen:
            seen.append(ep)
    ranked = sorted(seen, key=lambda ep: (_rank(ep), seen.index(ep)))
    return ranked[:cap]


def endpoint_label(ep: str) -> str:
    return ep.replace("\\", "")

# ---------------------------------------------------------------------- running


@lru_cache(maxsize=None)
def _snapshot_data(snapdir: Path):
    from gpuctl.collect.files import iter_raw_objects, raw_logs, raw_metrics
    meta = snapdir / "snapshot.json"
    now = json.loads(meta.read_text()).get("capturedAt") if meta.is_file() else None
    return list(iter_raw_objects(snapdir)), raw_logs(snapdir), raw_metrics(snapdir), now


@dataclass
class Run:
    code: int
    out: str
    err: str
    wall: float
    requests: int
    paths: list[str]
    queries: list[str]
    saved: Optional[list[str]] = None      # snapshot save: members of the written archive
    timed_out: bool = False

    def doc(self):
        try:
            return json.loads(self.out)
        except ValueError:
            return None


def run_command(cmd: Command, fault: Optional[FaultSpec] = None, endpoint: Optional[str] = None,
                page_size_cap: Optional[int] = None, hard_timeout: float = 120.0) -> Run:
    from support.kubeapi import Fault, SnapshotAPIServer

    objects, logs, metrics, now = _snapshot_data(cmd.snapshot)
    srv = SnapshotAPIServer(list(objects), logs=logs, metrics=metrics, page_size_cap=page_size_cap)
    srv.start()
    with tempfile.TemporaryDirectory(prefix="gpuctl-fm-") as tmp:
        try:
            kc = srv.write_kubeconfig(os.path.join(tmp, "kubeconfig"), context="incident")
            if fault is not None:
                regex = endpoint
                if fault.kind == "gone":   # mid-pagination: only the continue= requests of the list
                    regex = endpoint.rstrip("$") + r"\?(.*&)?continue="
                srv.add_fault(Fault(regex, status=fault.status, kind=fault.kind, times=None, method="*",
                                    headers=dict(fault.headers) if fault.headers else None, delay=fault.delay,
                                    interval=TRICKLE_INTERVAL))
            out_file = os.path.join(tmp, "out.tar.gz")
            argv = [a.replace("{out}", out_file) for a in cmd.argv]
            argv += ["--kubeconfig", kc, "--request-timeout", f"{REQUEST_TIMEOUT:g}"]
            if cmd.json_output:
                argv += ["-o", "json"]
            env = {k: v for k, v in os.environ.items() if k not in ("KUBECONFIG", "GPUCTL_DEBUG")}
            env.update(HOME=str(TESTS / "nohome"), NO_COLOR="1", COLUMNS="80")
            if now:
                env["GPUCTL_NOW"] = now
            t0 = time.monotonic()
            res = cell_runner.run_gpuctl(argv, env, tmp, hard_timeout)
            code, out, err, timed_out = res.code, res.out, res.err, res.timed_out
            wall = time.monotonic() - t0
            saved = None
            if not cmd.json_output and os.path.isfile(out_file):
                try:
                    with tarfile.open(out_file) as tf:
                        saved = sorted(tf.getnames())
                except (tarfile.TarError, OSError):
                    saved = ["<unreadable archive>"]
            reqs = srv.requests
            return Run(code, out, err, wall, len(reqs), [r.path for r in reqs],
                       [f"{r.path}?{'&'.join(f'{k}={v}' for k, vs in r.query.items() for v in vs)}" for r in reqs],
                       saved, timed_out)
        finally:
            srv.stop()

# ----------------------------------------------------------------- classifying


@dataclass
class Baseline:
    cmd: Command
    run: Run
    endpoints: list[str]
    n_endpoints: int                      # distinct endpoints called (before the cap)
    paged: Run                            # fault-free with page_size_cap, for the 410 column
    paged_endpoints: set[str]


@dataclass
class Cell:
    command: str
    endpoint: str
    fault: str
    outcome: str                          # full | degraded | error | n/a
    code: Optional[int] = None
    problems: list[str] = field(default_factory=list)
    details: list[str] = field(default_factory=list)
    wall: float = 0.0
    requests: int = 0

    @property
    def label(self) -> str:
        if self.outcome == "error":
            text = f"error {self.code}"
        else:
            text = self.outcome
        return f"**BUG** {text}: {'; '.join(self.problems)}" if self.problems else text


def baseline(cmd: Command) -> Baseline:
    run = run_command(cmd)
    assert "Traceback" not in run.out + run.err, run.err
    if cmd.json_output:
        assert run.doc() is not None, f"{cmd.key}: fault-free run printed no JSON: {run.err}"
    paged = run_command(cmd, page_size_cap=PAGE_SIZE)
    paged_eps = {endpoint_of(q.split("?", 1)[0]) for q in paged.queries if "continue=" in q}
    distinct = {endpoint_of(p) for p in run.paths}
    return Baseline(cmd, run, select_endpoints(run.paths), len(distinct), paged, paged_eps)


def baselines() -> dict[str, Baseline]:
    with ThreadPoolExecutor(WORKERS) as pool:
        return dict(zip([c.key for c in COMMANDS], pool.map(baseline, COMMANDS)))


def _walk(doc):
    if isinstance(doc, dict):
        yield doc
        for v in doc.values():
            yield from _walk(v)
    elif isinstance(doc, list):
        for v in doc:
            yield from _walk(v)


def verdicts(doc) -> set[str]:
    return {d["verdict"] for d in _walk(doc) if isinstance(d.get("verdict"), str)}


def degradation_evidence(doc) -> list[str]:
    """What in a JSON document says that something could not be read."""
    found = []
    for d in _walk(doc):
        if d.get("status") in ("skipped", "error"):
            found.append(f"check {d.get('name') or d.get('id') or '?'} {d['status']}")
        for key in ("not_read", "notRead", "unread", "gaps", "errors", "warnings", "partial"):
            if d.get(key):
                found.append(key)
    return found


def skipped_checks(doc) -> list[dict]:
    return [d for d in _walk(doc) if d.get("status") in ("skipped", "error") and "name" in d or
            d.get("status") in ("skipped", "error") and "detail" in d]


def bound_seconds(base: Baseline) -> float:
    return (REQUEST_TIMEOUT + 1) * MAX_ATTEMPTS * base.n_endpoints + 10


def classify(base: Baseline, endpoint: str, fault: FaultSpec, run: Run) -> Cell:
    cmd = base.cmd
    ref = base.paged if fault.kind == "gone" else base.run
    cell = Cell(cmd.key, endpoint, fault.key, "?", run.code, wall=run.wall, requests=run.requests)
    if run.timed_out:
        cell.problems.append("hang")
    if "Traceback" in run.out or "Traceback" in run.err:
        cell.problems.append("traceback")
    if run.wall >= bound_seconds(base):
        cell.problems.append("too slow")
        cell.details.append(f"took {run.wall:.1f}s (bound {bound_seconds(base):.0f}s)")
    if run.requests >= 10 * max(1, ref.requests):
        cell.problems.append("retry storm")
        cell.details.append(f"{run.requests} requests (fault-free {ref.requests})")

    if cmd.json_output:
        doc = run.doc()
        if doc is not None and run.out.strip():
            if run.code == ref.code and doc == ref.doc():
                cell.outcome = "full"
            else:
                cell.outcome = "degraded"
                new_healthy = "healthy" in verdicts(doc) and "healthy" not in verdicts(ref.doc())
                if new_healthy:
                    cell.problems.append("verdict healthy on missing data")
                skipped = [d for d in _walk(doc) if d.get("status") in ("skipped", "error")]
                if skipped and isinstance(doc, dict) and doc.get("verdict") == "healthy":
                    cell.problems.append("verdict healthy with a check skipped")
                if run.code == 0 and ref.code != 0:
                    cell.problems.append("exit 0 (all clear) on missing data")
                # a log cut short is still a 200 text body: indistinguishable from a shorter log
                text_truncated = fault.kind == "badjson" and endpoint == "/log$"
                if not degradation_evidence(doc) and not text_truncated:
                    cell.problems.append("output differs but nothing is marked skipped/error")
            if cell.problems:
                cell.details.append(f"exit {run.code}; stdout {run.out[:300]!r}; stderr {run.err[-300:]!r}")
            return cell
    else:
        ref_line = ref.err.strip()
        if run.code == ref.code and run.saved == ref.saved and run.err.strip() == ref_line:
            cell.outcome = "full"
            return cell
        if run.code in (0, 1) and run.saved:
            cell.outcome = "degraded"
            if run.err.strip() == ref_line:
                cell.problems.append("snapshot differs but nothing says so")
            return cell
    # an error: one line on stderr, a contract exit code, nothing on stdout
    cell.outcome = "error"
    if run.code not in ERROR_CODES:
        cell.problems.append(f"exit code {run.code}")
    lines = [ln for ln in run.err.splitlines() if ln.strip()]
    if len(lines) != 1:
        cell.problems.append(f"{len(lines)} stderr lines")
    if run.out.strip():
        cell.problems.append("stdout not empty")
    if not cmd.json_output and run.saved:
        cell.problems.append("error but an archive was written")
    if cell.problems:
        cell.details.append(f"exit {run.code}; stdout {run.out[:300]!r}; stderr {run.err[-500:]!r}")
    return cell


def cell_jobs(bases: dict[str, Baseline]):
    for key, base in bases.items():
        for ep in base.endpoints:
            for f in FAULTS:
                yield key, ep, f.key


def is_list_endpoint(endpoint: str) -> bool:
    """A collection (list) endpoint: not one named object, log or proxy."""
    return not endpoint.endswith("/[^/]+$") and endpoint not in ("/log$", "/proxy/")


def applicable(base: Baseline, endpoint: str, fault: FaultSpec) -> bool:
    if fault.kind == "gone":
        return endpoint in base.paged_endpoints
    if fault.kind == "endless":
        return is_list_endpoint(endpoint)
    return True


def run_cell(bases: dict[str, Baseline], key: str, endpoint: str, fault_key: str) -> Cell:
    base, fault = bases[key], FAULTS_BY_KEY[fault_key]
    if not applicable(base, endpoint, fault):
        return Cell(key, endpoint, fault_key, "n/a")
    hard = bound_seconds(base) + 30
    run = run_command(base.cmd, fault, endpoint, page_size_cap=PAGE_SIZE if fault.kind == "gone" else None,
                      hard_timeout=hard)
    return classify(base, endpoint, fault, run)


def run_matrix(bases: dict[str, Baseline]) -> dict[tuple[str, str, str], Cell]:
    jobs = list(cell_jobs(bases))
    # the slow cells (hangs, backoff) first so the pool is not left waiting on them at the end
    slow = {"hang": 0, "trickle": 0, "slow": 0, "reset": 1, "500": 1, "503": 1}
    jobs.sort(key=lambda j: slow.get(j[2], 2))
    with ThreadPoolExecutor(WORKERS) as pool:
        cells = list(pool.map(lambda j: run_cell(bases, *j), jobs))
    return {(c.command, c.endpoint, c.fault): c for c in cells}

# --------------------------------------------------------------------- the doc


def render(bases: dict[str, Baseline], cells: dict[tuple[str, str, str], Cell]) -> str:
    out = [
        "# Reliability: the fault matrix",
        "",
        "Generated by `tests/test_fault_matrix.py` (regenerate with",
        "`GPUCTL_UPDATE_RELIABILITY=1 python -m pytest tests/test_fault_matrix.py` or `--update-golden`);",
        "the test fails when this file and the behaviour disagree.",
        "",
        "Every read command runs against the local API server (`gpuctl.apiserver`) with",
        f"`--request-timeout {REQUEST_TIMEOUT:g}`, once fault-free and then with one fault injected",
        "*persistently* (`times=None`, so retries cannot hide it) on one endpoint it calls.",
        "Endpoints are discovered from the fault-free run's requests: every endpoint the command",
        "calls, the most important first. Faults: HTTP 401, 403, 404; `410` = 410 Gone (Expired) on every",
        f"`continue=` request of a paged list (lists served {PAGE_SIZE} items a page; `n/a` where the",
        "endpoint is not a paged list); 429 with `Retry-After: 0`; 500; 503; `reset` = TCP reset",
        f"with no answer; `hang` = no answer for {HANG_DELAY:g} s; `trickle` = 200 and the body one byte every",
        f"{TRICKLE_INTERVAL:g} s (a response that never ends: each read is inside the timeout, only a deadline on",
        "the whole request stops it); `badjson` = 200 with the body cut in half; `endless` = a list answered",
        "with its first page and a new `continue` token every time (as behind a proxy that drops `continue`;",
        "`n/a` where the endpoint is not a list); `429-bad` = 429 with `Retry-After: -1`; `slow` = the request",
        f"is carried out (a PATCH is applied) but the answer comes only after {HANG_DELAY:g} s.",
        "`label-nodes --apply` is the one write: its faults hit the PATCH too; its report always lists every",
        "node's outcome (patched, unchanged, failed: why, not tried), so its failures read **degraded**.",
        "",
        "Outcomes:",
        "",
        "* **full**: same exit code and the same JSON (or archive) as the fault-free run;",
        "* **degraded**: a result, with the checks that lost their data marked `skipped`/`error`",
        "  and no `healthy` verdict the fault-free run did not have;",
        "* **error N**: one line on stderr, exit code N (2 usage, 3 not found, 4 cluster/access), nothing on stdout.",
        "",
        "Every cell is also checked for: no traceback; wall time below",
        f"(request-timeout + 1) × {MAX_ATTEMPTS} attempts × endpoints + 10 s; fewer than 10× the",
        "fault-free number of requests (no retry storm). A cell that breaks a rule reads **BUG**.",
        "",
        "The rest of the proof lives beside this matrix, each a test that fails on a regression:",
        "",
        "* least privilege (`tests/test_rbac.py`): every read command under exactly `deploy/rbac.yaml`'s",
        "  `gpuctl-reader` gets no 403 and the same result as with no RBAC; `label-nodes --apply` needs",
        "  `gpuctl-label-nodes` and nothing else; under a Role in one namespace each command degrades as",
        "  [RBAC](rbac.md#namespaced-access-only) says and names the missing permission;",
        "* hostile input (`tests/test_hostile_input.py`, `tests/test_parsers_fuzz.py`): snapshot bombs",
        "  (symlinks, `..` members, a gzip that expands past the limit) refused with exit 4; arbitrary",
        "  Kubernetes-shaped objects through the loader, the engine and both reports; escape sequences,",
        "  controls, bidi overrides, invalid UTF-8 and Rich markup in logs, events and taints, through every",
        "  output format, never reaching the terminal; 10 MB lines; `--debug` tracebacks without locals;",
        "  (`tests/test_snapshot_inputs.py`) FIFOs and devices skipped, files and members over 4 GiB refused",
        "  from their size before reading, 100,000-member tarballs, YAML alias bombs, objects nested past the",
        "  recursion limit; (`tests/test_malformed_objects.py`) one wrong-typed field among thousands of",
        "  objects empties that field, names it in every format and exits 1, never a crash or a false count;",
        "* the request path (`tests/test_request_path.py`): `--kubeconfig A:B` merged as kubectl merges",
        "  `KUBECONFIG` and never replaced by `$KUBECONFIG`; exec plugins bounded by `--request-timeout`;",
        "  lists whose continue token repeats or whose pages never end fail; `Retry-After` clamped; TLS",
        "  failures keep OpenSSL's reason; names checked before they become URL paths;",
        "* nothing leaked, nothing lost (`tests/test_snapshot_save.py`, `tests/test_snapshot_save_safety.py`,",
        "  `tests/test_label_nodes.py`): planted secrets redacted, Secrets never requested; what a bundle",
        "  could not collect reads back as the same gap; `--force` replaces only a previous gpuctl bundle,",
        "  never `.`, `$HOME` or foreign files, and an interrupted save leaves the old bundle intact; server",
        "  names never write outside the bundle; `label-nodes --apply` racing another writer (409) re-reads",
        "  and never overwrites, `--dry-run=client` sends nothing, every node gets an outcome (patched,",
        "  unchanged, failed, not tried) in every format, and an interrupted apply leaves every node",
        "  unchanged or fully labelled.",
        "",
    ]
    for cmd in COMMANDS:
        base = bases[cmd.key]
        out += [f"## {cmd.title}", "",
                f"Fault-free: exit {base.run.code}, {base.run.requests} requests to {base.n_endpoints} endpoints"
                + (f" ({MAX_ENDPOINTS} tested)." if base.n_endpoints > MAX_ENDPOINTS else "."), ""]
        out.append("| endpoint | " + " | ".join(f.key for f in FAULTS) + " |")
        out.append("|---|" + "---|" * len(FAULTS))
        for ep in base.endpoints:
            row = ["**BUG** flaky: see tests/test_fault_matrix.py" if (cmd.key, ep, f.key) in FLAKY
                   else cells[(cmd.key, ep, f.key)].label for f in FAULTS]
            out.append(f"| `{endpoint_label(ep)}` | " + " | ".join(row) + " |")
        out.append("")
    return "\n".join(out)


if __name__ == "__main__":
    t = time.monotonic()
    b = baselines()
    for k, v in b.items():
        print(k, v.run.code, v.run.requests, v.endpoints, sorted(v.paged_endpoints))
    cs = run_matrix(b)
    print(render(b, cs))
    print(f"{time.monotonic() - t:.1f}s", file=sys.stderr)
