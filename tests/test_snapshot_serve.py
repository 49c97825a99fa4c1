"""`gpuctl snapshot serve BUNDLE`: a snapshot served read-only over the Kubernetes API
on 127.0.0.1, started as a real process and read with the real kubectl (skipped, saying
so, without kubectl), with plain HTTP (urllib) and with gpuctl itself; every write is a
405 Status and changes nothing; the kubeconfig it writes never replaces a user's file;
the product server (gpuctl/apiserver) carries none of the tests' machinery."""

from __future__ import annotations

import ast
import contextlib
import json
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest
import yaml

from conftest import ROOT, SCENARIOS, snapshot_of
from gpuctl.collect.files import iter_raw_objects, raw_logs

TAINT = snapshot_of(SCENARIOS / "untolerated-taint")
NVML = snapshot_of(SCENARIOS / "nvml-init-failed")
KUBECTL = shutil.which("kubectl")
needs_kubectl = pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed: the kubectl checks of "
                                                           "gpuctl snapshot serve need it")
ENV = {k: v for k, v in os.environ.items() if k not in ("KUBECONFIG", "GPUCTL_DEBUG")}
ENV.update(HOME=str(ROOT / "tests" / "nohome"), NO_COLOR="1")


class Served:
    def __init__(self, proc: subprocess.Popen, kubeconfig, line: str):
        self.proc, self.kubeconfig, self.line = proc, kubeconfig, line
        cfg = yaml.safe_load(open(kubeconfig).read()) if kubeconfig else None
        self.url = cfg["clusters"][0]["cluster"]["server"] if cfg else None

    def stop(self, sig: int = signal.SIGTERM) -> tuple[int, str]:
        """Stop it with ``sig``; (exit code, the rest of its stderr)."""
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            _, err = self.proc.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            _, err = self.proc.communicate()
        return self.proc.returncode, err.decode()


def _readline(stream, deadline: float) -> str:
    line = b""
    fd = stream.fileno()
    while not line.endswith(b"\n") and time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.2)
        if ready:
            ch = os.read(fd, 1)
            if not ch:
                break
            line += ch
    return line.decode()


def _start(bundle, *args: str, kubeconfig=None) -> Served:
    """``python -m gpuctl snapshot serve BUNDLE ARGS [--kubeconfig-out F]``, once serving."""
    cmd = [sys.executable, "-m", "gpuctl", "snapshot", "serve", str(bundle), *args]
    if kubeconfig is not None:
        cmd += ["--kubeconfig-out", str(kubeconfig)]
    proc = subprocess.Popen(cmd, cwd=ROOT, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    line = _readline(proc.stderr, time.monotonic() + 60)
    if not line.startswith("serving "):
        proc.kill()
        out, err = proc.communicate()
        pytest.fail(f"gpuctl snapshot serve did not start: {line}{err.decode()}")
    return Served(proc, kubeconfig, line)


@contextlib.contextmanager
def serving(bundle, tmp_path, *args: str):
    served = _start(bundle, *args, kubeconfig=tmp_path / "kubeconfig")
    try:
        yield served
    finally:
        code, err = served.stop()
        assert code == 0 and "Traceback" not in err, err


def kubectl(served: Served, *args: str) -> subprocess.CompletedProcess:
    home = served.kubeconfig.parent / "home"        # kubectl writes its discovery cache under $HOME/.kube
    home.mkdir(exist_ok=True)
    env = dict(ENV, KUBECONFIG=str(served.kubeconfig), HOME=str(home))
    return subprocess.run([KUBECTL, *args], env=env, capture_output=True, text=True, timeout=60)


def _names(bundle, kind: str, pred=lambda o: True) -> list[str]:
    return sorted(o["metadata"]["name"] for o in iter_raw_objects(bundle) if o.get("kind") == kind and pred(o))


@pytest.fixture(scope="module")
def tarball(tmp_path_factory):
    """A real bundle, written by `gpuctl snapshot save --snapshot` (it has device-plugin logs)."""
    out = tmp_path_factory.mktemp("bundle") / "incident.tar.gz"
    r = subprocess.run([sys.executable, "-m", "gpuctl", "snapshot", "save", str(out), "--snapshot", str(NVML)],
                       cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return out


# ----------------------------------------------------------------- with kubectl


@needs_kubectl
def test_kubectl_browses_a_served_snapshot_directory(tmp_path):
    with serving(TAINT, tmp_path) as s:
        assert f"KUBECONFIG={s.kubeconfig} kubectl get pods -A" in s.line and "127.0.0.1" in s.line
        r = kubectl(s, "get", "pods", "-A")          # server-side columns, as kube-apiserver prints them
        assert r.returncode == 0, r.stderr
        rows = [line.split() for line in r.stdout.splitlines()]
        assert rows[0] == ["NAMESPACE", "NAME", "READY", "STATUS", "RESTARTS", "AGE"]
        assert sorted(row[1] for row in rows[1:]) == _names(TAINT, "Pod")
        assert next(row for row in rows if row[1] == "rlhf-reward-model-2kfjd")[2:5] == ["0/1", "Pending", "0"]

        r = kubectl(s, "get", "nodes", "-o", "wide")
        assert r.returncode == 0, r.stderr
        rows = [line.split() for line in r.stdout.splitlines()]
        assert rows[0][:6] == ["NAME", "STATUS", "ROLES", "AGE", "VERSION", "INTERNAL-IP"]
        assert sorted(row[0] for row in rows[1:]) == _names(TAINT, "Node")
        assert all(row[1] == "Ready" and row[4] == "v1.34.2" for row in rows[1:])

        r = kubectl(s, "get", "events", "-n", "ml-research")
        assert r.returncode == 0 and "FailedScheduling" in r.stdout and "pod/rlhf-reward-model-2kfjd" in r.stdout

        r = kubectl(s, "describe", "pod", "rlhf-reward-model-2kfjd", "-n", "ml-research")
        assert r.returncode == 0, r.stderr
        assert "rlhf-reward-model-2kfjd" in r.stdout and "FailedScheduling" in r.stdout   # its events, by field selector
        assert "untolerated taint" in r.stdout

        app = "nvidia-device-plugin-daemonset"
        r = kubectl(s, "get", "pods", "-A", "-l", f"app={app}", "-o", "name")
        assert r.returncode == 0, r.stderr
        want = _names(TAINT, "Pod", lambda o: (o["metadata"].get("labels") or {}).get("app") == app)
        assert want and sorted(n.split("/", 1)[1] for n in r.stdout.split()) == want

        r = kubectl(s, "get", "pods", "-n", "ml-research", "--chunk-size=1", "-o", "name", "-v=6")
        assert r.returncode == 0, r.stderr
        want = _names(TAINT, "Pod", lambda o: o["metadata"]["namespace"] == "ml-research")
        assert len(want) > 2 and sorted(n.split("/", 1)[1] for n in r.stdout.split()) == want
        pages = [ln for ln in r.stderr.splitlines() if "round_trippers" in ln and " GET " in ln and "/pods?" in ln]
        assert len(pages) == len(want) and all("limit=1" in ln for ln in pages)     # one page per pod
        assert sum("continue=" in ln for ln in pages) == len(pages) - 1


@needs_kubectl
def test_kubectl_writes_are_405_and_change_nothing(tmp_path):
    with serving(TAINT, tmp_path) as s:
        before = json.loads(kubectl(s, "get", "node", "gpu-a100-1", "-o", "json").stdout)
        for args in (["label", "node", "gpu-a100-1", "a=b"],
                     ["delete", "pod", "rlhf-reward-model-2kfjd", "-n", "ml-research"]):
            r = kubectl(s, *args)
            assert r.returncode == 1, args
            assert "Error from server (MethodNotAllowed): the served snapshot is read-only" in r.stderr, r.stderr
        r = kubectl(s, "cordon", "gpu-a100-1")           # kubectl cordon prints the refusal but exits 0
        assert "the served snapshot is read-only" in r.stderr, r.stderr
        r = kubectl(s, "auth", "can-i", "list", "pods", "-A")     # an access review (what k9s asks), sent as protobuf
        assert (r.returncode, r.stdout) == (0, "yes\n"), r.stderr
        r = kubectl(s, "auth", "can-i", "delete", "pods", "-n", "ml-research")
        assert r.returncode == 1 and r.stdout.startswith("no - the served snapshot is read-only"), r.stdout + r.stderr
        after = json.loads(kubectl(s, "get", "node", "gpu-a100-1", "-o", "json").stdout)
        assert after == before and "a" not in after["metadata"].get("labels", {})
        assert not after["spec"].get("unschedulable")
        assert kubectl(s, "get", "pod", "rlhf-reward-model-2kfjd", "-n", "ml-research").returncode == 0


@needs_kubectl
def test_kubectl_reads_a_saved_bundle_and_its_logs(tmp_path, tarball):
    logs = raw_logs(tarball)
    ns, pod, container, _ = next(k for k in logs if not k[3])
    assert (ns, pod, container, True) in logs          # this bundle has the previous instance's log too
    with serving(tarball, tmp_path) as s:
        r = kubectl(s, "get", "pods", "-A", "-o", "name")
        assert r.returncode == 0 and sorted(n.split("/", 1)[1] for n in r.stdout.split()) == _names(tarball, "Pod")
        r = kubectl(s, "logs", pod, "-n", ns)
        assert r.returncode == 0, r.stderr
        assert r.stdout == logs[(ns, pod, container, False)]
        r = kubectl(s, "logs", pod, "-n", ns, "--previous", "--tail=2")
        assert r.returncode == 0, r.stderr
        assert r.stdout == "".join(logs[(ns, pod, container, True)].splitlines(keepends=True)[-2:])


# ----------------------------------------------------------------- with gpuctl


@pytest.mark.parametrize("scenario", ["untolerated-taint", "nvml-init-failed"])
def test_gpuctl_diagnoses_the_served_bundle_as_it_diagnoses_the_file(cli, tmp_path, tarball, scenario):
    bundle = tarball if scenario == "nvml-init-failed" else TAINT
    exp = json.loads((SCENARIOS / scenario / "expected.json").read_text())
    ns, name = exp["pod"].split("/", 1)
    offline = cli("diagnose", "pod", name, "-n", ns, "--snapshot", str(bundle), "-o", "json")
    with serving(bundle, tmp_path) as s:
        live = cli("diagnose", "pod", name, "-n", ns, "--kubeconfig", str(s.kubeconfig), "-o", "json")
    assert live.code == offline.code == exp["exit_code"], live.err + offline.err
    live_doc, offline_doc = live.json(), offline.json()
    assert live_doc["findings"][0]["code"] == offline_doc["findings"][0]["code"] == exp["top_code"]
    assert live_doc["verdict"] == offline_doc["verdict"]


# ----------------------------------------------------------------- plain HTTP (no kubectl needed)


def _http(url: str, method: str = "GET", body: bytes | None = None, ctype: str = "application/json"):
    req = urllib.request.Request(url, data=body, method=method, headers={"Content-Type": ctype})
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.status, resp.headers, resp.read()
    except urllib.error.HTTPError as e:
        return e.code, e.headers, e.read()


def test_kubeconfig_on_stdout_and_every_write_is_a_405_status(tmp_path):
    """Without --kubeconfig-out the kubeconfig goes to stdout; writes answer 405 on any
    path, over plain HTTP, and the objects stay as they were."""
    s = _start(TAINT)
    try:
        text = ""
        deadline = time.monotonic() + 30
        while "preferences" not in text and time.monotonic() < deadline:
            text += _readline(s.proc.stdout, deadline)
        cfg = yaml.safe_load(text)
        assert cfg["current-context"] == "gpuctl-snapshot"
        assert cfg["users"] == [{"name": "gpuctl-snapshot", "user": {}}]           # no credentials
        url = cfg["clusters"][0]["cluster"]["server"]
        assert url.startswith("http://127.0.0.1:") and url in s.line

        code, _, body = _http(url + "/api/v1/nodes")
        nodes = json.loads(body)
        assert code == 200 and sorted(n["metadata"]["name"] for n in nodes["items"]) == _names(TAINT, "Node")
        code, _, body = _http(url + "/api/v1")
        verbs = {tuple(r["verbs"]) for r in json.loads(body)["resources"]}
        assert code == 200 and all(set(v) <= {"get", "list", "watch"} for v in verbs)

        node = url + "/api/v1/nodes/gpu-a100-1"
        writes = [
            ("PATCH", node, b'{"metadata":{"labels":{"a":"b"}}}', "application/merge-patch+json"),
            ("PATCH", node, b'[{"op":"add","path":"/metadata/labels/a","value":"b"}]', "application/json-patch+json"),
            ("PUT", node, json.dumps(nodes["items"][0]).encode(), "application/json"),
            ("DELETE", url + "/api/v1/namespaces/ml-research/pods/rlhf-reward-model-2kfjd", None, "application/json"),
            ("DELETE", url + "/api/v1/namespaces/ml-research/pods", None, "application/json"),
            ("POST", url + "/api/v1/namespaces/ml-research/pods", b'{"apiVersion":"v1","kind":"Pod"}', "application/json"),
            ("POST", url + "/api/v1/namespaces/gpu-operator/pods/x:9400/proxy/metrics", b"", "text/plain"),
            ("POST", url + "/version", b"{}", "application/json"),
        ]
        for method, target, body, ctype in writes:
            code, headers, answer = _http(target, method, body, ctype)
            status = json.loads(answer)
            assert code == 405 and headers["Content-Type"] == "application/json", (method, target)
            assert status["kind"] == "Status" and status["status"] == "Failure", status
            assert status["reason"] == "MethodNotAllowed" and status["code"] == 405, status
            assert status["message"].startswith("the served snapshot is read-only"), status
        review = {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
                  "spec": {"resourceAttributes": {"verb": "watch", "resource": "pods", "namespace": "ml"}}}
        reviews = url + "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"
        code, _, body = _http(reviews, "POST", json.dumps(review).encode())
        assert code == 201 and json.loads(body)["status"] == {"allowed": True}
        review["spec"]["resourceAttributes"]["verb"] = "patch"
        code, _, body = _http(reviews, "POST", json.dumps(review).encode())
        assert code == 201 and json.loads(body)["status"]["allowed"] is False

        code, _, body = _http(node)
        assert code == 200 and json.loads(body) == next(n for n in nodes["items"] if n["metadata"]["name"] == "gpu-a100-1")
        code, _, _ = _http(url + "/api/v1/namespaces/ml-research/pods/rlhf-reward-model-2kfjd")
        assert code == 200
    finally:
        code, err = s.stop(signal.SIGINT)          # Ctrl-C
    assert code == 0 and err == "", err


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="127.0.0.2 is a loopback address on Linux only")
def test_it_listens_on_127_0_0_1_only(tmp_path):
    with serving(TAINT, tmp_path) as s:
        port = int(s.url.rsplit(":", 1)[1])
        with socket.create_connection(("127.0.0.1", port), timeout=5):
            pass
        with pytest.raises(OSError):
            socket.create_connection(("127.0.0.2", port), timeout=5).close()


def test_demo_and_a_fixed_port(tmp_path):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with serving("demo", tmp_path, "--port", str(port)) as s:
        assert s.url == f"http://127.0.0.1:{port}"
        code, _, body = _http(s.url + "/api/v1/pods?limit=1")
        assert code == 200 and json.loads(body)["metadata"]["continue"]


def test_ages_are_printed_as_kube_apiserver_prints_them():
    from gpuctl.apiserver.tables import human_duration

    cases = {-2: "<invalid>", -1: "0s", 0: "0s", 119: "119s", 120: "2m", 121: "2m1s", 600: "10m", 10799: "179m",
             3 * 3600: "3h", 3 * 3600 + 1800: "3h30m", 8 * 3600: "8h", 47 * 3600: "47h", 48 * 3600: "2d",
             49 * 3600: "2d1h", 8 * 86400: "8d", 729 * 86400: "729d", 730 * 86400: "2y", 731 * 86400: "2y1d",
             8 * 365 * 86400: "8y"}
    assert {k: human_duration(k) for k in cases} == cases


# ----------------------------------------------------------------- the kubeconfig file


def test_an_existing_file_is_never_replaced(cli, tmp_path):
    mine = tmp_path / "config"
    mine.write_text("apiVersion: v1\nkind: Config\nclusters: []\n# my notes\n")
    r = cli("snapshot", "serve", str(TAINT), "--kubeconfig-out", str(mine))
    assert r.code == 2 and r.out == ""
    assert r.err.splitlines() == [f"gpuctl: error: {mine} already exists and is not a kubeconfig written by gpuctl "
                                  "snapshot serve; choose another --kubeconfig-out; the file is left as it was"]
    assert mine.read_text() == "apiVersion: v1\nkind: Config\nclusters: []\n# my notes\n"

    (tmp_path / "folder").mkdir()
    link = tmp_path / "link"
    link.symlink_to(tmp_path / "elsewhere")
    for target in (tmp_path / "folder", link, tmp_path / "missing" / "kc"):
        r = cli("snapshot", "serve", str(TAINT), "--kubeconfig-out", str(target))
        assert r.code == 2 and len(r.err.splitlines()) == 1, r.err
    assert not (tmp_path / "elsewhere").exists() and not (tmp_path / "missing").exists()


@pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed: it rewrites the kubeconfig here")
def test_a_previous_gpuctl_kubeconfig_is_replaced_even_after_kubectl_rewrote_it(tmp_path):
    kc = tmp_path / "kubeconfig"
    with serving(TAINT, tmp_path) as first:
        r = kubectl(first, "config", "set-context", "--current", "--namespace=ml-research")
        assert r.returncode == 0, r.stderr        # kubectl rewrote the file: its marker (an extension) is kept
    with serving(NVML, tmp_path) as second:
        assert yaml.safe_load(kc.read_text())["clusters"][0]["cluster"]["server"] == second.url
        assert str(NVML) in kc.read_text()


def test_bad_input_is_one_line_with_the_contract_exit_code(cli, tmp_path):
    r = cli("snapshot", "serve", str(tmp_path / "nope.tar.gz"))
    assert r.code == 4 and r.out == ""
    assert r.err == f"gpuctl: error: snapshot {tmp_path / 'nope.tar.gz'}: no such file or directory; check the path " \
                    "of BUNDLE\n"
    (tmp_path / "empty.json").write_text("")
    r = cli("snapshot", "serve", str(tmp_path / "empty.json"), "--kubeconfig-out", str(tmp_path / "kc"))
    assert r.code == 4 and len(r.err.splitlines()) == 1 and not (tmp_path / "kc").exists()
    r = cli("snapshot", "serve", str(TAINT), "--port", "70000")
    assert r.code == 2
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        r = cli("snapshot", "serve", str(TAINT), "--port", str(busy.getsockname()[1]),
                "--kubeconfig-out", str(tmp_path / "kc"))
    assert r.code == 2 and r.out == "" and not (tmp_path / "kc").exists()
    assert r.err.startswith("gpuctl: error: cannot listen on 127.0.0.1:") and len(r.err.splitlines()) == 1


# ----------------------------------------------------------------- what ships


APISERVER = ROOT / "gpuctl" / "apiserver"
TEST_ONLY = ("Fault", "RequestRecord", "json_patch", "merge_patch", "add_fault", "forbid", "allow_only",
             "write_kubeconfig", "_patch", "_create", "_update", "_delete", "expire_continue_tokens")


def test_the_product_server_is_read_only_and_low_in_the_layers():
    """The installed package's server has none of the tests' machinery (tests/support/kubeapi.py),
    imports only the standard library and gpuctl.model/gpuctl.collect, never kubernetes or a
    layer above, and `gpuctl --help` does not import it."""
    for path in sorted(APISERVER.glob("*.py")):
        tree = ast.parse(path.read_text())
        defined = {n.name for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
        assert not defined & set(TEST_ONLY), f"{path.name} defines {sorted(defined & set(TEST_ONLY))}"
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                mods = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                mods = ["gpuctl." + (node.module or "") if node.level == 2 else
                        "gpuctl.apiserver." + (node.module or "") if node.level == 1 else node.module or ""]
            else:
                continue
            for mod in mods:
                top = mod.split(".")[0]
                assert top in sys.stdlib_module_names or mod.startswith(("gpuctl.model", "gpuctl.collect",
                                                                         "gpuctl.apiserver")), \
                    f"{path.name} imports {mod}"
    r = subprocess.run([sys.executable, "-c", "import sys; from gpuctl.cli.app import main; main(['--help']); "
                        "print('gpuctl.apiserver' in sys.modules)"], cwd=ROOT, env=ENV, capture_output=True,
                       text=True, timeout=60)
    assert r.stdout.splitlines()[-1] == "False", r.stdout + r.stderr
