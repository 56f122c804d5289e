"""The GEMM probe: dense-GEMM throughput (slow-node evidence) and a fixed-seed checksum
(silent-data-corruption evidence). torch on a GPU when present, else NumPy on the CPU."""

from __future__ import annotations

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


def _numpy_probe(n: int, repeats: int) -> ProbeResult:
    import numpy as np

    rng = np.random.default_rng(SEED)
    a = rng.standard_normal((n, n), dtype=np.float32)
    b = rng.standard_normal((n, n), dtype=np.float32)
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        a @ b
        best = min(best, time.perf_counter() - start)
    ca = rng_fixed(np, 0)
    cb = rng_fixed(np, 1)
    checksum = float((ca @ cb).astype(np.float64).sum())
    return ProbeResult("cpu", 2 * n**3 / best / 1e12, checksum)


def rng_fixed(np, k: int):  # noqa: ANN001, ANN201
    """The fixed-seed checksum operand `k` (the same on every node)."""
    return np.random.default_rng(SEED + k).standard_normal((CHECK_N, CHECK_N), dtype=np.float32)


def _torch_probes(n: int, repeats: int) -> list[ProbeResult] | None:
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


def run_probe(*, n: int = 2048, repeats: int = 3) -> list[ProbeResult]:
    """Figures per GPU with torch and CUDA, else one CPU figure from NumPy."""
    return _torch_probes(max(n, 8192), repeats) or [_numpy_probe(n, repeats)]
