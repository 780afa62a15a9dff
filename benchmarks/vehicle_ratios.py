"""The measurement shared by benchmarks/vehicle.py (Iltis) and benchmarks/buggy.py: one
forward run, one adjoint and one direct gradient, optionally central finite differences,
timed in CPU seconds of this process (``time.process_time``: other jobs on the shared
cores do not inflate them; the run is serial), with the gradients and ratios printed."""
import time

import numpy as np


def cpu(f):
    """(f(), CPU seconds it took)."""
    t0 = time.process_time()
    out = f()
    return out, time.process_time() - t0


def measure(pr, title, fd=None, fd_label="", indent=""):
    """Run and print the issue-10 ratios for Problem ``pr``: forward ÷ simulated time,
    adjoint ÷ forward, direct ÷ forward and (``fd``: a callable returning the FD gradient
    dict) FD ÷ adjoint.  Returns the ratios as a dict (fwd, adj, dir[, fd])."""
    sim = pr.config.simulation
    traj, t_fwd = cpu(pr.forward)
    psi = pr.objective_values(traj)
    adj, t_adj = cpu(pr.adjoint)
    dirc, t_dir = cpu(pr.direct)
    t_end = sim.t_end
    print(f"{title}: {pr.sys.n} coordinates, {pr.sys.m} constraints, {sim.formulation} {sim.integrator} "
          f"rho_inf = {sim.rho_inf}, dt = {sim.dt}, t_end = {t_end} ({round(t_end / sim.dt)} steps), "
          f"{len(pr.design.names)} design variables {pr.design.names}")
    for k, val in psi.items():
        print(f"{indent}  {k} = {val:.10g}")
        print(f"{indent}    adjoint  " + "  ".join(f"{g: .10e}" for g in adj[k]))
        print(f"{indent}    direct   " + "  ".join(f"{g: .10e}" for g in dirc[k]))
    row = dict(fwd=t_fwd / t_end, adj=t_adj / t_fwd, dir=t_dir / t_fwd)
    rel_dir = max(np.max(np.abs(adj[k] - dirc[k]) / np.maximum(np.abs(adj[k]), 1e-300)) for k in adj)
    print(f"{indent}forward CPU {t_fwd:.2f} s for {t_end} s simulated: forward / simulated time = {row['fwd']:.2f}")
    print(f"{indent}adjoint CPU {t_adj:.2f} s: adjoint / forward = {row['adj']:.2f}")
    print(f"{indent}direct  CPU {t_dir:.2f} s: direct / forward  = {row['dir']:.2f}")
    print(f"{indent}max relative |adjoint - direct| = {rel_dir:.2e}")
    if fd is not None:
        g, t_fd = cpu(fd)
        for k in g:
            print(f"{indent}  {k} central FD " + "  ".join(f"{x: .10e}" for x in g[k]))
        row["fd"] = t_fd / t_adj
        print(f"{indent}FD CPU {t_fd:.2f} s ({fd_label}): FD / adjoint = {row['fd']:.2f}")
        per = max(np.max(np.abs(adj[k] - g[k]) / np.maximum(np.abs(adj[k]), 1e-300)) for k in adj)
        norm = max(np.max(np.abs(adj[k] - g[k])) / np.max(np.abs(adj[k])) for k in adj)
        print(f"{indent}max relative |adjoint - FD| = {per:.2e} per entry, {norm:.2e} normwise")
    return row
