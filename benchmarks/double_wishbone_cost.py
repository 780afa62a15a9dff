"""CPU cost of one optimizer evaluation of configs/double-wishbone-opt.toml (value and
gradient of ψ = ∫|d_CM|² dt and of the 16 tubes' stress KS, what MMA needs per
iteration): the adjoint (one forward run + one adjoint sweep with 17 columns) against
``optimize.gradient = "fd"`` (the forward run + one forward run per design variable, 1 %
steps), [Ebrahimi 2019] §6.3's "≈ 40× faster" comparison.

    PYTHONPATH=$PWD python benchmarks/double_wishbone_cost.py 0.1     # horizon [s]
    PYTHONPATH=$PWD mpirun -n 2 python benchmarks/double_wishbone_cost.py --fd-only 0.1

Both costs are linear in the number of steps, so their ratio does not depend on the
horizon; a short one keeps the 61 forward runs of the FD evaluation affordable.  Also
prints the 1 % forward difference's distance from the adjoint gradient.  Each forward run's
CPU is printed as it ends (``forward k: CPU s``), so a run stopped early still gives the
cost of one forward run and how many were done."""
import pathlib
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
import parmbs  # noqa: E402,F401  (before numpy: one SIMD choice, DESIGN.md)
import numpy as np  # noqa: E402
from parmbs.config import load_config  # noqa: E402
from parmbs.optimize import Optimization  # noqa: E402

CONFIG = pathlib.Path(__file__).resolve().parents[1] / "configs" / "double-wishbone-opt.toml"


def _time_forwards(pr, mode):
    """Print the CPU of each forward run of ``pr`` as it ends (progress of the 61 FD runs)."""
    forward, count = pr.forward, [0]

    def timed(*a, **k):
        c0 = time.process_time()
        out = forward(*a, **k)
        count[0] += 1
        print(f"  {mode} forward {count[0]}: CPU {time.process_time() - c0:.1f} s", flush=True)
        return out
    pr.forward = timed


def fd_only(t_end):
    """``--fd-only``: the wall and CPU of one FD-driven evaluation, also under ``mpirun -n
    2`` (the model runs replicated and the 60 FD columns are split over the ranks,
    optimize/driver.py ``_fd_gradients``): rank 0 prints the wall, every rank its CPU."""
    from mpi4py import MPI
    comm = MPI.COMM_WORLD
    tmp = pathlib.Path(comm.bcast(tempfile.mkdtemp() if comm.rank == 0 else None, root=0))
    cfg = load_config(str(CONFIG), [f"simulation.t_end={t_end}", "simulation.progress=false",
                                    "optimize.gradient=fd"])
    opt = Optimization(cfg, tmp / "fd.h5", out=print if comm.rank == 0 else (lambda *a: None))
    comm.barrier()
    c0, w0 = time.process_time(), time.perf_counter()
    vals, grads = opt.evaluate_all(opt.rho0)
    cpu, wall = time.process_time() - c0, time.perf_counter() - w0
    cpus = comm.gather(cpu, root=0)
    if comm.rank == 0:
        print(f"fd evaluation on {comm.size} rank(s): wall {wall:.1f} s, CPU per rank "
              f"{', '.join(f'{c:.1f}' for c in cpus)} s, psi {vals['cm_displacement']:.6e}, "
              f"sha1 of the psi gradient {__import__('hashlib').sha1(grads['cm_displacement'].tobytes()).hexdigest()}",
              flush=True)


def main(t_end):
    tmp = pathlib.Path(tempfile.mkdtemp())
    res = {}
    for mode in ("adjoint", "fd"):
        cfg = load_config(str(CONFIG), [f"simulation.t_end={t_end}", "simulation.progress=false",
                                        f"optimize.gradient={mode}"])
        opt = Optimization(cfg, tmp / f"{mode}.h5", out=lambda *a: None)
        _time_forwards(opt.problem, mode)
        c0, w0 = time.process_time(), time.perf_counter()
        vals, grads = opt.evaluate_all(opt.rho0)
        res[mode] = (time.process_time() - c0, time.perf_counter() - w0, grads)
        print(f"{mode}: CPU {res[mode][0]:.1f} s, wall {res[mode][1]:.1f} s, psi {vals['cm_displacement']:.6e}",
              flush=True)
    print(f"ratio fd / adjoint: CPU {res['fd'][0] / res['adjoint'][0]:.1f}, wall {res['fd'][1] / res['adjoint'][1]:.1f}")
    for k in ("cm_displacement", "stress6"):
        ga, gf = res["adjoint"][2][k], res["fd"][2][k]
        print(f"{k}: max|fd(1 %) − adjoint| / max|adjoint| = {np.max(np.abs(gf - ga)) / np.max(np.abs(ga)):.2e}")


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if a != "--fd-only"]
    (fd_only if "--fd-only" in sys.argv else main)(float(args[0]) if args else 0.1)
