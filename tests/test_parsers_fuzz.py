"""Property-based tests: the parsers that read untrusted cluster text (scheduler
messages, device-plugin logs, runtime classification, the terminal sanitiser) never
raise and never hang, whatever they are given, and nothing escapes unsanitised."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from gpuctl.checks.device_plugin import classify_log
from gpuctl.checks.scheduler_events import parse_fit_error
from gpuctl.render.safe import clean

SCHEDULER_BITS = ["0/", "5", " nodes are available: ", "3 Insufficient nvidia.com/gpu", ", ", "2 node(s) had untolerated taint {",
                  "dedicated: ml", "}", ", that the pod didn't tolerate", ". preemption: ", "..", "no new claims to deallocate, ",
                  "pod has unbound immediate PersistentVolumeClaims", "\n", "\x1b[2J", "[bold]", "\x00"]
text = st.one_of(st.text(), st.lists(st.sampled_from(SCHEDULER_BITS), max_size=40).map("".join))


@settings(max_examples=300, deadline=None)
@given(text)
def test_fit_error_parser_never_raises(message):
    fe = parse_fit_error(message)
    if fe is not None:
        assert all(r.count >= 0 for r in fe.reasons)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(), max_size=50).map("\n".join))
def test_device_plugin_log_classifier_never_raises(log):
    for f in classify_log(log):
        assert f.kind in ("nvml-init", "unhealthy")


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(), max_size=500))
def test_clean_leaves_no_control_characters(s):
    out = clean(s)
    assert not any((ord(ch) < 32 and ch not in "\n\t") or 0x7F <= ord(ch) <= 0x9F for ch in out)


def test_huge_single_lines_finish():
    line = "0/5 nodes are available: " + "3 Insufficient nvidia.com/gpu, " * 200_000
    assert parse_fit_error(line) is not None
    assert classify_log("x" * 10_000_000 + "\n" + "Failed to initialize NVML: ERROR_LIBRARY_NOT_FOUND.")[0].kind == "nvml-init"
    assert "\x1b" not in clean("\x1b[" * 1_000_000)
