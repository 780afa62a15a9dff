"""Why configs/spatial-rsur-natural.toml stopped at 0.4 s (issue 24): the conditioning
of the constraint Jacobians along a run, against |λ| and ψ's integrand.

    .venv/bin/python benchmarks/rsur_singularity.py [--t-end 1.0] [--set k=v ...] [--png out.png]

One matrix-r run of the file with ball-rx as its independent coordinate (column
pivoting's choice at t0, the file before issue 24; it lists cross-1 now) and one
index-3 + GGL run of the same model; at every step:

* σ_min of Φ_q, the full model's constraint Jacobian (index-3 run; 25 × 26, the
  Euler-parameter normalisation and the coupler's orthonormality rows included) —
  a mechanism singularity (dead centre, branch point) makes it rank deficient;
* σ_min of Φ_z = Φ_c,q R, the cut rows' Jacobian in the tree's relative coordinates
  (matrix-r run) — the same property in the tree's coordinates, and σ_min(R);
* σ_min of Φ_z D for every choice of the one independent relative coordinate (D: the
  other five columns) — the conditioning of matrix-r's projection ż = R^Φ ż^i with
  that choice (seed 002 eqs. 10, 24): zero where that coordinate has a turning point
  along the mechanism's one-dimensional configuration path (a fold: the coordinate
  stops while the others move on), however regular the mechanism is there;
* ψ's integrand |λ_pivot_r|² (rocker_load) and |λ| of the whole model.

Writes a PNG (default benchmarks/out/rsur_singularity.png) and prints the minima.
"""
import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import parmbs                                       # noqa: E402,F401  (before numpy: one SIMD choice, DESIGN)
import numpy as np                                  # noqa: E402
from parmbs.api import problem                      # noqa: E402
from parmbs.formulations.matrix_r import dense      # noqa: E402
from parmbs.model.evaluation import StateEval       # noqa: E402

CONFIG = os.path.join(os.path.dirname(__file__), "..", "configs", "spatial-rsur-natural.toml")


def smin(A):
    return np.linalg.svd(A, compute_uv=False)[-1]


def matrix_r_history(sets):
    pr = problem(CONFIG, sets)
    st, p = pr.stepper, pr.sys.p.copy()
    traj = pr.forward(p)
    rows = st.rows_cut
    out = {"t": traj.t, "names": st.tree.tree_joints, "ind": list(st.ind_names)}
    cols, sz, sr, lam_c, lam, z = [], [], [], [], [], []
    for k, t in enumerate(traj.t):
        x = (traj.q[k], traj.v[k], traj.a[k], traj.lam[k])
        xi = st._xi(x, p)
        L = st._lin(t, xi, p)
        Phiz = L.Phiz[:st.ml]
        cols.append([smin(np.delete(Phiz, j, axis=1)) for j in range(st.nz)])
        sz.append(smin(Phiz))
        sr.append(smin(L.R))
        lam_c.append(float(traj.lam[k][rows] @ traj.lam[k][rows]))
        lam.append(float(np.linalg.norm(traj.lam[k])))
        z.append(xi[0])
    out.update(cols=np.array(cols), sz=np.array(sz), sr=np.array(sr), lam_c=np.array(lam_c),
               lam=np.array(lam), z=np.array(z), values=pr.objective_values())
    return out


def index3_history(sets):
    pr = problem(CONFIG, sets + ["simulation.formulation=index3", "simulation.stabilization=ggl"])
    p = pr.sys.p.copy()
    traj = pr.forward(p)
    sg = []
    for k, t in enumerate(traj.t):
        ev = StateEval(pr.sys, t, traj.q[k], traj.v[k], traj.a[k], traj.lam[k], p)
        sg.append(np.linalg.svd(dense(ev.G()), compute_uv=False)[[-1, 0]])
    return {"t": traj.t, "sg": np.array(sg), "values": pr.objective_values()}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--t-end", type=float, default=1.0)
    ap.add_argument("--set", action="append", default=[])
    ap.add_argument("--png", default=os.path.join(os.path.dirname(__file__), "out", "rsur_singularity.png"))
    a = ap.parse_args()
    sets = [f"simulation.t_end={a.t_end}", "simulation.progress=false",
            'simulation.matrix_r.independent=["ball-rx"]'] + a.set
    c0 = time.process_time()
    m = matrix_r_history(sets)
    g = index3_history(sets)
    print(f"CPU {time.process_time() - c0:.1f} s")
    t = m["t"]
    print(f"matrix-r independent coordinate(s) at t0: {m['ind']}; ψ {m['values']}")
    print(f"index-3 + GGL ψ {g['values']}")
    i = np.argmin(g["sg"][:, 0])
    print(f"σ_min(Φ_q) full model (index-3 + GGL run): start {g['sg'][0, 0]:.3g}, min {g['sg'][i, 0]:.3g} "
          f"at t = {g['t'][i]:.4f} (σ_max {g['sg'][i, 1]:.3g})")
    i = np.argmin(m["sz"])
    print(f"σ_min(Φ_z) cut rows in z: start {m['sz'][0]:.3g}, min {m['sz'][i]:.3g} at t = {t[i]:.4f}; "
          f"σ_min(R) min {m['sr'].min():.3g}")
    for j, nm in enumerate(m["names"]):
        c = m["cols"][:, j]
        dips = [k for k in range(1, len(t) - 1) if c[k] < 1e-2 and c[k] <= c[k - 1] and c[k] <= c[k + 1]]
        print(f"  independent {nm:8s}: σ_min(Φ_z D) start {c[0]:.3g}; its local minima below 1e-2: "
              + (", ".join(f"{c[k]:.1e} at t = {t[k]:.4f} (σ_min(Φ_z) {m['sz'][k]:.3g})" for k in dips)
                 or "none"))
    os.makedirs(os.path.dirname(os.path.abspath(a.png)), exist_ok=True)
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(3, 1, figsize=(9, 10), sharex=True)
    ax[0].semilogy(g["t"], g["sg"][:, 0], "k-", lw=2, label="σ_min(Φ_q), full model (index-3 + GGL)")
    ax[0].semilogy(t, m["sz"], "k--", lw=2, label="σ_min(Φ_z), cut rows in z (matrix-r)")
    for j, nm in enumerate(m["names"]):
        ax[0].semilogy(t, m["cols"][:, j], lw=1, label=f"σ_min(Φ_z D), independent {nm}"
                       + (" (integrated)" if nm in m["ind"] else ""))
    ax[0].set_ylim(1e-5, 3)
    ax[0].legend(fontsize=7, loc="lower left")
    ax[0].set_title("spatial-rsur-natural: conditioning along the run")
    for j, nm in enumerate(m["names"]):
        ax[1].plot(t, np.unwrap(m["z"][:, j]), label=nm)
    ax[1].set_ylabel("relative coordinates z [rad]")
    ax[1].legend(fontsize=7)
    ax[2].semilogy(t, m["lam_c"], label="ψ integrand |λ_pivot_r|² (rocker_load)")
    ax[2].semilogy(t, m["lam"], label="|λ| (all rows)")
    ax[2].set_xlabel("t [s]")
    ax[2].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(a.png, dpi=110)
    print(f"wrote {a.png}")


if __name__ == "__main__":
    main()
