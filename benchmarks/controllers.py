"""Adaptive ÷ fixed at equal accuracy for each step-size controller
(``simulation.adapt.controller``; integrators/step_filter.py), four models of issue 18.

Per model one process: the fixed rows and the adaptive rows (every controller of
--controllers at every rtol of the model) run alternating, round after round, each through
``benchmarks/adaptive.py``'s ``run`` (CPU = process_time of forward + adjoint).  Errors of ψ
and ∇ψ (adaptive.errors) against the model's reference: the CasADi peer at tol 1e-12 for the
five-bar, else Richardson of the reference stepper at dt and dt/2 (computed once and cached
in --ref-cache).  Each row is one JSON line in --log (with the load average beside it);
``--summary LOG…`` prints the table: for every adaptive run the fixed CPU at the adaptive
run's error, interpolated log-log between the two fixed rows of the same round that bracket
it (``*``: extrapolated from the nearest two), the ratio's median over rounds (range), and
the step sequence's roughness |log(h_{k+1}/h_k)| (median, mean, share of steps that change h).
``after=N``, ``keep=S``, ``q=A`` (joined by ``+``) in --controllers are the PI controller with
``simulation.adapt.grow_after=N`` (the hysteresis ratchet's release), ``keep_min=S`` (the
shrink hysteresis), integrators/timeloop.py, and ``objective_atol=A`` (the objectives'
quadratures in the error test, integrators/quad_error.py).  --set applies to the reference
runs too (a shorter horizon: ``--set simulation.t_end=0.4``; cached under the model and the
overrides).

    PYTHONPATH=$PWD nice -n 10 .venv/bin/python benchmarks/controllers.py fivebar --rounds 3 \
        --controllers pi,H211b,H211PI,H312b,PI42 --log /tmp/dsp18/fivebar.jsonl --peer-python /work/venv-peers/bin/python
    python benchmarks/controllers.py --summary /tmp/dsp18/*.jsonl
"""
import parmbs  # noqa: F401  (first: parmbs/_determinism.py)

import argparse
import json
import math
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import adaptive  # noqa: E402  (benchmarks/adaptive.py: run, errors, peer, STEPPERS)

CFG = os.path.join(HERE, "..", "configs")
ILTIS = ["simulation.t_end=0.04", "spatial.road.x0=1.0", "simulation.rho_inf=0.9", 'simulation.quadrature="cubic"']
#: model: (config, overrides, stepper, reference (None: the peer) as (stepper, dt), fixed dts, rtols, atol/rtol)
MODELS = {
    "fivebar": (adaptive.CONFIG, [], "ab", None, (1e-3, 5e-4, 2.5e-4), (1e-5, 3e-6), 1.0),
    "iltis": (os.path.join(CFG, "iltis.toml"), ILTIS, "ab", ("ab", 1.5625e-5), (6.25e-5, 3.125e-5, 2e-5),
              (3e-7, 1e-7, 3e-8), 0.1),
    "sdp": (os.path.join(CFG, "spatial-double-pendulum.toml"), ["simulation.t_end=0.5"], "trap+ggl",
            ("trap+ggl", 6.25e-5), (2e-3, 1e-3, 5e-4, 2.5e-4), (1e-5, 1e-6), 1.0),
    # the file as shipped since session 20 (compiled Arnold-Bruls, rho_inf 0.9); the reference Richardson of the same scheme
    "sdp-ab": (os.path.join(CFG, "spatial-double-pendulum.toml"), ["simulation.t_end=0.5"], "file",
               ("file", 6.25e-5), (2e-3, 1e-3, 5e-4, 2.5e-4), (1e-5, 1e-6), 1.0),
    "crank": (os.path.join(CFG, "slider-crank-flex.toml"), ["simulation.t_end=0.002"], "file", ("file", 5e-7),
              (1e-5, 5e-6, 2.5e-6), (1e-2,), 1.0),
}


#: --controllers shorthand: after=N (grow_after), keep=S (keep_min), q=A (objective_atol), joined by "+"
KEYS = {"after": "grow_after", "keep": "keep_min", "q": "objective_atol"}


def roughness(h):
    """(median, mean of |log(h_{k+1}/h_k)|, share of steps where h changes) over the steps
    before the last (the last one lands on t_end)."""
    h = np.asarray(h, dtype=float)[:-1]
    if len(h) < 2:
        return math.nan, math.nan, math.nan
    d = np.abs(np.diff(np.log(h)))
    return float(np.median(d)), float(np.mean(d)), float(np.mean(d > 1e-12))


def reference(model, a):
    config, sets, _, ref, *_ = MODELS[model]
    cache = {}
    if a.ref_cache and os.path.exists(a.ref_cache):
        with open(a.ref_cache) as f:
            cache = json.load(f)
    key = model if not a.set else f"{model} {' '.join(a.set)}"     # --set applies to the reference too
    if key in cache:
        r = cache[key]
        return dict(psi=np.array(r["psi"]), grad=np.array(r["grad"]))
    if ref is None:
        pk = adaptive.peer(a.peer_python, 1e-12)
        r = dict(psi=np.array(pk["psi"]), grad=np.array(pk["grad"]))
        what = "CasADi CVODES tol 1e-12"
    else:
        stepper, h = ref
        r1, r2 = (adaptive.run(sets + adaptive.STEPPERS[stepper] + a.set + [f"simulation.dt={d}"], config, fixed=True)
                  for d in (2 * h, h))
        r = {k: (4 * r2[k] - r1[k]) / 3 for k in ("psi", "grad")}
        what = f"Richardson of {stepper} dt {2 * h:g}, {h:g}; their difference {adaptive.errors(r1, r2)}"
    print(f"reference {model}: {what}", flush=True)
    if a.ref_cache:
        cache[key] = dict(psi=r["psi"].tolist(), grad=r["grad"].tolist(), what=what)
        with open(a.ref_cache, "w") as f:
            json.dump(cache, f)
    return r


def measure(a):
    config, sets, stepper, _, dts, rtols, ratio = MODELS[a.model]
    rtols = [float(x) for x in a.rtols.split(",")] if a.rtols else rtols
    dts = [float(x) for x in a.dts.split(",")] if a.dts else dts
    ref = reference(a.model, a)
    ov = sets + adaptive.STEPPERS[stepper] + a.set
    runs = [("fixed", f"dt={dt:g}", ov + [f"simulation.dt={dt}"]) for dt in dts]
    for rt in rtols:
        for c in a.controllers.split(","):
            ctl = [] if c == "pi" else [f"simulation.adapt.{KEYS[k]}={v}" for k, v in
                                        (p.split("=") for p in c.split("+"))] if "=" in c \
                else [f'simulation.adapt.controller="{c}"']
            runs.append(("adapt", f"{c} rtol={rt:g}", ov + ctl + [f"simulation.adapt.rtol={rt}",
                                                                    f"simulation.adapt.atol={rt * ratio}"]))
    if a.warm:                             # numba's cache loaded outside the timed rounds
        adaptive.run(runs[-1][2], config)
    with open(a.log, "a") as log:
        for rnd in range(a.rounds):
            order = runs if rnd % 2 == 0 else runs[::-1]        # alternating
            for mode, label, o in order:
                load = os.getloadavg()[0]
                r = adaptive.run(o, config, fixed=(mode == "fixed"))
                ep, eg = adaptive.errors(r, ref)
                rough = roughness(r["h"]) if mode == "adapt" else (0.0, 0.0, 0.0)
                row = dict(model=a.model, round=a.round0 + rnd, mode=mode, label=label, steps=r["steps"],
                           rejected=r["rejected"], t_grad=r["t_grad"], t_fwd=r["t_fwd"], err_psi=ep,
                           err_grad=eg, rough=rough, load=load)
                log.write(json.dumps(row) + "\n")
                log.flush()
                print(f"{a.model} r{row['round']} {mode:5} {label:<22} {r['steps']:>6} {r['rejected']:>3} "
                      f"{r['t_grad']:7.3f} s  {ep:.2e} {eg:.2e}  rough {rough[0]:.2e} {rough[1]:.2e} "
                      f"{rough[2]:.2f}  load {load:.1f}", flush=True)


def at_error(fixed, err, i):
    """CPU of the fixed rows (err, t) at ``err``, log-log; (t, extrapolated?)."""
    pts = sorted((f[i], f["t_grad"]) for f in fixed)
    e = np.log([p[0] for p in pts])
    t = np.log([p[1] for p in pts])
    x = math.log(err)
    j = int(np.searchsorted(e, x))
    out = j == 0 or j == len(e)
    j = min(max(j, 1), len(e) - 1)
    s = (t[j] - t[j - 1]) / (e[j] - e[j - 1])
    return math.exp(t[j - 1] + s * (x - e[j - 1])), out


def summary(paths):
    rows = [json.loads(line) for p in paths for line in open(p) if line.strip()]
    for model in dict.fromkeys(r["model"] for r in rows):
        mr = [r for r in rows if r["model"] == model]
        loads = [r["load"] for r in mr]
        rounds = sorted(set(r["round"] for r in mr))
        print(f"\n{model}: {len(rounds)} rounds, load {min(loads):.1f}–{max(loads):.1f}")
        print(f"{'adaptive run':<22} {'steps (+rej)':>12} {'err psi':>8} {'err grad':>8} "
              f"{'÷fixed psi':>22} {'÷fixed grad':>22} {'|dlog h| med':>12} {'mean':>8} {'changed':>7}")
        for label in dict.fromkeys(r["label"] for r in mr if r["mode"] == "adapt"):
            rat = {"err_psi": [], "err_grad": []}
            star = {"err_psi": False, "err_grad": False}
            ad = [r for r in mr if r["label"] == label]
            for r in ad:
                fixed = [f for f in mr if f["mode"] == "fixed" and f["round"] == r["round"]]
                if len(fixed) < 2:
                    continue
                for i in rat:
                    tf, out = at_error(fixed, r[i], i)
                    rat[i].append(r["t_grad"] / tf)
                    star[i] |= out
            r0 = ad[0]
            cells = []
            for i in ("err_psi", "err_grad"):
                v = rat[i]
                cells.append(f"{np.median(v):.2f} ({min(v):.2f}–{max(v):.2f}){'*' if star[i] else ' '}" if v else "-")
            print(f"{label:<22} {r0['steps']:>7} (+{r0['rejected']}) {r0['err_psi']:>8.1e} {r0['err_grad']:>8.1e} "
                  f"{cells[0]:>22} {cells[1]:>22} {r0['rough'][0]:>12.2e} {r0['rough'][1]:>8.2e} "
                  f"{r0['rough'][2]:>7.2f}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("model", nargs="?", choices=sorted(MODELS))
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--round0", type=int, default=0, help="number of the first round (a second process)")
    ap.add_argument("--controllers", default="pi,H211b,H211PI,H312b,PI42",
                    help="comma list: pi, a filter's name, or the PI controller with after=N "
                         "(simulation.adapt.grow_after), keep=S (keep_min), q=A (objective_atol), joined by +: "
                         "keep=0+after=8")
    ap.add_argument("--rtols", default="", help="comma list instead of the model's")
    ap.add_argument("--dts", default="", help="comma list of fixed steps instead of the model's")
    ap.add_argument("--set", action="append", default=[], help="config overrides for every run")
    ap.add_argument("--log", default="/tmp/dsp18/controllers.jsonl")
    ap.add_argument("--ref-cache", default="/tmp/dsp18/refs.json")
    ap.add_argument("--peer-python", default="/work/venv-peers/bin/python")
    ap.add_argument("--no-warm", dest="warm", action="store_false")
    ap.add_argument("--summary", nargs="+", help="print the table of these logs")
    a = ap.parse_args()
    if a.summary:
        return summary(a.summary)
    if a.model is None:
        ap.error("a model, or --summary")
    os.makedirs(os.path.dirname(os.path.abspath(a.log)), exist_ok=True)
    measure(a)


if __name__ == "__main__":
    sys.exit(main())
