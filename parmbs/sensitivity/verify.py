"""``parmbs verify``: do adjoint, direct, complex step and finite differences agree, and
by how much may they differ?

Four computations of ∇ψ of the same discrete objective:

* adjoint and direct are the same linear algebra in opposite order (Problem.adjoint,
  Problem.direct), so they differ by round-off only.  How much round-off is *measured*,
  not assumed: direct and adjoint are rerun with every step's output multiplied by
  (1 + ε ξ), ξ ~ N(0, 1) seeded, ε the unit round-off — one rounding per step — and
  every Newton-matrix solve given the backward error of LU, (A + E∘A)⁻¹ b with
  E_ik = ε ξ_ik (_PerturbedSolves: the κ(A)·ε of a stiff model), or, for the
  continuum Schur solver, its refinement's measured error (_PerturbedRefinedSolves).
  To first order the result moves by a Gaussian of the standard deviation σ of the
  real round-off error; σ̂ is the RMS of the 2·ROUNDOFF_TRIALS moves.  A model whose
  linearized steps amplify errors (the heavy top's spin under the trapezoidal rule:
  its (−1)ⁿ mode grows at a rate ∝ |ω|) has a large σ̂, a benign one σ̂ ~ ε |∇ψ|.  Bound: |adj − dir| ≤ ROUNDOFF_FACTOR·√2·σ̂
  + ROUNDOFF_FLOOR·ε·‖∇ψ‖∞ (see the constants).
* complex step (index-3, index-1, Maggi; complex_step.py) is the same tangent
  propagation run through Newton in complex arithmetic.  Newton stops on the real
  part's update; the imaginary part is then the tangent at the last-but-one iterate,
  whose error Δ_prev relates to the last update by quadratic convergence,
  |Δ_last| ≈ |Δ_prev|², so it is up to √(Newton rtol) relative (1e-6 for the default
  1e-12; measured 2.4e-8 of ‖∇ψ‖∞ on the plate pendulum, 1.1e-6 on the heavy top's J_zz
  after 250 amplifying steps).  Bound: √rtol·‖∇ψ‖∞ + CS_ULP·√N times the
  adjoint/direct bound (round-off: a few ulp per step, systematic, so up to √N times
  the random walk of σ̂).
* central finite differences (ψ(ρ + h e_j) − ψ(ρ − h e_j)) / 2h, swept over
  h = s_j·10⁻², …, s_j·10⁻⁷ (s_j = max(upper − lower, |ρ_j|) where the variable has both
  bounds, else |ρ_j|, or 1 if ρ_j = 0; fd_scale): truncation O(h²) falls
  by 100 per step down the sweep, noise (Newton tolerance, cancellation in ψ) grows by
  10.  The plateau is the step whose estimate changes least towards both neighbours;
  that change δ bounds the estimate's error (truncation at the larger neighbour and
  noise at the smaller one each exceed the chosen step's).  What δ cannot see is a
  bias common to neighbouring steps: FD differentiates the *computed* ψ, whose Newton
  stopping error varies smoothly with ρ (pendulum, final_angle/xG: the estimates at
  10⁻⁵ and 10⁻⁶ agree to 4e-11 and are both 1e-10 off); bounded like complex step's
  by √rtol·‖∇ψ‖∞.  What δ sees of the noise is one draw: the chosen step's noise
  error is (n₊ − n₋)/2h (n the round-off of the computed ψ at ρ ± h e_j), and δ holds
  it only through the smaller neighbour's draw, which can be small by chance.  So the
  noise is measured instead (``fd_noise``: σ̂, the RMS of n₊ − n₋ seen by every step
  below a plateau, all variables of the objective) and bounded at the plateau step by
  FD_NOISE_FACTOR·σ̂/2h.  FD check: |fd − adj| ≤ FD_FACTOR·δ + FD_NOISE_FACTOR·σ̂/2h +
  √rtol·‖∇ψ‖∞ + the adjoint/direct bound.

Verdict per objective and design variable: adjoint vs direct beyond its bound is a
disagreement; otherwise the sensitivities stand if complex step or FD agrees with them
within its bound.  FD alone disagreeing (cs agreeing) is "FD unreliable for this
variable (curvature/noise)", not a failure; cs and FD both disagreeing (or FD alone,
where cs is not available) is a disagreement.  The Taylor test (order ≥ 1.8 of the
remainder along a seeded direction) checks the whole gradient at once.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ..integrators.one_step import OneStep

EPS = float(np.finfo(float).eps)

#: seeded direction of the Taylor test and seed of the round-off perturbations
TAYLOR_SEED = 20240611
ROUNDOFF_SEED = 20261126
#: perturbed direct + adjoint runs: 3 trials give 6 samples of the round-off error
ROUNDOFF_TRIALS = 3
#: σ̂ from 6 samples is below σ/5 with probability P(χ²₆ < 6/25) = 2.6e-4; otherwise the
#: difference of two errors of deviation σ exceeds 30·√2·σ̂ ≥ 6·√2·σ with probability
#: P(|Z| > 6) = 2e-9 (benchmarks/verify_roundoff.py: measured gaps ≤ 1.5 σ̂)
ROUNDOFF_FACTOR = 30.0
#: entries that no perturbation reaches (structural zeros): a handful of roundings of
#: the gradient's largest entry
ROUNDOFF_FLOOR = 16.0
#: complex step's per-step error in ulp (the tangent at Newton's last-but-one iterate)
CS_ULP = 5.0
#: relative FD steps of the sweep (times s_j).  Below 1e-7 the noise of ψ (Newton solves
#: to 1e-12 relative, ~1e-13 after cancellation in ψ differences) divided by h exceeds
#: 1e-6 relative: no plateau there, only cost
FD_REL_STEPS = tuple(10.0 ** -k for k in range(2, 8))
#: the plateau's change δ bounds the chosen estimate's error; 3δ leaves room for the
#: error of the chosen step being up to its larger neighbour's truncation error
FD_FACTOR = 3.0
#: the noise term's factor: FD_NOISE_FACTOR·σ̂/2h bounds the plateau step's noise error
#: (n₊ − n₋)/2h, σ̂ the RMS of m samples of n₊ − n₋ (``fd_noise``).  That error over the
#: term is |Z|/(FD_NOISE_FACTOR·σ̂/σ) = |t_m|/FD_NOISE_FACTOR (Student's t: σ̂ carries m
#: degrees of freedom), beyond half the term with probability P(|t_m| > 5) = 9e-6 for
#: m = 45, 5e-4 for m = 10.  Measured on the double wishbone's stress KS (ψ ≈ 1.4e4, 2
#: steps, 15 variables; benchmarks/verify_fd_noise.py): σ̂ 2.1e-9 … 1.4e-8 by objective
#: from m = 48 … 58 samples, the same as the RMS at each step s·10⁻⁴ … s·10⁻⁷ alone and as
#: a scan of ψ at 21 points 10⁻⁶·s apart (2.2e-9 … 1.4e-8; the largest variable 1.2-1.7 ×
#: the RMS): white round-off, one level per objective.  stress6/X2's plateau (s·10⁻⁴) was
#: 2.5e-5 off, noise (σ̂/2h = 4.2e-5), while δ = 6.4e-6, its 10⁻⁵ neighbour's noise 0.04
#: of its σ/2h: fd 0.85 of the bound without this term.  5000 simulated verify runs of the
#: same 255 checks (measured truncation, fresh noise): the worst FD ratio beyond 0.5 in
#: 22 % of them and beyond 1 (a false failure) in 3 % without this term, in none with it
#: (median 0.38 -> 0.12).  ``psi_noise`` (the largest draw) is 1.2-2.8 × σ̂ here and grows
#: with the number of variables; the RMS does not
FD_NOISE_FACTOR = 10.0
MIN_TAYLOR_ORDER = 1.8
TAYLOR_EPS = tuple(1e-2 * 0.5 ** k for k in range(11))


def _failures():
    """Exceptions of a perturbed forward run that make that run unusable, not verify fail."""
    from ..integrators.newmark import StepError
    from ..model.system import ModelError
    return (StepError, ModelError, np.linalg.LinAlgError, FloatingPointError)


# ----------------------------------------------------------------------------- round-off


class _Perturbed:
    """The stepper with each tangent / adjoint step's output multiplied by (1 + ε ξ)."""

    def __init__(self, stepper, rng):
        self._s, self._rng = stepper, rng

    def __getattr__(self, name):
        return getattr(self._s, name)

    def __setattr__(self, name, value):
        if name.startswith("_"):
            object.__setattr__(self, name, value)
        else:                             # h (the time loop's step size) is the stepper's
            setattr(self._s, name, value)

    def _j(self, a):
        a = np.asarray(a)
        return a * (1.0 + EPS * self._rng.standard_normal(a.shape))

    def tangent_step(self, *args):
        return tuple(self._j(b) for b in self._s.tangent_step(*args))

    def adjoint_step(self, *args):
        mu, g = self._s.adjoint_step(*args)
        return tuple(self._j(b) for b in mu), self._j(g)

    # Problem's loops step through these (integrators/one_step.py): taken from OneStep so that
    # they call the perturbed steps above, not the wrapped stepper's (a bound method of the
    # wrapped stepper would bypass the rounding and leave σ̂ = 0).  Only steppers with Problem's
    # loops reach here (``roundoff_measurable``); their steps are OneStep's.
    tangent_step_at = OneStep.tangent_step_at
    adjoint_step_into = OneStep.adjoint_step_into


class _PerturbedSolves:
    """A SparseOperator whose solves return, to first order, (A + E∘A)⁻¹ b with
    E_ik = ε ξ_ik on A's nonzeros: the backward error of the LU solve (Higham, Accuracy
    and Stability of Numerical Algorithms, thm. 9.4, |ΔA| ≤ γ_n |L||U|, here taken as
    ε|A|), so a badly conditioned Newton matrix (a stiff plate) shows its κ(A)·ε, which
    one rounding of the step's output does not:  x̃ = x − A⁻¹ (E∘A) x (one more solve)."""

    def __init__(self, op, rng):
        self._op, self._rng = op, rng

    def __getattr__(self, name):
        return getattr(self._op, name)

    def solve_many(self, B, transpose=False):
        import scipy.sparse as sp
        X = self._op.solve_many(B, transpose)
        indptr, indices, data = self._op.A.getValuesCSR()
        n = self._op.N
        E = sp.csr_matrix((data * EPS * self._rng.standard_normal(len(data)), indices, indptr), shape=(n, n))
        return X - self._op.solve_many((E.T if transpose else E) @ X, transpose)


#: normwise error of a continuum Schur solve (refinement to 1e-14 of z stops at the
#: solve's round-off floor, measured ≤ 3.4e-12 relative: flexible/continuum_schur.py)
SCHUR_SOLVE_REL = 3.4e-12


class _PerturbedRefinedSolves(_PerturbedSolves):
    """A refined (iterative) solver: each solution column moved by its tolerance,
    x̃ = x + δ‖x‖∞ ξ (δ = SCHUR_SOLVE_REL)."""

    def solve_many(self, B, transpose=False):
        X = self._op.solve_many(B, transpose)
        return X + SCHUR_SOLVE_REL * np.max(np.abs(X), axis=0) * self._rng.standard_normal(X.shape)


def _solver_slots(stepper):
    """{attribute: perturbing wrapper class} for the stepper's Newton-matrix operators:
    a serial SparseOperator (LU backward error), a continuum Schur operator (its
    refinement tolerance)."""
    from ..model.assembly import SparseOperator
    from ..flexible.continuum_schur import ContinuumSchurOperator
    slots = {}
    for a in ("lin", "op", "schur"):
        op = getattr(stepper, a, None)
        if isinstance(op, SparseOperator) and op.comm.getSize() == 1:
            slots[a] = _PerturbedSolves
        elif isinstance(op, ContinuumSchurOperator):
            slots[a] = _PerturbedRefinedSolves
    return slots


def roundoff_measurable(problem):
    """Whether Problem's own step loops run the sensitivities (whole-run PETSc TS
    steppers differentiate inside PETSc, where no step's output can be perturbed)."""
    st = problem.stepper
    return not ({"direct", "adjoint"} & st.whole_runs or problem.checkpoint is not None)


def roundoff_sigma(problem, adj, dirg, trials=ROUNDOFF_TRIALS, seed=ROUNDOFF_SEED, with_direct=True):
    """σ̂ per objective (array over design variables): RMS change of adjoint and direct
    under one seeded rounding per step (module docstring); None when not measurable."""
    if not roundoff_measurable(problem):
        return None
    rng = np.random.default_rng(seed)
    stepper = problem.stepper
    sq = {o: np.zeros(len(adj[o])) for o in adj}
    n = 0
    kinds = _solver_slots(stepper)
    slots = {a: getattr(stepper, a) for a in kinds}
    for a, op in slots.items():
        setattr(stepper, a, kinds[a](op, rng))
    problem.stepper = _Perturbed(stepper, rng)
    try:
        for _ in range(trials):
            runs = [(problem.adjoint(), adj)] + ([(problem.direct(), dirg)] if with_direct else [])
            for g, g0 in runs:
                for o in sq:
                    sq[o] += (np.asarray(g[o], float) - np.asarray(g0[o], float)) ** 2
                n += 1
    finally:
        problem.stepper = stepper
        for a, op in slots.items():
            setattr(stepper, a, op)
    return {o: np.sqrt(sq[o] / n) for o in sq}


def adjoint_direct_bound(sigma, a, d):
    """|adj − dir| allowed by round-off, per design variable (module docstring)."""
    scale = max(float(np.max(np.abs(a), initial=0.0)), float(np.max(np.abs(d), initial=0.0)))
    floor = ROUNDOFF_FLOOR * EPS * scale
    return ROUNDOFF_FACTOR * math.sqrt(2.0) * sigma + floor


# ----------------------------------------------------------------------------- FD sweep


@dataclass
class Sweep:
    """Central differences of one design variable over the steps ``h`` (absolute).
    ``est[o][i]`` is None where a perturbed run failed (Newton, assembly)."""
    name: str
    scale: float
    h: list
    est: dict
    failed: list = field(default_factory=list)   # (h, message)

    def plateau(self, o):
        """(index, estimate, δ): the step whose estimate changes least towards its
        neighbours (the larger of the two changes), δ that change.  End points (one
        neighbour: half the evidence) only when no interior step has two; None if fewer
        than two steps succeeded."""
        e = self.est[o]
        ok = [i for i in range(len(e)) if e[i] is not None and math.isfinite(e[i])]
        best = None
        need = 2 if len(ok) >= 3 else 1
        for k, i in enumerate(ok):
            nb = [ok[k + s] for s in (-1, 1) if 0 <= k + s < len(ok)]
            if len(nb) < need:
                continue
            delta = max(abs(e[i] - e[j]) for j in nb)
            if best is None or delta < best[2]:
                best = (i, e[i], delta)
        return best


def fd_scale(rho_j, lower=-math.inf, upper=math.inf):
    """The step unit s_j: max(upper − lower, |ρ_j|) where both bounds are given, else
    |ρ_j|, or 1 for a variable that is 0 at the nominal design.  Why the range: |ρ_j|
    makes a variable that is small at the nominal design but free to move far take steps
    its own size of 0 — the double wishbone's Z19 (absorber mount, 0.035 m relative to
    the chassis CM, bounds 0.45 m apart) swept h = 3.5e-9 … 3.5e-4 m, where the stress
    KS's noise (σ = E(|D|/l − 1) at the ulp of the nodal positions) dominated the small
    steps: FD 0.77 of its bound over all 60 variables.  Why not the range alone: ψ's
    round-off scales with the coordinates, i.e. with |ρ_j|, so a range below |ρ_j| puts the
    steps into the noise — X3 = −1.513 m with range 0.25 m: FD 0.60 (stress2/X3).  With
    the max: 0.32 (stress16/X15; benchmarks/README.md)."""
    mag, span = abs(float(rho_j)), float(upper) - float(lower)
    if math.isfinite(span) and span > 0:
        return max(span, mag)
    return mag if mag != 0 else 1.0


def fd_scales(design, rho):
    """fd_scale of every design variable (bounds from ``design.lower``/``upper``)."""
    return np.array([fd_scale(r, a, b) for r, a, b in zip(rho, design.lower, design.upper)])


def fd_sweep(problem, p0, rel_steps=FD_REL_STEPS, columns=None, progress=None):
    """One Sweep per design variable (two forward runs per step), all objectives at once.

    Runs stay in memory (no checkpoint file); the problem is left at ``p0``."""
    design = problem.design
    rho = np.asarray(design.values(p0), float)
    names = list(design.names)
    cols = range(len(rho)) if columns is None else columns
    scales = fd_scales(design, rho)
    checkpoint, problem.checkpoint = problem.checkpoint, None
    out = []
    frozen = problem.frozen_steps()       # adaptive runs: the perturbed runs replay the nominal steps
    frozen.__enter__()
    try:
        for j in cols:
            s = float(scales[j])
            hs = [r * s for r in rel_steps]
            sw = Sweep(names[j], s, hs, {ob.name: [] for ob in problem.objectives})
            for hstep in hs:
                vals = []
                for sgn in (+1, -1):
                    r = rho.copy()
                    r[j] += sgn * hstep
                    p = design.apply(p0, r)
                    try:
                        tr = problem.forward(p)
                        vals.append(problem.objective_values(tr, p))
                    except _failures() as e:
                        sw.failed.append((hstep, " ".join(str(e).split())))
                        vals = None
                        break
                for o in sw.est:
                    sw.est[o].append(None if vals is None else (vals[0][o] - vals[1][o]) / (2 * hstep))
            out.append(sw)
            if progress:
                progress(j, sw)
    finally:
        frozen.__exit__(None, None, None)
        problem.checkpoint = checkpoint
        problem.forward(p0)
    return out


# ----------------------------------------------------------------------------- verdict


@dataclass
class Check:
    """The comparison of one objective's gradient entry."""
    objective: str
    name: str
    adjoint: float
    direct: float
    bound_ad: float
    cs: float | None = None
    bound_cs: float | None = None
    fd: float | None = None
    fd_h: float | None = None
    fd_delta: float | None = None
    status: str = "ok"          # ok | fd-unreliable | cs-disagrees | FAILED
    reason: str = ""

    newton_bias: float = 0.0    # √(Newton rtol)·‖∇ψ‖∞ (module docstring)
    fd_noise: float = 0.0       # FD_NOISE_FACTOR·σ̂/2h at the plateau step (``fd_noise_term``)

    @property
    def bound_fd(self):
        return None if self.fd is None else \
            FD_FACTOR * self.fd_delta + self.fd_noise + self.newton_bias + self.bound_ad


def judge(c: Check, nsteps: int) -> Check:
    """Set ``c.status`` and ``c.reason`` (module docstring: the verdict)."""
    diff_ad = abs(c.adjoint - c.direct)
    if not diff_ad <= c.bound_ad:
        c.status = "FAILED"
        c.reason = (f"adjoint vs direct differ by {diff_ad:.3e}, beyond the round-off bound {c.bound_ad:.3e}: "
                    "the two sweeps do not compute the same derivative")
        return c
    ref = 0.5 * (c.adjoint + c.direct)
    cs_ok = None if c.cs is None else bool(abs(c.cs - ref) <= c.bound_cs)
    fd_ok = None if c.fd is None else bool(abs(c.fd - ref) <= c.bound_fd)
    if cs_ok is False and fd_ok is not True:
        c.status = "FAILED"
        c.reason = (f"complex step differs by {abs(c.cs - ref):.3e} (bound {c.bound_cs:.3e})"
                    + ("" if c.fd is None else f" and FD by {abs(c.fd - ref):.3e} (bound {c.bound_fd:.3e})")
                    + " from adjoint = direct")
    elif cs_ok is None and fd_ok is not True:
        c.status = "FAILED"
        c.reason = ("no FD step gave an estimate" if c.fd is None else
                    f"FD differs by {abs(c.fd - ref):.3e} (bound {c.bound_fd:.3e}) from adjoint = direct") + \
            " and complex step is not available for this formulation: see the step sweep above; if its " \
            "estimates never settle, FD cannot check this variable (curvature/noise) — try a shorter " \
            "horizon or --method cs with an index3 integrator"
    elif fd_ok is not True:
        c.status = "fd-unreliable"
        c.reason = ("FD unreliable for this variable (curvature/noise): "
                    + ("no step gave an estimate" if c.fd is None else
                       f"the best plateau of the step sweep is {abs(c.fd - ref):.3e} off (bound {c.bound_fd:.3e})")
                    + "; complex step agrees")
    elif cs_ok is False:
        c.status = "cs-disagrees"
        c.reason = f"complex step differs by {abs(c.cs - ref):.3e} (bound {c.bound_cs:.3e}); FD agrees"
    return c


def worst_ratios(checks):
    """{comparison: (largest |difference| / bound, "objective/variable")} over the checks:
    adjoint/direct always, complex step where it ran, FD where it agrees (how close a
    passing verify is to failing)."""
    out = {}

    def add(key, r, c):
        if key not in out or r > out[key][0]:
            out[key] = (float(r), f"{c.objective}/{c.name}")
    for c in checks:
        ref = 0.5 * (c.adjoint + c.direct)
        add("adjoint/direct", abs(c.adjoint - c.direct) / c.bound_ad if c.bound_ad > 0 else
            (0.0 if c.adjoint == c.direct else math.inf), c)
        if c.cs is not None:
            add("complex step", abs(c.cs - ref) / c.bound_cs if c.bound_cs > 0 else math.inf, c)
        if c.fd is not None and c.status in ("ok", "cs-disagrees"):
            add("fd", abs(c.fd - ref) / c.bound_fd if c.bound_fd > 0 else math.inf, c)
    return out


def newton_bias(gscale, newton_rtol):
    """What Newton's stopping test leaves in cs and FD derivatives: √rtol·‖∇ψ‖∞."""
    return math.sqrt(newton_rtol) * gscale


def cs_bound(bound_ad, nsteps, gscale, newton_rtol):
    """|cs − adj| allowed (module docstring): Newton's last-but-one iterate + round-off."""
    return newton_bias(gscale, newton_rtol) + CS_ULP * math.sqrt(max(nsteps, 1)) * bound_ad


def psi_noise(sweeps, o):
    """Noise of ψ_o seen by the FD sweep: at the smallest step h the estimate's departure
    from the plateau is noise / h, so noise ≈ |f(h) − f_plateau|·2h (max over variables);
    None without estimates.  Far above ε|ψ| means ψ is round-off (nothing to verify)."""
    out = None
    for sw in sweeps:
        pl = sw.plateau(o)
        last = next((i for i in range(len(sw.h) - 1, -1, -1) if sw.est[o][i] is not None), None)
        if pl is None or last is None:
            continue
        n = abs(sw.est[o][last] - pl[1]) * 2 * sw.h[last]
        out = n if out is None else max(out, n)
    return out


def fd_noise(sweeps, o):
    """(σ̂, m): the RMS of ψ_o's noise n₊ − n₋ seen by the FD sweep, from its m samples.

    A step h below its variable's plateau is dominated by noise: its estimate departs
    from the plateau's by (n₊ − n₋)/2h (the plateau's own noise is ≤ 1/10 of that, its
    truncation only adds: an overestimate), so |f(h) − f_plateau|·2h is one draw of
    |n₊ − n₋|.  Every such step of every variable is a sample: n is the round-off of the
    computed ψ, a property of ψ_o, not of the variable or the step (double wishbone:
    FD_NOISE_FACTOR).  (0.0, 0) without samples.  Unlike ``psi_noise`` (the largest
    draw, for the Taylor floor) an RMS, whose error has a known distribution (χ²_m)."""
    sq, m = 0.0, 0
    for sw in sweeps:
        pl = sw.plateau(o)
        if pl is None:
            continue
        for i in range(pl[0] + 1, len(sw.h)):
            e = sw.est[o][i]
            if e is not None and math.isfinite(e):
                sq += ((e - pl[1]) * 2.0 * sw.h[i]) ** 2
                m += 1
    return (math.sqrt(sq / m), m) if m else (0.0, 0)


def fd_noise_term(sigma_n, h):
    """The bound on the noise error of a central difference at step h: FD_NOISE_FACTOR·σ̂/2h."""
    return FD_NOISE_FACTOR * sigma_n / (2.0 * h)


#: ψ whose FD-sweep noise exceeds this fraction of |ψ| is reported as round-off
NOISE_DOMINATED = 1e-6


# ----------------------------------------------------------------------------- Taylor test


#: a Taylor pair counts when its smaller remainder exceeds this multiple of ψ's measured
#: noise: the noise then moves the observed order by at most log2(1.01/0.99) = 0.03
TAYLOR_NOISE_FACTOR = 100.0


def taylor_floor(psi, noise_rel=1e-9, noise=None):
    """The remainder below which a Taylor pair is noise: ``noise_rel·|ψ|`` (the objective
    is computed by Newton solves to ~1e-12), lowered to TAYLOR_NOISE_FACTOR × the noise
    of ψ measured by the FD sweep (``psi_noise``; not below that factor × ε|ψ|, the
    rounding of ψ itself) where that is smaller.  Why measured: ψ's noise is not
    proportional to |ψ| when ψ carries a constant.  The stress KS of one element,
    (1/ρ) ln(2 cosh ρσ), is ln 2/ρ = 6.9 MPa at σ = 0, so over 5 steps of the double
    wishbone ψ = 3.4658e4 is that constant to 5 digits; 1e-9|ψ| = 3.5e-5 discarded the
    remainders of the asymptotic regime (order 1.94 … 2.02 from r = 4e-5 down to 2e-7,
    clean δ²) and left only the three largest ε, where the remainder is not yet ε²
    (orders 1.30, 1.72, 1.87 at ε = 1e-2 … 2.5e-3: chassis points moved by up to 1.5 cm):
    median 1.72 < 1.8, a false failure."""
    floor = noise_rel * max(abs(psi), 1e-300)
    if noise is not None:
        floor = min(floor, TAYLOR_NOISE_FACTOR * max(noise, EPS * abs(psi)))
    return floor


def taylor_orders(eps, r, psi, noise_rel=1e-9, noise=None):
    """Observed orders log2(r(eps)/r(eps/2)) of consecutive pairs, and the decisive one.

    Pairs whose smaller remainder is below the noise level (``taylor_floor``: from
    ``noise_rel·|ψ|`` and the FD sweep's measured ``noise`` of ψ, if given) are reported
    but not used, and so are pairs with a missing remainder (None: the perturbed run
    failed).  The decisive order is the median of the usable pairs (None if there are
    none: the remainder is at noise level everywhere, i.e. ψ is linear along d).
    """
    floor = taylor_floor(psi, noise_rel, noise)
    orders, usable = [], []
    for i in range(len(eps) - 1):
        if r[i] is not None and r[i + 1] is not None and r[i] > 0 and r[i + 1] > 0:
            o = math.log(r[i] / r[i + 1]) / math.log(eps[i] / eps[i + 1])
        else:
            o = float("nan")
        orders.append(o)
        if r[i + 1] is not None and r[i + 1] > floor and math.isfinite(o):
            usable.append(o)
    return orders, (float(np.median(usable)) if usable else None)


def taylor_remainders(problem, p0, values, grads, eps=TAYLOR_EPS, seed=TAYLOR_SEED):
    """r_o(ε) = |ψ_o(ρ + ε d) − ψ_o(ρ) − ε ∇ψ_o·d| along a seeded d, |d_j| ≤ s_j (the FD
    step unit without bounds, fd_scale(ρ_j): |ρ_j|, or 1 where ρ_j = 0; a floor of 1 moved a crank inertia of 2e-6 by
    1e-2 and Newton failed); None where the perturbed run failed.  The problem is left
    at ``p0``.  Not the bound range: with it, the double wishbone's 2-step subset case
    (tests/test_verify_configs.py, tube axial damping) failed stress10's Taylor order
    (1.275: remainders 1.1e-5 at ε = 1e-2 reach ψ's noise, ≈ 1.2e-8, by ε = 3e-4 and
    the pairs below were counted), while the FD sweep on the range passed (fd 0.36)."""
    rho0 = np.asarray(problem.design.values(p0), float)
    rng = np.random.default_rng(seed)
    dvec = rng.uniform(-1.0, 1.0, len(rho0)) * np.array([fd_scale(r) for r in rho0])
    r = {o: [] for o in grads}
    frozen = problem.frozen_steps()       # adaptive runs: on the nominal run's steps
    frozen.__enter__()
    try:
        for e in eps:
            p = problem.design.apply(p0, rho0 + e * dvec)
            try:
                tr = problem.forward(p)
                vals = problem.objective_values(tr, p)
            except _failures():
                vals = None
            for o in grads:
                r[o].append(None if vals is None else
                            abs(vals[o] - values[o] - e * float(np.dot(grads[o], dvec))))
    finally:
        frozen.__exit__(None, None, None)
        problem.forward(p0)
    return r


#: relative adjoint/direct bound where round-off cannot be measured (PETSc TS steppers
#: differentiate inside PETSc): not an estimate, the former fixed tolerance of verify
FIXED_REL = 1e-8


def fixed_bound(a, d):
    scale = max(float(np.max(np.abs(a), initial=0.0)), float(np.max(np.abs(d), initial=0.0)))
    return FIXED_REL * np.maximum(np.abs(a), FIXED_REL * scale)


# ----------------------------------------------------------------------------- one verification, two front ends
# (``parmbs verify`` prints these results, ``parmbs.api.verify`` returns them)


def complex_step_reference(problem, p0, progress=None):
    """(gradient by complex step, "") where the stepper runs in complex arithmetic, else
    (None, why not).  The problem is left at ``p0``."""
    sim = problem.config.simulation
    if sim.integrator.startswith("ts-") or sim.integrator == "dopri5":
        return None, f"'{sim.integrator}' runs in real-valued PETSc TS or compiled code"
    if sim.formulation not in ("index3", "index1", "maggi", "kinematic"):
        return None, f"formulation '{sim.formulation}' (complex step: index3, index1, maggi, kinematic)"
    from .complex_step import complex_step_gradient
    from ..model.system import ModelError
    try:
        return complex_step_gradient(problem, p0, progress=progress), ""
    except (ModelError, TypeError) as e:    # a stepper that does not run in complex
        return None, " ".join(str(e).split())
    finally:
        problem.forward(p0)


def run_checks(problem, p0):
    """adjoint, direct, their round-off σ̂, the complex-step reference (and why not),
    the FD sweeps and the judged checks at p0, after a forward run — the sequence of
    ``parmbs verify`` without its progress and timing (api.verify, benchmarks)."""
    adj, dirg = problem.adjoint(), problem.direct()
    sigma = roundoff_sigma(problem, adj, dirg)
    cs, why = complex_step_reference(problem, p0)
    sweeps = fd_sweep(problem, p0)
    return adj, dirg, sigma, cs, why, sweeps, make_checks(problem, adj, dirg, sigma, cs, sweeps)


def make_checks(problem, adj, dirg, sigma, cs, sweeps):
    """One judged Check per objective and design variable (adjoint vs direct within the
    measured round-off bound, or the fixed one where it is not measurable; complex step
    and the FD plateau as references, the latter with the objective's measured noise)."""
    rtol = problem.config.simulation.newton.rtol
    checks = []
    for o in adj:
        a, d = np.asarray(adj[o], float), np.asarray(dirg[o], float)
        bad = adjoint_direct_bound(sigma[o], a, d) if sigma is not None else fixed_bound(a, d)
        gscale = max(float(np.max(np.abs(a), initial=0.0)), float(np.max(np.abs(d), initial=0.0)))
        sigma_n = fd_noise(sweeps, o)[0]
        for j, n in enumerate(problem.design.names):
            c = Check(o, n, float(a[j]), float(d[j]), float(bad[j]), newton_bias=newton_bias(gscale, rtol))
            if cs is not None:
                c.cs, c.bound_cs = float(cs[o][j]), cs_bound(float(bad[j]), problem.nsteps, gscale, rtol)
            pl = sweeps[j].plateau(o)
            if pl is not None:
                c.fd_h, c.fd, c.fd_delta = sweeps[j].h[pl[0]], pl[1], pl[2]
                c.fd_noise = fd_noise_term(sigma_n, c.fd_h)
            checks.append(judge(c, problem.nsteps))
    return checks


def taylor_failure(o, order, value, sweeps):
    """The failure line of objective ``o`` whose observed Taylor order is ``order``, or
    None when the order is acceptable (or undecidable: ψ linear along d)."""
    if order is None or order >= MIN_TAYLOR_ORDER:
        return None
    noise = psi_noise(sweeps, o)
    hint = ""
    if noise is not None and noise > NOISE_DOMINATED * abs(value):
        hint = (f" ({o} = {value:.3e} is at its noise level ≈ {noise:.1e} (FD sweep) over this "
                "horizon: nothing to verify; lengthen simulation.t_end)")
    return f"{o}: Taylor order {order:.3f} < {MIN_TAYLOR_ORDER}{hint}"
