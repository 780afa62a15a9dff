"""Objective functions ψ = w·(Σ_k c_k g(t_k, x_k; p) + G(x_N; p)).

The time integral ∫ g dt is the trapezoidal sum with weights c_0 = c_N = h/2,
c_k = h — part of the discrete scheme, differentiated with it.  Each integrand is a
small complex-step-safe function of one body's (or spring's) local arrays; its
partial derivatives are complex-step derivatives, exact to round-off.
"""
import math

import numpy as np

from ..model.user_code import load_callable, describe_failure as _describe_failure  # noqa: F401

from ..model.component import CS_H, _lead as _lead_arg, cs_args, cs_jacobian, cs_result
from ..model.forces import Spring
from ..model.kinematics import point_position, point_velocity, point_acceleration, dot
from ..spatial.objectives import SPATIAL_KINDS, spatial_term

#: history-dependent measures (sensitivity/ride.py; ψ is not a sum of per-step terms)
RIDE_MEASURES = ("iso2631_rms", "iso2631_vdv")


def _point_dev(t, q, v, a, lam, p, ref):
    d = point_position(q, p[..., 0:2] - p[..., 2:4]) - ref
    return dot(d, d)


def _point_vel(t, q, v, a, lam, p, ref):
    d = point_velocity(q, v, p[..., 0:2] - p[..., 2:4])
    return dot(d, d)


def _point_acc(t, q, v, a, lam, p, ref):
    d = point_acceleration(q, v, a, p[..., 0:2] - p[..., 2:4])
    return dot(d, d)


def _angle(t, q, v, a, lam, p, ref):
    return q[..., 2] + 0.0 * p[..., 0]


def _angle_sq(t, q, v, a, lam, p, ref):
    return q[..., 2] ** 2 + 0.0 * p[..., 0]


def _spring_el(t, q, v, a, lam, p, ref):
    l, *_ = Spring.geometry(q, v, p)
    return (l - p[..., 10]) ** 2


def _reaction(t, q, v, a, lam, p, ref):
    return dot(lam, lam) + 0.0 * p[..., 0]


INTEGRANDS = {"point_deviation_sq": _point_dev, "point_velocity_sq": _point_vel,
              "point_acceleration_sq": _point_acc, "angle": _angle, "angle_sq": _angle_sq,
              "spring_elongation_sq": _spring_el, "reaction_sq": _reaction}


def _shared_groups(terms):
    """Indices of ``terms`` grouped by a shared inner (``fn.inner``, ``fn.power``: fn =
    inner(...) ** power with the inner reading q, v, a, p only; spatial/objectives.py) and
    the same coordinate and parameter slices; a term without one is a group alone."""
    groups = {}
    for j, tm in enumerate(terms):
        inner = getattr(tm.fn, "inner", None) if type(tm) is Term else None
        key = (j,) if inner is None else (inner, tm.qidx.tobytes(), tm.pidx.tobytes())
        groups.setdefault(key, []).append(j)
    return list(groups.values())


def shared_values(terms, sys, t, x, p, refs):
    """[term.value(sys, t, x, p, ref)] of several terms at one state, bit for bit, with one
    evaluation of an inner that terms share (_shared_groups): the Iltis' z̈² and z̈⁴ of the
    same point in the adaptive quadrature test (problem.quadrature_error)."""
    out = [None] * len(terms)
    for g in _shared_groups(terms):
        tm = terms[g[0]]
        if len(g) == 1:
            out[g[0]] = tm.value(sys, t, x, p, refs[g[0]])
            continue
        z = tm.fn.inner(*tm.local(sys, t, x, p, refs[g[0]]))
        for j in g:
            out[j] = float(np.real(np.sum(z ** terms[j].fn.power)))
    return out


def shared_state_grads(terms, sys, t, x, p, refs, design_map, nd):
    """[term.grads(...)[0][:3]]: ∂g/∂(q, v, a) of several terms at one state, bit for bit,
    with one complex-step evaluation of a shared inner per block (shared_values)."""
    return shared_values_grads(terms, sys, t, x, p, refs, design_map, nd, values=False)[1]


def shared_values_grads(terms, sys, t, x, p, refs, design_map, nd, values=True):
    """(shared_values(...), shared_state_grads(...)) in one call, bit for bit the same: a
    shared inner on a real state is evaluated once, on the plain state stacked as one
    more row before the q, v, a complex steps (_stacked_cs).  Why: the adaptive
    quadrature test needs both at every accepted state (quad_error.py: the values for
    its norm, the gains for the next step's Newton cap), and one evaluation of the Iltis'
    z̈ costs as much on 22 rows as on one (numpy call overhead; benchmarks/README.md,
    "Iltis adapt+Q: the quadrature test's per-step cost")."""
    vals = [None] * len(terms) if values else None
    out = [None] * len(terms)
    n = sys.n
    for g in _shared_groups(terms):
        tm = terms[g[0]]
        if len(g) == 1:
            if values:
                vals[g[0]] = tm.value(sys, t, x, p, refs[g[0]])
            out[g[0]] = tm.grads(sys, t, x, p, refs[g[0]], design_map, nd)[0][:3]
            continue
        args = tm.local(sys, t, x, p, refs[g[0]])
        for j in g:
            out[j] = []
        for i, z, nc in _stacked_cs(tm.fn.inner, args, plain=values):
            if i == 0:                              # the plain state (shared_values' z)
                for j in g:
                    vals[j] = float(np.real(np.sum(z ** terms[j].fn.power)))
                continue
            for j in g:
                d = np.zeros(n + 3)
                d[terms[j].qidx] = cs_result(z ** terms[j].fn.power, nc)
                out[j].append(d[:n])
    return vals, out


def _stacked_cs(inner, args, plain=False):
    """(i, inner at cs_args(args, i), columns) for q, v, a (i = 1, 2, 3): one call of the
    inner on the three blocks' complex steps stacked on the leading axis when the state is
    real (elementwise over that axis, and numpy casts a real operand to complex with zero
    imaginary part anyway: the same numbers as three calls), else one call per block.
    ``plain``: first (0, the inner at args, None) — on a real finite state row 0 of the
    same stacked call, whose imaginary parts stay zero, so its real part is the real
    call's (products (a + 0i)(b + 0i) = ab − 0·0, sums alike; not with a complex argument
    or a non-finite entry, 0·inf being NaN: then the real call), given back as the real
    array the plain call returns."""
    xs = [np.asarray(args[i]) for i in (1, 2, 3)]
    if not all(y.dtype == _F64 and y.ndim == 1 for y in xs) or \
            (plain and not (_real(args) and all(math.isfinite(y @ y) for y in xs))):
        if plain:
            yield 0, inner(*args), None
        for i in (1, 2, 3):
            a, nc = cs_args(args, i)
            yield i, inner(*a), nc
        return
    k = [len(y) for y in xs]
    r0 = 1 if plain else 0
    rows = [r0, r0 + k[0], r0 + k[0] + k[1], r0 + k[0] + k[1] + k[2]]
    a = [_lead_arg(y) for y in args]
    for b, y in enumerate(xs):
        xc = np.zeros((rows[-1], k[b]), dtype=complex)
        xc.real[...] = y
        xc.imag[rows[b] + np.arange(k[b]), np.arange(k[b])] = CS_H
        a[b + 1] = xc
    z = inner(*a)
    if plain:
        yield 0, np.real(z[0:1]).reshape(np.shape(z)[1:]), None
    for b in range(3):
        yield b + 1, z[rows[b]:rows[b + 1]], k[b]


_F64 = np.dtype(np.float64)


def _real(args):
    """No complex array or number among ``args``."""
    return not any(isinstance(y, complex) or getattr(y, "dtype", _F64).kind == "c" for y in args)


class Term:
    """One integrand (or terminal function) bound to its place in the model."""

    def __init__(self, system, kind, cfg):
        self.fn = INTEGRANDS.get(kind)
        self.kind = kind
        zero = [0]
        self.lrows = np.zeros(0, np.int64)
        self.ldrop = False
        from ..flexible.spatial_beam_objectives import beam3_term, is_beam3_objective
        if is_beam3_objective(system, kind, cfg):                  # spatial ANCF beams (stress, point acceleration)
            self.fn, qidx, pidx = beam3_term(system, kind, cfg)
        elif kind in SPATIAL_KINDS:                                # vehicle objectives on spatial bodies
            self.fn, qidx, pidx = spatial_term(system, kind, cfg)
        elif cfg.point is not None and system.beams.is_beam_point(cfg.point):
            from ..flexible.objectives import beam_term           # points on ANCF beams
            self.fn, qidx, pidx = beam_term(system, kind, cfg.point)
        elif kind.startswith("point_"):
            qidx, _, pidx = system.point_offset(cfg.point)
        elif kind.startswith("angle"):
            qidx, pidx = system._qb(cfg.body), zero
        elif kind == "spring_elongation_sq":
            g, e = _find(system.forces, cfg.force)
            qidx, pidx = g.qidx[e], g.pidx[e]
        else:
            g, e = _find(system.constraints, cfg.joint)
            qidx, pidx, self.lrows = g.qidx[e], zero, g.rows[e]
            # a redundant row dropped at set-up (−1, model/redundancy.py) reads λ = 0
            self.ldrop = bool(np.any(self.lrows < 0))
        self.qidx, self.pidx = np.asarray(qidx), np.asarray(pidx)
        self.uses_ref = kind == "point_deviation_sq"

    def local(self, sys, t, x, p, ref):
        q, v, a, lam = x
        return self.local_extended(t, (sys.extend(q), sys.extend(v), sys.extend(a), lam), p, ref)

    def local_extended(self, t, xe, p, ref):
        """``local`` from q, v, a already extended by ground's slots (``sys.extend``)."""
        qe, ve, ae, lam = xe
        lam_e = np.append(lam, 0) if self.ldrop else lam
        return [t, qe[self.qidx], ve[self.qidx], ae[self.qidx], lam_e[self.lrows], p[self.pidx], ref]

    def value(self, sys, t, x, p, ref):
        return float(np.real(self.raw(sys, t, x, p, ref)))

    def params(self, sys):
        """The entries of p this term reads (design.py: the sweeps' column map)."""
        return self.pidx.ravel()

    def raw(self, sys, t, x, p, ref):
        """g at one state, complex when the state is (complex-step gradients)."""
        return np.sum(self.fn(*self.local(sys, t, x, p, ref)))

    def grads(self, sys, t, x, p, ref, design_map, nd):
        """∂g/∂(q, v, a, λ) as global vectors, ∂g/∂ρ (nd,) and ∂g/∂ref (2,)."""
        args = self.local(sys, t, x, p, ref)
        n = sys.n
        out = []
        for i in (1, 2, 3):
            d = np.zeros(n + 3)
            d[self.qidx] = cs_jacobian(self.fn, args, i)
            out.append(d[:n])
        dl = np.zeros(len(x[3]) + self.ldrop)
        if len(self.lrows):
            dl[self.lrows] = cs_jacobian(self.fn, args, 4)
        out.append(dl[:len(x[3])])
        dp = np.zeros(nd)
        cols = design_map[self.pidx]
        if np.any(cols >= 0):
            gp = cs_jacobian(self.fn, args, 5)
            np.add.at(dp, cols[cols >= 0], gp[cols >= 0])
        dref = cs_jacobian(self.fn, args, 6) if self.uses_ref else np.zeros(2)
        return out, dp, dref


    def batchable(self):
        """``grads_batch`` and ``values_batch`` apply: a planar integrand of ``INTEGRANDS``
        (elementwise over leading axes, independent of t)."""
        return self.fn in INTEGRANDS.values() or getattr(self.fn, "batchable", False)

    def _batch_args(self, sys, X, p, ref):
        """``local``'s arguments for K states at once (X = (q, v, a, λ) each (K, ·); t = 0:
        the batchable integrands do not read it)."""
        q, v, a, lam = X
        K = len(q)
        lam_e = np.concatenate([lam, np.zeros((K, 1))], 1) if self.ldrop else lam
        return [0.0, sys.extend(q)[:, self.qidx], sys.extend(v)[:, self.qidx], sys.extend(a)[:, self.qidx],
                lam_e[:, self.lrows], np.broadcast_to(p[self.pidx], (K, len(self.pidx))),
                np.broadcast_to(ref, (K, 2))]

    def values_batch(self, sys, X, p, ref):
        """``value`` at K states at once, (K,): the integrands reduce their element's
        coordinates to one number per state (a scalar per state in ``raw``), so the K
        values are those of ``value`` state by state; one numpy call per block instead of
        ~10 per state — ``Problem.objective_values`` cost twice the compiled forward."""
        args = self._batch_args(sys, X, p, ref)
        g = np.asarray(self.fn(*args))
        if g.ndim != 1:                       # not one number per state: the per-state sums
            g = np.array([np.sum(gk) for gk in np.broadcast_to(g, (len(args[1]),) + g.shape[1:])])
        return np.real(g)

    def grads_batch(self, sys, X, p, ref, design_map, nd):
        """``grads`` at K states at once: X = (q, v, a, λ) each (K, ·); returns the four
        (K, ·) blocks, (K, nd) and (K, 2).  The same complex-step arithmetic element by
        element as ``grads`` (every integrand is elementwise over the leading axis), one
        numpy call per block instead of one per state (the adjoint and direct sweeps)."""
        q, v, a, lam = X
        K = len(q)
        n = sys.n
        args = self._batch_args(sys, X, p, ref)
        out = []
        for i in (1, 2, 3):
            d = np.zeros((K, n + 3))
            d[:, self.qidx] = cs_jacobian(self.fn, args, i)
            out.append(d[:, :n])
        dl = np.zeros((K, lam.shape[1] + self.ldrop))
        if len(self.lrows):
            dl[:, self.lrows] = cs_jacobian(self.fn, args, 4)
        out.append(dl[:, :lam.shape[1]])
        dp = np.zeros((K, nd))
        cols = design_map[self.pidx]
        if np.any(cols >= 0):
            gp = cs_jacobian(self.fn, args, 5)
            for c in np.nonzero(cols >= 0)[0]:          # np.add.at's order, per state
                dp[:, cols[c]] += gp[:, c]
        dref = cs_jacobian(self.fn, args, 6) if self.uses_ref else np.zeros((K, 2))
        return out, dp, dref


def _find(groups, name):
    for g in groups:
        if name in g.names:
            return g, g.names.index(name)
    raise KeyError(name)


class UserTerm:
    """An integrand written by the user in Python (``integrand = "python"``).

    ``callable = "module:function"`` names it; ``module`` is looked up first as
    ``module.py`` next to the config file (dots are folders), then on ``sys.path``.
    The function is called at every time step as

        value, partials = g(t, q, v, a, lam, p, model)

    with the global state (q, v, a of length n, λ of length m), the model parameter
    vector p and the ``System`` (``model.params.index[path]`` gives p's index of a
    config path, ``3*model.body_index[B] + (0, 1, 2)`` the (x, y, θ) of body B).
    ``partials`` is a dict with any of the keys "q", "v", "a", "lam", "p": ∂g/∂· as
    arrays of the full length (missing keys are zero).  They enter the adjoint and
    direct gradients unchanged — ``parmbs verify`` checks them against differences.
    For ``--method cs`` the function must accept complex arguments.

    The function may declare the entries of p it reads, ``g.reads = f(model) -> indices``
    (``continuum_objectives.strain_energy``: its elastic components' parameters).  Then
    its "p" partial may also be given over those entries only (sorted unique, in that
    order), and design columns that nothing reads — a reduced body's densities — leave
    the per-step sweeps (``DesignSpace.read_by``).  Without ``reads`` the function is
    taken to read all of p (nonzero "p" partials outside ``reads`` are refused).

    The user's code is treated as a failure of this objective (``ModelError`` naming
    ``objectives.NAME.callable``: one line, exit 2) when it raises, returns anything but
    a real or complex number and a dict, or calls ``sys.exit`` — which used to end
    ``parmbs gradient`` silently with exit 0 and no output (issue 17).
    """

    def __init__(self, system, cfg):
        self.kind = "python"
        self.key = f"objectives.{cfg.name}.callable"
        self.fn = load_callable(cfg.callable, system.config.source, self.key)
        self.sys = system
        reads = getattr(self.fn, "reads", None)
        self.reads = None if reads is None else np.unique(np.asarray(reads(system), np.int64))

    def params(self, sys):
        """The entries of p the function declares it reads (``reads``), or None: all."""
        return self.reads

    def _call(self, t, x, p):
        try:
            value, partials = _user_result(self.fn(t, *x, p, self.sys))
        except (Exception, SystemExit) as e:    # the user's code: name it, never a traceback
            from ..model.system import ModelError
            raise ModelError(self.key, f"at t = {t:.6g}: {_describe_failure(e)}") from None
        return value, partials

    def raw(self, sys, t, x, p, ref):
        return self._call(t, x, p)[0]

    def value(self, sys, t, x, p, ref):
        return float(np.real(self.raw(sys, t, x, p, ref)))

    def grads(self, sys, t, x, p, ref, design_map, nd):
        from ..model.system import ModelError
        _, partials = self._call(t, x, p)
        sizes = {"q": sys.n, "v": sys.n, "a": sys.n, "lam": len(x[3]), "p": len(p)}
        unknown = set(partials) - set(sizes)
        if unknown:
            raise ModelError(self.key, f"unknown partial(s) {sorted(unknown)} (use q, v, a, lam, p)")
        d = {}
        pidx = None                                    # "p" over all of p, or over ``reads``
        for k, size in sizes.items():
            g = np.zeros(0 if k == "p" else size) if k not in partials else np.asarray(partials[k], dtype=float)
            if k == "p" and g.shape != (size,):
                pidx = self.reads if self.reads is not None and g.shape == (len(self.reads),) else None
                if pidx is None and g.shape != (0,):
                    want = f"({size},)" + ("" if self.reads is None else f" or ({len(self.reads)},) (reads)")
                    raise ModelError(self.key, f"partial 'p' has shape {g.shape}, expected {want}")
            elif g.shape != (size,):
                raise ModelError(self.key, f"partial {k!r} has shape {g.shape}, expected ({size},)")
            if not np.all(np.isfinite(g)):
                raise ModelError(self.key, f"partial {k!r} is not finite at t = {t:.6g}")
            d[k] = g
        dp = np.zeros(nd)
        # only the nonzero ∂g/∂p entries (a reduced body's energy: its K̂ block, not its 10⁵
        # densities), in increasing p order: the same sums in the same order, so the same
        # bits, without the per-step scatter over all of p
        sel = np.flatnonzero(d["p"])
        at = sel if pidx is None else pidx[sel]
        if pidx is None and self.reads is not None and len(at) and not np.isin(at, self.reads).all():
            raise ModelError(self.key, f"partial 'p' is nonzero at p[{at[~np.isin(at, self.reads)][0]}], "
                                       "which its declared reads leave out")
        on = design_map[at] >= 0
        np.add.at(dp, design_map[at[on]], d["p"][sel[on]])
        return [d["q"], d["v"], d["a"], d["lam"]], dp, np.zeros(2)


def _user_result(out):
    """(value, partials) of a user integrand's return, or TypeError saying what is wrong."""
    if not isinstance(out, tuple) or len(out) != 2:
        raise TypeError(f"must return (value, dict of partials), got {_short_type(out)}")
    value, partials = out
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, complex, np.number, np.ndarray)):
        raise TypeError(f"value must be a number, got {_short_type(value)}")
    value = np.asarray(value)
    if value.shape != () or value.dtype.kind not in "iufc":
        raise TypeError(f"value must be a scalar number, got an array of shape {value.shape} "
                        f"and dtype {value.dtype}")
    if not isinstance(partials, dict):
        raise TypeError(f"partials must be a dict (keys q, v, a, lam, p), got {_short_type(partials)}")
    return value[()], partials


def _short_type(v):
    text = repr(v)
    return f"{type(v).__name__} {text if len(text) <= 40 else text[:37] + '...'}"


class Objective:
    """ψ of one ``[[objectives]]`` entry: weight × (trapezoidal integral + terminal)."""

    def __init__(self, system, cfg):
        self.name, self.weight, self.cfg = cfg.name, cfg.weight, cfg
        if cfg.integrand == "python":
            self.integrand = UserTerm(system, cfg)
        elif cfg.integrand in RIDE_MEASURES:                 # ISO 2631-1 a_w / VDV of a filtered history
            from .ride import RideTerm
            self.integrand = RideTerm(system, cfg)
        else:
            self.integrand = Term(system, cfg.integrand, cfg) if cfg.integrand else None
        self.terminal = Term(system, cfg.terminal, cfg) if cfg.terminal else None
        self.fixed_ref = None if cfg.reference is None else np.array(cfg.reference, float)
        # r_ref(q₀) is a planar/beam point's (point_deviation_sq); spatial kinds read no reference
        from ..flexible.spatial_beam_objectives import is_beam3_objective
        spatial = ({cfg.integrand, cfg.terminal} & {*SPATIAL_KINDS, "stress_ks", "stress_ks_time", *RIDE_MEASURES}
                   or is_beam3_objective(system, cfg.integrand or cfg.terminal, cfg))
        self.point = None if spatial else cfg.point

    def params(self, system):
        """The entries of p this objective reads (integrand, terminal, reference point),
        or None if one of them does not say (a user integrand without ``reads``): the
        column map of the sweeps (design.py ``read_by``)."""
        parts = [t.params(system) if hasattr(t, "params") else None for t in (self.integrand, self.terminal) if t]
        if any(x is None for x in parts):
            return None
        if self.fixed_ref is None and self.point is not None:
            parts.append(np.asarray(_ref_parts(system, self.point)[2]).ravel())
        return np.concatenate([np.asarray(x, np.int64).ravel() for x in parts]) if parts else np.zeros(0, np.int64)

    def reference(self, system, q0, p):
        """r_ref: fixed, or r_P(q₀) of the assembled initial configuration."""
        if self.fixed_ref is not None or self.point is None:
            return self.fixed_ref if self.fixed_ref is not None else np.zeros(2)
        fn, qidx, pidx = _ref_parts(system, self.point)
        return fn(system.extend(q0)[qidx], p[pidx])

    def ref_grads(self, system, q0, p, design_map, nd):
        """∂r_ref/∂q₀ (2, n) and ∂r_ref/∂ρ (2, nd); zero for a fixed reference."""
        n = system.n
        Jq, Jp = np.zeros((2, n + 3)), np.zeros((2, nd))
        if self.fixed_ref is None and self.point is not None:
            fn, qidx, pidx = _ref_parts(system, self.point)
            args = [system.extend(q0)[qidx], p[pidx]]
            Jq[:, qidx] = cs_jacobian(fn, args, 0)
            cols = design_map[pidx]
            gp = cs_jacobian(fn, args, 1)
            for j in np.nonzero(cols >= 0)[0]:
                Jp[:, cols[j]] += gp[:, j]
        return Jq[:, :n], Jp


def _ref_fn(q, p):
    return point_position(q, p[..., 0:2] - p[..., 2:4])


def _ref_parts(system, point):
    """(r_P(q, p), coordinate indices, parameter indices) of a rigid or beam point."""
    if system.beams.is_beam_point(point):
        from ..flexible.objectives import beam_ref
        return beam_ref(system, point)
    qidx, _, pidx = system.point_offset(point)
    return _ref_fn, qidx, pidx
