"""Measure ground truth on a GPU with PyTorch: GEMMs, element-wise kernels, attention, whole decode steps.

    python3 calibration/measure_gpu.py                        # everything, H100/H200/A100 named from the GPU
    python3 calibration/measure_gpu.py --kinds decode_step,prefill_step,attention --budget-s 500
    python3 calibration/measure_gpu.py --device cpu --quick --hardware H200-SXM --out /tmp/x.csv   # harness test

Writes one CSV in the measurement layout of calibration/README.md (default
calibration/measured/<hardware>-<date>.csv), with `# key: value` header lines that record the GPU,
driver, CUDA, PyTorch, the timing method and the two measured ceilings. Rows are appended as they
are measured, so a run stopped by its time budget keeps what it measured. Score the file with
`python benchmarks/accuracy.py` (it reads calibration/measured/ by default).

Needs PyTorch only (and Triton for --compile); it imports nothing of llm-roofline, because the GPU
machine has none of the project's dependencies.
"""

from __future__ import annotations

import argparse
import csv
import datetime
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import measure_plan as plan  # noqa: E402
from measure_timing import Timer, ceilings, environment  # noqa: E402

ELEMENTWISE_CALLS = 10      # element-wise kernels: calls captured back to back in one CUDA graph
COLUMNS = ("hardware", "model", "op", "kind", "tokens", "tp", "m", "n", "k", "dtype", "batch", "context",
           "median_ms", "p10_ms", "p90_ms", "repeats", "implementation")
DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}
GPU_NAMES = (("H200", "H200-SXM"), ("H100", "H100-SXM"), ("A100-SXM4-80GB", "A100-80GB-SXM"),
             ("A100-PCIE-40GB", "A100-40GB-PCIe"), ("B200", "B200"), ("L4", "L4"), ("T4", "T4"))


def hardware_name(device: str, given: str | None) -> str:
    """The specs.xlsx device the rows are recorded under: --hardware, else recognised from the GPU's name."""
    if given:
        return given
    if device.startswith("cuda"):
        name = torch.cuda.get_device_name(device)
        for part, spec in GPU_NAMES:
            if part.lower() in name.lower():
                return spec
        raise SystemExit(f"GPU {name!r} is not recognised: pass --hardware with its specs.xlsx device name")
    raise SystemExit("--hardware is required on the CPU (the rows are labelled with a specs.xlsx device)")


def random(shape, dtype, device):
    return torch.randn(shape, device=device, dtype=torch.float32).mul_(0.5).to(dtype)


class Ops:
    """Builds the callable that one plan item times (inputs allocated once, outside the timed region)."""

    def __init__(self, device: str, dtype, compile_elementwise: bool):
        self.device, self.dtype = device, dtype
        self.compiled = {}
        self.compile = compile_elementwise
        self.implementation = {}
        self._step_model = self._step_model_name = self._keep = None
        self.calls_per_run = 1        # calls one timed run of the last built callable makes (time is divided)

    def _elementwise(self, name, fn, *inputs):
        """`fn` compiled into one fused kernel when asked (as serving engines run it), else eager."""
        if name not in self.compiled:
            self.compiled[name], self.implementation[name] = fn, "eager"
            if self.compile:
                compiled = torch.compile(fn, dynamic=True)
                try:
                    compiled(*inputs)                 # compiles now: a missing compiler shows here
                    self.compiled[name], self.implementation[name] = compiled, "torch.compile (one fused kernel)"
                except Exception as error:            # e.g. no Triton: time eager and say so in the row
                    print(f"torch.compile failed for {name} ({type(error).__name__}); timing eager", file=sys.stderr)
        compiled = self.compiled[name]
        if not self.device.startswith("cuda"):
            return (lambda: compiled(*inputs)), self.implementation[name]
        # As inside a model (graph-launched, back to back), not the host's dispatch time of one call.
        replay = self._graph(lambda: [compiled(*inputs) for _ in range(ELEMENTWISE_CALLS)])
        self.calls_per_run = ELEMENTWISE_CALLS
        return replay, (f"{self.implementation[name]}, CUDA graph of {ELEMENTWISE_CALLS} back-to-back calls, "
                        "time per call")

    def _graph(self, fn):
        """`fn` captured in a CUDA graph after three warm-up calls on a side stream; returns its replay."""
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            for _ in range(3):
                fn()
        torch.cuda.current_stream().wait_stream(stream)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            fn()
        self._keep = (fn, graph)                          # alive while the graph replays
        return graph.replay

    def build(self, item: plan.Item):
        dt, dev = self.dtype, self.device
        self.calls_per_run = 1
        if item.kind == "gemm" and item.dtype == "fp8":
            return self._fp8_gemm(item)
        if item.kind == "gemm":
            a, w = random((item.m, item.k), dt, dev), random((item.n, item.k), dt, dev)   # nn.Linear layout
            return (lambda: F.linear(a, w)), "F.linear (x @ W^T, cuBLAS)"
        if item.kind == "rmsnorm":
            x, weight = random((item.m, item.n), dt, dev), random((item.n,), dt, dev)

            def rmsnorm(x, weight):
                h = x.float()
                return (h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + 1e-5)).to(x.dtype) * weight
            return self._elementwise("rmsnorm", rmsnorm, x, weight)
        if item.kind == "swiglu":
            gate_up = random((item.m, 2 * item.n), dt, dev)

            def swiglu(gate_up):
                gate, up = gate_up.chunk(2, dim=-1)
                return F.silu(gate) * up
            return self._elementwise("swiglu", swiglu, gate_up)
        if item.kind == "residual_add":
            a, b = random((item.m, item.n), dt, dev), random((item.m, item.n), dt, dev)
            return self._elementwise("residual_add", torch.add, a, b)
        if item.kind.startswith("attention"):
            return self._attention(item)
        if item.kind == "decode_step":
            return self._decode_step(item)
        if item.kind == "prefill_step":
            return self.prefill_step(item.model, plan.load_config(item.model), item.batch, item.context)
        raise ValueError(f"unknown kind {item.kind!r}")

    def _fp8_gemm(self, item):
        """C = A @ W^T with e4m3 A and W and per-tensor scales, bf16 out (cuBLASLt via torch._scaled_mm)."""
        a = random((item.m, item.k), torch.float32, self.device)
        w = random((item.n, item.k), torch.float32, self.device)
        if not self.device.startswith("cuda"):                   # the harness test: shapes only, no fp8 kernels
            return (lambda: F.linear(a, w)), "CPU stand-in for torch._scaled_mm (not ground truth)"
        a8, w8 = a.to(torch.float8_e4m3fn), w.to(torch.float8_e4m3fn)
        one = torch.ones((), device=self.device, dtype=torch.float32)
        return ((lambda: torch._scaled_mm(a8, w8.t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16)),
                "torch._scaled_mm (fp8 e4m3, per-tensor scales, bf16 out)")

    def _attention(self, item):
        d = plan.dims(plan.load_config(item.model))
        heads, kv = d["heads"] // item.tp, max(d["kv_heads"] // item.tp, 1)
        if item.kind == "attention_prefill":
            length, keys, causal = item.context, item.context, True
        else:
            length, keys, causal = 1, item.context + 1, False      # the new token attends to itself too
        q = random((item.batch, heads, length, d["head_dim"]), self.dtype, self.device)
        k = random((item.batch, kv, keys, d["head_dim"]), self.dtype, self.device)
        v = random((item.batch, kv, keys, d["head_dim"]), self.dtype, self.device)
        gqa = heads != kv
        return ((lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=gqa)),
                "F.scaled_dot_product_attention" + (" (enable_gqa)" if gqa else ""))

    def _decode_step(self, item):
        return self.decode_step(item.model, plan.load_config(item.model), item.batch, item.context)

    def _load_step_model(self, name: str, config: dict):
        import torch_llama
        self._keep = None                                             # the previous step's cache and graph
        if self._step_model_name != name:
            self._step_model = None                                    # free the previous model first
            if self.device.startswith("cuda"):
                torch.cuda.empty_cache()
            self._step_model = torch_llama.from_config(config, dtype=self.dtype, device=self.device)
            self._step_model_name = name
        return self._step_model

    def prefill_step(self, name: str, config: dict, batch: int, length: int):
        """One whole-model prefill of `length` tokens per sequence (logits of the last token only), graph-captured."""
        model = self._load_step_model(name, config)
        cache = model.new_cache(batch, length)
        tokens = torch.randint(0, config["vocab_size"], (batch, length), device=self.device)

        def step():
            with torch.no_grad():
                return model.prefill(tokens, cache, last_only=True)
        if not self.device.startswith("cuda"):
            return step, "plain-torch Llama (torch_llama.py) prefill, eager"
        replay = self._graph(step)
        self._keep = (self._keep, cache, tokens)
        return replay, "plain-torch Llama (torch_llama.py) prefill, last-token logits, CUDA graph replay"

    def decode_step(self, name: str, config: dict, batch: int, context: int):
        """One whole-model decode step at position `context` (random weights and cache), graph-captured on a GPU."""
        model = self._load_step_model(name, config)
        cache = model.new_cache(batch, context + 1)
        for part in cache:
            part.normal_(0.0, 1.0)                                    # never time on zeros
        tokens = torch.randint(0, config["vocab_size"], (batch, 1), device=self.device)
        position = context                                            # `context` tokens already in the cache

        def step():
            with torch.no_grad():
                return model.decode_step(tokens, cache, position)
        if not self.device.startswith("cuda"):
            return step, "plain-torch Llama (torch_llama.py), eager"
        replay = self._graph(step)
        self._keep = (self._keep, cache, tokens)
        return replay, "plain-torch Llama (torch_llama.py), CUDA graph replay"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="cuda", help="cuda (default) or cpu (tests the harness only)")
    parser.add_argument("--hardware", help="specs.xlsx device name for the rows (default: from the GPU's name)")
    parser.add_argument("--kinds", default="decode_step,prefill_step,attention,gemm,gemm_fp8,elementwise",
                        help="comma list of decode_step, prefill_step, attention, gemm, gemm_fp8, elementwise")
    parser.add_argument("--dtype", default="bf16", choices=sorted(DTYPES))
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--budget-s", type=float, default=540.0, help="stop starting new items after this long")
    parser.add_argument("--quick", action="store_true", help="a handful of small shapes (harness test)")
    parser.add_argument("--no-compile", action="store_true", help="time element-wise kernels eagerly")
    parser.add_argument("--out", help="CSV path (default calibration/measured/<hardware>-<date>.csv)")
    args = parser.parse_args(argv)

    started = time.perf_counter()
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        raise SystemExit("no CUDA device visible to PyTorch; use --device cpu to test the harness")
    hardware = hardware_name(args.device, args.hardware)
    items = plan.build([k.strip() for k in args.kinds.split(",") if k.strip()], quick=args.quick)
    out = Path(args.out or HERE / "measured" / f"{hardware}-{datetime.date.today():%Y-%m-%d}.csv")
    out.parent.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(0)
    timer = Timer(args.device, args.repeats, args.warmup)
    ops = Ops(args.device, DTYPES[args.dtype], compile_elementwise=not args.no_compile and args.device != "cpu")
    header = {"hardware": hardware, **environment(args.device), "timing": timer.method,
              **ceilings(args.device, timer, DTYPES[args.dtype]),
              "command": "python3 calibration/measure_gpu.py " + " ".join(argv if argv is not None else sys.argv[1:])}
    with open(out, "w", newline="", encoding="utf-8") as handle:
        handle.write("# llm-roofline ground truth, written by calibration/measure_gpu.py (layout: calibration/README.md)\n")
        handle.writelines(f"# {key}: {value}\n" for key, value in header.items())
        writer = csv.writer(handle)
        writer.writerow(COLUMNS)
        done = 0
        for item in items:
            if time.perf_counter() - started > args.budget_s:
                print(f"time budget reached: {done} of {len(items)} items measured", file=sys.stderr)
                break
            try:
                fn, implementation = ops.build(item)
                timing = timer(fn).per_call(ops.calls_per_run)
            except torch.cuda.OutOfMemoryError:
                print(f"out of memory, skipped: {item}", file=sys.stderr)
                continue
            except (RuntimeError, ValueError, TypeError) as error:   # one unsupported item must not end the run
                print(f"{type(error).__name__} ({str(error)[:200]}), skipped: {item}", file=sys.stderr)
                continue
            writer.writerow([hardware, item.model, item.op, item.kind, item.tokens, item.tp, item.m, item.n, item.k,
                             item.dtype or args.dtype, item.batch, item.context, f"{timing.median_ms:.6g}", f"{timing.p10_ms:.6g}",
                             f"{timing.p90_ms:.6g}", timing.repeats, implementation])
            handle.flush()
            done += 1
            del fn
    print(f"{done} measurements -> {out} ({time.perf_counter() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
