"""What one large tensor costs to cross the worker's pipe to the judge: the sender's encoding and write, the
judge's read and decoding, and, with --device cuda, the copy off the GPU before and onto it after (as a
checked output or a replay's output crosses). Two trees side by side, alternating, one fresh pair of
processes each time; e.g. ``python tests/bench/wire_transfer.py --trees out/before . --runs 3``.

Not a test: a speed claim, so a benchmark (docs/measurements/)."""

import argparse
import os
import statistics
import subprocess
import sys
import time


def sender(root: str, n: int, device: str) -> None:
    sys.path.insert(0, root)
    import torch

    from judge.shared import wire

    t = torch.randn(n, generator=torch.Generator().manual_seed(0)).to(device)
    if device == "cuda":
        torch.cuda.synchronize()
    t0 = time.monotonic()
    desc, raw = wire.tensor_to_wire(t)
    t1 = time.monotonic()
    wire.send(1, {"type": "x"}, [(desc, raw)])
    print(f"{t1 - t0:.4f} {time.monotonic() - t1:.4f}", file=sys.stderr, flush=True)


def receiver(root: str, n: int, device: str) -> dict:
    sys.path.insert(0, root)
    import torch

    from judge.shared import wire

    if device == "cuda":
        torch.zeros(1, device="cuda")  # the judge's CUDA context exists before an output arrives
    p = subprocess.Popen(
        [sys.executable, __file__, "--send", root, "--n", str(n), "--device", device],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    if hasattr(wire, "widen_pipe"):
        wire.widen_pipe(p.stdout.fileno())  # as judge.channel does, where the tree has it
    rd = wire.Reader(p.stdout.fileno())
    rd._fill(4, None)  # the first byte: the sender has encoded its tensor
    t0 = time.monotonic()
    msg, payloads = rd.recv(1 << 40)
    t1 = time.monotonic()
    x = wire.tensor_from_wire(msg["tensors"][0], payloads[0]).to(device)
    if device == "cuda":
        torch.cuda.synchronize()
    t2 = time.monotonic()
    p.wait()
    enc, write = (float(v) for v in p.stderr.read().split()[-2:])
    ok = torch.equal(x.cpu(), torch.randn(n, generator=torch.Generator().manual_seed(0)))
    return {"encode": enc, "read": t1 - t0, "decode": t2 - t1, "total": enc + (t2 - t0), "ok": ok}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--send")
    ap.add_argument("--receive")
    ap.add_argument("--trees", nargs="+", default=["."])
    ap.add_argument("--n", type=int, default=128 << 20, help="float32 elements (default 512 MiB)")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--runs", type=int, default=3)
    a = ap.parse_args()
    if a.send:
        return sender(a.send, a.n, a.device)
    if a.receive:  # one measurement in a process of its own, importing only that tree's judge
        import json

        return print(json.dumps(receiver(a.receive, a.n, a.device)))
    got = {t: [] for t in a.trees}
    for _ in range(a.runs):
        for t in a.trees:
            out = subprocess.run(
                [sys.executable, __file__, "--receive", os.path.abspath(t), "--n", str(a.n), "--device", a.device],
                capture_output=True,
                text=True,
            )
            if out.returncode:
                sys.exit(out.stderr[-2000:])
            import json

            r = json.loads(out.stdout.strip().splitlines()[-1])
            got[t].append(r)
            print(t, {k: (round(v, 3) if isinstance(v, float) else v) for k, v in r.items()}, flush=True)
    print(
        "| tree | MiB | device | runs | encode s | read s | decode s | total s (median) |\n|---|---|---|---|---|---|---|---|"
    )
    for t, rs in got.items():
        med = {k: statistics.median(r[k] for r in rs) for k in ("encode", "read", "decode", "total")}
        print(
            f"| {t} | {a.n * 4 >> 20} | {a.device} | {len(rs)} | {med['encode']:.3f} | {med['read']:.3f} | "
            f"{med['decode']:.3f} | {med['total']:.3f} |" + ("" if all(r["ok"] for r in rs) else " WRONG VALUES")
        )


if __name__ == "__main__":
    main()
