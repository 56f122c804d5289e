"""The GEMM probe: dense-GEMM throughput (slow-node evidence) and a fixed-seed checksum
(silent-data-corruption evidence), measured on each GPU with torch and CUDA.

Without a GPU backend there is nothing to report: a CPU's figures reported as every GPU's
would make a node without torch look both slow and corrupt to the checks.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

CHECK_N = 512
SEED = 20261130


@dataclass(frozen=True)
class ProbeResult:
    """One device's figures."""

    device: str
    gemm_tflops: float
    gemm_checksum: float


def _torch_probes(n: int, repeats: int) -> list[ProbeResult] | None:
    # torch numbers GPUs fastest-first unless told otherwise; nvidia-smi, dcgm-exporter and
    # the server number them by PCI address, so GPU i here is GPU i there.
    os.environ.setdefault("CUDA_DEVICE_ORDER", "PCI_BUS_ID")
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    out = []
    for index in range(torch.cuda.device_count()):
        device = torch.device(f"cuda:{index}")
        a = torch.randn(n, n, dtype=torch.bfloat16, device=device)
        b = torch.randn(n, n, dtype=torch.bfloat16, device=device)
        torch.cuda.synchronize(device)
        best = float("inf")
        for _ in range(repeats):
            start = time.perf_counter()
            a @ b
            torch.cuda.synchronize(device)
            best = min(best, time.perf_counter() - start)
        gen = torch.Generator(device="cpu").manual_seed(SEED)
        ca = torch.randn(CHECK_N, CHECK_N, generator=gen).to(device)
        cb = torch.randn(CHECK_N, CHECK_N, generator=gen).to(device)
        checksum = float((ca @ cb).double().sum().item())
        out.append(ProbeResult(f"cuda:{index}", 2 * n**3 / best / 1e12, checksum))
    return out


def run_probe(*, n: int = 8192, repeats: int = 3) -> list[ProbeResult]:
    """Figures per GPU, in index order, with torch and CUDA; an empty list without them."""
    return _torch_probes(max(n, 8192), repeats) or []
