"""How calibration/measure_gpu.py times one operation, and what it records about the machine.

On a GPU: CUDA events around each call, the L2 cache flushed (a buffer twice its size zeroed) before
each call so weights come from HBM as they do inside a real model, warm-up calls first, the median
of the timed calls kept (p10 and p90 beside it). On the CPU (only for testing the harness): the
host clock around each call. Needs PyTorch only (no llm-roofline import: the GPU machine has no
project dependencies installed).
"""

from __future__ import annotations

import datetime
import platform
import statistics
import subprocess
import time
from dataclasses import dataclass

import torch


# A spin kernel of this many GPU cycles (~0.25 ms at 2 GHz) is queued before each timed call (and its
# L2 flush), so the host has enqueued the call and its end event before the GPU reaches the start event.
# Without it a call whose host dispatch outlasts the flush kernel (~35 us on an H100: fp8 GEMMs with
# their scales, SDPA's backend choice) is timed with the GPU idle waiting for the host: two runs of the
# same H100 plan on 2026-11-26 and -27 differed by > 20% on 93 of 536 GEMMs (up to 4x, all under
# 0.3 ms), while whole decode steps (one graph replay) agreed within 0.3%.
LEAD_CYCLES = 500_000


@dataclass
class Timing:
    median_ms: float
    p10_ms: float
    p90_ms: float
    repeats: int

    def per_call(self, calls: int) -> "Timing":
        """The timing of one of `calls` calls made by each timed run."""
        if calls == 1:
            return self
        return Timing(self.median_ms / calls, self.p10_ms / calls, self.p90_ms / calls, self.repeats)


def summarize(samples_ms: list[float]) -> Timing:
    ordered = sorted(samples_ms)
    if not ordered:
        raise ValueError("no timed calls")

    def at(q):
        return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]
    return Timing(statistics.median(ordered), at(0.1), at(0.9), len(ordered))


class Timer:
    """Times a zero-argument callable on `device` ("cuda" or "cpu")."""

    def __init__(self, device: str, repeats: int = 20, warmup: int = 5, flush_l2: bool = True,
                 lead_cycles: int = LEAD_CYCLES):
        if repeats < 1 or warmup < 0 or lead_cycles < 0:
            raise ValueError("repeats must be >= 1, warmup and lead_cycles >= 0")
        self.device, self.repeats, self.warmup = device, repeats, warmup
        self.lead_cycles = lead_cycles if hasattr(torch.cuda, "_sleep") else 0
        self.cuda = device.startswith("cuda")
        self.flush = None
        if self.cuda and flush_l2:
            l2 = getattr(torch.cuda.get_device_properties(device), "L2_cache_size", 0) or 64 << 20
            self.flush = torch.empty(2 * l2, dtype=torch.uint8, device=device)

    @property
    def method(self) -> str:
        if self.cuda:
            flush = (f"L2 flushed before each call (zeroing a {self.flush.numel() / 1e6:.0f} MB buffer)"
                     if self.flush is not None else "L2 not flushed")
            lead = (f"a {self.lead_cycles:,}-cycle spin kernel queued first so the host is always ahead of the GPU, "
                    if self.lead_cycles else "")
            return (f"torch.cuda.Event around each call, {lead}{flush}, {self.warmup} warm-up calls, "
                    f"median (p10, p90) of {self.repeats} timed calls")
        return f"time.perf_counter around each call (CPU), {self.warmup} warm-up calls, median of {self.repeats}"

    def __call__(self, fn) -> Timing:
        for _ in range(self.warmup):
            fn()
        if not self.cuda:
            samples = []
            for _ in range(self.repeats):
                started = time.perf_counter()
                fn()
                samples.append((time.perf_counter() - started) * 1e3)
            return summarize(samples)
        torch.cuda.synchronize(self.device)
        events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
                  for _ in range(self.repeats)]
        for start, end in events:
            if self.lead_cycles:
                torch.cuda._sleep(self.lead_cycles)
            if self.flush is not None:
                self.flush.zero_()
            start.record()
            fn()
            end.record()
        torch.cuda.synchronize(self.device)
        return summarize([start.elapsed_time(end) for start, end in events])


def _nvidia_smi(query: str) -> str:
    try:
        out = subprocess.run(["nvidia-smi", f"--query-gpu={query}", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=30)
        return out.stdout.strip().splitlines()[0] if out.returncode == 0 and out.stdout.strip() else "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def environment(device: str) -> dict[str, str]:
    """Hardware and software the measurements were taken with (written as `# key: value` lines)."""
    info = {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "python": platform.python_version(), "torch": torch.__version__, "host": platform.machine()}
    if device.startswith("cuda"):
        props = torch.cuda.get_device_properties(device)
        l2 = getattr(props, "L2_cache_size", 0)
        info.update(gpu=f"{props.name} ({props.multi_processor_count} SMs, {l2 / 2**20:.0f} MiB L2, "
                        f"{props.total_memory / 2**30:.1f} GiB)",
                    cuda=str(torch.version.cuda), cudnn=str(torch.backends.cudnn.version()),
                    driver=_nvidia_smi("driver_version"),
                    clocks=_nvidia_smi("clocks.sm,clocks.mem,clocks.max.sm,power.limit"))
    else:
        info.update(gpu="none (CPU run: tests the harness only, not ground truth)", cpu=platform.processor() or platform.machine())
    return info


def ceilings(device: str, timer: Timer, dtype=torch.bfloat16) -> dict[str, str]:
    """The two measured ceilings (a large device-to-device copy; a large matrix product), as METHOD.md asks."""
    size, n = (1 << 30, 8192) if device.startswith("cuda") else (1 << 24, 512)
    copy = _copy_timing(device, timer, size)
    matmul = _matmul_timing(device, timer, n, dtype)
    return ceiling_fields(size, copy.median_ms * 1e-3, n, matmul.median_ms * 1e-3, str(dtype)[6:])


def ceiling_fields(copy_bytes: int, copy_s: float, n: int, matmul_s: float, dtype_name: str) -> dict[str, str]:
    """The header lines of the two ceilings, to four significant digits whatever their size (a CPU's bf16
    matmul, 0.02 TFLOP/s, must not print as 0.0)."""
    return {"copy_bandwidth_tb_s": f"{2 * copy_bytes / copy_s / 1e12:.4g} (read + write of a "
                                   f"{copy_bytes / 2**20:.0f} MiB copy)",
            "matmul_tflops": f"{2 * n**3 / matmul_s / 1e12:.4g} ({n}^3 {dtype_name}, random data)"}


def _copy_timing(device: str, timer: Timer, size: int) -> Timing:
    source = torch.empty(size, dtype=torch.uint8, device=device).random_(0, 255)
    target = torch.empty_like(source)
    return timer(lambda: target.copy_(source))


def _matmul_timing(device: str, timer: Timer, n: int, dtype) -> Timing:
    a, b = torch.randn(n, n, device=device, dtype=dtype), torch.randn(n, n, device=device, dtype=dtype)
    return timer(lambda: a @ b)
