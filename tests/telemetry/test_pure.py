"""Pure telemetry helpers: event detection, rollup aggregation, dcgm text parsing."""

from __future__ import annotations

import datetime as dt

import pytest

from apps.common.errors import BatchError
from apps.telemetry.events import changes
from apps.telemetry.intake import parse_telemetry_batch
from apps.telemetry.prometheus import ExpositionError, parse_dcgm
from apps.telemetry.rollup import aggregate, bucket_of
from tests.support import DCGM_SAMPLE

SAMPLE = DCGM_SAMPLE
TS = dt.datetime(2026, 11, 23, 8, 3, 20, tzinfo=dt.UTC)


def kinds(prev: dict, cur: dict) -> list[tuple[str, float]]:
    return [(c.kind, c.value) for c in changes(prev, cur)]


def test_xid_fires_when_new_and_not_when_it_persists():
    assert kinds({}, {"xid": 79}) == [("xid", 79)]  # first sample
    assert kinds({"xid": 0}, {"xid": 79}) == [("xid", 79)]
    assert kinds({"xid": 79}, {"xid": 79}) == []  # the exporter keeps the last XID
    assert kinds({"xid": 79}, {"xid": 48}) == [("xid", 48)]
    assert kinds({"xid": 48}, {"xid": 0}) == []


def test_ecc_growth_and_counter_reset():
    assert kinds({"ecc_dbe_total": 1}, {"ecc_dbe_total": 3}) == [("ecc_dbe", 3)]
    assert kinds({"ecc_sbe_total": 5}, {"ecc_sbe_total": 5}) == []
    assert kinds({"ecc_dbe_total": 9}, {"ecc_dbe_total": 0}) == [("counter_reset", 0)]
    assert kinds({}, {"ecc_dbe_total": 4}) == []  # nothing to compare with yet


def test_rollup_buckets_and_stats():
    assert bucket_of(TS) == dt.datetime(2026, 11, 23, 8, 0, tzinfo=dt.UTC)
    out = aggregate(
        [
            (1, TS, {"temp_c": 60, "gpu_util": 90}),
            (1, TS + dt.timedelta(seconds=30), {"temp_c": 70}),
            (1, TS + dt.timedelta(minutes=5), {"temp_c": 50}),
            (2, TS, {"temp_c": 40, "xid": 79}),
        ]
    )
    first = out[(1, dt.datetime(2026, 11, 23, 8, 0, tzinfo=dt.UTC))]
    assert first["temp_c"] == [60, 70, 130, 2] and first["gpu_util"] == [90, 90, 90, 1]
    assert out[(1, dt.datetime(2026, 11, 23, 8, 5, tzinfo=dt.UTC))]["temp_c"] == [50, 50, 50, 1]
    assert "xid" not in out[(2, dt.datetime(2026, 11, 23, 8, 0, tzinfo=dt.UTC))]


def test_json_batch_errors_name_index_and_field():
    with pytest.raises(BatchError) as err:
        parse_telemetry_batch(
            {
                "samples": [
                    {
                        "node": "a",
                        "gpu": 0,
                        "ts": "2026-11-23T08:00:00Z",
                        "metrics": {"temp_c": 50},
                    },
                    {
                        "node": "a",
                        "gpu": -1,
                        "ts": "2026-11-23T08:00:00Z",
                        "metrics": {"temp_c": "hot"},
                    },
                    {"gpu": 0, "ts": "nope", "metrics": {}},
                ]
            }
        )
    assert set(err.value.errors) == {
        "samples[1].gpu",
        "samples[1].metrics.temp_c",
        "samples[2].node",
        "samples[2].ts",
        "samples[2].metrics",
    }


def test_parse_the_real_dcgm_sample():
    samples = parse_dcgm(SAMPLE.read_text(), ts=TS)
    assert [(s.node, s.gpu) for s in samples] == [("gpu-a017", i) for i in range(8)]
    first = samples[0]
    assert first.uuid.startswith("GPU-") and first.model == "NVIDIA H100 80GB HBM3"
    assert first.metrics["sm_clock_mhz"] == 1980 and first.metrics["xid"] == 0
    assert {"ecc_sbe_total", "ecc_dbe_total", "nvlink_bw_total", "tensor_active"} <= set(
        first.metrics
    )
    assert "DCGM_FI_DEV_MEM_CLOCK" in first.metrics  # unknown fields kept under their name


def test_lowercase_hostname_label_sentinels_and_node_override():
    text = (
        "# TYPE DCGM_FI_DEV_GPU_TEMP gauge\n"
        'DCGM_FI_DEV_GPU_TEMP{gpu="0",hostname="n1"} 61\n'
        'DCGM_FI_DEV_POWER_USAGE{gpu="0",hostname="n1"} 9223372036854775794\n'
        'DCGM_FI_DEV_GPU_TEMP{gpu="1",hostname="n1"} 62\n'
        'DCGM_FI_DEV_GPU_TEMP{hostname="n1"} 3\n'  # not per GPU: ignored
    )
    samples = parse_dcgm(text, ts=TS)
    assert [(s.node, s.gpu, s.metrics) for s in samples] == [
        ("n1", 0, {"temp_c": 61}),
        ("n1", 1, {"temp_c": 62}),
    ]
    assert {s.node for s in parse_dcgm(text, ts=TS, node="other")} == {"other"}


def test_escaped_label_values_and_timestamps():
    text = (
        'DCGM_FI_DEV_XID_ERRORS{gpu="2",Hostname="n1",err_msg="bus \\"fell\\" off {x}"} '
        "79 1732345200000\n"
        "DCGM_FI_DEV_GPU_TEMP\t55\n"
    )
    samples = parse_dcgm(text, ts=TS)
    assert [(s.node, s.gpu, s.metrics) for s in samples] == [("n1", 2, {"xid": 79})]


def test_malformed_text_names_its_line():
    text = SAMPLE.read_text()
    lines = text.count("\n")
    with pytest.raises(ExpositionError) as err:
        parse_dcgm(text + 'DCGM_FI_DEV_GPU_TEMP{gpu="0" 55\n', ts=TS)
    assert err.value.line == lines + 1
