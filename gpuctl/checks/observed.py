"""What an expert reads next when no check recognised the cause.

Not understood is not unreadable: when every read succeeded and no check explains
the pod's state, the diagnosis is ``inconclusive`` and shows, verbatim and most
telling first, what gpuctl saw: the scheduler's latest message, the pod's Warning
events, its status reason and message, its containers' states (init containers
first), and the last lines of its logs that look like errors. An unrecognised
message is evidence, not silence."""

from __future__ import annotations

import re

from .context import PodContext

MAX_LINES = 12
MAX_EVENTS = 5
LOG_TAIL = 400            # lines of each log searched for errors
LOG_ERRORS = 3            # error-like lines kept per log
_ERRORISH = re.compile(r"(?i)\b(error|exception|fail(ed|ure)?|fatal|panic|traceback|refused|denied|cannot|unable|"
                       r"not found|no such|killed|abort(ed)?|segmentation fault|timed? ?out)\b")


def observed(ctx: PodContext) -> list[str]:
    """Verbatim lines, ranked: the scheduler, Warning events, the pod's status, its
    containers, error-like log lines. Empty when the pod shows nothing at all."""
    lines: list[str] = []
    lines += _scheduler(ctx)
    lines += _warnings(ctx, skip=set(lines))
    lines += _status(ctx)
    lines += _containers(ctx)
    lines += log_stalls_in_setup(ctx)
    lines += _log_errors(ctx)
    seen: set[str] = set()
    out = []
    for line in lines:
        if line not in seen:
            seen.add(line)
            out.append(line)
    return out[:MAX_LINES]


def _scheduler(ctx: PodContext) -> list[str]:
    pod = ctx.pod
    if pod.spec.nodeName:
        return []
    cond = pod.condition("PodScheduled")
    if cond is not None and cond.status == "False" and cond.message:
        return [f"scheduler (PodScheduled {cond.reason or 'False'}): {cond.message}"]
    latest = next((e for e in reversed(ctx.scheduling_events) if e.message), None)
    return [f"scheduler ({ctx.event_line(latest)})"] if latest else []


def _warnings(ctx: PodContext, skip: set[str]) -> list[str]:
    out = []
    for e in reversed(ctx.events):
        if e.type != "Warning" or (e.reason == "FailedScheduling" and any(e.message and e.message in s for s in skip)):
            continue
        out.append(ctx.event_line(e))
        if len(out) == MAX_EVENTS:
            break
    return out


def _status(ctx: PodContext) -> list[str]:
    st = ctx.pod.status
    if st.reason or st.message:
        return [f"pod status: {st.phase or ''} {st.reason or ''}: {st.message or ''}".replace("  ", " ").strip(" :")]
    return []


def _containers(ctx: PodContext) -> list[str]:
    out = []
    for kind, statuses in (("init container", ctx.pod.status.initContainerStatuses),
                           ("container", ctx.pod.status.containerStatuses)):
        for cs in statuses:
            for when, state in (("now", cs.state), ("last", cs.lastState)):
                if state is None:
                    continue
                if state.waiting and (state.waiting.reason or state.waiting.message):
                    w = state.waiting
                    out.append(f"{kind} {cs.name} ({when}): waiting {w.reason or ''}"
                               + (f": {w.message}" if w.message else "") + f" (restarts {cs.restartCount})")
                elif state.terminated and (state.terminated.exitCode or state.terminated.reason not in (None, "Completed")):
                    t = state.terminated
                    out.append(f"{kind} {cs.name} ({when}): terminated {t.reason or ''} exit code {t.exitCode}"
                               + (f": {t.message}" if t.message else "") + f" (restarts {cs.restartCount})")
    return out


def _log_errors(ctx: PodContext) -> list[str]:
    out = []
    names = [cs.name for cs in ctx.pod.status.initContainerStatuses] + [cs.name for cs in ctx.pod.status.containerStatuses]
    for name in names:
        for previous in (True, False):
            text = ctx.snap.logs.get(ctx.ns, ctx.name, name, previous)
            if not text:
                continue
            hits = [ln.strip() for ln in text.splitlines()[-LOG_TAIL:] if _ERRORISH.search(ln)]
            for ln in hits[-LOG_ERRORS:]:
                out.append(f"log of {name}{' (previous)' if previous else ''}: {ln[:300]}")
    return out


_FATAL = re.compile(r"^\s*Traceback \(most recent call last\):|\bSegmentation fault\b|\bBus error\b|"
                    r"^\s*(?:[A-Za-z_][\w.]*(?:Error|Exception)): \S")
FATAL_TAIL = 50


def log_ends_in_error(ctx: PodContext) -> list[str]:
    """The last lines of a running container's current log when they hold a fatal
    error (a Python traceback, a segmentation fault, a bus error): a pod that runs
    but whose program died is not healthy. Empty when the logs end cleanly."""
    out = []
    for cs in ctx.pod.status.containerStatuses:
        text = ctx.snap.logs.get(ctx.ns, ctx.name, cs.name, False) or ""
        tail = [ln for ln in text.splitlines()[-FATAL_TAIL:] if ln.strip()]
        if any(_FATAL.search(ln) for ln in tail):
            out += [f"log of {cs.name}: {ln.strip()[:300]}" for ln in tail if _FATAL.search(ln) or _ERRORISH.search(ln)][-3:]
    return out


STALL_AFTER = 300         # seconds a container runs before setup output with nothing after it looks stuck
STALL_LINES = 4           # trailing setup lines shown


def log_stalls_in_setup(ctx: PodContext) -> list[str]:
    """The last lines of a running GPU container's current log when the log ends with
    NCCL / CUDA / process-group setup lines and nothing after them (no "Init
    COMPLETE", no progress), though the container started minutes ago: the program
    is stuck in setup (knowledge/setup_logs.yaml), a hang no Kubernetes object
    explains. Empty when the pod requests no GPU or a log moves on past setup."""
    from ..knowledge.setup_logs import stalled_in_setup

    if not ctx.gpu_requests:
        return []
    out = []
    for cs in ctx.pod.status.containerStatuses:
        running = cs.state.running if cs.state is not None else None
        if running is None:
            continue
        age = ctx.snap.age_seconds(getattr(running, "startedAt", None))
        if age is not None and age < STALL_AFTER:
            continue
        text = ctx.snap.logs.get(ctx.ns, ctx.name, cs.name, False) or ""
        tail = stalled_in_setup(text.splitlines()[-FATAL_TAIL:])
        out += [f"log of {cs.name} (its last lines, nothing after them): {ln.strip()[:300]}" for ln in tail[-STALL_LINES:]]
    return out
