"""The GPU's measured ceilings: copy bandwidth and dense matmul rates.

Datasheet numbers are leads, not facts (a copy reaches well under the paper
bandwidth: docs/measurements, clock calibration), so the roofline and the
physical floor use rates measured on this GPU: a device-to-device copy of a
1 GiB buffer (bytes read plus bytes written), and torch.matmul (cuBLAS) on
random 8192^3 fp16/bf16 operands and 4096^3 float32 operands, with TF32 on
(what tl.dot does with float32 by default) and off. They are measured once per
GPU model, driver and torch version and cached as JSON under
~/.cache/triton-judge/ (JUDGE_CACHE_DIR overrides); the judge measures them
under the GPU lock, in its own process.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

VERSION = 1


def cache_dir() -> Path:
    """The judge's cache root (judge.settings: JUDGE_CACHE_DIR)."""
    from judge.settings import settings

    return settings().cache_dir


def driver_version() -> str:
    try:
        text = Path("/proc/driver/nvidia/version").read_text()
    except OSError:
        return "unknown"
    for word in text.split():
        if word.count(".") >= 1 and word.replace(".", "").isdigit():
            return word
    return "unknown"


def device_key(gpu: int) -> dict:
    import torch

    props = torch.cuda.get_device_properties(gpu)
    return {
        "name": props.name,
        "driver": driver_version(),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "sms": props.multi_processor_count,
    }


def _median_seconds(fn, reps: int) -> float:
    import torch

    times = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1e-3)
    times.sort()
    return times[len(times) // 2]


def measure(gpu: int) -> dict:
    """Measure every ceiling now (seconds of GPU work: the result is cached per GPU model)."""
    import torch

    dev = torch.device("cuda", gpu)
    out = {}
    with torch.cuda.device(dev):
        props = torch.cuda.get_device_properties(gpu)
        out["l2_bytes"] = int(getattr(props, "L2_cache_size", 0) or 0)
        nbytes = 1 << 30
        src = torch.randint(0, 255, (nbytes,), dtype=torch.uint8, device=dev)
        dst = torch.empty_like(src)
        dst.copy_(src)
        t = _median_seconds(lambda d=dst, s=src: d.copy_(s), 20)
        out["copy_bytes_per_s"] = 2 * nbytes / t
        del src, dst
        rates = {}
        for name, n in (("float16", 8192), ("bfloat16", 8192), ("float32_tf32", 4096), ("float32", 4096)):
            dtype = torch.float32 if name.startswith("float32") else getattr(torch, name)
            gen = torch.Generator(device=dev).manual_seed(0)
            a = torch.randn(n, n, device=dev, generator=gen).to(dtype)
            b = torch.randn(n, n, device=dev, generator=gen).to(dtype)
            old = torch.backends.cuda.matmul.allow_tf32
            torch.backends.cuda.matmul.allow_tf32 = name == "float32_tf32"
            try:
                torch.matmul(a, b)
                t = _median_seconds(lambda x=a, y=b: torch.matmul(x, y), 10)
            finally:
                torch.backends.cuda.matmul.allow_tf32 = old
            rates[name] = 2 * n**3 / t
            del a, b
        out["matmul_flops_per_s"] = rates
    torch.cuda.synchronize(dev)
    return out


def get(gpu: int, *, refresh: bool = False, log=None) -> dict:
    """The ceilings of GPU ``gpu``: from the cache, or measured now and cached."""
    key = device_key(gpu)
    digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16]
    path = cache_dir() / f"ceilings-{digest}.json"
    if not refresh:
        try:
            cached = json.loads(path.read_text())
            if cached.get("version") == VERSION and cached.get("key") == key:
                return cached
        except (OSError, ValueError):
            pass
    if log:
        log(f"measuring this GPU's ceilings (copy bandwidth, matmul rates) once for {key['name']}")
    data = {"version": VERSION, "key": key, **measure(gpu)}
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(data, indent=1))
        tmp.replace(path)
        data["cache"] = str(path)
    except OSError:
        pass
    return data


def matmul_rate(ceilings: dict, dtype: str) -> float:
    """The matmul ceiling for a dtype; float32 uses TF32 (tl.dot's default on the GPU)."""
    rates = ceilings.get("matmul_flops_per_s", {})
    if dtype == "float32":
        return rates.get("float32_tf32", 0.0)
    return rates.get(dtype, 0.0)
