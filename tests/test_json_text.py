"""-o json's text (render.data.json_text): the same bytes as json.dumps(indent=2) of
the cleaned, camelCased document, whichever way it is made (the compact C encoder and
msgspec's indenter; json's own way for NaN, infinities and lone surrogates; cleaned
again only where cluster text needs it)."""

from __future__ import annotations

import io
import json

from hypothesis import given, settings
from hypothesis import strategies as st

from gpuctl.render import data as R_data
from gpuctl.render.safe import clean_data


def reference(doc) -> str:
    return json.dumps(clean_data(R_data.with_camel_keys(doc)), indent=2, ensure_ascii=False)


# text with what clean removes (C0, DEL, C1, bidi, ESC sequences) beside what it keeps
# (newline, tab, quotes, backslashes, non-ASCII, a backslash before "u001b" as text)
_PIECES = list("ab _-/:é😀\"\\\n\t\r\b\f\x00\x1b[31m\x7f\x9b\u202e\u2066\u200f\u061c") + ["\\u001b", "u00", "\x1b]0;t\x07"]
_TEXT = st.lists(st.sampled_from(_PIECES), max_size=8).map("".join)
_SCALAR = st.one_of(st.none(), st.booleans(), st.integers(-10**20, 10**20),
                    st.floats(allow_nan=False, allow_infinity=False), _TEXT)
_DOC = st.recursive(_SCALAR, lambda kids: st.one_of(st.lists(kids, max_size=4),
                                                     st.dictionaries(_TEXT, kids, max_size=4)), max_leaves=25)


@settings(max_examples=400, deadline=None)
@given(_DOC)
def test_json_text_is_json_dumps_indented_of_the_cleaned_document(doc):
    assert R_data.json_text(doc) == reference(doc)


def test_snake_case_keys_keep_their_camel_case_twin():
    doc = {"largest_free_block": 2, "labels": {"a_b": 1}, "rows": [{"free_histogram": {"1": 2}}]}
    assert json.loads(R_data.json_text(doc)) == {"largestFreeBlock": 2, "largest_free_block": 2, "labels": {"a_b": 1},
                                                  "rows": [{"freeHistogram": {"1": 2}, "free_histogram": {"1": 2}}]}


def test_escape_sequences_in_cluster_text_are_removed():
    doc = {"summary": "\x1b]0;owned\x07pod \x1b[31mred\x1b[0m \u202eevil", "ok": "line\nnext\ttab"}
    text = R_data.json_text(doc)
    assert json.loads(text) == {"summary": "pod red evil", "ok": "line\nnext\ttab"}
    assert "\x1b" not in text and "\\u001b" not in text and "\u202e" not in text


def test_nan_and_infinity_are_written_as_json_writes_them():
    doc = {"a": float("nan"), "b": [float("inf"), -float("inf")], "c": "\x1bx"}
    assert R_data.json_text(doc) == reference(doc)
    assert '"a": NaN' in R_data.json_text(doc)


def test_a_lone_surrogate_is_written_as_json_writes_it():
    doc = {"name": "bad\udcffbyte"}
    assert R_data.json_text(doc) == reference(doc)


def test_an_unencodable_value_raises_as_json_does():
    import pytest

    with pytest.raises(TypeError):
        R_data.json_text({"x": object()})


def test_dump_json_writes_the_text_and_a_newline():
    buf = io.StringIO()
    R_data.dump_json({"a": [], "b": {}, "c": [1, {"d": None}]}, buf)
    assert buf.getvalue() == '{\n  "a": [],\n  "b": {},\n  "c": [\n    1,\n    {\n      "d": null\n    }\n  ]\n}\n'
