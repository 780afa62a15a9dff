"""Gradients in batch groups over MPI, from a Python script (mpi4py).

The five-bar (fivebar_api.py) with two load cases — the nominal springs and springs
twice as stiff ([[scenarios]]) — and its three objectives.  The MPI ranks are split
into groups (``parmbs.parallel.make_layout``, one group per rank by default); each
group runs its batch of (scenario, objectives) tasks — a forward run and one adjoint
sweep per task — and the results are gathered on every rank
(``parmbs.sensitivity.batch.batch_gradient``, the engine of ``parmbs gradient
--groups G``).  The gradients equal a serial run's up to the order of BLAS sums
(batch.py).

Run:  mpirun -n 2 python examples/batch_mpi.py [--t-end 0.5] [--groups 2]
"""
import argparse

import parmbs  # noqa: F401  first, before numpy: it pins numpy's SIMD math (parmbs/_determinism.py)
from mpi4py import MPI

from parmbs.parallel import make_layout
from parmbs.sensitivity.batch import batch_gradient
from fivebar_api import build


def model(t_end):
    """The five-bar with a second load case (stiffer springs)."""
    m = build(t_end)
    m.simulation(progress=False)
    m.scenario("nominal", set={"forces.S1.damping": 0.0})
    m.scenario("stiff", set={"forces.S1.stiffness": 200.0, "forces.S2.stiffness": 200.0})
    return m


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--t-end", type=float, default=0.5)
    ap.add_argument("--groups", type=int, default=MPI.COMM_WORLD.size)
    a = ap.parse_args()
    cfg = model(a.t_end).config()
    layout = make_layout(a.groups)                 # collective: splits COMM_WORLD
    res = batch_gradient(cfg, "adjoint", layout)   # collective; a failed batch raises on every rank
    try:
        world = MPI.COMM_WORLD
        mine = [f"{res.scenarios[t.scenario].name}:{','.join(res.objectives[u] for u in t.units)}"
                for b in range(layout.group_index, len(res.plan.batches), layout.groups)
                for t in res.plan.batches[b]]
        lines = world.gather(f"rank {world.rank} group {layout.group_index}: {' '.join(mine)}")
        if world.rank == 0:
            print(f"{world.size} ranks, {layout.groups} groups")
            print("\n".join(lines))
            for s in res.values:
                for o, psi in res.values[s].items():
                    print(f"{s} {o} = {psi!r}")
                    for n, g in zip(res.design, res.gradients[s][o]):
                        print(f"  {s} d{o}/d{n} = {g!r}")
    finally:
        res.destroy()


if __name__ == "__main__":
    main()
