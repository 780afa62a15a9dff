"""Batch-parallel gradients: work split across the groups of a ``parallel.Layout``.

Work units
    direct / fd — the design columns of each scenario (one tangent column, or one
    pair of perturbed forward runs, per column; an element field has one column per
    element, so a field is split between groups like scalars are);
    adjoint     — the objectives of each scenario (one adjoint column per objective).
A *task* is (scenario, contiguous run of units); a *batch* is the list of tasks one
group runs.  Every task builds its own ``Problem`` on the group's communicator from
the scenario's config — restricted to the task's design columns (direct, fd:
``Problem(design_columns=...)``) or objectives (adjoint) — runs the forward problem and then the gradient.  Columns of
the direct and adjoint methods are independent of one another, so a restricted
problem computes the same numbers as the full one (up to the order of BLAS sums:
≤ 1.3e-16 relative measured, ≤ 1e-12 asserted in tests/test_parallel*.py).

Sizing
    ``CostModel`` estimates each task as fixed + units × per-unit cost, in units of
    one forward time step (per-step constants measured by ``benchmarks/batches.py``,
    times the scenario's step count).  ``plan`` evaluates a few candidate
    partitions — whole scenarios by longest-processing-time-first, every scenario
    split over all groups, or groups allocated to scenarios in proportion to their
    cost — and keeps the one with the smallest estimated makespan.  Chunks of one
    scenario differ by at most one unit, so uneven counts (5 variables on 2 groups)
    are spread 3 + 2.  The plan is a pure function of the config and G: every rank
    computes the same plan without communicating.

Small models in multi-rank groups
    A group of several ranks holding a model below ``parallel.DISTRIBUTE_MIN_UNKNOWNS``
    (``parallel.distribute = "auto"``) does not distribute it: every rank of the group
    runs the task serially on COMM_SELF (``parallel.replicate_small``), so the group's
    numbers are the serial run's bit for bit and the leader contributes them.  (On
    MUMPS over 2 ranks the 4-speed buggy lane change, 140 unknowns, took 47 s CPU per
    rank for 0.3 s of driving, against 2.0 s for the serial process — benchmarks/README.md
    "Small models under mpirun".)

Failure and gather
    A task's exception is caught, turned into one line naming the batch, group,
    scenario, units and the failing step, and reported through
    ``parallel.raise_if_any_failed`` (an allreduce every rank reaches) *before* the
    gather, so a failure in one group ends the whole job on every rank.  Results
    go into one PETSc Vec distributed over all ranks (``parallel.gather_owned``),
    indexed [scenario][objective][value, gradient...]; nothing of size
    N_state × N_design leaves a group (the direct method's dense tangent block
    is per group and covers only that group's batch).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from .scenarios import Scenario, resolve_scenarios

METHODS = ("direct", "fd", "adjoint")


# ----------------------------------------------------------------------------- cost model


@dataclass(frozen=True)
class CostModel:
    """Per-time-step costs in units of one forward step (Newton solve of one step).

    Defaults: the calibration of ``benchmarks/batches.py`` (10-link chain, 30
    coordinates, rank 0 alone; see benchmarks/README.md), rounded.  Only ratios
    matter for the plan; they decide e.g. whether splitting a scenario's columns
    over groups pays for the replicated forward run.
    """

    forward: float = 1.0
    tangent_base: float = 0.85     # direct: re-assembly + factorization of the step matrix, K, Cv, R_p
    tangent_column: float = 0.045  # direct: one more tangent column (one solve + products)
    adjoint_base: float = 1.7      # adjoint: assembly, transposed blocks, design partials
    adjoint_column: float = 0.09   # adjoint: one more objective column (solve + local partials)

    def fixed(self, method: str) -> float:
        return {"direct": self.forward + self.tangent_base, "fd": self.forward,
                "adjoint": self.forward + self.adjoint_base}[method]

    def unit(self, method: str) -> float:
        return {"direct": self.tangent_column, "fd": 2 * self.forward,
                "adjoint": self.adjoint_column}[method]


@dataclass(frozen=True)
class Task:
    """Scenario ``scenario`` with unit indices ``units`` (design vars or objectives)."""

    scenario: int
    units: tuple[int, ...]


@dataclass
class Plan:
    batches: list[list[Task]]
    cost: list[float]               # estimated cost of each batch
    strategy: str

    @property
    def makespan(self) -> float:
        return max(self.cost) if self.cost else 0.0


def _chunks(n: int, k: int) -> list[tuple[int, ...]]:
    """0..n-1 in k contiguous runs whose lengths differ by at most one (longer first)."""
    k = max(1, min(k, n)) if n else 1
    q, r = divmod(n, k)
    out, start = [], 0
    for i in range(k):
        size = q + (i < r)
        out.append(tuple(range(start, start + size)))
        start += size
    return out


def plan(fixed: list[float], unit: list[float], nunits: list[int], groups: int) -> Plan:
    """Partition the units of every scenario into ``groups`` batches by estimated cost.

    ``fixed[s]``, ``unit[s]``: a task of scenario s with u units costs
    fixed[s] + u·unit[s].  Returns the candidate with the smallest makespan (ties:
    the first in the order whole → allocate → split, i.e. the one with fewer
    replicated forward runs).
    """
    S, G = len(fixed), groups

    def cost(t: Task) -> float:
        return fixed[t.scenario] + len(t.units) * unit[t.scenario]

    def finish(batches, name):
        return Plan(batches, [sum(cost(t) for t in b) for b in batches], name)

    cands = []
    # (1) whole scenarios, longest first, each to the least-loaded group
    batches, load = [[] for _ in range(G)], [0.0] * G
    order = sorted(range(S), key=lambda s: (-(fixed[s] + nunits[s] * unit[s]), s))
    for s in order:
        g = min(range(G), key=lambda i: (load[i], i))
        t = Task(s, tuple(range(nunits[s])))
        batches[g].append(t)
        load[g] += cost(t)
    cands.append(finish([sorted(b, key=lambda t: t.scenario) for b in batches], "whole"))
    if S < G:
        # (2) give each scenario g_s groups (Σ g_s ≤ G), extra groups to the scenario whose
        # estimated time falls most, then chunk its units evenly over its groups
        gs = [1] * S

        def t_of(s, k):
            return fixed[s] + len(_chunks(nunits[s], k)[0]) * unit[s]
        for _ in range(G - S):
            best = max(range(S), key=lambda s: (t_of(s, gs[s]) - t_of(s, gs[s] + 1), t_of(s, gs[s]), -s))
            if t_of(best, gs[best] + 1) >= t_of(best, gs[best]):
                break
            gs[best] += 1
        batches = []
        for s in range(S):
            for c in _chunks(nunits[s], gs[s]):
                batches.append([Task(s, c)])
        batches += [[] for _ in range(G - len(batches))]
        cands.append(finish(batches, "allocate"))
    else:
        # (3) every scenario split over all groups; the longer chunks rotate between groups
        batches, off = [[] for _ in range(G)], 0
        for s in range(S):
            ch = _chunks(nunits[s], G)
            for i, c in enumerate(ch):
                batches[(off + i) % G].append(Task(s, c))
            off += nunits[s] % G
        cands.append(finish(batches, "split"))
    return min(cands, key=lambda p: p.makespan)


# ----------------------------------------------------------------------------- result


@dataclass
class BatchResult:
    """Objective values and gradients, per scenario and summed over scenarios.

    ``values[s][o]``, ``gradients[s][o]`` (numpy (nd,), one entry per design column)
    per scenario name;
    ``total_values[o] = Σ_s w_s values[s][o]`` and likewise ``total_gradients``.
    ``vec`` is the distributed PETSc Vec the results were gathered through (owned by
    the caller; ``destroy()`` it).
    """

    design: list[str]
    objectives: list[str]
    scenarios: list[Scenario]
    values: dict
    gradients: dict
    total_values: dict
    total_gradients: dict
    plan: Plan
    timing: dict = field(default_factory=dict)
    vec: object = None
    #: time steps of each scenario's forward run, by name (adaptive runs: the accepted ones)
    steps: dict = field(default_factory=dict)
    space: object = None            # the DesignSpace (columns; ``fields`` for element fields)
    rho: object = None              # design values, one per column
    #: this rank's tasks ran replicated on COMM_SELF in a group of several ranks (task_comm)
    replicated: bool = False

    def destroy(self):
        if self.vec is not None:
            self.vec.destroy()
            self.vec = None


# ----------------------------------------------------------------------------- running


def _describe_units(method, cfg, units, design_names):
    if method == "adjoint":
        names = [cfg.objectives[i].name for i in units]
        return "objective" + ("s " if len(names) != 1 else " ") + ", ".join(names)
    names = [design_names[i] for i in units]
    if not names:
        return "no design variables"
    return f"design {names[0]}" + (f"..{names[-1]} ({len(names)})" if len(names) > 1 else "")


def task_comm(cfg, comm):
    """(System or None, communicator) of a task on the group communicator ``comm``: a
    group of several ranks runs a model too small to distribute replicated on COMM_SELF
    (``parallel.replicate_small`` with the group as world; the System is built once
    here to count its unknowns and handed to the Problem)."""
    if comm is None or comm.getSize() == 1:
        return None, comm
    from .. import parallel
    from ..model.system import System
    system = System(cfg)
    own, _ = parallel.replicate_small(system.n + system.m, cfg.parallel.distribute, world=comm.tompi4py())
    return system, (own if own is not None else comm)


def run_task(cfg, method, units, comm, fd_step=None):
    """Forward + gradient of one task on ``comm``: (values dict, gradients dict, timings
and ``steps``: the forward run's time steps — an adaptive run's accepted ones; an FD
task without adaptivity runs no unperturbed forward, its steps are t_end/dt).

    ``units`` are design columns (direct, fd: ``Problem(design_columns=...)``) or
    objective indices (adjoint: the config restricted to those objectives).
    ``values`` covers every objective of the problem; ``gradients`` maps objective
    name to the gradient over the task's design columns (direct, fd) or over all
    design columns (adjoint).
    """
    from .problem import Problem

    phase = ["setup"]
    try:
        system, comm = task_comm(cfg, comm)
        if method == "adjoint":
            pr = Problem(cfg.model_copy(update={"objectives": [cfg.objectives[i] for i in units]}),
                         system=system, comm=comm)
        else:
            pr = Problem(cfg, system=system, comm=comm, design_columns=list(units))
        t0 = time.perf_counter()
        if method == "fd":
            phase[0] = "finite differences"
            grads = pr.finite_differences(fd_step if fd_step is not None else cfg.sensitivity.fd_step)
            t_fwd, t_grad = 0.0, time.perf_counter() - t0
        else:
            phase[0] = "forward run"
            pr.forward()
            t_fwd = time.perf_counter() - t0
            t0 = time.perf_counter()
            phase[0] = f"{method} gradient"
            if method == "direct":
                grads = pr.direct() if len(pr.design) else {o.name: np.zeros(0) for o in pr.objectives}
            else:
                grads = pr.adjoint() if pr.objectives else {}
            t_grad = time.perf_counter() - t0
        values = pr.objective_values()
    except Exception as e:  # noqa: BLE001 - reported collectively by the caller
        e.parmbs_phase = phase[0]
        raise
    steps = pr.traj.steps if pr.traj is not None else pr.nsteps
    return values, grads, {"forward_s": t_fwd, "gradient_s": t_grad, "steps": steps,
                           "replicated": system is not None and comm.getSize() == 1}


def scenario_costs(scenarios, method, model: CostModel, ncolumns: int):
    """(fixed, unit, nunits) per scenario for ``plan``: cost × number of time steps.

    ``ncolumns``: design columns (an element field counts one per element)."""
    fixed, unit, nunits = [], [], []
    for sc in scenarios:
        cfg = sc.config
        steps = int(round(cfg.simulation.t_end / cfg.simulation.dt))
        fixed.append(steps * model.fixed(method))
        unit.append(steps * model.unit(method))
        nunits.append(len(cfg.objectives) if method == "adjoint" else ncolumns)
    return fixed, unit, nunits


def design_space(cfg):
    """The design columns of ``cfg`` (names, values): built from the model like Problem does."""
    from ..model.system import System
    from .design import DesignSpace
    sys_ = System(cfg)
    return DesignSpace(sys_, cfg.design), sys_.p


def batch_gradient(cfg, method, layout, cost_model: CostModel | None = None, fd_step=None,
                   scenarios=None, nbatches=None) -> BatchResult:
    """Gradients of every objective in every scenario, computed in batches; collective.

    ``layout`` (``parallel.make_layout``) says which group this rank is in; group g
    runs batches g, g + G, g + 2G, ... of a plan with ``nbatches`` (default G)
    batches — more batches than groups is only useful to test the splitting on
    fewer ranks.  Raises ``parallel.GroupFailure`` on every rank if any task failed.
    """
    from .. import parallel
    from ..integrators.newmark import StepError
    from ..model.system import ModelError

    if method not in METHODS:
        raise ValueError(f"method {method!r} not in {METHODS}")
    scenarios = scenarios if scenarios is not None else resolve_scenarios(cfg)
    model = cost_model or CostModel()
    B = nbatches or layout.groups
    space, p0 = design_space(cfg)
    design = list(space.names)
    pl = plan(*scenario_costs(scenarios, method, model, len(design)), B)
    objectives = [o.name for o in cfg.objectives]
    S, K, nd = len(scenarios), len(objectives), len(design)
    stride = nd + 1

    idx, vals, failure = [], [], None
    nsteps = np.zeros(S, dtype=np.int64)          # per scenario; 0: no task of it on this rank
    t_fwd = t_grad = 0.0
    replicated = False
    cpu0 = time.process_time()
    for b in range(layout.group_index, B, layout.groups):
        for task in pl.batches[b]:
            sc = scenarios[task.scenario]
            try:
                v, g, tm = run_task(sc.config, method, task.units, layout.petsc_group, fd_step)
            except Exception as e:  # noqa: BLE001 - every failure must reach the collective check
                what = _describe_units(method, sc.config, task.units, design)
                msg = " ".join(str(e).split()) or type(e).__name__
                if isinstance(e, np.linalg.LinAlgError):
                    msg = f"singular matrix ({msg})"
                elif not isinstance(e, (StepError, ModelError)):
                    msg = f"{type(e).__name__}: {msg}"
                if isinstance(e, ModelError):
                    msg = f"{e.key}: {e.message}"
                phase = getattr(e, "parmbs_phase", "setup")
                failure = (2 if isinstance(e, ModelError) else 1,
                           f"batch {b + 1}/{B} (group {layout.group_index}, scenario {sc.name!r}, {what}) "
                           f"failed in the {phase}: {msg}")
                break
            replicated = replicated or tm["replicated"]
            t_fwd += tm["forward_s"]
            nsteps[task.scenario] = max(nsteps[task.scenario], tm["steps"])
            t_grad += tm["gradient_s"]
            base = task.scenario * K
            if method == "adjoint":
                for o in task.units:
                    name = objectives[o]
                    idx.append((base + o) * stride)
                    vals.append(v[name])
                    idx.extend((base + o) * stride + 1 + np.arange(nd))
                    vals.extend(np.asarray(g[name], float))
            else:
                owns_values = not task.units or task.units[0] == 0
                for o, name in enumerate(objectives):
                    if owns_values:
                        idx.append((base + o) * stride)
                        vals.append(v[name])
                    idx.extend((base + o) * stride + 1 + np.asarray(task.units, dtype=np.int64))
                    vals.extend(np.asarray(g[name], float))
        if failure:
            break

    cpu = time.process_time() - cpu0                    # this rank's compute, before any wait
    parallel.raise_if_any_failed(layout, failure)       # every rank, before any gather
    vec, full = parallel.gather_owned(layout, S * K * stride, idx, vals, to_all=True)
    from mpi4py import MPI
    timing = {"forward_s": layout.world.allreduce(t_fwd, op=MPI.MAX),
              "gradient_s": layout.world.allreduce(t_grad, op=MPI.MAX),
              "cpu_s_per_rank": layout.world.allgather(cpu)}
    layout.world.Allreduce(MPI.IN_PLACE, nsteps, op=MPI.MAX)     # (every task of a scenario runs the same steps)
    values, grads = {}, {}
    for s, sc in enumerate(scenarios):
        values[sc.name], grads[sc.name] = {}, {}
        for o, name in enumerate(objectives):
            row = full[(s * K + o) * stride:(s * K + o + 1) * stride]
            values[sc.name][name] = float(row[0])
            grads[sc.name][name] = row[1:].copy()
    tv = {o: float(sum(sc.weight * values[sc.name][o] for sc in scenarios)) for o in objectives}
    tg = {o: sum((sc.weight * grads[sc.name][o] for sc in scenarios), np.zeros(nd)) for o in objectives}
    return BatchResult(design, objectives, scenarios, values, grads, tv, tg, pl, timing, vec,
                       space=space, rho=space.values(p0),
                       steps={sc.name: int(nsteps[s]) for s, sc in enumerate(scenarios)}, replicated=replicated)
