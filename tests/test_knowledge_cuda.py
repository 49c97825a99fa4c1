"""CUDA versions, driver compatibility and image -> CUDA (gpuctl/knowledge/cuda.py,
cuda.yaml, images.yaml)."""

from __future__ import annotations

import time

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpuctl.knowledge import cuda as K
from gpuctl.knowledge.cuda import (
    COMPAT_STATUSES,
    CudaVersion,
    Requirement,
    check_compat,
    driver_branch_for_cuda,
    driver_cuda,
    image_cuda,
    parse_cuda,
    parse_driver,
    parse_require_cuda,
    required_cuda,
    requirement_from_message,
    runtime_refuses,
    toolkit_driver,
)
from gpuctl.knowledge.messages import load_yaml

C = CudaVersion

# Real NVIDIA_REQUIRE_CUDA value of the official CUDA 12.4 images (the start of
# ENV NVIDIA_REQUIRE_CUDA in the nvidia/cuda 12.4 Dockerfile, as copied into a
# third-party Dockerfile that installs cuda-compat-12-4).
REQUIRE_12_4 = (
    "cuda>=12.4 brand=tesla,driver>=470,driver<471 brand=unknown,driver>=470,driver<471 "
    "brand=nvidia,driver>=470,driver<471 brand=nvidiartx,driver>=470,driver<471 brand=geforce,driver>=470,driver<471 "
    "brand=geforcertx,driver>=470,driver<471 brand=quadro,driver>=470,driver<471 brand=quadrortx,driver>=470,driver<471 "
    "brand=titan,driver>=470,driver<471 brand=titanrtx,driver>=470,driver<471 brand=tesla,driver>=525,driver<526 "
    "brand=unknown,driver>=525,driver<526 brand=nvidia,driver>=525,driver<526 brand=nvidiartx,driver>=525,driver<526 "
    "brand=geforce,driver>=525,driver<526 brand=geforcertx,driver>=525,driver<526 brand=quadro,driver>=525,driver<526 "
    "brand=quadrortx,driver>=525,driver<526 brand=titan,driver>=525,driver<526 brand=titanrtx,driver>=525,driver<526 "
    "brand=tesla,driver>=535,driver<536 brand=unknown,driver>=535,driver<536 brand=nvidia,driver>=535,driver<536 "
    "brand=nvidiartx,driver>=535,driver<536 brand=geforce,driver>=535,driver<536 brand=geforcertx,driver>=535,driver<536 "
    "brand=quadro,driver>=535,driver<536"
)
# Real value from the CUDA 12.9.1 ubi9 base image (copied into a cuVS Dockerfile), start of the list.
REQUIRE_12_9 = ("cuda>=12.9 brand=unknown,driver>=535,driver<536 brand=grid,driver>=535,driver<536 "
                "brand=tesla,driver>=535,driver<536 brand=nvidia,driver>=535,driver<536")


# --------------------------------------------------------------------------- CudaVersion / parse


def test_cuda_version_order_and_str():
    assert C(12, 4) > C(12, 2) > C(11, 8)
    assert C(13, 0) > C(12, 9)
    assert str(C(12, 4)) == "12.4"
    assert sorted([C(12, 10), C(12, 9), C(12, 2)]) == [C(12, 2), C(12, 9), C(12, 10)]
    assert C(12, 4) == C(12, 4) and hash(C(12, 4)) == hash(C(12, 4))


@pytest.mark.parametrize("text,expected", [
    ("12.4", C(12, 4)),
    ("12.4.1", C(12, 4)),
    ("12.4.131", C(12, 4)),
    ("V12.4.131", C(12, 4)),
    ("cuda12.4", C(12, 4)),
    ("cu124", C(12, 4)),
    ("cu118", C(11, 8)),
    ("12040", C(12, 4)),        # nvmlSystemGetCudaDriverVersion
    ("12080", C(12, 8)),
    (13000, C(13, 0)),
    ("  11.8  ", C(11, 8)),
    ("12", C(12, 0)),
])
def test_parse_cuda(text, expected):
    assert parse_cuda(text) == expected


@pytest.mark.parametrize("text", ["", "abc", "12.x", "1.2.3.4.5", None, True, 12.4, "999", "12.4-runtime", "\x00"])
def test_parse_cuda_rejects(text):
    assert parse_cuda(text) is None


def test_parse_driver():
    assert parse_driver("550.90.07") == (550, 90, 7)
    assert parse_driver("570.26") == (570, 26, 0)
    assert parse_driver("R535") == (535, 0, 0)
    assert parse_driver("not a driver") is None


# --------------------------------------------------------------------------- driver -> CUDA


@pytest.mark.parametrize("driver,expected", [
    ("550.90.07", C(12, 4)),
    ("550.54.14", C(12, 4)),
    ("535.104.05", C(12, 2)),
    ("535.183.01", C(12, 2)),
    ("545.23.08", C(12, 3)),
    ("530.30.02", C(12, 1)),
    ("525.85.12", C(12, 0)),
    ("555.42.06", C(12, 5)),
    ("560.35.03", C(12, 6)),
    ("570.124.06", C(12, 8)),
    ("575.57.08", C(12, 9)),
    ("580.95.05", C(13, 0)),
    ("590.48.01", C(13, 1)),
    ("595.58.03", C(13, 2)),
    ("520.61.05", C(11, 8)),
    ("470.82.01", C(11, 4)),
    ("450.80.02", C(11, 0)),
    ("565.57.01", C(12, 7)),     # branch override (unverified)
    ("610.43.02", C(13, 2)),     # newer than the table: the newest CUDA known
])
def test_driver_cuda(driver, expected):
    assert driver_cuda(driver) == expected


@pytest.mark.parametrize("driver", ["440.33.01", "418.40", "", "abc", None, "9999999"])
def test_driver_cuda_unknown(driver):
    assert driver_cuda(driver) is None


def test_driver_branch_for_cuda_and_toolkit_driver():
    assert driver_branch_for_cuda(C(12, 2)) == 535
    assert driver_branch_for_cuda(C(12, 4)) == 550
    assert driver_branch_for_cuda(C(12, 7)) == 565
    assert driver_branch_for_cuda(C(9, 9)) is None
    assert toolkit_driver(C(12, 4)) == "550.54.14"
    assert toolkit_driver(C(13, 0)) == "580.65.06"
    assert toolkit_driver(C(12, 8)) == "570.26"
    assert toolkit_driver(C(7, 0)) is None


# --------------------------------------------------------------------------- compat table


def test_minor_compat_535_vs_124_but_runtime_refuses():
    c = check_compat("535.104.05", C(12, 2), C(12, 4))
    assert c.status == "minor-compat"
    assert "minor-version compatibility" in c.detail and "PTX" in c.detail
    req = required_cuda({"NVIDIA_REQUIRE_CUDA": "cuda>=12.4"}, None)
    assert req is not None and req.enforced
    assert runtime_refuses(C(12, 2), req)
    assert runtime_refuses(C(12, 2), req, "535.104.05")


def test_ok():
    c = check_compat("550.90.07", C(12, 4), C(12, 4))
    assert c.status == "ok"
    assert check_compat("570.26", None, C(12, 4)).status == "ok"
    req = required_cuda({"NVIDIA_REQUIRE_CUDA": "cuda>=12.4"}, None)
    assert not runtime_refuses(C(12, 4), req)
    assert not runtime_refuses(C(12, 8), req)


def test_470_vs_121_forward_compat_or_unsupported():
    c = check_compat("470.82.01", None, C(12, 1))
    assert c.status == "forward-compat"
    assert "cuda-compat-12-1" in c.detail and "data-center" in c.detail
    assert check_compat("470.42.01", None, C(12, 1)).status == "unsupported"   # older than 470.57
    assert check_compat("470.82.01", C(11, 4), C(12, 8)).status == "unsupported"  # not listed that far
    assert check_compat("460.32.03", None, C(12, 1)).status == "unsupported"


def test_major_jump_is_unsupported():
    c = check_compat("535.104.05", C(12, 2), C(13, 0))
    assert c.status == "unsupported"
    assert "580.65.06" in c.detail


def test_minor_compat_floors():
    assert check_compat("525.60.13", None, C(12, 8)).status == "minor-compat"
    assert check_compat("580.65.06", None, C(13, 2)).status == "minor-compat"
    assert check_compat("450.80.02", None, C(11, 8)).status == "minor-compat"
    # 11.0 GA drivers are below the 450.80.02 floor and not a forward-compat branch version
    assert check_compat("450.36.06", None, C(11, 4)).status == "unsupported"
    # without the driver version, the driver's CUDA decides
    assert check_compat(None, C(12, 2), C(12, 6)).status == "minor-compat"


def test_unknown():
    assert check_compat(None, None, C(12, 4)).status == "unknown"
    assert check_compat("garbage", None, C(12, 4)).status == "unknown"
    assert check_compat("550.90.07", None, None).status == "unknown"   # type: ignore[arg-type]


# --------------------------------------------------------------------------- NVIDIA_REQUIRE_CUDA / runtime


def test_parse_require_cuda_real_value():
    cuda, ranges = parse_require_cuda(REQUIRE_12_4)
    assert cuda == C(12, 4)
    assert set(ranges) == {(470, 471), (525, 526), (535, 536)}
    cuda, ranges = parse_require_cuda(REQUIRE_12_9)
    assert cuda == C(12, 9) and set(ranges) == {(535, 536)}
    # NVIDIA container toolkit docs example: space = OR
    cuda, ranges = parse_require_cuda("cuda>=11.0 driver>=450")
    assert cuda == C(11, 0) and ranges == ((450, None),)
    assert parse_require_cuda("brand=tesla,driver>=470") is None
    assert parse_require_cuda("") is None


def test_runtime_refuses_with_brand_clauses():
    req = required_cuda({"NVIDIA_REQUIRE_CUDA": REQUIRE_12_4, "CUDA_VERSION": "12.4.1"}, None)
    assert req.source == "NVIDIA_REQUIRE_CUDA" and req.cuda == C(12, 4) and req.enforced
    # vllm-project/vllm#5635: driver 530 (CUDA 12.1) is refused by a CUDA 12.4 image
    assert runtime_refuses(C(12, 1), req, "530.30.02")
    assert runtime_refuses(C(12, 1), req)
    # R535 (CUDA 12.2) is admitted by the brand=...,driver>=535,driver<536 clauses
    assert not runtime_refuses(C(12, 2), req, "535.104.05")
    assert not runtime_refuses(C(12, 2), req)      # branch inferred from CUDA 12.2
    assert not runtime_refuses(C(11, 4), req, "470.82.01")
    assert runtime_refuses(C(12, 3), req, "545.23.08")


def test_disable_require():
    req = required_cuda({"NVIDIA_REQUIRE_CUDA": "cuda>=12.4", "NVIDIA_DISABLE_REQUIRE": "true"}, None)
    assert req is not None and req.cuda == C(12, 4) and not req.enforced
    assert not runtime_refuses(C(12, 2), req)
    # Go strconv.ParseBool: "1", "t", "TRUE" are true; "yes" is not
    assert not required_cuda({"NVIDIA_REQUIRE_CUDA": "cuda>=12.4", "NVIDIA_DISABLE_REQUIRE": "1"}, None).enforced
    assert required_cuda({"NVIDIA_REQUIRE_CUDA": "cuda>=12.4", "NVIDIA_DISABLE_REQUIRE": "yes"}, None).enforced
    assert not required_cuda({"NVIDIA_DISABLE_REQUIRE": "TRUE"}, "nvidia/cuda:12.4.1-base-ubuntu22.04").enforced


def test_runtime_refuses_edge_cases():
    assert not runtime_refuses(None, required_cuda({"NVIDIA_REQUIRE_CUDA": "cuda>=12.4"}, None))
    assert not runtime_refuses(C(12, 2), None)
    unenforced = Requirement(C(12, 4), "image ngc-pytorch", "nvcr.io/nvidia/pytorch:24.05-py3")
    assert not runtime_refuses(C(12, 2), unenforced)


def test_requirement_from_runtime_message():
    # vllm-project/vllm#5635
    msg = ("error running hook #0: error running hook: exit status 1, stdout: , stderr: Auto-detected mode as 'legacy'\n"
           "nvidia-container-cli: requirement error: unsatisfied condition: cuda>=12.4, please update your driver to a "
           "newer version, or use an earlier cuda container: unknown.")
    req = requirement_from_message(msg)
    assert req.cuda == C(12, 4) and req.enforced and req.source == "runtime error"
    assert runtime_refuses(C(12, 2), req)
    assert requirement_from_message("unsatisfied condition: cuda>=13.0 (cuda=12.6)").cuda == C(13, 0)
    assert requirement_from_message("all good") is None
    assert requirement_from_message(None) is None


# --------------------------------------------------------------------------- required_cuda sources


def test_cuda_version_env_is_legacy_requirement():
    req = required_cuda({"CUDA_VERSION": "12.4.1"}, "nvcr.io/nvidia/pytorch:23.01-py3")
    assert req.cuda == C(12, 4) and req.source == "CUDA_VERSION" and req.raw == "12.4.1"
    assert req.enforced      # NCT: legacy images get cuda>=major.minor of CUDA_VERSION
    assert runtime_refuses(C(12, 2), req)


def test_require_beats_cuda_version_beats_image():
    req = required_cuda({"NVIDIA_REQUIRE_CUDA": "cuda>=12.1", "CUDA_VERSION": "12.4.1"}, "nvidia/cuda:12.8.0-base-ubuntu24.04")
    assert req.source == "NVIDIA_REQUIRE_CUDA" and req.cuda == C(12, 1)
    req = required_cuda({"CUDA_VERSION": "not a version"}, "nvidia/cuda:12.8.0-base-ubuntu24.04")
    assert req.source == "image nvidia-cuda" and req.cuda == C(12, 8)
    assert required_cuda({"NVIDIA_REQUIRE_CUDA": "garbage"}, None) is None
    assert required_cuda(None, None) is None


@pytest.mark.parametrize("image,cuda,family,enforced", [
    ("nvidia/cuda:12.4.1-cudnn-runtime-ubuntu22.04", C(12, 4), "nvidia-cuda", True),
    ("nvcr.io/nvidia/cuda:12.2.0-base-ubuntu22.04", C(12, 2), "nvidia-cuda", True),
    ("docker.io/nvidia/cuda:11.8.0-devel-ubuntu20.04", C(11, 8), "nvidia-cuda", True),
    ("nvidia/cuda:13.0.1-runtime-ubuntu24.04", C(13, 0), "nvidia-cuda", True),
    ("nvcr.io/nvidia/pytorch:24.05-py3", C(12, 4), "ngc-pytorch", False),
    ("nvcr.io/nvidia/pytorch:23.01-py3", C(12, 0), "ngc-pytorch", False),
    ("nvcr.io/nvidia/pytorch:25.12-py3", C(13, 1), "ngc-pytorch", False),
    ("nvcr.io/nvidia/tensorflow:23.01-tf2-py3", C(12, 0), "ngc-tensorflow", False),
    ("nvcr.io/nvidia/tritonserver:23.08-py3", C(12, 2), "ngc-tritonserver", False),
    ("nvcr.io/nvidia/tritonserver:24.04-trtllm-python-py3", C(12, 4), "ngc-tritonserver", False),
    ("nvcr.io/nvidia/nemo:24.05", C(12, 3), "ngc-nemo", False),
    ("pytorch/pytorch:2.3.1-cuda12.1-cudnn8-runtime", C(12, 1), "pytorch", False),
    ("pytorch/pytorch:2.9.0-cuda13.0-cudnn9-runtime", C(13, 0), "pytorch", False),
    ("docker.io/pytorch/pytorch:2.4.1-cuda12.4-cudnn9-devel", C(12, 4), "pytorch", False),
    ("vllm/vllm-openai:v0.6.3", C(12, 4), "vllm-openai", True),
    ("vllm/vllm-openai:v0.5.0", C(12, 4), "vllm-openai", True),
    ("vllm/vllm-openai:v0.4.3", C(12, 1), "vllm-openai", True),
    ("tensorflow/tensorflow:2.15.0-gpu", C(12, 2), "tensorflow-gpu", False),
    ("tensorflow/tensorflow:2.14.0-gpu-jupyter", C(11, 8), "tensorflow-gpu", False),
])
def test_image_families(image, cuda, family, enforced):
    req = required_cuda({}, image)
    assert req is not None, image
    assert req.cuda == cuda and req.source == f"image {family}" and req.enforced is enforced
    assert req.raw == image and req.note


def test_image_verified_flags():
    assert required_cuda({}, "nvcr.io/nvidia/pytorch:24.05-py3").verified          # MXNet 24.05 notes
    assert not required_cuda({}, "nvcr.io/nvidia/pytorch:24.09-py3").verified      # month pattern only
    assert not required_cuda({}, "vllm/vllm-openai:v0.6.3").verified


def test_vllm_image_requirement_and_runtime():
    req = required_cuda({}, "vllm/vllm-openai:v0.6.3")
    # vllm-project/vllm#5635: 530 driver (CUDA 12.1) -> refused; R535 is admitted by the base image's clauses
    assert runtime_refuses(C(12, 1), req, "530.30.02")
    assert not runtime_refuses(C(12, 2), req, "535.104.05")


@pytest.mark.parametrize("image", [
    "nvidia/cuda@sha256:" + "a" * 64,
    "nvidia/cuda:12.4.1-base-ubuntu22.04@sha256:" + "b" * 64,
    "nvcr.io/nvidia/pytorch@sha256:" + "c" * 64,
    "busybox:1.36.1",
    "nvidia/cuda",
    "nvidia/cuda:latest",
    "myregistry.example.com/team/trainer:2024.05",
    "tensorflow/tensorflow:2.15.0",            # CPU image
    "nvcr.io/nvidia/pytorch:99.99-py3",        # release not in the table
    "vllm/vllm-openai:latest",
    "vllm/vllm-openai:v9.0.0",
    "",
    "   ",
    None,
])
def test_image_unknown(image):
    assert required_cuda({}, image) is None
    assert image_cuda(image) is None


# --------------------------------------------------------------------------- data files


def test_data_files_sourced():
    cuda = load_yaml("cuda.yaml")
    for table in ("minor_compat", "forward_compat", "branch_overrides", "official_image_require_branches"):
        for row in cuda[table]:
            assert str(row.get("source", "")).strip(), (table, row)
    images = load_yaml("images.yaml")
    for fam in images["families"]:
        assert fam["source"].strip()
    for table in ("ngc", "nemo", "vllm", "tensorflow"):
        for row in images[table]:
            assert str(row["source"]).strip(), (table, row)
            if "unverified" in row["source"]:
                assert row.get("verified") is False, (table, row)
    releases = [r["release"] for r in images["ngc"]]
    assert releases == sorted(releases) and len(set(releases)) == len(releases)
    assert {"23.01", "24.05", "25.12"} <= set(releases)


def test_yaml_loads_with_c_loader():
    text = (K.__file__.rsplit("/", 1)[0]) + "/images.yaml"
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    with open(text, encoding="utf-8") as fh:
        assert yaml.load(fh.read(), Loader=loader)["schema"] == "gpuctl/images/v1"


# --------------------------------------------------------------------------- properties

_ANY_CHAR = st.characters(blacklist_categories=())      # includes lone surrogates
_FRAGMENTS = ["cuda>=", "12.4", "brand=tesla,driver>=470,driver<471", " ", ",", "nvidia/cuda:", "nvcr.io/nvidia/",
              "pytorch:", "-cuda", "@sha256:", "\x00", "\x1b[31m", "\ud800", "v0.6.3", "-gpu", "12040", "driver>="]
_TEXT = st.one_of(
    st.text(alphabet=_ANY_CHAR, max_size=300),
    st.lists(st.one_of(st.sampled_from(_FRAGMENTS), st.text(alphabet=_ANY_CHAR, max_size=20)), max_size=15).map("".join),
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=_TEXT)
def test_parse_cuda_never_raises(text):
    v = parse_cuda(text)
    assert v is None or (isinstance(v, CudaVersion) and 0 <= v.minor < 100)
    driver_cuda(text)
    parse_driver(text)
    parse_require_cuda(text)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(require=_TEXT, cuda_version=_TEXT, disable=_TEXT, image=st.one_of(st.none(), _TEXT))
def test_required_cuda_never_raises(require, cuda_version, disable, image):
    start = time.perf_counter()
    req = required_cuda({"NVIDIA_REQUIRE_CUDA": require, "CUDA_VERSION": cuda_version,
                         "NVIDIA_DISABLE_REQUIRE": disable}, image)
    assert time.perf_counter() - start < 2.0
    if req is not None:
        assert isinstance(req.cuda, CudaVersion)
        for dc in (C(11, 4), C(12, 2), C(13, 2)):
            assert isinstance(runtime_refuses(dc, req, "535.104.05"), bool)
            assert check_compat("535.104.05", dc, req.cuda).status in COMPAT_STATUSES


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(driver=_TEXT, major=st.integers(0, 20), minor=st.integers(0, 20))
def test_check_compat_never_raises(driver, major, minor):
    c = check_compat(driver, None, C(major, minor))
    assert c.status in COMPAT_STATUSES and c.detail


def test_one_megabyte_inputs_are_fast():
    big = ["1" * 1_000_000, "cuda>=12.4 " * 90_000, "brand=tesla,driver>=470," * 40_000, "\ud800\x00\x1b[0m" * 250_000]
    for text in big:
        start = time.perf_counter()
        parse_cuda(text)
        driver_cuda(text)
        required_cuda({"NVIDIA_REQUIRE_CUDA": text, "CUDA_VERSION": text}, text)
        assert time.perf_counter() - start < 3.0, text[:30]
