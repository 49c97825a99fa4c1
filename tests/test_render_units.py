"""Every renderer in gpuctl/render at 80 columns, printed as the CLI prints it.

* Exact text for one small hand-built input per renderer (diagnosis table, wide and
  Markdown; capacity table, wide, Markdown and CSV; pending table, wide and
  Markdown; JSON and YAML documents; ``clean``; ``TrimmedWriter``).
* Properties of every scenario in tests/scenarios/*/snapshot rendered at 80
  columns: no line longer than 80 columns except a fix command (printed whole on
  one line, by design, so it pastes as one command), no line ending in padding,
  and nothing that matters cut: finding codes, node names and every word of what
  is shown appear whole; fix commands appear as whole lines with no prompt.
* Cluster text with escape sequences, C1 controls, bidi overrides or Rich markup
  prints inert.

The console is built as ``Common.console`` builds it (gpuctl/cli/common.py):
``TrimmedWriter`` over the stream, no colour, no highlighting, no soft wrap;
``test_the_cli_console_is_the_one_these_tests_use`` keeps the two in step."""

from __future__ import annotations

import io
import json
import re
from functools import lru_cache
from pathlib import Path

import pytest
from rich.console import Console
from rich.text import Text

from gpuctl.findings import CheckResult, Diagnosis, Finding, Fix, Status
from gpuctl.render import capacity as R_capacity
from gpuctl.render import data as R_data
from gpuctl.render import diagnosis as R_diagnosis
from gpuctl.render.safe import clean, clean_data
from gpuctl.render.stream import TrimmedWriter

WIDTH = 80
SCENARIOS = sorted(p for p in (Path(__file__).parent / "scenarios").iterdir() if (p / "expected.json").is_file())
IDS = [p.name for p in SCENARIOS]


def console(out: io.StringIO, width: int = WIDTH) -> Console:
    """The console ``Common.console`` makes for ``--no-color`` output, at ``width`` columns."""
    return Console(file=TrimmedWriter(out), width=width, color_system=None, no_color=True, highlight=False,
                   soft_wrap=False)


def printed(render, *args, width: int = WIDTH, **kwargs) -> str:
    out = io.StringIO()
    c = console(out, width)
    render(*args, c, **kwargs)
    c.file.flush()
    return out.getvalue()


# ---------------------------------------------------------------- hand-built inputs


def small_diagnosis() -> Diagnosis:
    taint = Finding(
        "untolerated-taint",
        "2 nodes with enough free GPUs carry a taint the pod does not tolerate; fixing this alone frees 2 nodes",
        evidence=["node/gpu-a100-3 taint dedicated=ml-team:NoSchedule",
                  "node/gpu-a100-4 taint dedicated=ml-team:NoSchedule",
                  "scheduler (PodScheduled condition): 2 of 4 nodes: node(s) had untolerated taint(s)"],
        nodes=["gpu-a100-3", "gpu-a100-4"],
        fixes=[Fix("If the pod belongs on these nodes, tolerate dedicated=ml-team:NoSchedule in "
                   "deployment/reward's pod spec",
                   ["kubectl -n ml-research patch deployment/reward --type=json -p '[{\"op\":\"add\",\"path\":"
                    "\"/spec/template/spec/tolerations\",\"value\":[{\"key\":\"dedicated\",\"operator\":\"Equal\","
                    "\"value\":\"ml-team\",\"effect\":\"NoSchedule\"}]}]'"],
                   snippets=['tolerations:\n- key: "dedicated"\n  operator: "Equal"\n  value: "ml-team"\n'
                             '  effect: "NoSchedule"']),
               Fix("Or, if the taint is stale, remove it from the node(s)",
                   ["kubectl taint nodes gpu-a100-3 dedicated=ml-team:NoSchedule-",
                    "kubectl taint nodes gpu-a100-4 dedicated=ml-team:NoSchedule-"])],
        root_cause=True, unblocks=2, disruption=0)
    gpu = Finding(
        "insufficient-gpu", "Only 3 nvidia.com/gpu free on the 2 nodes the pod may use; it needs 4",
        evidence=["the pod requests 4 nvidia.com/gpu", "free nvidia.com/gpu per node: gpu-a100-1=2, gpu-a100-2=1",
                  "scheduler (PodScheduled condition): 2 of 4 nodes: Insufficient nvidia.com/gpu"],
        nodes=["gpu-a100-1", "gpu-a100-2"],
        fixes=[Fix("Wait for running GPU jobs to finish, lower the request, or add GPU nodes to the pool",
                   ["kubectl get pods -A -o wide --field-selector spec.nodeName=gpu-a100-1"]),
               Fix("If this work is more important than what runs, give it a higher PriorityClass",
                   ["kubectl get priorityclass"])])
    return Diagnosis(
        target={"kind": "Pod", "namespace": "ml-research", "name": "reward-7f9c-x2x9q", "phase": "Pending",
                "node": None, "requests": {"nvidia.com/gpu": 4}, "age": "18m", "owner": "Deployment/reward"},
        verdict="blocked", findings=[taint, gpu],
        checks=[CheckResult("scheduler-verdict", Status.PASSED),
                CheckResult("node-fit", Status.FAILED, "insufficient-gpu, untolerated-taint", essential=True),
                CheckResult("autoscaler", Status.SKIPPED, "list configmaps in kube-system: forbidden",
                            essential=False)],
        nodes=[{"name": "gpu-a100-1", "fits": False, "reasons": ["insufficient-gpu"],
                "details": ["node/gpu-a100-1 nvidia.com/gpu: 2 of 8 free, pod needs 4"], "free": {"nvidia.com/gpu": 2}},
               {"name": "gpu-a100-3", "fits": False, "reasons": ["untolerated-taint"],
                "details": ["node/gpu-a100-3 taint dedicated=ml-team:NoSchedule"], "free": {"nvidia.com/gpu": 8}}])


def small_capacity(stranded: int = 0, unhealthy: int = 0) -> dict:
    def row(node, allocated, ready=True, schedulable=True, unhealthy=0, taints=(), labels=None):
        return {"node": node, "resource": "nvidia.com/gpu", "sku": "a100-sxm4-80gb", "pool": "a100", "capacity": 8,
                "allocatable": 8, "allocated": allocated, "free": None if allocated is None else 8 - allocated,
                "unhealthy": unhealthy, "schedulable": schedulable, "ready": ready, "taints": list(taints),
                "labels": labels or {"gpu-type": "a100"}}

    frag = {"largest_free_block": 2, "free_histogram": {"0": 1, "2": 1}, "stranded": stranded, "request_size": 4,
            "request_basis": "smallest Pending request"}
    if stranded:
        frag["summary"] = (f"{stranded} free nvidia.com/gpu on schedulable nodes, but no node can take a Pending pod "
                           "that needs 4")
    return {
        "schema": "gpuctl/capacity/v1", "pool_label": "gpu-type",
        "rows": [row("gpu-a100-1", 8), row("gpu-a100-2", 6, schedulable=False, taints=["dedicated=ml-team:NoSchedule"]),
                 row("gpu-a100-3", None, ready=False, unhealthy=unhealthy)],
        "pools": [{"pool": "a100", "resource": "nvidia.com/gpu", "nodes": 3, "capacity": 24, "allocatable": 24,
                   "allocated": 14, "free": 2, "unhealthy": unhealthy, "pending_pods": 1, "fragmentation": frag,
                   "consolidation_hint": "hint: moving ml-research/hpo-trial-01 (2) to gpu-a100-2 would free 8 "
                                         "nvidia.com/gpu on gpu-a100-1 for a Pending 8-GPU pod (by GPU count; check "
                                         "the moved pods' own constraints)"}],
        "totals": [{"resource": "nvidia.com/gpu", "nodes": 3, "capacity": 24, "allocatable": 24, "allocated": 14,
                    "free": 2, "unhealthy": unhealthy}],
        "unreadable": [{"kind": "Node", "namespace": None, "name": "gpu-a100-3", "field": "status.allocatable",
                        "problem": "'abc' is not a quantity", "kept": True}],
    }


def small_pending() -> dict:
    return {
        "schema": "gpuctl/pending/v1", "scope": "ml-research", "pods": 3,
        "groups": [
            {"code": "untolerated-taint", "severity": "blocker",
             "summary": "2 pods: 2 nodes with enough free GPUs carry a taint the pods do not tolerate",
             "pods": [{"namespace": "ml-research", "name": "train-a-0", "pendingSeconds": 1080, "verdict": "blocked"},
                      {"namespace": "ml-research", "name": "train-b-0", "pendingSeconds": 300, "verdict": "blocked"}],
             "fixes": [{"summary": "Remove the stale taint from the node(s)",
                        "commands": ["kubectl taint nodes gpu-a100-3 dedicated=ml-team:NoSchedule-"]},
                       {"summary": "Or tolerate it", "commands": ["kubectl -n ml-research edit job/train-a"],
                        "needsJudgement": "opens an editor: make the change its comment names"}],
             "runbook": "gpuctl runbook untolerated-taint", "oldestPendingSeconds": 1080},
            {"code": "scheduling-in-progress", "severity": "info",
             "summary": "The pod is new; the scheduler has not reported yet",
             "pods": [{"namespace": "ml-research", "name": "eval-0", "pendingSeconds": 20, "verdict": "healthy"}],
             "fixes": [], "runbook": "gpuctl runbook scheduling-in-progress", "oldestPendingSeconds": 20},
        ],
        "checks": [{"name": "read events", "status": "skipped", "detail": "list events in ml-research: timeout"}],
    }


def healthy_diagnosis() -> Diagnosis:
    return Diagnosis(
        target={"kind": "Pod", "namespace": "ml-research", "name": "finetune-phi3-g8xk2", "phase": "Running",
                "node": "gpu-a100-1", "requests": {"nvidia.com/gpu": 4}, "age": "2h13m", "owner": "Job/finetune-phi3"},
        verdict="healthy", findings=[],
        checks=[CheckResult("gpu-request", Status.PASSED, essential=False),
                CheckResult("containers-running", Status.PASSED, "1 container(s) running and ready")])


def node_diagnosis() -> Diagnosis:
    xid = Finding("xid-error", "Xid 79 (GPU fell off the bus) on gpu-a100-5: drain and reboot it",
                  evidence=["DCGM_FI_DEV_XID_ERRORS{gpu=\"3\"} 79"], nodes=["gpu-a100-5"],
                  fixes=[Fix("Cordon and drain the node, then reboot it",
                             ["kubectl cordon gpu-a100-5",
                              "kubectl drain gpu-a100-5 --ignore-daemonsets --delete-emptydir-data"])],
                  root_cause=True, disruption=3)
    return Diagnosis(
        target={"kind": "Node", "namespace": None, "name": "gpu-a100-5", "phase": "Ready", "node": "gpu-a100-5",
                "schedulable": False,
                "gpus": [{"resource": "nvidia.com/gpu", "expected": 8, "capacity": 8, "allocatable": 7,
                          "allocated": None}],
                "driver": {"version": "550.90.07", "cuda": "12.4", "source": "gfd"},
                "operands": {"device plugin": "Running"},
                "pods": [{"namespace": "ml-research", "name": "train-0", "phase": "Running",
                          "gpus": {"nvidia.com/gpu": 4}}]},
        verdict="inconclusive", findings=[xid],
        checks=[CheckResult("xid", Status.FAILED, "xid-error"),
                CheckResult("gpu-count", Status.SKIPPED, "list pods: timeout", essential=True)],
        notes=["The verdict is inconclusive: see the skipped checks for what could not be read."])


# ---------------------------------------------------------------- the CLI's console


def test_the_cli_console_is_the_one_these_tests_use(monkeypatch):
    from gpuctl.cli.common import WIDE_PIPE_COLUMNS, Common

    monkeypatch.setattr("sys.stdout", io.StringIO())
    monkeypatch.setenv("COLUMNS", "80")
    monkeypatch.delenv("NO_COLOR", raising=False)
    c = Common(no_color=True).console()
    assert isinstance(c.file, TrimmedWriter)
    assert (c.width, c.color_system, c.no_color, c.soft_wrap) == (80, None, True, False)
    monkeypatch.delenv("COLUMNS")
    assert Common(no_color=True).console(wide=True).width == WIDE_PIPE_COLUMNS   # -o wide into a pipe


def _diagnose_output():
    """The function ``gpuctl diagnose pod`` prints its diagnosis with (gpuctl/cli/diagnose.py:
    ``emit(diagnosis, opts)``, or ``show(diagnosis, opts)`` since the CLI's outputs were unified)."""
    import inspect

    import gpuctl.cli.diagnose as cli

    for name in ("show", "emit"):
        fn = getattr(cli, name, None)
        if fn is not None and next(iter(inspect.signature(fn).parameters)) == "diagnosis":
            return fn
    raise AssertionError("gpuctl/cli/diagnose.py has no function printing a diagnosis")


def test_diagnose_pod_prints_through_that_console(monkeypatch, capsys):
    from gpuctl.cli.common import Common, Output

    monkeypatch.setenv("COLUMNS", "80")
    output = _diagnose_output()
    for fmt, wide in ((Output.table, False), (Output.wide, True)):
        capsys.readouterr()
        output(small_diagnosis(), Common(output=fmt, no_color=True))
        assert capsys.readouterr().out == printed(R_diagnosis.render_diagnosis, small_diagnosis(), wide=wide)
    output(small_diagnosis(), Common(output=Output.markdown, no_color=True))
    assert capsys.readouterr().out == R_diagnosis.render_markdown(small_diagnosis()) + "\n"


# ---------------------------------------------------------------- render/diagnosis.py: exact text

DIAGNOSIS_HEAD = """\
 BLOCKED  pod ml-research/reward-7f9c-x2x9q
  Pending 18m; wants 4 nvidia.com/gpu

Root cause: untolerated-taint (blocker)
   2 nodes with enough free GPUs carry a taint the pod does not tolerate; fixing
   this alone frees 2 nodes
   Evidence:
     • node/gpu-a100-3 taint dedicated=ml-team:NoSchedule
     • node/gpu-a100-4 taint dedicated=ml-team:NoSchedule
     • scheduler (PodScheduled condition): 2 of 4 nodes: node(s) had untolerated
       taint(s)
   Fix:
     1. If the pod belongs on these nodes, tolerate dedicated=ml-team:NoSchedule
        in deployment/reward's pod spec
        kubectl -n ml-research patch deployment/reward --type=json -p '[{"op":"add","path":"/spec/template/spec/tolerations","value":[{"key":"dedicated","operator":"Equal","value":"ml-team","effect":"NoSchedule"}]}]'
        YAML for the manifest:
          tolerations:
          - key: "dedicated"
            operator: "Equal"
            value: "ml-team"
            effect: "NoSchedule"
     2. Or, if the taint is stale, remove it from the node(s)
        kubectl taint nodes gpu-a100-3 dedicated=ml-team:NoSchedule-
        kubectl taint nodes gpu-a100-4 dedicated=ml-team:NoSchedule-
   Runbook: gpuctl runbook untolerated-taint

Other findings, ranked:
2. insufficient-gpu (blocker)
   Only 3 nvidia.com/gpu free on the 2 nodes the pod may use; it needs 4
   Evidence:
     • the pod requests 4 nvidia.com/gpu
     • free nvidia.com/gpu per node: gpu-a100-1=2, gpu-a100-2=1
"""

DIAGNOSIS_TABLE = DIAGNOSIS_HEAD + """\
   Fix:
     1. Wait for running GPU jobs to finish, lower the request, or add GPU nodes
        to the pool
        kubectl get pods -A -o wide --field-selector spec.nodeName=gpu-a100-1
   Runbook: gpuctl runbook insufficient-gpu

Checks: 1 failed, 1 passed, 1 skipped
  skipped autoscaler: list configmaps in kube-system: forbidden
"""


def test_diagnosis_table_exact():
    assert printed(R_diagnosis.render_diagnosis, small_diagnosis()) == DIAGNOSIS_TABLE


DIAGNOSIS_WIDE = DIAGNOSIS_HEAD + """\
     • scheduler (PodScheduled condition): 2 of 4 nodes: Insufficient
       nvidia.com/gpu
   Fix:
     1. Wait for running GPU jobs to finish, lower the request, or add GPU nodes
        to the pool
        kubectl get pods -A -o wide --field-selector spec.nodeName=gpu-a100-1
     2. If this work is more important than what runs, give it a higher
        PriorityClass
        kubectl get priorityclass
   Runbook: gpuctl runbook insufficient-gpu

Per-node fit
NODE       ┃ FITS ┃ FREE             ┃ REASONS
━━━━━━━━━━━╇━━━━━━╇━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━━
gpu-a100-1 │ no   │ 2 nvidia.com/gpu │ insufficient-gpu
gpu-a100-3 │ no   │ 8 nvidia.com/gpu │ untolerated-taint

Checks: 1 failed, 1 passed, 1 skipped
  passed scheduler-verdict
  failed node-fit: insufficient-gpu, untolerated-taint
  skipped autoscaler: list configmaps in kube-system: forbidden
"""


def test_diagnosis_wide_exact():
    assert printed(R_diagnosis.render_diagnosis, small_diagnosis(), wide=True) == DIAGNOSIS_WIDE


HEALTHY_TABLE = """\
 HEALTHY  pod ml-research/finetune-phi3-g8xk2
  Running 2h13m; on gpu-a100-1; wants 4 nvidia.com/gpu

No problem found.
Checks: 2 passed
"""


def test_healthy_diagnosis_exact():
    assert printed(R_diagnosis.render_diagnosis, healthy_diagnosis()) == HEALTHY_TABLE


NODE_TABLE = """\
 INCONCLUSIVE  node gpu-a100-5
  Ready, cordoned; nvidia.com/gpu: 8 expected, 8 advertised, 7 allocatable, ?
    allocated; driver 550.90.07 / CUDA 12.4
  GPU stack: device plugin Running
  GPU pods: ml-research/train-0 (Running, 4 GPU)

Root cause: xid-error (critical)
   Xid 79 (GPU fell off the bus) on gpu-a100-5: drain and reboot it
   Evidence:
     • DCGM_FI_DEV_XID_ERRORS{gpu="3"} 79
   Fix:
     1. Cordon and drain the node, then reboot it
        (needs judgement: evicts every pod of the node: pick the moment)
        kubectl cordon gpu-a100-5
        kubectl drain gpu-a100-5 --ignore-daemonsets --delete-emptydir-data
   Runbook: gpuctl runbook xid-error

Checks: 1 failed, 1 skipped
  skipped gpu-count: list pods: timeout
The verdict is inconclusive: see the skipped checks for what could not be read.
"""


def test_node_diagnosis_exact():
    assert printed(R_diagnosis.render_diagnosis, node_diagnosis()) == NODE_TABLE


DIAGNOSIS_MARKDOWN = """\
## gpuctl diagnosis: pod `ml-research/reward-7f9c-x2x9q` — **blocked**

- phase Pending; requests 4 `nvidia.com/gpu`

### 1. `untolerated-taint` (blocker) — root cause

2 nodes with enough free GPUs carry a taint the pod does not tolerate; fixing this alone frees 2 nodes

Evidence:
- node/gpu-a100-3 taint dedicated=ml-team:NoSchedule
- node/gpu-a100-4 taint dedicated=ml-team:NoSchedule
- scheduler (PodScheduled condition): 2 of 4 nodes: node(s) had untolerated taint(s)

Fix:
1. If the pod belongs on these nodes, tolerate dedicated=ml-team:NoSchedule in deployment/reward's pod spec
   ```sh
   kubectl -n ml-research patch deployment/reward --type=json -p '[{"op":"add","path":"/spec/template/spec/tolerations","value":[{"key":"dedicated","operator":"Equal","value":"ml-team","effect":"NoSchedule"}]}]'
   ```
   ```yaml
   tolerations:
   - key: "dedicated"
     operator: "Equal"
     value: "ml-team"
     effect: "NoSchedule"
   ```
2. Or, if the taint is stale, remove it from the node(s)
   ```sh
   kubectl taint nodes gpu-a100-3 dedicated=ml-team:NoSchedule-
   kubectl taint nodes gpu-a100-4 dedicated=ml-team:NoSchedule-
   ```

Runbook: `gpuctl runbook untolerated-taint`

### 2. `insufficient-gpu` (blocker)

Only 3 nvidia.com/gpu free on the 2 nodes the pod may use; it needs 4

Evidence:
- the pod requests 4 nvidia.com/gpu
- free nvidia.com/gpu per node: gpu-a100-1=2, gpu-a100-2=1
- scheduler (PodScheduled condition): 2 of 4 nodes: Insufficient nvidia.com/gpu

Fix:
1. Wait for running GPU jobs to finish, lower the request, or add GPU nodes to the pool
   ```sh
   kubectl get pods -A -o wide --field-selector spec.nodeName=gpu-a100-1
   ```
2. If this work is more important than what runs, give it a higher PriorityClass
   ```sh
   kubectl get priorityclass
   ```

Runbook: `gpuctl runbook insufficient-gpu`

Checks not completed:
- skipped `autoscaler`: list configmaps in kube-system: forbidden
"""


def test_diagnosis_markdown_exact():
    assert R_diagnosis.render_markdown(small_diagnosis()) == DIAGNOSIS_MARKDOWN


def test_para_wraps_with_a_hanging_indent_and_never_splits_a_word():
    text = "• free nvidia.com/gpu per node: gpu-a100-1=2, gpu-a100-2=1, gpu-a100-3=0, gpu-a100-4=0, gpu-h100-1=7"
    assert printed(lambda c: c.print(R_diagnosis.Para(text, 5, 7))) == (
        "     • free nvidia.com/gpu per node: gpu-a100-1=2, gpu-a100-2=1, gpu-a100-3=0,\n"
        "       gpu-a100-4=0, gpu-h100-1=7\n")


def test_command_lines_are_never_wrapped_and_carry_no_prompt():
    cmd = ("kubectl -n ml-research get job/rlhf-reward-model -o json | kubectl patch --local -f - --type=json "
           "-p '[{\"op\":\"remove\",\"path\":\"/spec/selector\"}]' -o json | kubectl replace --force -f -")
    fix = {"commands": [cmd, "kubectl get priorityclass"], "snippets": ["tolerations:\n- key: \"dedicated\""]}

    def show(c):
        for line in R_diagnosis.command_lines(fix, 8):
            c.print(line, soft_wrap=True)

    assert printed(show) == ("        " + cmd + "\n"
                             "        kubectl get priorityclass\n"
                             "        YAML for the manifest:\n"
                             "          tolerations:\n"
                             "          - key: \"dedicated\"\n")


def test_a_long_check_detail_wraps_whole_with_a_hanging_indent():
    d = small_diagnosis()
    d.checks[2].detail = ("list configmaps in namespace kube-system: forbidden; needs RBAC verb 'list' on "
                          "'configmaps' in namespace kube-system")
    out = printed(R_diagnosis.render_diagnosis, d)
    assert out.endswith(
        "Checks: 1 failed, 1 passed, 1 skipped\n"
        "  skipped autoscaler: list configmaps in namespace kube-system: forbidden; needs\n"
        "    RBAC verb 'list' on 'configmaps' in namespace kube-system\n")


def test_a_word_longer_than_the_line_is_printed_whole():
    """An image reference, URL or path longer than the line stays whole (on a line of
    its own), as the diagnosis prints evidence."""
    image = "registry.example.com/team/research/very/long/path/to/the/trainer-image:2024-11-20-abcdef0123456789"
    d = small_diagnosis()
    d.findings[0].evidence.insert(0, f"image {image} not found")
    out = printed(R_diagnosis.render_diagnosis, d)
    assert image in out.split()
    assert "     • image\n       " + image + "\n       not found\n" in out


# ---------------------------------------------------------------- render/capacity.py: exact text

CAPACITY_TABLE = """\
GPU capacity by pool (pool label: gpu-type)

a100 (a100-sxm4-80gb)  nvidia.com/gpu: 14/24 allocated, 2 free on 3 node(s)
NODE        USED        ALLOC  FREE  STATE
gpu-a100-1  ██████████  8/8    0     ok
gpu-a100-2  ████████░░  6/8    2     cordoned
gpu-a100-3  ??????????  ?/8    ?     NotReady
  largest free block 2; nodes by free GPUs: 0 free: 1, 2 free: 1
  hint: moving ml-research/hpo-trial-01 (2) to gpu-a100-2 would free 8
    nvidia.com/gpu on gpu-a100-1 for a Pending 8-GPU pod (by GPU count; check
    the moved pods' own constraints)

Cluster totals
RESOURCE        NODES  CAPACITY  ALLOCATABLE  ALLOCATED  FREE  UNHEALTHY
nvidia.com/gpu  3      24        24           14         2     0

Could not be read fully (1); the report leaves these fields out:
  Node gpu-a100-3: status.allocatable: 'abc' is not a quantity
"""


def test_capacity_table_exact():
    assert printed(R_capacity.render_capacity, small_capacity()) == CAPACITY_TABLE


# -o wide adds each node's taints and labels after the node table
CAPACITY_WIDE = CAPACITY_TABLE.replace("NotReady\n", """NotReady
  TAINTS and LABELS
  gpu-a100-1
    taints: -
    labels: gpu-type=a100
  gpu-a100-2
    taints: dedicated=ml-team:NoSchedule
    labels: gpu-type=a100
  gpu-a100-3
    taints: -
    labels: gpu-type=a100
""", 1)


def test_capacity_wide_exact():
    assert printed(R_capacity.render_capacity, small_capacity(), wide=True) == CAPACITY_WIDE


CAPACITY_MARKDOWN = """\
## GPU capacity (pool label `gpu-type`)

| pool | resource | nodes | allocated / allocatable | free | unhealthy | largest free block | stranded |
| --- | --- | --- | --- | --- | --- | --- | --- |
| a100 | `nvidia.com/gpu` | 3 | 14 / 24 | 2 | 0 | 2 | 0 |

| node | resource | sku | allocated / allocatable | free | state |
| --- | --- | --- | --- | --- | --- |
| gpu-a100-1 | `nvidia.com/gpu` | a100-sxm4-80gb | 8 / 8 | 0 | ok |
| gpu-a100-2 | `nvidia.com/gpu` | a100-sxm4-80gb | 6 / 8 | 2 | cordoned |
| gpu-a100-3 | `nvidia.com/gpu` | a100-sxm4-80gb | ? / 8 | ? | NotReady |

Could not be read fully (1); the report leaves these fields out:

- Node gpu-a100-3: status.allocatable: 'abc' is not a quantity
"""


def test_capacity_markdown_exact():
    assert R_capacity.capacity_markdown(small_capacity()) == CAPACITY_MARKDOWN


CAPACITY_CSV = """\
node,pool,resource,sku,capacity,allocatable,allocated,free,unhealthy,schedulable,ready,replicas,physical_gpus,unreadable
gpu-a100-1,a100,nvidia.com/gpu,a100-sxm4-80gb,8,8,8,0,0,true,true,,,
gpu-a100-2,a100,nvidia.com/gpu,a100-sxm4-80gb,8,8,6,2,0,false,true,,,
gpu-a100-3,a100,nvidia.com/gpu,a100-sxm4-80gb,8,8,,,0,true,false,,,
"""


def test_capacity_csv_exact():
    assert R_capacity.capacity_csv(small_capacity()) == CAPACITY_CSV


def test_capacity_with_no_gpu_node_exact():
    doc = {"pool_label": "gpu-type", "rows": [], "pools": [], "totals": []}
    assert printed(R_capacity.render_capacity, doc) == ("GPU capacity by pool (pool label: gpu-type)\n"
                                                        "No node advertises a GPU resource.\n")


def test_capacity_wrapped_lines_keep_their_indent():
    out = printed(R_capacity.render_capacity, small_capacity(stranded=2, unhealthy=1))
    table = {"GPU capacity", "a100 ", "NODE ", "gpu-a100-", "Cluster totals", "RESOURCE ", "nvidia.com/gpu ",
             "Could not be read"}
    loose = [line for line in out.splitlines() if line and not line.startswith(" ")
             and not line.startswith(tuple(table))]
    assert loose == []


# ---------------------------------------------------------------- render/capacity.py (pending): exact text

PENDING_TABLE = """\
3 Pending GPU pod(s) in ml-research, by cause

1. untolerated-taint  2 pod(s), waiting up to 18m
   2 pods: 2 nodes with enough free GPUs carry a taint the pods do not tolerate
   ml-research/train-a-0 (18m), ml-research/train-b-0 (5m)
   Fix: Remove the stale taint from the node(s)
      kubectl taint nodes gpu-a100-3 dedicated=ml-team:NoSchedule-
   Runbook: gpuctl runbook untolerated-taint

2. scheduling-in-progress  1 pod(s), waiting up to 20s
   The pod is new; the scheduler has not reported yet
   ml-research/eval-0 (20s)
   Runbook: gpuctl runbook scheduling-in-progress
  skipped read events: list events in ml-research: timeout
"""


def test_pending_table_exact():
    assert printed(R_capacity.render_pending, small_pending()) == PENDING_TABLE


# -o wide shows every fix of a group, not only the first
PENDING_WIDE = PENDING_TABLE.replace("NoSchedule-\n", """NoSchedule-
   Fix: Or tolerate it
      (needs judgement: opens an editor: make the change its comment names)
      kubectl -n ml-research edit job/train-a
""", 1)


def test_pending_wide_exact():
    assert printed(R_capacity.render_pending, small_pending(), wide=True) == PENDING_WIDE


PENDING_MARKDOWN = """\
## Pending GPU pods in ml-research: 3

### 1. `untolerated-taint` — 2 pod(s), oldest 18m

2 pods: 2 nodes with enough free GPUs carry a taint the pods do not tolerate

- `ml-research/train-a-0` (18m)
- `ml-research/train-b-0` (5m)

Fix: Remove the stale taint from the node(s)

```sh
kubectl taint nodes gpu-a100-3 dedicated=ml-team:NoSchedule-
```

### 2. `scheduling-in-progress` — 1 pod(s), oldest 20s

The pod is new; the scheduler has not reported yet

- `ml-research/eval-0` (20s)

Not read or not decided:

- skipped read events: list events in ml-research: timeout
"""


def test_pending_markdown_exact():
    assert R_capacity.pending_markdown(small_pending()) == PENDING_MARKDOWN


def test_pending_that_could_not_be_listed_never_reads_as_nothing_pending():
    doc = {"scope": "ml-research", "pods": 0, "groups": [],
           "checks": [{"name": "read pending-pods", "status": "skipped", "detail": "list pods: forbidden"}]}
    assert printed(R_capacity.render_pending, doc) == (
        "Pending GPU pods in ml-research: could not be listed (see below)\n"
        "  skipped read pending-pods: list pods: forbidden\n")
    assert printed(R_capacity.render_pending, {"scope": "ml-research", "pods": 0, "groups": [], "checks": []}) == (
        "0 Pending GPU pod(s) in ml-research, by cause\n"
        "Nothing Pending.\n")


# ---------------------------------------------------------------- render/data.py: exact text

DATA_DOC = {"schema": "gpuctl/capacity/v1", "pool_label": "gpu\x1b[31m-type",
            "rows": [{"node": "gpu-1", "physical_gpus": 8, "labels": {"team_name": "ml\u202eteam"}, "ready": True,
                      "free": None}],
            "free_histogram": {"2_x": 1}, "gpu_2": 3}

DATA_JSON = """\
{
  "schema": "gpuctl/capacity/v1",
  "poolLabel": "gpu-type",
  "pool_label": "gpu-type",
  "rows": [
    {
      "node": "gpu-1",
      "physicalGpus": 8,
      "physical_gpus": 8,
      "labels": {
        "team_name": "mlteam"
      },
      "ready": true,
      "free": null
    }
  ],
  "freeHistogram": {
    "2_x": 1
  },
  "free_histogram": {
    "2_x": 1
  },
  "gpu_2": 3
}
"""

DATA_YAML = """\
schema: gpuctl/capacity/v1
poolLabel: gpu-type
pool_label: gpu-type
rows:
- node: gpu-1
  physicalGpus: 8
  physical_gpus: 8
  labels:
    team_name: mlteam
  ready: true
  free: null
freeHistogram:
  2_x: 1
free_histogram:
  2_x: 1
gpu_2: 3
"""


def test_json_document_exact():
    out = io.StringIO()
    R_data.dump_json(DATA_DOC, out)
    assert out.getvalue() == DATA_JSON
    assert json.loads(out.getvalue())["poolLabel"] == "gpu-type"


def test_yaml_document_exact():
    out = io.StringIO()
    R_data.dump_yaml(DATA_DOC, out)
    assert out.getvalue() == DATA_YAML


def test_camel_case_keys_keep_their_snake_case_alias_and_leave_data_keys_alone():
    assert R_data.camel("largest_free_block") == "largestFreeBlock"
    assert R_data.camel("schema") == "schema"
    doc = R_data.with_camel_keys({"request_basis": "x", "requests": {"nvidia_com_gpu": 1},
                                  "nested": [{"pending_pods": 2}]})
    assert doc == {"requestBasis": "x", "request_basis": "x", "requests": {"nvidia_com_gpu": 1},
                   "nested": [{"pendingPods": 2, "pending_pods": 2}]}


# ---------------------------------------------------------------- render/safe.py


@pytest.mark.parametrize("raw,shown", [
    ("\x1b[31mred\x1b[0m text", "red text"),                               # CSI colour
    ("\x1b[2J\x1b[Hcleared", "cleared"),                                   # CSI clear screen, cursor home
    ("\x1b]0;pwned\x07after", "after"),                                    # OSC window title, BEL-terminated
    ("\x1b]8;;https://evil.example/\x1b\\link\x1b]8;;\x1b\\", "link"),       # OSC 8 hyperlink, ST-terminated
    ("\x1bPq#0;2;0;0;0\x1b\\ok", "ok"),                                    # DCS (sixel)
    ("a\x1bcb", "ab"),                                                     # lone ESC + char (RIS)
    ("\x9b31mC1 CSI", "C1 CSI"),                                           # 8-bit CSI
    ("x\x85y\x9dz\x90w", "xyzw"),                                          # other C1 controls
    ("bell\x07 back\x08 cr\r del\x7f nul\x00", "bell back cr del nul"),    # C0 controls and DEL
    ("kubectl taint nodes gpu-1 \u202edaolnwod\u202c-", "kubectl taint nodes gpu-1 daolnwod-"),  # bidi override
    ("\u2066iso\u2069 \u200emark\u200f \u061carabic", "iso mark arabic"),  # isolates, marks, ALM
    ("line one\n\tline two", "line one\n\tline two"),                      # newline and tab kept
    ("[bold red]markup[/] stays text", "[bold red]markup[/] stays text"),  # markup is not a control
])
def test_clean_strips_escapes_and_controls(raw, shown):
    assert clean(raw) == shown


def test_clean_takes_any_value_and_clean_data_walks_documents():
    assert clean(42) == "42"
    doc = {"k\x1b[1m": ["v\x9b2J", {"n": 1, "t": True, "z": None, "s": "\u202ex"}], 3: "ok\x07"}
    assert clean_data(doc) == {"k": ["v", {"n": 1, "t": True, "z": None, "s": "x"}], 3: "ok"}


HOSTILE = "evil\x1b]0;pwned\x07\x1b[2J\u202eyxes\u202c [bold red]markup[/]\x9b1m\x85"


def hostile_diagnosis() -> Diagnosis:
    f = Finding("node-unschedulable", f"summary {HOSTILE}", evidence=[f"evidence {HOSTILE}"], nodes=[f"gpu-{HOSTILE}"],
                fixes=[Fix(f"fix {HOSTILE}", [f"kubectl uncordon gpu-1 # {HOSTILE}"])], root_cause=True)
    return Diagnosis(target={"kind": "Pod", "namespace": "ml", "name": f"pod-{HOSTILE}", "phase": "Pending",
                             "node": None, "requests": {}},
                     verdict="blocked", findings=[f],
                     checks=[CheckResult("node-fit", Status.ERROR, f"detail {HOSTILE}")],
                     nodes=[{"name": f"gpu-{HOSTILE}", "fits": False, "reasons": ["node-unschedulable"],
                             "details": [], "free": {}}],
                     notes=[f"note {HOSTILE}"])


def assert_inert(out: str) -> None:
    assert "\x1b" not in out and "\x9b" not in out and "\x85" not in out and "\x07" not in out
    assert not re.search("[\u202a-\u202e\u2066-\u2069\u200e\u200f\u061c]", out)
    assert "pwned" not in out                      # the OSC payload is dropped with its sequence
    assert "[bold red]markup[/]" in out            # Rich markup prints literally


@pytest.mark.parametrize("wide", [False, True], ids=["table", "wide"])
def test_cluster_text_is_inert_in_the_diagnosis_table(wide):
    out = printed(R_diagnosis.render_diagnosis, hostile_diagnosis(), wide=wide, width=200)
    assert_inert(out)
    assert "summary evilyxes [bold red]markup[/]" in out


def test_cluster_text_is_inert_in_markdown_and_json():
    assert_inert(R_diagnosis.render_markdown(hostile_diagnosis()))
    out = io.StringIO()
    R_data.dump_json(hostile_diagnosis().to_dict(), out)
    assert_inert(out.getvalue())


def test_cluster_text_is_inert_in_the_markdown_target_line():
    d = hostile_diagnosis()
    d.target.update(phase=f"Running{HOSTILE}", node=f"gpu-{HOSTILE}", requests={f"example.com/gpu{HOSTILE}": 1})
    assert_inert(R_diagnosis.render_markdown(d))


def test_cluster_text_is_inert_in_capacity_resource_names():
    cap = small_capacity()
    resource = f"dra:gpu{HOSTILE}.example.com"
    for part in cap["rows"] + cap["pools"] + cap["totals"]:
        part["resource"] = resource
    for out in (printed(R_capacity.render_capacity, cap, width=200), R_capacity.capacity_markdown(cap)):
        assert "\x1b" not in out and "\u202e" not in out and "pwned" not in out


def test_cluster_text_is_inert_in_capacity_and_pending_reports():
    cap = small_capacity()
    cap["pool_label"] = f"label-{HOSTILE}"
    cap["rows"][0]["node"] = f"gpu-{HOSTILE}"
    cap["rows"][0]["labels"] = {"k": HOSTILE}
    cap["unreadable"][0]["problem"] = HOSTILE
    pend = small_pending()
    pend["groups"][0]["summary"] = HOSTILE
    pend["groups"][0]["pods"][0]["name"] = HOSTILE
    pend["groups"][0]["fixes"][0]["commands"] = [f"kubectl get pods # {HOSTILE}"]
    for out in (printed(R_capacity.render_capacity, cap, wide=True, width=200), R_capacity.capacity_markdown(cap),
                R_capacity.capacity_csv(cap), printed(R_capacity.render_pending, pend, wide=True, width=200),
                R_capacity.pending_markdown(pend)):
        assert "\x1b" not in out and "\u202e" not in out and "\x9b" not in out and "pwned" not in out


# ---------------------------------------------------------------- render/stream.py


def test_trimmed_writer_removes_trailing_padding_before_each_newline():
    out = io.StringIO()
    w = TrimmedWriter(out)
    assert w.write("NODE   FITS   \nrow 1\t \n") == len("NODE   FITS   \nrow 1\t \n")
    assert out.getvalue() == "NODE   FITS\nrow 1\n"


def test_trimmed_writer_trims_padding_split_across_writes_and_before_style_codes():
    out = io.StringIO()
    w = TrimmedWriter(out)
    w.write("a   ")
    assert out.getvalue() == ""                      # held until the line is complete
    w.write("  \nb  \x1b[0m\n  c  d  ")
    assert out.getvalue() == "a\nb\x1b[0m\n"
    w.flush()
    assert out.getvalue() == "a\nb\x1b[0m\n  c  d"   # leading and inner spaces kept


def test_trimmed_writer_keeps_an_unfinished_styled_line_as_it_is():
    out = io.StringIO()
    w = TrimmedWriter(out)
    w.write("x \x1b[0m  ")
    w.flush()
    assert out.getvalue() == "x \x1b[0m  "


def test_trimmed_writer_under_rich_leaves_no_padded_line():
    from rich.table import Table

    table = Table(title="Per-node fit", title_justify="left")
    for col in ("NODE", "FITS", "REASONS"):
        table.add_column(col)
    table.add_row("gpu-a100-1", "no", "insufficient-gpu")
    table.add_row("gpu-a100-2", "yes", "")
    raw = io.StringIO()
    Console(file=raw, width=WIDTH, color_system=None, soft_wrap=False).print(table)
    assert any(line != line.rstrip() for line in raw.getvalue().splitlines())      # Rich pads
    out = printed(lambda c: c.print(table))
    assert [line.rstrip() for line in raw.getvalue().splitlines()] == out.splitlines()


def test_trimmed_writer_delegates_tty_and_encoding():
    class Tty(io.StringIO):
        encoding = "latin-1"

        def isatty(self):
            return True

    w = TrimmedWriter(Tty())
    assert w.isatty() is True and w.encoding == "latin-1"
    assert TrimmedWriter(io.StringIO()).isatty() is False


# ---------------------------------------------------------------- every scenario at 80 columns


def _engine(name: str):
    """``diagnose`` / ``diagnose_node`` from gpuctl.engine, imported when a test runs."""
    import gpuctl.engine

    return getattr(gpuctl.engine, name)


def _snapshot(scenario: Path):
    from gpuctl.collect.files import load_snapshot

    return load_snapshot(scenario / "snapshot")


@lru_cache(maxsize=None)
def scenario_diagnosis(name: str) -> Diagnosis:
    scenario = Path(__file__).parent / "scenarios" / name
    exp = json.loads((scenario / "expected.json").read_text())
    snap = _snapshot(scenario)
    if exp.get("node"):
        return _engine("diagnose_node")(snap, exp["node"])
    ns, target = exp["pod"].split("/", 1) if exp.get("pod") else (exp["namespace"], exp["target"])
    return _engine("diagnose")(snap, ns, target)


def command_lines_of(fixes: list[dict]) -> list[str]:
    return [line for fx in fixes for cmd in fx["commands"] for line in clean(cmd).splitlines()]


def snippet_lines_of(fixes: list[dict]) -> list[str]:
    return [line for fx in fixes for s in fx.get("snippets") or [] for line in clean(s).splitlines()]


def shown(doc: dict, wide: bool) -> tuple[list[str], list[dict]]:
    """What the table shows of each finding (render/diagnosis.py ``_finding_block``):
    the texts and the fixes."""
    texts, fixes = [], []
    for i, f in enumerate(doc["findings"]):
        full = wide or i == 0
        texts.append(f["summary"])
        texts += f["evidence"] if wide else f["evidence"][:R_diagnosis.MAX_EVIDENCE] if full else f["evidence"][:2]
        fixes += f["fixes"] if full else f["fixes"][:1]
    texts += [fx["summary"] for fx in fixes] + [fx["needsJudgement"] for fx in fixes if fx.get("needsJudgement")]
    return texts, fixes


def assert_fits(out: str, allowed_long: list[str]) -> None:
    """No padding; no line over 80 columns except one that is a whole fix command."""
    whole = set(allowed_long)
    for line in out.splitlines():
        assert line == line.rstrip(), f"trailing padding: {line!r}"
        if Text(line).cell_len > WIDTH:
            assert line.strip() in whole and line == line[:len(line) - len(line.lstrip())] + line.strip(), \
                f"a line over {WIDTH} columns that is not a whole command: {line!r}"


def assert_whole_lines(out: str, lines: list[str], indent: int) -> None:
    """Each command line is one output line: the indent, then the command, nothing
    else (no prompt to delete, not wrapped, not cropped)."""
    printed_lines = set(out.splitlines())
    for cmd in lines:
        assert " " * indent + cmd in printed_lines, f"command not printed whole on one line: {cmd}"


_PUNCT = "()[],;:'\""


def words_of(text: str) -> set[str]:
    """The output's words, also without the punctuation around them (a node name
    is printed as "on gpu-1;", a label as "k=v,")."""
    return {v for w in text.split() for v in (w, w.strip(_PUNCT))}


def missing_words(out: str, text: str) -> list[str]:
    words = words_of(out)
    return [w for w in clean(text).split() if w not in words and w.strip(_PUNCT) not in words]


def assert_words_whole(out: str, texts: list[str]) -> None:
    """Every word of these texts appears as a word of the output: wrapping may move
    a word to the next line but never splits, crops or ellipsises it."""
    for t in texts:
        missing = missing_words(out, t)
        assert not missing, f"cut: {missing} of {t!r}"


def assert_no_truncation_marks(out: str, source: list[str]) -> None:
    """'…' only where gpuctl says how many more there are, or where the data had one."""
    for m in re.finditer("…", out):
        tail = out[m.start():m.start() + 12]
        if re.match(r"… \d+ more", tail):
            continue
        assert any("…" in s for s in source), f"truncated: {out[max(0, m.start() - 30):m.end()]!r}"


@pytest.mark.parametrize("wide", [False, True], ids=["table", "wide"])
@pytest.mark.parametrize("name", IDS)
def test_every_scenario_diagnosis_fits_80_columns_with_nothing_cut(name, wide):
    d = scenario_diagnosis(name)
    doc = d.to_dict()
    out = printed(R_diagnosis.render_diagnosis, d, wide=wide)
    texts, fixes = shown(doc, wide)
    commands, snippets = command_lines_of(fixes), snippet_lines_of(fixes)
    assert_fits(out, commands + snippets)
    # the verdict and the target
    t = doc["target"]
    ref = f"{t['kind'].lower()} " + (f"{t['namespace']}/" if t.get("namespace") else "") + str(t["name"])
    assert out.startswith(f" {d.verdict.upper()}  {clean(ref)}")
    if doc["target"].get("node"):
        assert_words_whole(out, [doc["target"]["node"]])
    # every finding's code, whole, as its heading
    lines = out.splitlines()
    for i, f in enumerate(doc["findings"], 1):
        head = f"Root cause: {f['code']} ({f['severity']})" if i == 1 else f"{i}. {f['code']} ({f['severity']})"
        assert any(line == head or line.startswith(head + "  symptom of ") for line in lines), head
        assert f"   Runbook: gpuctl runbook {f['code']}" in lines
    # every word shown (summaries, evidence with node names, fix summaries) whole
    assert_words_whole(out, texts + [str(n) for n in d.notes])
    # fixes paste as printed
    assert_whole_lines(out, commands, 8)
    assert_whole_lines(out, snippets, 10)
    # the per-node fit table names every node whole
    if wide and doc["nodes"]:
        for n in doc["nodes"]:
            assert any(line.split(" ", 1)[0] == n["name"] for line in lines), n["name"]
    assert_no_truncation_marks(out, texts + [e for f in doc["findings"] for e in f["evidence"]])


def test_every_scenario_check_line_is_printed_whole():
    cut = []
    for name in IDS:
        d = scenario_diagnosis(name)
        for wide in (False, True):
            out = printed(R_diagnosis.render_diagnosis, d, wide=wide)
            for c in d.checks:
                if wide or c.status in (Status.SKIPPED, Status.ERROR):
                    missing = missing_words(out, c.detail)
                    if missing:
                        cut.append((name, wide, c.name, missing[:3]))
    assert cut == []


def _capacity_doc(name: str):
    from gpuctl.reports.capacity import capacity_report

    snap = _snapshot(Path(__file__).parent / "scenarios" / name)
    if {"nodes", "pods"} & set(snap.gaps):
        pytest.skip("nodes capacity refuses to count without nodes and pods (exit 4)")
    return capacity_report(snap, None, wide=True)


@pytest.mark.parametrize("wide", [False, True], ids=["table", "wide"])
@pytest.mark.parametrize("name", IDS)
def test_every_scenario_capacity_fits_80_columns_with_nothing_cut(name, wide):
    doc = _capacity_doc(name)
    out = printed(R_capacity.render_capacity, doc, wide=wide)
    assert_fits(out, [])
    assert "…" not in out
    lines = out.splitlines()
    for r in doc["rows"]:   # each node's row starts with its whole name
        assert any(line.split(" ", 1)[0] == clean(r["node"]) for line in lines), r["node"]
    texts = [p["pool"] for p in doc["pools"]] + [p.get("consolidation_hint") or "" for p in doc["pools"]] \
        + [p["fragmentation"].get("summary") or "" for p in doc["pools"]] + R_capacity.unreadable_lines(doc)
    if wide:
        texts += [t for r in doc["rows"] for t in r.get("taints") or []]
        texts += [f"{k}={v}" for r in doc["rows"] for k, v in (r.get("labels") or {}).items()]
    assert_words_whole(out, texts)


@pytest.mark.parametrize("wide", [False, True], ids=["table", "wide"])
@pytest.mark.parametrize("name", IDS)
def test_every_scenario_pending_report_fits_80_columns_with_nothing_cut(name, wide):
    from gpuctl.reports.pending import pending_report

    doc, _ = pending_report(_snapshot(Path(__file__).parent / "scenarios" / name), None)
    out = printed(R_capacity.render_pending, doc, wide=wide)
    fixes = [fx for g in doc["groups"] for fx in (g["fixes"] if wide else g["fixes"][:1])]
    commands = command_lines_of(fixes)
    assert_fits(out, commands + snippet_lines_of(fixes))
    lines = out.splitlines()
    for i, g in enumerate(doc["groups"], 1):
        assert any(line.startswith(f"{i}. {g['code']}  {len(g['pods'])} pod(s)") for line in lines), g["code"]
        pods = g["pods"] if wide else g["pods"][:6]
        assert_words_whole(out, [f"{p['namespace']}/{p['name']}" for p in pods] + [g["summary"]]
                           + [fx["summary"] for fx in fixes])
    assert_whole_lines(out, commands, 6)
    assert_no_truncation_marks(out, [g["summary"] for g in doc["groups"]])
