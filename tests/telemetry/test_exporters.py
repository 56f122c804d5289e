"""Exporters' text in each vendor's published shape gives KUAE's names in KUAE's units
(docs/integrations.md, Exporters and their mapping files).

No AMD or Gaudi exporter runs here: the samples are built from the vendors' published pages,
names, labels and units as written there — AMD's metric list and its Slurm integration page's
example line (`gpu_junction_temperature{card_model=…,gpu_id="0",gpu_uuid=…,serial_number=…}`):
https://github.com/ROCm/device-metrics-exporter/blob/main/docs/configuration/metricslist.md,
https://github.com/ROCm/device-metrics-exporter/blob/main/docs/integrations/slurm-integration.md
— and Intel's Gaudi metric exporter page:
https://docs.habana.ai/en/latest/Orchestration/Prometheus_Metric_Exporter.html
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from apps.telemetry import exporters
from apps.telemetry.exporters import MappingError, load, temp_source
from apps.telemetry.names import METRIC_NAMES
from apps.telemetry.prometheus import parse_dcgm
from apps.telemetry.promql import dcgm_query, host_index, samples_of

TS = dt.datetime(2025, 5, 1, tzinfo=dt.UTC)
AMD_LABELS = (
    'card_model="0x74a1",gpu_id="{i}",gpu_uuid="72ff740f-0000-1000-804c-3b58bf67050{i}",'
    'hostname="mi300-01",serial_number="69225100112{i}"'
)


def amd_text(*, edge: bool, totals: bool, index: int = 0, dbe_blocks: int = 0) -> str:
    labels = AMD_LABELS.format(i=index)
    lines = [
        "# HELP gpu_junction_temperature Hotspot (aka junction) temperature value in Celsius",
        "# TYPE gpu_junction_temperature gauge",
        f"gpu_junction_temperature{{{labels}}} 71",
        f"gpu_memory_temperature{{{labels}}} 64",
        f"gpu_power_usage{{{labels}}} 612",
        f"gpu_gfx_activity{{{labels}}} 97",
        f"gpu_used_vram{{{labels}}} 150123",
        f"pcie_replay_count{{{labels}}} 2",
        f"gpu_ecc_correct_umc{{{labels}}} 5",
        f"gpu_ecc_correct_gfx{{{labels}}} 1",
        f"gpu_ecc_uncorrect_umc{{{labels}}} {dbe_blocks}",
        f"gpu_ecc_uncorrect_sdma{{{labels}}} 0",
        f"gpu_ecc_correct_xgmi_wafl{{{labels}}} 4",
        f"gpu_ecc_uncorrect_xgmi_wafl{{{labels}}} 1",
        f"gpu_xgmi_link_rx{{{labels}}} 123456",  # no mapping line: kept under its name
    ]
    if edge:
        lines.append(f"gpu_edge_temperature{{{labels}}} 48")
    if totals:
        lines += [
            f"gpu_ecc_correct_total{{{labels}}} 100",
            f"gpu_ecc_uncorrect_total{{{labels}}} 7",
        ]
    return "\n".join(lines) + "\n"


def test_amd_values_in_kuae_names_and_units() -> None:
    (sample,) = parse_dcgm(amd_text(edge=True, totals=True), ts=TS)
    assert (sample.node, sample.gpu) == ("mi300-01", 0)
    m = sample.metrics
    assert m["power_w"] == 612 and m["gpu_util"] == 97 and m["mem_used_mib"] == 150123
    assert m["mem_temp_c"] == 64 and m["pcie_replay_total"] == 2
    assert m["nvlink_crc_errors"] == 5  # XGMI: correctable + uncorrectable of its ECC block
    assert m["gpu_xgmi_link_rx"] == 123456  # an unknown series is kept as it is
    assert sample.uuid == "72ff740f-0000-1000-804c-3b58bf670500"
    assert sample.model == "AMD Instinct MI300X"  # card_model="0x74a1": its PCI device id


def test_amd_ecc_published_totals_win_over_blocks_never_both() -> None:
    (with_totals,) = parse_dcgm(amd_text(edge=True, totals=True, dbe_blocks=3), ts=TS)
    assert with_totals.metrics["ecc_sbe_total"] == 100
    assert with_totals.metrics["ecc_dbe_total"] == 7
    (blocks,) = parse_dcgm(amd_text(edge=True, totals=False, dbe_blocks=3), ts=TS)
    # correctable: umc 5 + gfx 1 + xgmi_wafl 4; uncorrectable: umc 3 + sdma 0 + xgmi_wafl 1
    assert blocks.metrics["ecc_sbe_total"] == 10
    assert blocks.metrics["ecc_dbe_total"] == 4


def test_temp_is_edge_where_published_else_junction() -> None:
    (mi2,) = parse_dcgm(amd_text(edge=True, totals=True), ts=TS)
    assert mi2.metrics["temp_c"] == 48 and temp_source(mi2.metrics) == "edge"
    assert mi2.metrics["temp_junction_c"] == 71
    (mi3,) = parse_dcgm(amd_text(edge=False, totals=True), ts=TS)  # MI3xx: junction only
    assert mi3.metrics["temp_c"] == 71 and temp_source(mi3.metrics) == "junction"
    (nvidia,) = parse_dcgm('DCGM_FI_DEV_GPU_TEMP{gpu="0",Hostname="h"} 55\n', ts=TS)
    assert nvidia.metrics == {"temp_c": 55} and temp_source(nvidia.metrics) == ""


def test_amd_metrics_field_prefix_reads_the_same() -> None:
    text = amd_text(edge=False, totals=True).replace("\ngpu_", "\namd_gpu_")
    (sample,) = parse_dcgm(text, ts=TS)
    assert sample.metrics["temp_c"] == 71 and sample.metrics["ecc_dbe_total"] == 7


GAUDI = """\
# HELP habanalabs_power_mW Current power usage in milliwatts
habanalabs_power_mW{Serial="AN0001",UUID="01P0-HL2080A0-15",id="{i}"} 412000
habanalabs_temperature_onchip{Serial="AN0001",UUID="01P0-HL2080A0-15",id="{i}"} 52
habanalabs_utilization{Serial="AN0001",UUID="01P0-HL2080A0-15",id="{i}"} 88
habanalabs_memory_used_bytes{Serial="AN0001",UUID="01P0-HL2080A0-15",id="{i}"} 68719476736
habanalabs_nic_port_status{Serial="AN0001",UUID="01P0-HL2080A0-15",id="{i}",port="0"} 1
habanalabs_nic_port_status{Serial="AN0001",UUID="01P0-HL2080A0-15",id="{i}",port="1"} 0
habanalabs_nic_port_status{Serial="AN0001",UUID="01P0-HL2080A0-15",id="{i}",port="2"} 0
habanalabs_pending_rows_with_double_bit_ecc_errors{Serial="AN0001",UUID="x",id="{i}"} 1
"""


def test_gaudi_values_in_kuae_names_and_units_filed_under_node() -> None:
    (sample,) = parse_dcgm(GAUDI.replace("{i}", "3"), ts=TS, node="gaudi-07")
    assert (sample.node, sample.gpu) == ("gaudi-07", 3)
    m = sample.metrics
    assert m["power_w"] == 412 and m["temp_c"] == 52 and temp_source(m) == "junction"
    assert m["gpu_util"] == 88 and m["mem_used_mib"] == 65536
    assert m["links_down"] == 2
    assert "ecc_dbe_total" not in m and "nvlink_crc_errors" not in m  # not published
    assert m["habanalabs_pending_rows_with_double_bit_ecc_errors"] == 1  # kept as it is
    assert sample.uuid.startswith("01P0-")
    # No host label and no ?node=: nothing to file it under.
    assert parse_dcgm(GAUDI.replace("{i}", "3"), ts=TS) == []


def test_prometheus_pull_reads_the_same_mapping() -> None:
    def series(name: str, value: float, **labels: str) -> tuple[dict[str, str], float]:
        return {"__name__": name, "hostname": "mi300-01", "gpu_id": "1", **labels}, value

    vector = [
        series("gpu_junction_temperature", 70),
        series("gpu_power_usage", 600, gpu_uuid="U1", card_model="MI300X"),
        series("amd_gpu_ecc_uncorrect_umc", 2),
        series("gpu_ecc_uncorrect_sdma", 1),
        series("gpu_ecc_uncorrect_total", 0, gpu_id="9"),  # not a GPU of the cluster
    ]
    (sample,) = samples_of(vector, hosts=host_index(["mi300-01"]), known={("mi300-01", 1)}, ts=TS)
    assert sample.metrics == {
        "temp_c": 70, "temp_junction_c": 70, "power_w": 600, "ecc_dbe_total": 3,
    }  # fmt: skip
    # the model under its one name (docs/pages.md, One name per model)
    assert (sample.uuid, sample.model) == ("U1", "AMD Instinct MI300X")


def test_every_line_cites_a_vendor_page_and_fills_a_known_name() -> None:
    for exporter in exporters.exporters():
        assert exporter.lines, exporter.name
        for line in exporter.lines:
            assert line.source.startswith("https://"), line
            assert line.name in METRIC_NAMES, line
    allowed = {"docs.nvidia.com", "github.com", "docs.habana.ai"}
    hosts = {line.source.split("/")[2] for e in exporters.exporters() for line in e.lines}
    assert hosts <= allowed


def test_a_bad_mapping_file_names_its_line(tmp_path: Path) -> None:
    path = tmp_path / "x.csv"
    header = "# exporter: x\n# vendor: x\nseries,index_label,name,scale,combine,source\n"
    path.write_text(header + "a,gpu,temp_c,1,average,https://example.org\n")
    with pytest.raises(MappingError, match="x.csv line 4: combine 'average'"):
        load(path)
    path.write_text(header + "a,gpu,temp_c,1/0,value,https://example.org\n")
    with pytest.raises(MappingError, match="scale"):
        load(path)
    path.write_text(header + "a,gpu,temp_c,1,value,\n")
    with pytest.raises(MappingError, match="cites"):
        load(path)


def test_vendor_model_and_source_come_from_the_exporter_that_reported_the_gpu() -> None:
    (amd,) = parse_dcgm(amd_text(edge=False, totals=True), ts=TS)
    assert (amd.vendor, amd.model, amd.source) == ("amd", "AMD Instinct MI300X", "amd")
    (gaudi,) = parse_dcgm(GAUDI.replace("{i}", "0"), ts=TS, node="gaudi-07")
    assert (gaudi.vendor, gaudi.model, gaudi.source) == ("intel", "", "gaudi")
    text = 'DCGM_FI_DEV_GPU_TEMP{gpu="0",Hostname="h",modelName="NVIDIA H100 80GB HBM3"} 55\n'
    (nvidia,) = parse_dcgm(text, ts=TS)
    assert (nvidia.vendor, nvidia.model, nvidia.source) == (
        "nvidia", "NVIDIA H100 80GB HBM3", "dcgm",
    )  # fmt: skip
    # A GPU of series no file names: no exporter to say its vendor.
    (unknown,) = parse_dcgm('my_gauge{gpu="1",Hostname="h"} 3\n', ts=TS)
    assert (unknown.vendor, unknown.source) == ("", "")
    vector = [({"__name__": "gpu_power_usage", "hostname": "m", "gpu_id": "0"}, 600.0)]
    (pulled,) = samples_of(vector, hosts=host_index(["m"]), known={("m", 0)}, ts=TS)
    assert (pulled.vendor, pulled.source) == ("amd", "amd")


def test_cannot_report_reads_the_mapping_file() -> None:
    gaudi = exporters.exporter("gaudi").name
    assert exporters.cannot_report("gaudi", ("ecc_dbe_total",)) == gaudi
    assert exporters.cannot_report("gaudi", ("nvlink_crc_errors",)) == gaudi
    assert exporters.cannot_report("gaudi", ("pcie_replay_total",)) == ""
    assert exporters.cannot_report("amd", ("ecc_dbe_total",)) == ""
    assert exporters.cannot_report("amd", ("nvlink_crc_errors",)) == ""  # XGMI's ECC block
    assert exporters.cannot_report("amd", ("row_remap_failure",)) == exporters.exporter("amd").name
    assert exporters.cannot_report("", ("ecc_dbe_total",)) == ""  # posted JSON: unknown


def test_an_amd_pci_device_id_reads_as_its_model_and_finds_its_peak() -> None:
    """AMD's card_model as a PCI device id (the exporter's Slurm page shows `card_model=…`;
    the test's `0x74a1` is pci.ids' Instinct MI300X): the model is the name, through the
    cited table apps/fleet/data/amd_pci_ids.csv, and the peak table finds it."""
    from apps.fleet.vendors import amd_pci_models, model_name, peak_for

    def pulled(card_model: str) -> str:
        labels = {"__name__": "gpu_power_usage", "hostname": "m", "gpu_id": "0"}
        vector = [({**labels, "card_model": card_model}, 600.0)]
        (sample,) = samples_of(vector, hosts=host_index(["m"]), known={("m", 0)}, ts=TS)
        return sample.model

    assert pulled("0x74a1") == "AMD Instinct MI300X"
    assert pulled("0x74A5") == "AMD Instinct MI325X" and pulled("740f") == "AMD Instinct MI210"
    assert pulled("0x738c") == "AMD Instinct MI100"
    assert pulled("0x7fff") == "0x7fff"  # an id the table does not list: kept as given
    assert pulled("MI300X") == "AMD Instinct MI300X"  # a name: its one name
    assert pulled("Mystery X1") == "Mystery X1"  # a name the table does not know: kept
    assert model_name("nvidia", "0x74a1") == "0x74a1"  # only AMD's ids are read
    peak = peak_for(pulled("0x74a1"), gpu_model="H100", peak_tflops_per_gpu=989.4, by_model={})
    assert peak == 1307.4  # the MI300X row of apps/fleet/data/gpu_peaks.csv
    for device_id, name in amd_pci_models().items():  # 4 hex digits → an Instinct name
        assert len(device_id) == 4 and int(device_id, 16) and name.startswith("AMD Instinct MI")


def amd_clocks(labels: str, *, system: tuple[int, ...], normalised: bool = True) -> str:
    """`gpu_clock` as the metric list's "GPU_CLOCK measurements" example gives it: one series
    per clock, `clock_type` (lower case since exporter v1.4.2, `GPU_CLOCK_TYPE_…` before)
    and `clock_index` apart; `system` clocks at those MHz, with a data, memory, video and soc
    clock besides."""
    kinds = [("data", 22), *(("system", mhz) for mhz in system), ("memory", 900)]
    kinds += [("video", 29), ("soc", 1100)]
    out = []
    for index, (kind, mhz) in enumerate(kinds):
        spelled = kind if normalised else f"GPU_CLOCK_TYPE_{kind.upper()}"
        out.append(f'gpu_clock{{clock_index="{index}",clock_type="{spelled}",{labels}}} {mhz}')
    return "\n".join(out) + "\n"


def test_amd_system_clock_is_the_sm_clock_other_clocks_are_not() -> None:
    labels = AMD_LABELS.format(i=0)
    text = amd_text(edge=False, totals=True) + amd_clocks(labels, system=(2100, 2075, 132))
    (sample,) = parse_dcgm(text, ts=TS)
    # The highest of the GPU's system clocks; not the memory (900) or soc (1100) clock.
    assert sample.metrics["sm_clock_mhz"] == 2100
    assert "gpu_clock" not in sample.metrics  # the other clocks are not kept raw either
    older = amd_text(edge=False, totals=True) + amd_clocks(labels, system=(1500,), normalised=False)
    (sample,) = parse_dcgm(older, ts=TS)
    assert sample.metrics["sm_clock_mhz"] == 1500
    (idle,) = parse_dcgm(amd_clocks(labels, system=(132,)), ts=TS)
    assert idle.metrics == {"sm_clock_mhz": 132}
    # A Prometheus pull: the query keeps `clock_type` apart, the same line reads the answer.
    assert dcgm_query(["gpu_clock"], identity=False) == (
        "max by (__name__, Hostname, hostname, gpu, gpu_id, id, clock_type) "
        '({__name__=~"amd_gpu_clock|gpu_clock"})'
    )
    base = {"__name__": "gpu_clock", "hostname": "m", "gpu_id": "0"}
    vector = [
        ({**base, "clock_type": "memory"}, 900.0),
        ({**base, "clock_type": "system"}, 1980.0),
        ({**base, "clock_type": "soc"}, 1100.0),
    ]
    (pulled,) = samples_of(vector, hosts=host_index(["m"]), known={("m", 0)}, ts=TS)
    assert pulled.metrics == {"sm_clock_mhz": 1980} and pulled.source == "amd"
    assert exporters.cannot_report("amd", ("sm_clock_mhz",)) == ""


def test_a_bad_select_names_its_line(tmp_path: Path) -> None:
    path = tmp_path / "x.csv"
    header = "# exporter: x\n# vendor: x\nseries,index_label,name,scale,combine,source,select\n"
    path.write_text(header + "a,gpu,temp_c,1,value,https://example.org,clock_type\n")
    with pytest.raises(MappingError, match="x.csv line 4: select 'clock_type'"):
        load(path)
    path.write_text(
        header + "a,gpu,temp_c,1,value,https://example.org,k=a|b\nb,gpu,x,1,value,https://e.org\n"
    )
    (first, second) = load(path).lines
    assert first.select == (("k", frozenset({"a", "b"})),) and second.select == ()
    assert first.selects({"k": "b"}) and not first.selects({"k": "c"}) and not first.selects({})
