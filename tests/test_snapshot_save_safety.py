"""`gpuctl snapshot save` never destroys what is not a gpuctl bundle, never writes
outside the bundle whatever names the server sends, cleans up after a signal, and
redacts the secrets people actually put in env variables, logs and arguments."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import tarfile
import time

import pytest

from conftest import ROOT, SCENARIOS, snapshot_of
from support.kubeapi import Fault, SnapshotAPIServer
from gpuctl.collect.files import iter_raw_objects, raw_logs, raw_metrics

TAINT = SCENARIOS / "untolerated-taint"
XID = SCENARIOS / "node-xid-79"


def _rebundle(cli, dest, source="", *extra):
    return cli("snapshot", "save", str(dest), "--snapshot", str(source or snapshot_of(TAINT)), *extra)


def _tree(path) -> dict:
    """{relative path: bytes} of a directory, or {"": bytes} of a file."""
    if path.is_file():
        return {"": path.read_bytes()}
    return {p.relative_to(path).as_posix(): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}


def _leftovers(folder) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("gpuctl-snapshot-") or ".partial" in p.name)


def _one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


# ------------------------------------------------------------------ --force


def test_force_replaces_a_previous_bundle_directory_and_nothing_else(cli, tmp_path):
    handlers = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    out = tmp_path / "bundle"
    assert _rebundle(cli, out).code == 0
    again = _rebundle(cli, out, "", "--force")
    assert again.code == 0, again.err
    assert json.loads((out / "snapshot.json").read_text())["schema"] == "gpuctl/snapshot/v1"
    assert _leftovers(tmp_path) == []

    (out / "notes.txt").write_text("my incident notes")
    before = _tree(out)
    r = _rebundle(cli, out, "", "--force")
    assert r.code == 2
    assert "notes.txt" in _one_line(r.err) and "not a gpuctl bundle" in r.err
    assert _tree(out) == before

    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "x.json").write_text('{"kind": "Pod"}')
    r = _rebundle(cli, plain, "", "--force")
    assert r.code == 2 and "snapshot.json" in _one_line(r.err)
    assert _tree(plain) == {"x.json": b'{"kind": "Pod"}'}

    file = tmp_path / "notes"
    file.write_text("not a bundle")
    r = _rebundle(cli, file, "", "--force")
    assert r.code == 2 and "not a gpuctl bundle" in _one_line(r.err)
    assert file.read_text() == "not a bundle"
    assert _leftovers(tmp_path) == []
    assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == handlers   # restored


def test_force_replaces_only_a_gpuctl_tarball(cli, tmp_path):
    out = tmp_path / "b.tar.gz"
    assert _rebundle(cli, out).code == 0
    assert _rebundle(cli, out, "", "--force").code == 0
    with tarfile.open(out) as tf:
        assert any(m.name.endswith("/snapshot.json") for m in tf.getmembers())

    other = tmp_path / "home-backup.tar.gz"
    with tarfile.open(other, "w:gz") as tf:
        data = b"precious"
        info = tarfile.TarInfo("backup/thesis.tex")
        info.size = len(data)
        tf.addfile(info, io.BytesIO(data))
    before = other.read_bytes()
    r = _rebundle(cli, other, "", "--force")
    assert r.code == 2 and "not a gpuctl bundle" in _one_line(r.err)
    assert other.read_bytes() == before

    junk = tmp_path / "x.tgz"
    junk.write_text("plain text, not a tarball")
    r = _rebundle(cli, junk, "", "--force")
    assert r.code == 2 and "not a gpuctl bundle" in _one_line(r.err)
    assert junk.read_text() == "plain text, not a tarball"

    folder = tmp_path / "dir.tar.gz"
    folder.mkdir()
    r = _rebundle(cli, folder, "", "--force")
    assert r.code == 2 and folder.is_dir()
    assert _leftovers(tmp_path) == []


def test_force_never_replaces_the_current_directory_its_ancestors_home_or_root(cli, tmp_path, monkeypatch):
    bundle = tmp_path / "b"
    assert _rebundle(cli, bundle).code == 0
    before = _tree(bundle)
    monkeypatch.chdir(bundle)
    r = _rebundle(cli, ".", "", "--force")
    assert r.code == 2 and "current directory" in _one_line(r.err)
    (bundle / "logs").mkdir(exist_ok=True)
    monkeypatch.chdir(bundle / "logs")
    r = _rebundle(cli, bundle, "", "--force")
    assert r.code == 2 and "current directory" in _one_line(r.err)
    r = _rebundle(cli, "..", "", "--force")
    assert r.code == 2 and "current directory" in _one_line(r.err)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(bundle))
    r = _rebundle(cli, bundle, "", "--force")
    assert r.code == 2 and "home directory" in _one_line(r.err)
    assert _tree(bundle) == before
    # checked before the source is read: a missing source is never reached
    r = _rebundle(cli, "/", tmp_path / "no-such-source", "--force")
    assert r.code == 2 and "refusing to replace /" in _one_line(r.err)
    assert _leftovers(tmp_path) == []


def test_an_unusable_output_path_fails_before_anything_is_collected(cli, tmp_path):
    objs = list(iter_raw_objects(snapshot_of(TAINT)))
    (tmp_path / "a-file").write_text("x")
    with SnapshotAPIServer(objs) as srv:
        kc = srv.write_kubeconfig(str(tmp_path / "kc"), context="incident")
        for dest, why in ((tmp_path / "missing" / "b.tar.gz", "does not exist"),
                          (tmp_path / "a-file" / "b", "not a directory")):
            srv.reset_requests()
            r = cli("snapshot", "save", str(dest), "--kubeconfig", kc)
            assert r.code == 2 and why in _one_line(r.err), r.err
            assert srv.requests == []
        r = _rebundle(cli, tmp_path / "missing" / "b")
        assert r.code == 2 and "does not exist" in _one_line(r.err)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-file", "kc"]


def test_when_the_new_bundle_cannot_be_moved_in_the_old_one_is_put_back(cli, tmp_path, monkeypatch):
    import errno

    out = tmp_path / "bundle"
    assert _rebundle(cli, out).code == 0
    (out / "logs").mkdir()
    before = _tree(out)
    rename = os.rename

    def failing(src, dst, *a, **kw):
        if os.path.basename(src).startswith("gpuctl-snapshot-") and os.fspath(dst) == str(out):
            raise OSError(errno.EIO, "Input/output error", os.fspath(dst))
        return rename(src, dst, *a, **kw)

    monkeypatch.setattr(os, "rename", failing)
    r = _rebundle(cli, out, "", "--force")
    monkeypatch.undo()
    assert r.code == 4 and "Input/output error" in _one_line(r.err)
    assert _tree(out) == before and (out / "logs").is_dir()
    assert _leftovers(tmp_path) == []


@pytest.mark.parametrize("name", ["bundle", "bundle.tar.gz"])
def test_sigterm_during_a_save_removes_the_temporary_files_and_keeps_the_old_bundle(cli, tmp_path, name):
    """A real process, killed by SIGTERM while it waits on the API server: the
    half-written bundle is removed and the previous bundle is left as it was."""
    out = tmp_path / name
    assert _rebundle(cli, out).code == 0
    before = _tree(out)
    objs = list(iter_raw_objects(snapshot_of(TAINT)))
    with SnapshotAPIServer(objs) as srv:
        kc = srv.write_kubeconfig(str(tmp_path / "kc"), context="incident")
        srv.add_fault(Fault(r"/events$", kind="hang", times=None))     # hangs until the server stops
        env = {k: v for k, v in os.environ.items() if k not in ("KUBECONFIG", "GPUCTL_DEBUG")}
        env.update(HOME=str(tmp_path), NO_COLOR="1", PYTHONPATH=str(ROOT))
        proc = subprocess.Popen([sys.executable, "-m", "gpuctl", "snapshot", "save", str(out), "--force",
                                 "--kubeconfig", kc], cwd=tmp_path, env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            deadline = time.monotonic() + 120
            while not any(q.path.endswith("/events") for q in srv.requests):
                assert proc.poll() is None, proc.communicate()
                assert time.monotonic() < deadline, "the save never reached the events list"
                time.sleep(0.05)
            assert _leftovers(tmp_path), "the bundle is built beside the destination"
            proc.send_signal(signal.SIGTERM)
            _, err = proc.communicate(timeout=120)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
    assert proc.returncode == 128 + signal.SIGTERM
    assert "terminated" in _one_line(err)
    assert _leftovers(tmp_path) == []
    assert _tree(out) == before


# ------------------------------------------------------------------ names become paths


def _escapes(root) -> list[str]:
    return sorted(str(p) for p in root.rglob("*escape*"))


def test_hostile_names_from_the_server_never_become_paths_outside_the_bundle(cli, tmp_path):
    objs = [json.loads(json.dumps(o).replace("gpu-a100-5", "../../../../escape-node")) for o in iter_raw_objects(snapshot_of(XID))]
    logs = {k: v for k, v in raw_logs(snapshot_of(XID)).items()}
    metrics = {k.replace("gpu-a100-5", "../../../../escape-node"): v for k, v in raw_metrics(snapshot_of(XID)).items()}
    (ns, pod, _, _), = logs
    dp = next(o for o in objs if o["kind"] == "Pod" and o["metadata"]["name"] == pod)
    for bad in ("../../../escape", "../../../../../escape-far"):
        dp["spec"]["containers"].append({"name": bad, "image": "x"})
        logs[(ns, pod, bad, False)] = "pwned\n"
    out = tmp_path / "a" / "b" / "c" / "out"
    out.parent.mkdir(parents=True)
    with SnapshotAPIServer(objs, logs=logs, metrics=metrics) as srv:
        kc = srv.write_kubeconfig(str(tmp_path / "kc"), context="incident")
        r = cli("snapshot", "save", str(out), "--kubeconfig", kc)
    assert r.code == 0, r.err
    assert _escapes(tmp_path) == []
    assert f"not collected: logs of {ns}/{pod}: invalid container name '../../../escape'" in r.err
    assert "invalid container name '../../../../../escape-far'" in r.err
    assert "not collected: metrics of node '../../../../escape-node': invalid node name" in r.err
    assert sorted(p.name for p in (out / "logs" / ns / pod).iterdir()) == [f"{dp['spec']['containers'][0]['name']}.log"]
    # the objects themselves are data and are kept as they are
    assert "../../../escape" in (out / "pods.json").read_text()


def test_a_rebundle_never_writes_outside_the_bundle(cli, tmp_path, monkeypatch):
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "sys"))
    (tmp_path / "sys").mkdir()
    src = tmp_path / "src"
    src.mkdir()
    objs = list(iter_raw_objects(snapshot_of(TAINT)))
    objs += [{"apiVersion": "x/v1", "kind": "../evil", "metadata": {"name": "a"}},
             {"apiVersion": "x/v1", "kind": "Pod/../../evil", "metadata": {"name": "b"}}]
    (src / "cluster.json").write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": objs}))
    (src / "logs" / "ml-research" / "Bad_Pod").mkdir(parents=True)
    (src / "logs" / "ml-research" / "Bad_Pod" / "main.log").write_text("x\n")
    (src / "logs" / "ml-research" / "good").mkdir(parents=True)
    (src / "logs" / "ml-research" / "good" / "main.log").write_text("fine\n")
    out = tmp_path / "deep" / "out"
    out.parent.mkdir()
    r = _rebundle(cli, out, src)
    assert r.code == 0, r.err
    assert [p for p in tmp_path.rglob("*evil*") if out not in p.parents] == []
    names = sorted(p.name for p in out.iterdir())
    assert "evils.json" in names and "podevils.json" in names          # kinds as [A-Za-z0-9] stems
    assert "not collected: logs of ml-research/Bad_Pod: invalid pod name 'Bad_Pod'" in r.err
    assert (out / "logs" / "ml-research" / "good" / "main.log").read_text() == "fine\n"
    assert _leftovers(tmp_path / "deep") == [] and list((tmp_path / "sys").iterdir()) == []


# ------------------------------------------------------------------ redaction

SECRET_LINES = [
    ("DB_PASSWORD=hunter2", "DB_PASSWORD="),
    ("export AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG", "AWS_SECRET_ACCESS_KEY="),
    ("HF_TOKEN=hf_abcdefghijklmnopqrstuvwxyz0123", "HF_TOKEN="),
    ("GITHUB_TOKEN: ghp_0123456789abcdefghijklmnopqrstuvwxyz", "GITHUB_TOKEN: "),
    ("OPENAI_API_KEY=sk-proj-abcdefghijklmnop123456", "OPENAI_API_KEY="),
    ("NGC_API_KEY=nvapi-abcdefghijklmnopqrstuvwx", "NGC_API_KEY="),
    ("NVIDIA_API_KEY=nvapi-zyxwvutsrqponmlkjihg", "NVIDIA_API_KEY="),
    ("Authorization: Basic dXNlcjpwYXNz", "Authorization: "),
    ("proxy-authorization: Bearer abc.def.ghi", "proxy-authorization: "),
    ("cloning https://alice:pw-in-url@git.example.com/repo.git", "https://alice:"),
    ("db=postgres://svc:pg-pass-9@db:5432/x", "postgres://svc:"),
    ("launch.py --password letmein --epochs 3", "--password "),
    ("launch.py --token=tok-abc123 --epochs 3", "--token="),
    ("launch.py --hf-token hf_zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz", "--hf-token "),
    ('{"client_secret": "very secret value", "lr": 0.1}', '"client_secret": '),
    ("spring.datasource.password = s3cr3t;", "spring.datasource.password = "),
    ("{\\\"apiKey\\\":\\\"k-123456\\\"}", "apiKey"),
    ("token=abc123&user=bob", "token="),
    ("using key AKIAABCDEFGHIJKLMNOP", "using key "),
    ("got eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4eHh4In0.c2lnbmF0dXJl from the metadata server", "got "),
    ("-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\n-----END RSA PRIVATE KEY-----", "PRIVATE KEY"),
]
SECRETS = ("hunter2", "wJalrXUtnFEMI", "hf_abcdefghijklmnop", "ghp_0123456789", "sk-proj-abcdefghijklmnop", "nvapi-",
           "dXNlcjpwYXNz", "abc.def.ghi", "pw-in-url", "pg-pass-9", "letmein", "tok-abc123", "hf_zzzz",
           "very secret value", "s3cr3t", "k-123456", "abc123", "AKIAABCDEFGHIJKLMNOP", "c2lnbmF0dXJl", "MIIEowIBAAKCAQEA")
# diagnostic text that must survive: token counts, tokenizers, names of Secrets, paths
KEPT_LINES = [
    "max_tokens=512", "max-token: 2048", "num_tokens: 20", "max_new_tokens=128", "tokenizer: loaded from /models/tok",
    "Tokenizer=fast", "token_count=3", "tokens: 4096", "secret_name: db-creds", "secretName: db-creds",
    "--token-file=/var/run/secrets/token", "TOKEN_FILE=/var/run/secrets/token", "--max-tokens 512",
    "passwordless: true", "I1120 03:00:00.000000 1 main.go:42] Starting", "https://registry.example.com:5000/v2/",
    "NVIDIA_VISIBLE_DEVICES=all", "CUDA_VERSION=12.4.1", "ssh://git@github.com/org/repo",
    "a basic configuration was loaded", "the bearer of bad news",
]


def test_log_redaction_catches_the_common_secret_names_and_flags():
    from gpuctl.collect.redaction import redact_log

    for line, kept in SECRET_LINES:
        red = redact_log(line)
        assert "REDACTED" in red and kept in red, (line, red)
    text = redact_log("\n".join(line for line, _ in SECRET_LINES))
    for s in SECRETS:
        assert s not in text, s


def test_log_redaction_keeps_diagnostic_text():
    from gpuctl.collect.redaction import redact_log

    for line in KEPT_LINES:
        assert redact_log(line) == line


def test_env_exemption_is_only_the_cuda_runtime_variables():
    from gpuctl.collect.redaction import KEEP_ENV, redact_object

    names = ["NVIDIA_API_KEY", "NVIDIA_TOKEN", "CUDA_SECRET", "NVIDIA_PASSWORD", "NVIDIA_CREDENTIALS", "NVIDIA_FOO",
             "NVIDIA_REQUIRE_CUDA", "CUDA_VERSION", "NVIDIA_DISABLE_REQUIRE", "NVIDIA_VISIBLE_DEVICES",
             "NVIDIA_DRIVER_CAPABILITIES", "CUDA_VISIBLE_DEVICES"]
    pod = {"kind": "Pod", "metadata": {"name": "p"},
           "spec": {"containers": [{"name": "c", "env": [{"name": n, "value": f"v-{n}"} for n in names]}]}}
    env = {e["name"]: e["value"] for e in redact_object(pod)["spec"]["containers"][0]["env"]}
    assert {n for n, v in env.items() if v != "REDACTED"} == {
        "NVIDIA_REQUIRE_CUDA", "CUDA_VERSION", "NVIDIA_DISABLE_REQUIRE", "NVIDIA_VISIBLE_DEVICES",
        "NVIDIA_DRIVER_CAPABILITIES", "CUDA_VISIBLE_DEVICES"}
    # every variable the CUDA checks read is kept
    import re

    read = set(re.findall(r'env\.get\("([A-Z_]+)"\)', (ROOT / "gpuctl" / "knowledge" / "cuda.py").read_text()))
    assert read and read <= KEEP_ENV


def _cm(name, ns, **md):
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": ns, **md},
            "data": {"config.yaml": f"value-of-{name}"}}


def test_configmaps_keep_their_data_only_when_they_are_the_gpu_stacks_own(cli, tmp_path):
    kept = [_cm("time-slicing-config", "gpu-operator"),
            _cm("custom", "nvidia-gpu-operator"),
            _cm("nvdp-nvidia-device-plugin-configs", "kube-system",
                labels={"app.kubernetes.io/name": "nvidia-device-plugin", "helm.sh/chart": "nvidia-device-plugin-0.17.0"}),
            _cm("default-mig-parted-config", "ops",
                ownerReferences=[{"apiVersion": "nvidia.com/v1", "kind": "ClusterPolicy", "name": "cluster-policy", "uid": "1"}])]
    redacted = [_cm("mps-config", "ml-research"), _cm("time-slicing-notes", "default"),
                _cm("my-mps-settings", "kube-system"), _cm("aws-auth", "kube-system"),
                _cm("device-plugin-creds", "team-a", labels={"app": "nvidia-device-plugin-daemonset"})]
    objs = list(iter_raw_objects(snapshot_of(TAINT))) + kept + redacted
    dump = tmp_path / "dump.json"
    dump.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": objs}))
    out = tmp_path / "out"
    assert _rebundle(cli, out, dump).code == 0
    text = (out / "configmaps.json").read_text()
    for cm in kept:
        assert f"value-of-{cm['metadata']['name']}" in text, cm["metadata"]["name"]
    for cm in redacted:
        assert f"value-of-{cm['metadata']['name']}" not in text, cm["metadata"]["name"]
        assert cm["metadata"]["name"] in text


def test_rebundle_redacts_pod_specs_wherever_they_sit_and_never_writes_a_nested_secret(cli, tmp_path):
    env = [{"name": "DB_PASSWORD", "value": "pw-cronjob"}, {"name": "CUDA_VERSION", "value": "12.4.1"}]
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s1", "namespace": "ml"},
              "data": {"token": "c2VjcmV0LW5lc3RlZA=="}}
    cronjob = {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "nightly", "namespace": "ml"},
               "spec": {"schedule": "@daily", "jobTemplate": {"spec": {"template": {"spec": {"containers": [
                   {"name": "train", "image": "x", "env": env,
                    "args": ["--hf-token", "hf_cronjobcronjobcronjobcronjob", "--max-tokens=512",
                             "--api-key=sk-cronjob-0123456789abcdef"]}]}}}}}}
    podtemplate = {"apiVersion": "v1", "kind": "PodTemplate", "metadata": {"name": "pt", "namespace": "ml"},
                   "template": {"spec": {"containers": [{"name": "c", "env": [{"name": "X", "value": "pw-podtemplate"}]}]}}}
    unknown = {"apiVersion": "example.com/v1", "kind": "TrainingRun", "metadata": {"name": "t", "namespace": "ml"},
               "workers": {"pod": {"containers": [{"name": "c", "env": [{"name": "Y", "value": "pw-unknown"}]}]}},
               "status": {"lastPod": {"env": [{"name": "Z", "value": "pw-in-status"}]}}}
    nested = {"apiVersion": "v1", "kind": "List", "items": [
        secret,
        {"apiVersion": "v1", "kind": "SecretList", "items": [{"metadata": {"name": "s2"}, "data": {"k": "c2VjcmV0LXR5cGVk"}}]},
        {"apiVersion": "v1", "kind": "List", "items": [{"apiVersion": "v1", "kind": "List", "items": [
            dict(secret, data={"k": "c2VjcmV0LWRlZXA="}), cronjob]}]},
        podtemplate, unknown]}
    objs = list(iter_raw_objects(snapshot_of(TAINT))) + [nested]
    dump = tmp_path / "dump.json"
    dump.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": objs}))
    out = tmp_path / "out.tar.gz"
    r = _rebundle(cli, out, dump)
    assert r.code == 0, r.err
    with tarfile.open(out) as tf:
        members = {m.name.split("/", 1)[1]: tf.extractfile(m).read().decode() for m in tf.getmembers() if m.isfile()}
    text = "\n".join(members.values())
    for s in ("c2VjcmV0LW5lc3RlZA==", "c2VjcmV0LXR5cGVk", "c2VjcmV0LWRlZXA=", "pw-cronjob", "pw-podtemplate", "pw-unknown",
              "pw-in-status", "hf_cronjob", "sk-cronjob"):
        assert s not in text, s
    assert '"Secret"' not in text and "lists.json" not in members and "secretlists.json" not in members
    cj = json.loads(members["cronjobs.json"])["items"][0]
    c = cj["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]
    assert c["env"] == [{"name": "DB_PASSWORD", "value": "REDACTED"}, {"name": "CUDA_VERSION", "value": "12.4.1"}]
    assert c["args"] == ["--hf-token", "REDACTED", "--max-tokens=512", "--api-key=REDACTED"]
    assert json.loads(members["snapshot.json"])["counts"]["CronJob"] == 1


def test_save_live_redacts_secret_names_in_env_and_logs(cli, tmp_path):
    objs = list(iter_raw_objects(snapshot_of(TAINT)))
    logs = raw_logs(snapshot_of(TAINT))
    dp = next(o for o in objs if o["kind"] == "Pod" and o["metadata"].get("labels", {}).get("app") == "nvidia-device-plugin-daemonset")
    dp["spec"]["containers"][0]["env"] = [{"name": "NVIDIA_API_KEY", "value": "nvapi-live-env-0123456789"},
                                          {"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}]
    logs[(dp["metadata"]["namespace"], dp["metadata"]["name"], dp["spec"]["containers"][0]["name"], False)] = (
        "I1120 03:00:00.000000 1 main.go:1] HF_TOKEN=hf_livelivelivelivelivelivelive max_tokens=512\n")
    with SnapshotAPIServer(objs, logs=logs) as srv:
        kc = srv.write_kubeconfig(str(tmp_path / "kc"), context="incident")
        out = tmp_path / "out"
        r = cli("snapshot", "save", str(out), "--kubeconfig", kc)
    assert r.code == 0, r.err
    text = "".join(p.read_text() for p in out.rglob("*") if p.is_file())
    assert "nvapi-live-env" not in text and "hf_livelive" not in text
    assert "HF_TOKEN=REDACTED max_tokens=512" in text
    pods = json.loads((out / "pods.json").read_text())["items"]
    saved = next(p for p in pods if p["metadata"]["name"] == dp["metadata"]["name"])
    assert saved["spec"]["containers"][0]["env"] == [{"name": "NVIDIA_API_KEY", "value": "REDACTED"},
                                                     {"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}]
