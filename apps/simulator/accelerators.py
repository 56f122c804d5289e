"""The accelerators `simulate --vendor` builds clusters of (docs/simulator.md, Accelerators):
per vendor one model, its cited peak, its memory, and the telemetry its way in publishes.
Pure, no database.

Peaks come from the shipped table (apps/fleet/data/gpu_peaks.csv), never from here. Memory
sizes are the vendors' published ones (sources beside each). Power, temperature and the GEMM
probe's figure are simulated: plausible ranges under each board's power limit, not measured
values. The probe's figure is the same share of each model's peak as H100's 720 TFLOP/s is of
its 989.4, so GPUs of different models differ in it as they would in a fleet, and a check that
compared across models would misjudge the slower one (docs/checks.md, `slow_node`).
"""

from __future__ import annotations

from dataclasses import dataclass

from apps.fleet.vendors import model_key, peak_table

H100_GEMM_TFLOPS = 720.0
H100_GEMM_SHARE = H100_GEMM_TFLOPS / 989.4


@dataclass(frozen=True)
class Accelerator:
    """One GPU model as the simulator writes it."""

    vendor: str
    model: str  # the name its telemetry reports (dcgm's modelName, amd-smi's, hl-smi's, MTML's)
    cluster_model: str  # the cluster's `gpu_model` when the cluster is all this model
    mem_mib: int
    power_w: tuple[float, float]  # busy range; idle is `idle_w`
    idle_w: tuple[float, float]
    temp_c: tuple[float, float]  # busy range of `temp_c`, whichever temperature that is
    checksum: float  # the probe's GEMM checksum on this model (one value per model)

    @property
    def peak_tflops(self) -> float:
        """Dense BF16 peak from the shipped table (docs/formulas.md, MFU)."""
        return peak_table()[model_key(self.model)].tflops

    @property
    def gemm_tflops(self) -> float:
        """The simulated probe's mean GEMM TFLOP/s on a healthy GPU of this model."""
        if self.vendor == "nvidia":
            return H100_GEMM_TFLOPS
        return round(self.peak_tflops * H100_GEMM_SHARE, 1)


H100 = Accelerator(
    vendor="nvidia",
    model="NVIDIA H100 80GB HBM3",
    cluster_model="H100-SXM5-80GB",
    mem_mib=81_559,
    power_w=(560, 690),
    idle_w=(68, 90),
    temp_c=(58, 76),
    checksum=1834.2265625,
)
# 192 GB HBM3, 750 W OAM: https://meterpreter.org/amd-confirms-instinct-mi300x-power-consumption-up-to-750w
MI300X = Accelerator(
    vendor="amd",
    model="AMD Instinct MI300X",
    cluster_model="MI300X",
    mem_mib=196_608,
    power_w=(600, 740),
    idle_w=(130, 160),
    temp_c=(64, 84),  # junction: MI3xx publish no edge temperature
    checksum=1834.2275390625,
)
# 48 GB GDDR6: https://tweakpc.de/news/49715/moore-threads-leistungsstarke-mtt-s4000-gpu-aus-china-mit-25-tflops
S4000 = Accelerator(
    vendor="mthreads",
    model="MTT S4000",
    cluster_model="MTT S4000",
    mem_mib=49_152,
    power_w=(330, 430),
    idle_w=(60, 80),
    temp_c=(55, 78),
    checksum=1834.228515625,
)
# HL-325L OAM: 128 GB HBM2e, 900 W: https://www.theregister.com/2024/04/12/intel_paudi_3_china/
GAUDI3 = Accelerator(
    vendor="intel",
    model="HL-325L",
    cluster_model="Gaudi 3",
    mem_mib=131_072,
    power_w=(700, 880),
    idle_w=(150, 190),
    temp_c=(60, 82),  # on-chip: the exporter's only GPU temperature
    checksum=1834.2255859375,
)

BY_VENDOR = {"nvidia": H100, "amd": MI300X, "mthreads": S4000, "intel": GAUDI3}
MIXED = "mixed"
MIXED_MTHREADS = "mixed-mthreads"
# The fleets of two models: the first half of the nodes the first, the rest the second.
MIXES: dict[str, tuple[Accelerator, Accelerator]] = {
    MIXED: (H100, MI300X),
    MIXED_MTHREADS: (H100, S4000),
}
FLEETS = (*BY_VENDOR, *MIXES)


def fleet_models(fleet: str) -> tuple[Accelerator, ...]:
    """The models a cluster of `fleet` holds: one per vendor; `mixed`, H100 and MI300X;
    `mixed-mthreads`, H100 and MTT S4000."""
    if fleet in MIXES:
        return MIXES[fleet]
    return (BY_VENDOR[fleet],)
