"""Checkpoint benchmarks (issue 4), measured in one run:

1. overhead of schedule ``all`` on disk vs no storage, forward run of a hanging chain
   whose state (q, v, a, λ) is ~10^5 doubles per step (default 7000 links:
   4·21000 + 14000 = 98000);
2. revolve with 100 slots over 10^4 steps (pendulum): forward steps actually computed
   (forward run + recomputations in the adjoint sweep) vs Griewank's optimum;
3. write throughput of the store vs the disk's raw throughput (dd, same run).

Usage: python benchmarks/checkpoint.py [--links 7000] [--steps 20] [--revolve-steps 10000]
"""
import argparse
import os
import pathlib
import re
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

from gradient import chain_toml                       # noqa: E402

from parmbs.checkpoint import revolve_cost             # noqa: E402
from parmbs.config import load_config                  # noqa: E402
from parmbs.sensitivity.problem import Problem         # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[1]


def dd_throughput(path, mib=256):
    r = subprocess.run(["dd", "if=/dev/zero", f"of={path}", "bs=1M", f"count={mib}", "conv=fdatasync"],
                       capture_output=True, text=True)
    os.unlink(path)
    m = re.search(r"([\d.,]+) s, ", r.stderr)
    secs = float(m.group(1).replace(",", ".")) if m else float("nan")
    return mib * 2 ** 20 / secs


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--links", type=int, default=7000)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--revolve-steps", type=int, default=10000)
    ap.add_argument("--slots", type=int, default=100)
    args = ap.parse_args()
    tmp = pathlib.Path(tempfile.mkdtemp(dir=os.environ.get("TMPDIR", "/tmp")))

    # 1 + 3: overhead and throughput
    cfgf = tmp / "chain.toml"
    cfgf.write_text(chain_toml(args.links, args.steps, 0))
    cfg = load_config(str(cfgf), ["checkpoint.schedule=all"])
    pr = Problem(cfg)
    n, m = pr.sys.n, pr.sys.m
    per_step = 3 * n + n + m
    pr.forward()                                          # warm-up (matrix set-up, imports)
    t0 = time.perf_counter()
    pr.forward()
    t_mem = time.perf_counter() - t0
    h5 = tmp / "all.h5"
    pr.use_checkpoint(h5, interval=0.0)                   # flush every step: the worst case
    t0 = time.perf_counter()
    pr.forward()
    t_disk = time.perf_counter() - t0
    size = h5.stat().st_size
    nbytes = (args.steps + 1) * per_step * 8
    raw = dd_throughput(tmp / "dd.bin")
    print(f"1. chain of {args.links} links: {per_step} doubles per step, {args.steps} steps")
    print(f"   forward, no storage   {t_mem:8.2f} s")
    print(f"   forward, 'all' on disk {t_disk:8.2f} s   overhead {100 * (t_disk / t_mem - 1):+.1f} %  "
          f"(goal <= 10 %); file {size / 2**20:.1f} MiB")
    extra = max(t_disk - t_mem, 1e-9)
    print(f"3. store: {nbytes / 2**20:.1f} MiB of states; throughput bound {nbytes / extra / 2**20:.0f} MiB/s "
          f"(bytes / extra time; inf-like when the overhead is within noise); raw disk (dd, fdatasync) "
          f"{raw / 2**20:.0f} MiB/s")

    # 2: revolve
    cfg = load_config(str(ROOT / "configs" / "pendulum.toml"),
                      [f"simulation.t_end={args.revolve_steps * 1e-3}", "simulation.dt=1e-3",
                       f"checkpoint.schedule=revolve:{args.slots}", "simulation.progress=false"])
    pr = Problem(cfg)
    run = pr.use_checkpoint(tmp / "revolve.h5")
    t0 = time.perf_counter()
    pr.forward()
    t_f = time.perf_counter() - t0
    t0 = time.perf_counter()
    pr.adjoint()
    t_a = time.perf_counter() - t0
    N = pr.nsteps
    work = run.forward_steps + run.recomputed
    print(f"2. revolve:{args.slots}, {N} steps (pendulum): forward steps computed {work} = "
          f"{work / N:.3f} sweeps; optimum (Griewank) {revolve_cost(N, args.slots)} = "
          f"{revolve_cost(N, args.slots) / N:.3f} sweeps; forward {t_f:.1f} s, adjoint incl. "
          f"recomputation {t_a:.1f} s")


if __name__ == "__main__":
    main()
