"""The pure pieces of the bounds (docs/operations.md, Limits): the bounded hostlist expander
(python-hostlist's grammar and order, counted before expanding), the DNS-name rule, the JSON depth
scan and the CSV cell neutraliser."""

from __future__ import annotations

import csv
import io
import json
import random
import re
import time
import tracemalloc
from typing import Any

import hostlist
import pytest

from apps.common import csvsafe
from apps.common.hostnames import (
    HostlistError,
    Hostlists,
    HostlistTooLarge,
    hostname_clean,
    hostname_problem,
)
from apps.common.jsondepth import too_deep

MiB = 1024 * 1024


def reference(expression: str) -> list[str] | None:
    try:
        return hostlist.expand_hostlist(expression)
    except hostlist.BadHostlist:
        return None


def ours(expression: str) -> list[str] | None:
    try:
        return Hostlists().expand(expression)
    except HostlistError:
        return None


@pytest.mark.parametrize(
    "expression",
    [
        "gpu[1-2,7]",
        "gpu[001-004]",
        "x[010-12]",
        "a[1-2]b[3-4]",
        "x[1-2]y[1-3][1-3]",
        "n[9-11],d[01-02]",
        "a,b,,c,a",
        "x[1-2],x[2-3]",
        "gpu[0-9]-ib.example",
        "[1-3]",
        "",
        ",",
        "a]b",
        "a[1",
        "a[[1]]",
        "x[]",
        "x[3-1]",
        "x[a]",
        "x[1 -2]",
        "x[1,,2]",
    ],
)
def test_expansion_is_python_hostlists(expression):
    assert ours(expression) == reference(expression)


def test_expansion_is_python_hostlists_on_random_expressions():
    rng = random.Random(16)
    for _ in range(5000):
        expression = "".join(rng.choice("ab19[]-,0") for _ in range(rng.randint(0, 14)))
        assert ours(expression) == reference(expression), expression


@pytest.mark.parametrize(
    "expression",
    [
        "gpu[0000000-9999999]",  # ten million names from 20 bytes
        "a[0-9][0-9][0-9][0-9][0-9]",  # a product of ranges
        "a," * 1_000_000,  # a million parts
        "x[" + "1," * 1_000_000 + "1]",  # a million items in one bracket
        "x[0-" + "9" * 63 + "]" * 1,  # a number too large to count in a machine word
    ],
)
def test_past_the_bound_is_refused_before_any_name_is_made(expression):
    tracemalloc.start()
    started = time.perf_counter()
    try:
        with pytest.raises(HostlistTooLarge, match="20,000 names per request"):
            Hostlists().expand(expression)
        used = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert used < len(expression) + MiB  # at most a copy of the text, never the names
    assert time.perf_counter() - started < 5


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("[]" * 1_000_000, "bad range"),  # refused at the first bracket
        ("x[1]" * 1_000_000, "longer than 253 characters"),
        ("a" * 1_000_000, "longer than 253 characters"),
        ("x[" + "9" * 64 + "]", "bad range"),
    ],
)
def test_malformed_text_is_refused_cheaply(expression, message):
    started = time.perf_counter()
    with pytest.raises(HostlistError, match=message):
        Hostlists().expand(expression)
    assert time.perf_counter() - started < 5


def test_the_bound_is_shared_by_every_expression_of_a_request():
    hostlists = Hostlists()
    assert len(hostlists.expand("a[00001-15000]")) == 15_000
    assert len(hostlists.expand("b[1-5000]")) == 5_000  # exactly 20,000 in all
    with pytest.raises(HostlistTooLarge):
        hostlists.expand("c1")
    # Duplicates count: they are names made, and the bound is on the work.
    with pytest.raises(HostlistTooLarge):
        Hostlists(limit=3).expand("a,a,a,a")


@pytest.mark.parametrize(
    "name",
    [
        "gpu001",
        "GPU-7",
        "1",
        "a" * 63,
        "gpu001.dc1.example.com",
        ".".join(["a" * 63] * 3 + ["a" * 61]),
    ],
)
def test_dns_names(name):
    assert hostname_problem(name) is None and hostname_clean(name) == name.lower()


@pytest.mark.parametrize(
    "name",
    [
        "",
        "gpu/1",
        "gpu 1",
        "-gpu",
        "gpu-",
        "a..b",
        ".a",
        "a.",
        "gpu_1",
        "a" * 64,
        ".".join(["a" * 63] * 3 + ["a" * 62]),  # 254 characters
        "gpü",
        "a\x00",
        "a\n",
    ],
)
def test_not_dns_names(name):
    assert hostname_problem(name)
    with pytest.raises(ValueError):
        hostname_clean(name)


def test_hostnames_names_the_first_bad_name():
    with pytest.raises(HostlistError, match="'gpu_1' is not a DNS name"):
        Hostlists().hostnames("gpu[0-2],gpu_[1-3]")


def depth(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + max((depth(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((depth(v) for v in value), default=0)
    return 0


def random_json(rng: random.Random, levels: int) -> Any:
    if levels == 0 or rng.random() < 0.1:
        return rng.choice([1, None, "a]", "[{", '\\"[', "\\", '"', '\\\\"]', "", "]]}"])
    width = rng.choice([0, 1, 1, 1, 2])
    if rng.random() < 0.5:
        return [random_json(rng, levels - 1) for _ in range(width)]
    keys = ["k[", "", "\\", '"]', "{x"]
    return {rng.choice(keys) + str(i): random_json(rng, levels - 1) for i in range(width)}


def test_depth_scan_agrees_with_the_parsed_depth():
    rng = random.Random(64)
    for _ in range(2000):
        value = random_json(rng, rng.randint(0, 80))
        text = json.dumps(value).encode()
        for limit in (1, 3, 10, 64):
            assert too_deep(text, limit) == (depth(value) > limit), text[:200]


@pytest.mark.parametrize(
    ("text", "deep"),
    [
        (b"[" * 10_000, True),  # unclosed
        (b"[" * 65 + b"]" * 65, True),
        (b"[" * 64 + b"]" * 64, False),
        (b'{"a":' * 10_000 + b"1" + b"}" * 10_000, True),
        (b'["' + b"[" * 100 + b'"]', False),  # brackets in a string
        (b'["]",' * 100 + b"1" + b',"["]' * 100, True),  # strings that cannot hide depth
        (b'"' + b'\\"' * 1000 + b"[" * 100, False),  # all one unterminated string
        (b"]" * 100 + b"[" * 10, False),
    ],
)
def test_depth_scan_edge_cases(text, deep):
    assert too_deep(text) is deep


def test_depth_scan_of_a_large_body_is_cheap():
    for text in (b"[" * 5_000_000 + b"]" * 5_000_000, b'["[",' * 2_000_000 + b"1]"):
        started = time.perf_counter()
        assert too_deep(text)
        assert time.perf_counter() - started < 10


@pytest.mark.parametrize(
    "text", ["=cmd|' /C calc'!A0", "+1", "-2", "@SUM(A1)", "\t=1", "\r=1", "＝1+1", "=HYPERLINK(x)"]
)
def test_a_cell_a_spreadsheet_would_run_is_written_as_text(text):
    out = io.StringIO()
    csvsafe.writer(out).writerows([[text, 7, "plain"]])
    (row,) = csv.reader(io.StringIO(out.getvalue()))
    assert row == ["'" + text, "7", "plain"]


@pytest.mark.parametrize(
    ("text", "written"),
    [
        ("ok;=1+1", "ok;'=1+1"),  # issue 41: a `;`-separated spreadsheet ran the second half
        ("ok,+1", "ok,'+1"),
        ("a\t@SUM(A1)", "a\t'@SUM(A1)"),
        ("two\n-lines", "two\n'-lines"),
        ("x;＝1", "x;'＝1"),
        ("=1;=2", "'=1;'=2"),
    ],
)
def test_a_formula_after_a_separator_inside_a_cell_is_text(text, written):
    out = io.StringIO()
    csvsafe.writer(out).writerows([[text]])
    assert next(csv.reader(io.StringIO(out.getvalue()))) == [written]
    # Even a reader that splits on `;` or `,` and ignores quotes finds no cell it would run.
    for part in re.split(r"[;,\t\n\r]", out.getvalue().strip()):
        assert not part.strip('"').startswith(("=", "+", "-", "@", "＝")), part


def test_every_cell_is_quoted_whatever_the_caller_asks():
    for kwargs in ({}, {"quoting": csv.QUOTE_MINIMAL}, {"quoting": csv.QUOTE_NONE}):
        out = io.StringIO()
        csvsafe.writer(out, **kwargs).writerows([["ok;=1+1", 7, "plain", None]])
        assert out.getvalue() == '"ok;\'=1+1","7","plain",""\r\n'


def test_other_cells_are_as_given():
    assert [csvsafe.cell(v) for v in ("gpu001", "1.5", "", 3, -2.5, None, " =x")] == [
        "gpu001",
        "1.5",
        "",
        3,
        -2.5,
        None,
        " =x",
    ]
