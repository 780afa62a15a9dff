"""``ts-arkimex``: PETSc's TSARKIMEX "l2" (fully implicit), with our own tangent and
discrete adjoint — PETSc 3.18 has no TSAdjoint for ARKIMEX ("No method adjointstep for
TS of type arkimex").

Scheme (PETSc's TSStep_ARKIMEX for a tableau without an explicit first stage, fully
implicit: only the IFunction, A/b of the explicit part unused), the two-stage
L-stable SDIRK of order 2 with γ = 1 − 1/√2 (TSARKIMEXL2):

    At = [[γ, 0], [1 − 2γ, γ]],  bt = (½, ½),  ct_i = Σ_j At_ij
    Z_i = y_n + Σ_{j<i} h At_ij Ẏ_j,   F(t_n + ct_i h, Y_i, σ_i (Y_i − Z_i)) = 0,
    Ẏ_i = σ_i (Y_i − Z_i),  σ_i = 1/(h At_ii),   y_{n+1} = y_n + Σ_j h bt_j Ẏ_j

(not stiffly accurate, so the completion formula is used).  No explicit stage means no
identity-mass assumption: it runs the penalty ODE (mass M + αΦ_qᵀΦ_q) as well as the
index-1, Maggi and Matrix-R ODEs.

Tangent (δ_i = dY_i − dZ_i, J_i = F_y + σ_i F_ẏ at stage i; no O(1/h) cancellation):

    dZ_i = dy_n + Σ_{j<i} h At_ij σ_j δ_j,   J_i δ_i = −(F_y dZ_i + F_ρ),
    dy_{n+1} = dy_n + Σ_j h bt_j σ_j δ_j

Adjoint: its transpose, stages in reverse: μ_δ_j = h bt_j σ_j λ_{n+1}; for i = s−1 … 0:
ν_i = J_i⁻ᵀ μ_δ_i, μ_Z = −F_yᵀ ν_i, ∇ψ −= F_ρᵀ ν_i, λ += μ_Z, μ_δ_j += h At_ij σ_j μ_Z (j < i);
λ_n = λ_{n+1} + Σ_i μ_Z,i.  Both sweeps recompute the stages from the stored y_n by
Newton to round-off (PETSc keeps no ARKIMEX stages in a trajectory without an adjoint);
they are PETSc's stages up to its Newton tolerance, which is all FD sees.  The
tableau is written here (3.18 has no TSARKIMEXGetTableau): another
``-parmbs_ts_arkimex_type`` is refused, exit 2.
"""
import numpy as np

from ..model.system import ModelError
from .newmark import StepError

GAMMA = 1.0 - 1.0 / np.sqrt(2.0)
#: TSARKIMEXL2's implicit tableau (At, bt, ct as PETSc forms ct: row sums of At)
AT = np.array([[GAMMA, 0.0], [1.0 - 2.0 * GAMMA, GAMMA]])
BT = np.array([0.5, 0.5])
CT = np.array([0.0 + GAMMA, (0.0 + AT[1, 0]) + AT[1, 1]])


def check_type(ts):
    """The TS must run the tableau above (the options may have changed the type)."""
    t = ts.getARKIMEXType()
    if t != "l2":
        raise ModelError("simulation.integrator", f"ts-arkimex differentiates the ARKIMEX type 'l2' only, not "
                                                  f"{t!r} (-parmbs_ts_arkimex_type)")


class ARKIMEXSteps:
    """Tangent and adjoint steps of ts-arkimex (mixed into TSStepper)."""

    def _ark_stages(self, k, traj, p):
        """[(pe_i, σ_i)] of step k: the stage evaluations at the recomputed Y_i."""
        mod = self.mod
        t0, y0 = traj.t[k], traj.y[k]
        h = traj.t[k + 1] - t0
        eps = np.finfo(float).eps
        out, Yd = [], []
        Y = y0.copy()
        for i in range(len(BT)):
            Z = y0 + sum((h * AT[i, j] * Yd[j] for j in range(i)), np.zeros_like(y0))
            sig = (1.0 / AT[i, i]) / h
            ti = t0 + h * CT[i]
            # Newton to round-off: until the update is at ε|Y| or, once below 1e-8|Y|, stops
            # shrinking (the round-off floor of J, ∝ α for the penalty ODE).  Above that the
            # update may grow before it converges (the penalty rows: ts.py's SNES note)
            last, step = np.inf, np.inf
            for it in range(self.sim.newton.max_it + 20):
                pe = mod.eval(ti, Y, sig * (Y - Z), p)
                self.lin.set(pe.blocks(1.0, sig))
                dY = self.lin.solve(-pe.F())
                step = np.max(np.abs(dY))
                scale = max(np.max(np.abs(Y)), 1.0)
                if not np.isfinite(step) or (step <= 1e-8 * scale and step > 0.5 * last):
                    break
                Y = Y + dY
                last = step
                if step <= 4 * eps * scale:
                    break
            if not np.isfinite(step) or min(step, last) > 1e-8 * max(np.max(np.abs(Y)), 1.0):
                raise StepError(f"step {k + 1} (t = {t0 + h:.6g}): ts-arkimex stage {i} recomputed for the "
                                f"sensitivity did not converge (last update {step:.2e})")
            pe = mod.eval(ti, Y, sig * (Y - Z), p)
            out.append((pe, sig))
            Yd.append(sig * (Y - Z))
        return out, h

    def _tangent_step_ark(self, k, traj, dy, p):
        mod = self.mod
        stages, h = self._ark_stages(k, traj, p)
        dd = []                                       # σ_j δ_j = dẎ_j
        for i, (pe, sig) in enumerate(stages):
            dZ = dy + sum((h * AT[i, j] * dd[j] for j in range(i)), np.zeros_like(dy))
            self.lin.set(pe.blocks(1.0, sig))
            delta = self.lin.solve(-(mod.operator(pe.blocks(1.0, 0.0)) @ dZ + pe.Fp()))
            dd.append(sig * delta)
        return dy + sum(h * BT[j] * dd[j] for j in range(len(BT)))

    def _adjoint_step_ark(self, k, traj, lam1, p):
        """(λ_k, ∇ψ increment) from λ_{k+1} (columns: one per objective)."""
        mod = self.mod
        stages, h = self._ark_stages(k, traj, p)
        s = len(BT)
        mdd = [h * BT[j] * lam1 for j in range(s)]    # μ on dẎ_j = σ_j δ_j
        lam = lam1.copy()
        grad = 0.0
        for i in range(s - 1, -1, -1):
            pe, sig = stages[i]
            self.lin.set(pe.blocks(1.0, sig))
            nu = self.lin.solve(sig * mdd[i], transpose=True)
            mZ = -(mod.operator(pe.blocks(1.0, 0.0)).T @ nu)
            grad = grad - pe.Fp().T @ nu
            lam = lam + mZ
            for j in range(i):
                mdd[j] = mdd[j] + h * AT[i, j] * mZ
        return lam, grad
