"""What a careful kubectl user expects of gpuctl: option spellings (``-o=json``,
``-ojson``, ``--context=X``, ``--request-timeout 30s``), the common options before
the command, the target forms kubectl prints (``NS/NAME``, ``kind.group/name``,
``-A NAME``), "did you mean" on exit 3, and a bounded wait with the right hint when
the cluster cannot be read (exit 4).

Every live test talks to the local API server (gpuctl.apiserver) over real HTTP
with the real ``kubernetes`` client; nothing is patched."""

from __future__ import annotations

import json
import shutil
import socket
import ssl
import subprocess
import threading
import time

import pytest

from conftest import ROOT, SCENARIOS, snapshot_of
from support.kubeapi import Fault, SnapshotAPIServer
from gpuctl.cli.app import COMMAND_PATHS, command_options, kubectl_argv
from gpuctl.collect.files import iter_raw_objects

DEMO = ROOT / "examples" / "demo-cluster"
TAINT = snapshot_of(SCENARIOS / "untolerated-taint")
TAINT_POD = ("ml-research", "rlhf-reward-model-2kfjd")
DEMO_POD = ("ml-research", "llama-finetune-0")


def _one_line(err: str) -> str:
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1, err
    return lines[0]


def _pod(ns: str, name: str, node: str = "", owner: tuple[str, str] | None = None, labels: dict | None = None) -> dict:
    md: dict = {"name": name, "namespace": ns, "uid": f"uid-{ns}-{name}", "labels": labels or {}}
    if owner:
        md["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": owner[0], "name": owner[1], "uid": "o", "controller": True}]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": md,
            "spec": {"containers": [{"name": "c", "image": "x"}], **({"nodeName": node} if node else {})},
            "status": {"phase": "Running" if node else "Pending"}}


def _node(name: str) -> dict:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
            "spec": {}, "status": {"capacity": {"cpu": "8"}, "allocatable": {"cpu": "8"},
                                   "conditions": [{"type": "Ready", "status": "True"}]}}


# Two pods named "twin", a Deployment's pod, a node known by its FQDN.
TWINS = [_node("gpu-a100-1.ec2.internal"), _pod("team-a", "twin"), _pod("team-b", "twin"),
         _pod("web", "frontend-6f4b9d7c8-x2k4q", node="gpu-a100-1.ec2.internal",
              owner=("ReplicaSet", "frontend-6f4b9d7c8"), labels={"pod-template-hash": "6f4b9d7c8"}),
         _pod("train", "bert-train-0")]


@pytest.fixture
def twins(tmp_path):
    path = tmp_path / "twins.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": TWINS}))
    return str(path)


@pytest.fixture
def twins_live(tmp_path):
    srv = SnapshotAPIServer(TWINS).start()
    try:
        yield srv, str(srv.write_kubeconfig(str(tmp_path / "kc-twins"), context="incident"))
    finally:
        srv.stop()


# ---------------------------------------------------------------- 1. spellings


@pytest.mark.parametrize("given,want", [
    (["diagnose", "pod", "x", "-o=json", "-n=ml"], ["diagnose", "pod", "x", "-o", "json", "-n", "ml"]),
    (["-ojson", "-nml", "diagnose", "pod", "x"], ["diagnose", "pod", "-o", "json", "-n", "ml", "x"]),
    (["-o=yaml", "-l=gpu=a100", "nodes", "capacity"], ["nodes", "capacity", "-o", "yaml", "-l", "gpu=a100"]),
    (["diagnose", "pod", "x", "--", "-o=json"], ["diagnose", "pod", "x", "--", "-o=json"]),
])
def test_short_options_with_equals_or_attached(given, want):
    assert kubectl_argv(given) == want


def test_equals_forms_give_the_same_report(cli):
    ns, name = DEMO_POD
    plain = cli("diagnose", "pod", name, "-n", ns, "-o", "json", "--snapshot", str(DEMO))
    for argv in (["-n=" + ns, "-o=json"], ["-n" + ns, "-ojson"], ["--namespace=" + ns, "--output=json"]):
        r = cli("diagnose", "pod", name, *argv, "--snapshot=" + str(DEMO))
        assert (r.code, r.out) == (plain.code, plain.out), (argv, r.err)


def test_context_with_equals_and_request_timeout_as_a_duration_live(cli, serve, tmp_path):
    srv, kc = serve(TAINT)
    ns, name = TAINT_POD
    r = cli("diagnose", "pod", name, "-n=" + ns, "--kubeconfig=" + str(kc), "--context=incident",
            "--request-timeout", "30s", "-o=json")
    assert r.code == 1 and r.json()["findings"][0]["code"] == "untolerated-taint", r.err
    bad = cli("diagnose", "pod", name, "-n", ns, "--kubeconfig", str(kc), "--context=nope")
    assert bad.code == 4 and "nope" in _one_line(bad.err)
    assert cli("nodes", "capacity", "--snapshot", str(DEMO), "--request-timeout", "1m30s").code == 0


# ---------------------------------------------------------------- 2. options before the command


def test_leading_options_live(cli, serve):
    srv, kc = serve(TAINT)
    ns, name = TAINT_POD
    r = cli("--context", "incident", "--kubeconfig", str(kc), "-o", "json", "-n", ns, "--request-timeout", "30s",
            "--no-color", "--as", "someone", "diagnose", "pod", name)
    assert r.code == 1, r.err
    assert r.json()["target"]["name"] == name
    assert srv.requests and all(q.headers.get("Impersonate-User") == "someone" for q in srv.requests)
    cap = cli("--context", "c", "--kubeconfig", str(kc), "-o", "json", "nodes", "capacity")
    assert cap.code == 4 and "'c'" in cap.err      # --context reached the command: no such context
    cap = cli("--context", "incident", "--kubeconfig", str(kc), "-o", "json", "nodes", "capacity")
    assert cap.code == 0 and cap.json()["schema"] == "gpuctl/capacity/v1", cap.err


def test_leading_token_is_the_one_sent(cli, serve, tmp_path):
    srv, kc = serve(TAINT)
    wrong = srv.write_kubeconfig(str(tmp_path / "kc-wrong"), context="incident", user_token="wrong-token")
    assert cli("nodes", "capacity", "--kubeconfig", str(wrong)).code == 4
    r = cli("--token", srv.token, "--kubeconfig", str(wrong), "nodes", "capacity", "-o", "json")
    assert r.code == 0, r.err


def test_leading_snapshot_namespace_and_all_namespaces(cli):
    ns, name = DEMO_POD
    a = cli("--snapshot", str(DEMO), "-n", ns, "-o", "json", "diagnose", "pod", name)
    b = cli("diagnose", "pod", name, "-n", ns, "-o", "json", "--snapshot", str(DEMO))
    c = cli("-A", "--snapshot", str(DEMO), "-o", "json", "diagnose", "pod", name)
    assert a.code == b.code == c.code == 1 and a.out == b.out == c.out
    pend = cli("-A", "--snapshot", str(DEMO), "-o", "json", "diagnose", "pending")
    assert pend.code in (0, 1) and pend.json()


def test_leading_namespace_is_ignored_by_commands_without_namespaces(cli):
    """As `kubectl -n ml get nodes`: the namespace does not apply, it is no error."""
    node = "ip-10-42-50-173.us-west-2.compute.internal"
    a = cli("-n", "ml-research", "--snapshot", str(DEMO), "diagnose", "node", node, "-o", "json")
    b = cli("diagnose", "node", node, "-o", "json", "--snapshot", str(DEMO))
    assert a.code == b.code and a.out == b.out and a.code in (0, 1), a.err
    assert cli("-n", "x", "--snapshot", str(DEMO), "nodes", "capacity").code == 0


def test_root_options_still_work_with_leading_options(cli):
    assert cli("--version").out.startswith("gpuctl ")
    for argv in (["-h"], ["-n", "ml", "-h"], ["--debug", "-h"], ["-n", "ml", "--kubeconfig", "k", "-h"]):
        r = cli(*argv)
        assert r.code == 0 and "Usage:" in r.out and "before the command" in r.out, (argv, r.err)
    r = cli("-n", "ml", "diagnose", "-h")
    assert r.code == 0 and "pod" in r.out
    r = cli("--debug", "-n", "ml-research", "--snapshot", str(DEMO), "diagnose", "pod", "llama-finetune-0")
    assert r.code == 1 and "BLOCKED" in r.out


@pytest.mark.parametrize("path", sorted(COMMAND_PATHS), ids=" ".join)
def test_every_common_option_a_command_takes_may_lead(path):
    leading = {"--kubeconfig": "k", "--context": "c", "-n": "ns", "-o": "json", "--snapshot": "s",
               "--request-timeout": "3s", "--as": "u", "--token": "t", "--no-color": None, "-A": None}
    accepted = command_options(path)
    for opt, value in leading.items():
        given = [opt] + ([value] if value else []) + list(path) + ["ARG"]
        got = kubectl_argv(given)
        if opt in accepted:
            assert got == list(path) + given[:len(given) - len(path) - 1] + ["ARG"], (opt, got)
        elif opt == "-n":
            assert got == list(path) + ["ARG"], got      # dropped, as kubectl does for cluster-scoped reads
        else:
            assert got[:len(path)] == list(path), got    # moved: Click names the option the command lacks


def test_an_option_the_command_does_not_take_is_a_usage_error_naming_it(cli):
    r = cli("--snapshot", str(DEMO), "runbook")
    assert r.code == 2 and "--snapshot" in r.err and "runbook" in r.err


# ---------------------------------------------------------------- 3. targets


@pytest.mark.parametrize("target,extra", [
    ("ml-research/llama-finetune-0", []),
    ("ml-research/llama-finetune-0", ["-n", "ml-research"]),       # the same namespace twice is fine
    ("pod/llama-finetune-0", ["-n", "ml-research"]),
    ("pods/llama-finetune-0", ["-n", "ml-research"]),
    ("llama-finetune-0", ["-A"]),
    ("llama-finetune-0", ["--all-namespaces"]),
])
def test_pod_target_forms_offline(cli, target, extra):
    r = cli("diagnose", "pod", target, *extra, "--snapshot", str(DEMO), "-o", "json")
    assert r.code == 1, r.err
    assert r.json()["target"]["namespace"] == "ml-research" and r.json()["target"]["name"] == "llama-finetune-0"


@pytest.mark.parametrize("target", ["ml-research/rlhf-reward-model-2kfjd", "pod/rlhf-reward-model-2kfjd"])
def test_pod_target_forms_live(cli, serve, target):
    srv, kc = serve(TAINT)
    extra = [] if target.startswith("ml-research/") else ["-n", "ml-research"]
    r = cli("diagnose", "pod", target, *extra, "--kubeconfig", str(kc), "-o", "json")
    assert r.code == 1 and r.json()["target"]["namespace"] == "ml-research", r.err
    assert any(q.path == "/api/v1/namespaces/ml-research/pods/rlhf-reward-model-2kfjd" for q in srv.requests)


def test_ns_name_against_a_different_namespace_is_a_usage_error(cli, serve):
    r = cli("diagnose", "pod", "ml-research/llama-finetune-0", "-n", "inference", "--snapshot", str(DEMO))
    assert r.code == 2 and "inference" in r.err and "ml-research" in r.err
    srv, kc = serve(TAINT)
    r = cli("-n", "other", "diagnose", "pod", "ml-research/rlhf-reward-model-2kfjd", "--kubeconfig", str(kc))
    assert r.code == 2 and srv.requests == []


QUOTA = snapshot_of(SCENARIOS / "quota-exceeded")              # Job ml/train-xyz
VOLCANO = snapshot_of(SCENARIOS / "queue-not-admitted-volcano")  # PyTorchJob research/ddp-llama-70b


@pytest.mark.parametrize("snap,short,grouped,ns", [
    (QUOTA, "job/train-xyz", "job.batch/train-xyz", "ml"),
    (QUOTA, "jobs/train-xyz", "jobs.batch/train-xyz", "ml"),
    (DEMO, "deployment/vllm-7b", "deployment.apps/vllm-7b", "inference"),
    (DEMO, "deploy/vllm-7b", "deployments.apps/vllm-7b", "inference"),
    (VOLCANO, "pytorchjob/ddp-llama-70b", "pytorchjob.kubeflow.org/ddp-llama-70b", "research"),
], ids=["job", "jobs", "deployment", "deploy", "pytorchjob"])
def test_kind_group_name_as_kubectl_get_o_name_prints(cli, snap, short, grouped, ns):
    a = cli("diagnose", "pod", short, "-n", ns, "--snapshot", str(snap), "-o", "json")
    b = cli("diagnose", "pod", grouped, "-n", ns, "--snapshot", str(snap), "-o", "json")
    assert a.code == b.code and a.code in (0, 1) and a.out == b.out, (a.err, b.err)
    assert a.json()["target"]["kind"] in ("Job", "Deployment", "PyTorchJob")


def test_a_grouped_kind_is_never_taken_for_a_namespace(cli):
    r = cli("diagnose", "pod", "pytorchjob.kubeflow.org/no-such-job", "-n", "research", "--snapshot", str(VOLCANO))
    assert r.code == 3 and "PyTorchJob" in r.err and "namespace research" in r.err


@pytest.mark.parametrize("target,path", [
    ("job.batch/train-xyz", "/apis/batch/v1/namespaces/ml/jobs/train-xyz"),
    ("ml/train-xyz-abcde", "/api/v1/namespaces/ml/pods/train-xyz-abcde"),
])
def test_kind_group_name_and_ns_name_live(cli, serve, target, path):
    srv, kc = serve(QUOTA)
    extra = ["-n", "ml"] if target.startswith("job") else []
    cli("diagnose", "pod", target, *extra, "--kubeconfig", str(kc), "-o", "json")
    assert srv.requests and srv.requests[0].path == path, [q.path for q in srv.requests[:3]]


@pytest.mark.parametrize("live", [False, True], ids=["offline", "live"])
def test_all_namespaces_one_several_none(cli, twins, twins_live, live):
    source = ["--kubeconfig", twins_live[1]] if live else ["--snapshot", twins]
    r = cli("diagnose", "pod", "-A", "bert-train-0", *source, "-o", "json")
    assert r.code in (0, 1) and r.json()["target"]["namespace"] == "train", r.err
    r = cli("diagnose", "pod", "-A", "twin", *source)
    assert r.code == 2 and "team-a/twin" in _one_line(r.err) and "team-b/twin" in r.err
    if live:
        r = cli("diagnose", "pod", "-A", "bert-train", *source)
        assert r.code == 3 and "did you mean train/bert-train-0" in _one_line(r.err)
    else:
        r = cli("diagnose", "pod", "-A", "nope", *source)
        assert r.code == 3 and "any namespace" in _one_line(r.err)


def test_all_namespaces_wants_a_bare_pod_name(cli):
    for target in ("job/x", "ns/x"):
        assert cli("diagnose", "pod", "-A", target, "--snapshot", str(DEMO)).code == 2


# ---------------------------------------------------------------- 4. did you mean


@pytest.mark.parametrize("argv,hint", [
    (["diagnose", "node", "gpu-a100-1"], "did you mean gpu-a100-1.ec2.internal?"),
    (["diagnose", "node", "gpu-a100-l"], "did you mean gpu-a100-1.ec2.internal?"),       # a typo of the short name
    (["diagnose", "pod", "frontend", "-n", "web"], "frontend-6f4b9d7c8-x2k4q"),
    (["diagnose", "pod", "frontend-6f4b", "-n", "web"], "did you mean frontend-6f4b9d7c8-x2k4q?"),
    (["diagnose", "pod", "bert-trian-0", "-n", "train"], "did you mean bert-train-0?"),
    (["diagnose", "pod", "bert-train-0", "-n", "team-a"], "try -n train"),
])
def test_did_you_mean_offline(cli, twins, argv, hint):
    r = cli(*argv, "--snapshot", twins)
    assert r.code == 3 and hint in _one_line(r.err), r.err


def test_did_you_mean_names_the_deployment_of_a_pod_name(cli):
    r = cli("diagnose", "pod", "vllm-7b", "-n", "inference", "--snapshot", str(DEMO))
    assert r.code == 3 and "gpuctl diagnose pod deployment/vllm-7b -n inference" in _one_line(r.err)


def test_nothing_close_suggests_nothing(cli, twins):
    r = cli("diagnose", "node", "zzzz", "--snapshot", twins)
    assert r.code == 3 and "did you mean" not in r.err


@pytest.mark.parametrize("argv,hint,max_lists", [
    (["diagnose", "node", "gpu-a100-1"], "did you mean gpu-a100-1.ec2.internal?", 1),
    (["diagnose", "node", "gpu-a100-l"], "did you mean gpu-a100-1.ec2.internal?", 1),
    (["diagnose", "pod", "frontend-6f4b", "-n", "web"], "did you mean frontend-6f4b9d7c8-x2k4q?", 2),
    (["diagnose", "pod", "bert-trian-0", "-n", "train"], "did you mean bert-train-0?", 2),
    (["diagnose", "pod", "bert-train-0", "-n", "team-a"], "try -n train", 1),
])
def test_did_you_mean_live_reads_one_bounded_page(cli, twins_live, argv, hint, max_lists):
    srv, kc = twins_live
    r = cli(*argv, "--kubeconfig", kc)
    assert r.code == 3 and hint in _one_line(r.err), r.err
    lists = [q for q in srv.requests if q.path in ("/api/v1/nodes", "/api/v1/pods") or q.path.endswith("/pods")]
    assert 1 <= len(lists) <= max_lists, [(q.path, q.query) for q in srv.requests]
    assert all(q.query.get("limit") == ["500"] and "continue" not in q.query for q in lists)


def test_did_you_mean_live_deployment(cli, twins_live):
    srv, kc = twins_live
    r = cli("diagnose", "pod", "frontend", "-n", "web", "--kubeconfig", kc)
    assert r.code == 3 and "deployment/frontend" in _one_line(r.err)


# ---------------------------------------------------------------- 5. bounded time, right hint


@pytest.fixture
def silent_port():
    """A socket that accepts connections and never answers: a hung API server, or a
    load balancer in front of a dead one. Counts the connections it accepted."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept():
        sock.settimeout(0.1)
        while not stop.is_set():
            try:
                held.append(sock.accept()[0])
            except OSError:
                continue

    t = threading.Thread(target=accept, daemon=True)
    t.start()
    yield sock.getsockname()[1], held
    stop.set()
    t.join()
    for c in held:
        c.close()
    sock.close()


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _kubeconfig(tmp_path, server: str, **cluster) -> str:
    path = tmp_path / "kc-net"
    path.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "x",
        "clusters": [{"name": "c", "cluster": {"server": server, **cluster}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u", "namespace": "default"}}]}))
    return str(path)


COMMANDS = [["diagnose", "pod", "x", "-n", "y"], ["diagnose", "pod", "job/x", "-n", "y"], ["diagnose", "pod", "-A", "x"],
            ["diagnose", "node", "n"], ["diagnose", "pending", "-A"], ["nodes", "capacity"], ["label-nodes"]]
IDS = ["pod", "workload", "pod -A", "node", "pending", "capacity", "label-nodes"]


@pytest.mark.parametrize("argv", COMMANDS, ids=IDS)
def test_a_hung_cluster_ends_after_one_requests_tries(cli, tmp_path, silent_port, argv):
    port, held = silent_port
    start = time.monotonic()
    r = cli(*argv, "--kubeconfig", _kubeconfig(tmp_path, f"http://127.0.0.1:{port}"), "--request-timeout", "1s")
    took = time.monotonic() - start
    line = _one_line(r.err)
    assert r.code == 4, r.err
    assert "no answer within 1s after 3 tries" in line and "s waited" in line
    waited = float(line.split("tries, ")[1].split("s waited")[0])
    assert 2.5 <= waited <= took + 0.1
    assert "did not answer" in line and "VPN" in line and "--request-timeout" in line
    assert len(held) <= 3                 # one request's tries, then nothing else is read
    assert took < 20, f"took {took:.1f}s"  # a correctness bound, loose on purpose


@pytest.mark.parametrize("argv", COMMANDS, ids=IDS)
def test_a_closed_port_says_network(cli, tmp_path, argv):
    start = time.monotonic()
    r = cli(*argv, "--kubeconfig", _kubeconfig(tmp_path, f"http://127.0.0.1:{_closed_port()}"), "--request-timeout", "1s")
    line = _one_line(r.err)
    assert r.code == 4 and "cannot reach the API server: connection refused after 1 try" in line and "s waited" in line
    assert "network/VPN" in line and "--context" in line and "certificate" not in line
    assert time.monotonic() - start < 20


def test_a_name_that_does_not_resolve_says_network(cli, tmp_path):
    r = cli("nodes", "capacity", "--kubeconfig", _kubeconfig(tmp_path, "https://no-such-host.invalid:6443"),
            "--request-timeout", "2s")
    line = _one_line(r.err)
    assert r.code == 4 and "cannot reach the API server" in line and "network/VPN" in line


def test_a_server_that_hangs_on_every_list_is_bounded_in_all(cli, serve):
    """The target answers, then every list hangs: the lists together may take one
    request's tries, not one request's tries each (diagnose pending reads ~10 lists)."""
    srv, kc = serve(TAINT)
    srv.add_fault(Fault(path_regex=r"/(events|pods|resourcequotas|nodes)$", kind="hang", delay=30, times=None))
    ns, name = TAINT_POD
    start = time.monotonic()
    r = cli("diagnose", "pod", name, "-n", ns, "--kubeconfig", str(kc), "--request-timeout", "1s", "-o", "json")
    took = time.monotonic() - start
    assert r.code == 1 and r.json()["verdict"] == "inconclusive", r.err
    hung = [q for q in srv.requests if q.status == 0]
    assert len(hung) <= 3, [(q.path, q.query) for q in hung]
    assert took < 10, f"took {took:.1f}s"


def test_timeouts_here_and_there_add_up_to_one_deadline(cli, serve):
    """Each list hangs once and then answers: without an overall deadline every
    read would lose one timeout; with it, after one request's worth the server
    counts as down and the rest is not tried."""
    srv, kc = serve(TAINT)
    for path in (r"/events$", r"/nodes$", r"/pods$", r"/resourcequotas$", r"/persistentvolumeclaims$"):
        srv.add_fault(Fault(path_regex=path, kind="hang", delay=30, times=1))
    ns, name = TAINT_POD
    start = time.monotonic()
    r = cli("diagnose", "pod", name, "-n", ns, "--kubeconfig", str(kc), "--request-timeout", "1s", "-o", "json")
    took = time.monotonic() - start
    assert r.code in (0, 1) and r.json()["schema"] == "gpuctl/diagnosis/v1", r.err
    assert len([q for q in srv.requests if q.status == 0]) <= 4
    assert took < 10, f"took {took:.1f}s"


def _self_signed(tmp_path):
    from conftest import self_signed_tls

    return self_signed_tls(tmp_path)


def test_tls_verification_failure_points_at_the_ca_and_insecure_skip(cli, tmp_path):
    srv = SnapshotAPIServer(list(iter_raw_objects(TAINT)), tls=_self_signed(tmp_path)).start()
    try:
        kc = srv.write_kubeconfig(str(tmp_path / "kc"), context="incident")
        start = time.monotonic()
        r = cli("diagnose", "pod", "x", "-n", "y", "--kubeconfig", str(kc), "--request-timeout", "1s")
        line = _one_line(r.err)
        assert r.code == 4 and "TLS verification" in line
        assert "certificate-authority" in line and "insecure-skip-tls-verify" in line and "VPN" not in line
        assert time.monotonic() - start < 20
    finally:
        srv.stop()


def test_https_to_a_plain_http_server_is_a_tls_problem(cli, serve, tmp_path):
    srv, kc = serve(TAINT)
    r = cli("nodes", "capacity", "--kubeconfig", _kubeconfig(tmp_path, srv.url.replace("http://", "https://")),
            "--request-timeout", "1s")
    line = _one_line(r.err)
    assert r.code == 4 and "TLS" in line and "insecure-skip-tls-verify" in line and "https" in line


@pytest.mark.parametrize("argv", [["diagnose", "pod", "rlhf-reward-model-2kfjd", "-n", "ml-research"],
                                  ["diagnose", "node", "gpu-a100-3"], ["nodes", "capacity"]], ids=["pod", "node", "capacity"])
def test_refused_credentials_say_credentials(cli, serve, tmp_path, argv):
    srv, _ = serve(TAINT)
    kc = srv.write_kubeconfig(str(tmp_path / "kc-401"), context="incident", user_token="expired")
    r = cli(*argv, "--kubeconfig", str(kc))
    line = _one_line(r.err)
    assert r.code == 4 and "401" in line and "credentials" in line and "--token" in line
    assert len(srv.requests) <= 1          # the essential read failed: nothing else was read


def test_forbidden_target_says_rbac(cli, serve):
    srv, kc = serve(TAINT)
    srv.forbid("pods", "get")
    r = cli("diagnose", "pod", "rlhf-reward-model-2kfjd", "-n", "ml-research", "--kubeconfig", str(kc))
    line = _one_line(r.err)
    assert r.code == 4 and "forbidden" in line and "RBAC" in line and "'get'" in line and "pods" in line
    assert len(srv.requests) == 1


@pytest.mark.parametrize("hung", [True, False], ids=["hung", "refused"])
def test_snapshot_save_against_a_dead_cluster_is_bounded_with_the_hint(cli, tmp_path, silent_port, hung):
    port = silent_port[0] if hung else _closed_port()
    out = tmp_path / "bundle.tar.gz"
    start = time.monotonic()
    r = cli("snapshot", "save", str(out), "--kubeconfig", _kubeconfig(tmp_path, f"http://127.0.0.1:{port}"),
            "--request-timeout", "1s")
    line = _one_line(r.err)
    assert r.code == 4 and not out.exists()
    assert ("did not answer" if hung else "connection refused") in line and "network/VPN" in line and "s waited" in line
    assert time.monotonic() - start < 20
