"""The XID catalogue, PCI addresses in one spelling, and the event parser: pure, no database."""

from __future__ import annotations

import csv
import dataclasses
import datetime as dt
from pathlib import Path

import pytest

from apps.common.errors import BatchError
from apps.telemetry.events import changes
from apps.telemetry.intake import parse_event_batch, parse_telemetry_batch
from apps.telemetry.names import DCGM_FIELDS
from apps.telemetry.pcibus import pci_bus_normal, pci_bus_or_blank
from apps.telemetry.prometheus import parse_dcgm
from apps.telemetry.xids import (
    ACTION_LABELS,
    APPLICATION_LEVEL,
    CATALOG_PATH,
    KIND_LABELS,
    OUT_OF_SERVICE,
    XidInfo,
    xid154_action,
    xid_catalogue,
    xid_category,
    xid_info,
)
from tests.support import DCGM_SAMPLE

NOW = dt.datetime(2026, 11, 23, 8, 0, tzinfo=dt.UTC)


def test_the_catalogue_has_every_code_from_nvidias_table():
    catalogue = xid_catalogue()
    assert sorted(catalogue) == list(range(1, 173))
    assert xid_catalogue() is catalogue  # read once
    with CATALOG_PATH.open() as handle:
        header = [line for line in handle if not line.startswith("#")][0]
    assert header.strip().split(",") == [
        "code",
        "mnemonic",
        "description",
        "immediate_action",
        "investigatory_action",
        "kind",
    ]


@pytest.mark.parametrize(
    ("code", "mnemonic", "action", "kind", "out", "app"),
    [
        (13, "ROBUST_CHANNEL_GR_EXCEPTION / ROBUST_CHANNEL_GR_ERROR_SW_NOTIFY", "RESTART_APP",
         "application", False, True),
        (31, "ROBUST_CHANNEL_FIFO_ERROR_MMU_ERR_FLT", "RESTART_APP", "application", False, True),
        (43, "ROBUST_CHANNEL_RESETCHANNEL_VERIF_ERROR", "IGNORE", "application", False, True),
        (45, "ROBUST_CHANNEL_PREEMPTIVE_REMOVAL", "WORKFLOW_XID_45", "application", False, True),
        (48, "ROBUST_CHANNEL_GPU_ECC_DBE", "WORKFLOW_XID_48", "memory", True, False),
        (63, "INFOROM_DRAM_RETIREMENT_EVENT", "IGNORE", "memory", False, True),
        (64, "INFOROM_DRAM_RETIREMENT_FAILURE", "RESET_GPU", "memory", True, False),
        (74, "NVLINK_ERROR", "WORKFLOW_NVLINK_ERR", "nvlink", True, False),
        (79, "ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS", "RESTART_BM", "bus", True, False),
        (94, "ROBUST_CHANNEL_CONTAINED_ERROR", "RESTART_APP", "memory", False, True),
        (95, "ROBUST_CHANNEL_UNCONTAINED_ERROR", "RESET_GPU", "memory", True, False),
        (119, "GSP_RPC_TIMEOUT", "RESET_GPU", "gsp", True, False),
        (149, "NVLINK_NETIR_ERROR", "WORKFLOW_NVLINK5_ERR", "nvlink", True, False),
        (54, "SILENT_RUNNING_PWR_REDUCED_CLOCKING", "CHECK_MECHANICALS", "other", True, False),
        (154, "GPU_RECOVERY_ACTION_CHANGED", "XID_154", "other", False, False),
        (1, "ROBUST_CHANNEL_FIFO_ERROR_FIFO_METHOD", "CONTACT_SUPPORT", "other", True, False),
        (163, "PSHC_DISENGAGED", "", "other", False, False),
    ],
)  # fmt: skip
def test_known_entries(code, mnemonic, action, kind, out, app):  # noqa: ANN001
    info = xid_info(code)
    assert info is not None
    assert (info.code, info.mnemonic, info.action, info.kind) == (code, mnemonic, action, kind)
    assert (info.takes_out_of_service, info.application_level) == (out, app)
    assert info.action_label == ACTION_LABELS[action] and info.kind_label == KIND_LABELS[kind]


def test_entries_are_frozen_and_unknown_codes_are_none():
    info = xid_info(79)
    assert info is not None and info.description == "GPU has fallen off the bus"
    with pytest.raises(dataclasses.FrozenInstanceError):
        info.action = "IGNORE"  # type: ignore[misc]
    assert xid_info(0) is None and xid_info(173) is None and xid_info(99999) is None


def test_every_row_is_well_formed_and_no_action_is_both():
    assert not OUT_OF_SERVICE & APPLICATION_LEVEL
    for info in xid_catalogue().values():
        assert isinstance(info, XidInfo)
        assert info.mnemonic and info.description and "\n" not in info.mnemonic
        assert info.kind in KIND_LABELS
        assert info.action in ACTION_LABELS, info  # every bucket has words for the page
        assert not (info.takes_out_of_service and info.application_level)
    with CATALOG_PATH.open(newline="") as handle:
        rows = list(csv.reader(line for line in handle if not line.startswith("#")))
    assert all(len(row) == 6 for row in rows)


def test_categories_by_kind():
    assert xid_category(48) == "gpu_hbm"  # memory
    assert xid_category(95) == "gpu_hbm"
    assert xid_category(74) == "gpu"  # NVLink / fabric
    assert xid_category(79) == "gpu"  # fallen off the bus
    assert xid_category(119) == "gpu_system_processor"  # GSP
    assert xid_category(62) == "gpu_system_processor"  # PMU halt: firmware
    assert xid_category(13) == "gpu" and xid_category(12345) == "gpu"


def test_xid_154_names_the_action_it_asks_for():
    line = "GPU recovery action changed from 0x0 (None) to 0x2 (Node Reboot Required)"
    assert xid154_action(line) == "RESTART_BM"
    drain = "GPU recovery action changed from 0x4 (Drain and Reset) to 0x1 (GPU Reset Required)"
    assert xid154_action(drain) == "RESET_GPU"
    assert xid154_action("GPU recovery action changed from 0x1 (x) to 0x4 (y)") == "DRAIN_AND_RESET"
    assert xid154_action("pid=1, something else") is None and xid154_action("") is None


@pytest.mark.parametrize(
    ("raw", "normal"),
    [
        ("00000000:18:00.0", "0000:18:00.0"),  # dcgm-exporter, nvidia-smi
        ("PCI:0000:17:00", "0000:17:00.0"),  # the kernel's NVRM lines
        ("0000:9B:00", "0000:9b:00.0"),
        ("0018:01:00", "0018:01:00.0"),  # Grace-Blackwell domains
        ("18:00.0", "0000:18:00.0"),  # lspci
        ("  pci:0000:00:1e.0 ", "0000:00:1e.0"),
        ("1a2b3c4d:01:00.0", "1a2b3c4d:01:00.0"),  # a domain past 16 bits keeps 8 digits
    ],
)
def test_pci_addresses_have_one_spelling(raw, normal):  # noqa: ANN001
    assert pci_bus_normal(raw) == normal


@pytest.mark.parametrize("raw", ["", "0x12", "0000:18:20.0", "0000:18:00.9", "gpu0", "::"])
def test_bad_pci_addresses(raw):  # noqa: ANN001
    with pytest.raises(ValueError):
        pci_bus_normal(raw)
    assert pci_bus_or_blank(raw) == ""


def test_new_counters_grow_into_events_with_the_previous_count():
    prev = {"nvlink_crc_errors": 10, "pcie_replay_total": 3, "ecc_sbe_total": 1}
    cur = {"nvlink_crc_errors": 250, "pcie_replay_total": 3, "ecc_sbe_total": 0}
    got = sorted((c.kind, c.value, c.previous) for c in changes(prev, cur))
    assert got == [("counter_reset", 0, 1), ("nvlink_crc", 250, 10)]
    assert [c.kind for c in changes({"pcie_replay_total": 0}, {"pcie_replay_total": 7})] == [
        "pcie_replay"
    ]


def test_dcgm_text_keeps_the_pci_address_and_maps_the_new_fields():
    text = DCGM_SAMPLE.read_text() + (
        'DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL{gpu="2",pci_bus_id="00000000:38:00.0",'
        'Hostname="gpu-a017"} 12\n'
        'DCGM_FI_DEV_ROW_REMAP_PENDING{gpu="2",Hostname="gpu-a017"} 1\n'
        'DCGM_FI_DEV_CLOCKS_EVENT_REASONS{gpu="2",Hostname="gpu-a017"} 4\n'
    )
    samples = {s.gpu: s for s in parse_dcgm(text, ts=NOW)}
    assert samples[0].pci_bus == "0000:18:00.0" and samples[7].pci_bus == "0000:88:00.0"
    m = samples[2].metrics
    assert m["nvlink_crc_errors"] == 12 and m["row_remap_pending"] == 1
    assert m["sm_clock_throttle"] == 4
    assert m["pcie_replay_total"] == 0 and m["row_remap_failure"] == 0


def test_json_telemetry_takes_a_pci_address():
    body = {
        "samples": [
            {"node": "n", "gpu": 0, "ts": "2026-11-23T08:00:00Z", "metrics": {"temp_c": 1}},
            {
                "node": "n",
                "gpu": 1,
                "ts": "2026-11-23T08:00:00Z",
                "metrics": {"temp_c": 1},
                "pci_bus": "00000000:28:00.0",
            },
        ]
    }
    first, second = parse_telemetry_batch(body)
    assert first.pci_bus == "" and second.pci_bus == "0000:28:00.0"
    body["samples"][1]["pci_bus"] = "slot 3"
    with pytest.raises(BatchError) as err:
        parse_telemetry_batch(body)
    assert list(err.value.errors) == ["samples[1].pci_bus"]


def event(**fields: object) -> dict:
    return {"node": "n", "ts": "2026-11-23T07:59:00Z", "kind": "xid", "code": 79, **fields}


def test_event_batch_parses_kernel_xids():
    got = parse_event_batch(
        {
            "events": [
                event(pci_bus="PCI:0000:17:00", message="pid=7, name=python, Ch 0000000a"),
                event(gpu=3, code=13),
            ]
        },
        now=NOW,
    )
    assert (got[0].pci_bus, got[0].gpu, got[0].code) == ("0000:17:00.0", None, 79)
    assert got[0].message == "pid=7, name=python, Ch 0000000a"
    assert (got[1].pci_bus, got[1].gpu, got[1].message) == ("", 3, "")


@pytest.mark.parametrize(
    ("bad", "field"),
    [
        (event(), "events[0].gpu"),  # neither gpu nor pci_bus
        (event(gpu=0, kind="ecc"), "events[0].kind"),
        (event(gpu=0, code=-1), "events[0].code"),
        (event(gpu=0, code="79"), "events[0].code"),
        (event(gpu=0, code=2**40), "events[0].code"),
        (event(gpu=True), "events[0].gpu"),
        (event(gpu=40000), "events[0].gpu"),
        (event(pci_bus="bus 3"), "events[0].pci_bus"),
        (event(gpu=0, ts="yesterday"), "events[0].ts"),
        (event(gpu=0, ts="2026-11-23T08:05:01Z"), "events[0].ts"),  # > 5 min ahead
        (event(gpu=0, message="a\x00b"), "events[0].message"),
        (event(gpu=0, message=7), "events[0].message"),
        ({"ts": "2026-11-23T08:00:00Z", "kind": "xid", "code": 1, "gpu": 0}, "events[0].node"),
        ("xid 79", "events[0]"),
    ],
)
def test_bad_events_are_named(bad, field):  # noqa: ANN001
    with pytest.raises(BatchError) as err:
        parse_event_batch({"events": [event(gpu=1), bad]}, now=NOW)
    assert list(err.value.errors) == [field.replace("[0]", "[1]")]


def test_event_batch_bounds():
    assert parse_event_batch({"events": [event(gpu=0, ts="2026-11-23T08:04:59Z")]}, now=NOW)
    with pytest.raises(BatchError) as err:
        parse_event_batch({"events": [event(gpu=0)] * 10_001}, now=NOW)
    assert err.value.errors == {"events": ["at most 10000 items per batch"]}
    for body in ({}, {"events": []}, [], {"events": "x"}):
        with pytest.raises(BatchError):
            parse_event_batch(body, now=NOW)
    long = parse_event_batch({"events": [event(gpu=0, message="x" * 1500)]}, now=NOW)
    assert len(long[0].message) == 500  # kept, cut to the column


def test_the_counters_file_to_deploy_has_every_field_kuae_reads():
    """docs/dcgm-counters.csv in dcgm-exporter's format (Go's csv reader, '#' comments, three
    fields a record, each trimmed), with ECC, NVLink CRC, PCIe replay, row remap, XID and
    throttle on."""
    path = Path(__file__).resolve().parents[2] / "docs" / "dcgm-counters.csv"
    with path.open(newline="") as handle:
        lines = [line for line in handle if line.strip() and not line.startswith("#")]
    records = [[field.strip() for field in row] for row in csv.reader(lines)]
    assert all(len(row) == 3 for row in records), [r for r in records if len(r) != 3]
    assert {row[1] for row in records} <= {"gauge", "counter", "label"}
    fields = [row[0] for row in records]
    assert len(fields) == len(set(fields))
    wanted = set(DCGM_FIELDS) - {"DCGM_FI_DEV_CLOCKS_EVENT_REASONS"}  # the same field, renamed
    assert wanted <= set(fields), wanted - set(fields)
    for name in (
        "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL",
        "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL",
        "DCGM_FI_DEV_PCIE_REPLAY_COUNTER",
        "DCGM_FI_DEV_ROW_REMAP_FAILURE",
        "DCGM_FI_DEV_ROW_REMAP_PENDING",
        "DCGM_FI_DEV_XID_ERRORS",
        "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS",
    ):
        assert name in fields
