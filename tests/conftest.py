"""Shared test fixtures: running the CLI in-process, and serving a snapshot over
real HTTP with the local Kubernetes-API-compatible server (gpuctl.apiserver) so the
real `kubernetes` client is exercised end to end — never patched."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import pytest

from support.kubeapi import SnapshotAPIServer
from gpuctl.cli.app import main
from gpuctl.collect.files import iter_raw_objects, raw_logs, raw_metrics

ROOT = Path(__file__).resolve().parent.parent
SCENARIOS = ROOT / "tests" / "scenarios"
GOLDEN = ROOT / "tests" / "golden"


def pytest_addoption(parser):
    parser.addoption("--update-golden", action="store_true", help="rewrite tests/golden/* from the current output")


@pytest.fixture
def update_golden(request) -> bool:
    return bool(request.config.getoption("--update-golden") or os.environ.get("GPUCTL_UPDATE_GOLDEN"))


@dataclass
class Result:
    code: int
    out: str
    err: str

    def json(self):
        return json.loads(self.out)


@pytest.fixture
def cli(capsys, monkeypatch):
    """Run gpuctl in-process with a clean environment (no real kubeconfig, no colour)."""
    monkeypatch.delenv("KUBECONFIG", raising=False)
    # --debug sets GPUCTL_DEBUG in os.environ in-process: set-then-delete so monkeypatch
    # removes it again after the test, and no later test (or its subprocesses) inherits it
    monkeypatch.setenv("GPUCTL_DEBUG", "")
    monkeypatch.delenv("GPUCTL_DEBUG")
    monkeypatch.setenv("HOME", str(ROOT / "tests" / "nohome"))
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.setenv("COLUMNS", "80")

    def run(*args: str) -> Result:
        capsys.readouterr()
        code = main(list(args))
        captured = capsys.readouterr()
        return Result(code, captured.out, captured.err)

    return run


def scenario_dirs() -> list[Path]:
    return sorted(p for p in SCENARIOS.iterdir() if (p / "expected.json").is_file())


def snapshot_of(scenario: Path) -> Path:
    return scenario / "snapshot"


def expected_of(scenario: Path) -> dict:
    return json.loads((scenario / "expected.json").read_text())


def target_of(exp: dict) -> tuple[str, str]:
    """(namespace, target) from expected.json: "pod": "ns/name" or "namespace" + "target"."""
    if exp.get("pod"):
        ns, name = exp["pod"].split("/", 1)
        return ns, name
    return exp["namespace"], exp["target"]


def probe_args(snapdir: Path) -> list[str]:
    """A live run reads probes from --probe (they are taken on the node, not from the API)."""
    return [arg for p in sorted((snapdir / "probes").glob("*.json")) for arg in ("--probe", str(p))]


def argv_of(exp: dict) -> list[str]:
    """The diagnose command for a scenario: a node, a pod or a workload."""
    if exp.get("node"):
        return ["diagnose", "node", exp["node"]]
    ns, target = target_of(exp)
    return ["diagnose", "pod", target, "-n", ns]


def captured_at(snapdir: Path) -> Optional[str]:
    meta = snapdir / "snapshot.json"
    return json.loads(meta.read_text()).get("capturedAt") if meta.is_file() else None


@pytest.fixture
def serve(tmp_path, monkeypatch):
    """Serve a snapshot directory over HTTP; returns (server, kubeconfig path)."""
    servers = []

    def start(snapdir: Path, **kwargs):
        srv = SnapshotAPIServer(list(iter_raw_objects(snapdir)), logs=raw_logs(snapdir), metrics=raw_metrics(snapdir), **kwargs)
        srv.start()
        servers.append(srv)
        kubeconfig = srv.write_kubeconfig(str(tmp_path / f"kubeconfig-{len(servers)}"), context="incident")
        now = captured_at(snapdir)
        if now:
            monkeypatch.setenv("GPUCTL_NOW", now)
        return srv, kubeconfig

    yield start
    for s in servers:
        s.stop()


def self_signed_tls(tmp_path):
    """A server-side SSLContext with a fresh self-signed certificate for 127.0.0.1 (openssl CLI)."""
    import shutil

    from support.tls import self_signed

    if shutil.which("openssl") is None:
        pytest.skip("needs the openssl command (Debian package openssl)")
    return self_signed(tmp_path)[0]

