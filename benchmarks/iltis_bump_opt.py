"""The four speed-bump ride optimisations of [Zhu 2014] §5.2.3 (tables 5.11–5.12) on the Iltis.

    python benchmarks/iltis_bump_opt.py write DIR            # the four configs, fixed steps
    python benchmarks/iltis_bump_opt.py write DIR --dt 5e-4
    python benchmarks/iltis_bump_opt.py run DIR all          # parmbs optimize on DIR/all.toml
    python benchmarks/iltis_bump_opt.py check DIR all        # its final design on configs/iltis.toml

Each config is ``configs/iltis.toml`` with (a) fixed steps of ``--dt`` (the
``simulation.adapt`` line removed: the shipped error control takes ~16 600 steps, fixed
1 ms steps 3 000, and the optimum moves by less than the step's error, measured in
benchmarks/README.md "Speed-bump optimisations") and (b) only the ``[[design]]`` entries
of one of the thesis' four experiments — all six parameters, [k_L1, k_L2], [c1, c2],
[k1, k2] — with the bounds of eq. 5.14a (``configs/iltis_build.DESIGN``).  Objective
ψ4 = ∫ z̈⁴ of the chassis CG (eq. 5.13), TAO BLMVM as shipped.  The runs' records
(``DIR/NAME.h5``) hold every evaluation; ``parmbs optimize`` prints the final design.
``check`` re-evaluates a run's final design (``/optimize/design`` of its record) with
``parmbs simulate`` on ``DIR/NAME-adaptive.toml``: ``DIR/NAME.toml`` with the shipped
error-controlled steps put back (``simulation.adapt`` of configs/iltis.toml, rtol 1e-5):
the optimum's ψ4 without the fixed step's error (``--set`` adds overrides).
"""
import argparse
import pathlib
import re
import subprocess
import sys

import parmbs  # noqa: F401  (before numpy, which iltis_build imports: parmbs/_determinism.py)

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "configs"))
import iltis_build  # noqa: E402  (the design entries come from the builder, not a copy)

#: the thesis' experiments (table 5.11 rows): name -> design variables
EXPERIMENTS = {"all": ("k_L1", "k_L2", "c1", "c2", "k1", "k2"), "kL": ("k_L1", "k_L2"),
               "c": ("c1", "c2"), "k": ("k1", "k2")}


def variant(text, names, dt, settle=0.0):
    """configs/iltis.toml's text with fixed steps ``dt`` and only the design ``names``;
    with ``settle`` = T0 > 0 the step T0 later (5 m/s), t_end + T0, and ψ4 integrated
    from T0 on (benchmarks/iltis_window.py: each design settles to its own equilibrium
    before the step, as the thesis' "released from equilibrium")."""
    text, n = re.subn(r"(?m)^adapt = .*\n", "", text)
    assert n == 1, "configs/iltis.toml has no simulation.adapt line to remove"
    text, n = re.subn(r"(?m)^dt = .*$", f"dt = {dt!r}", text)
    assert n == 1
    if settle > 0:
        ms = round(settle * 1e3)
        assert abs(ms - settle * 1e3) < 1e-9 and abs(ms / dt / 1e3 - round(ms / dt / 1e3)) < 1e-9, \
            "T0 must be a whole number of milliseconds and of steps"
        x0 = float(re.search(r"(?m)^x0 = (.*)$", text).group(1)) + 5.0 * settle
        t_end = float(re.search(r"(?m)^t_end = (.*)$", text).group(1)) + settle
        text = re.sub(r"(?m)^x0 = .*$", f"x0 = {x0!r}", text)
        text = re.sub(r"(?m)^t_end = .*$", f"t_end = {t_end!r}", text)
        text, n = re.subn(r'name = "psi4"\nintegrand = "vertical_acceleration_4"\npoint = "chassis.com"\n',
                          f'name = "psi4"\nintegrand = "python"\ncallable = "benchmarks.iltis_window:psi4_after_{ms}"\n',
                          text)
        assert n == 1
    head, rest = text.split("# ---- design variables", 1)
    _, tail = rest.split("# ---- objectives", 1)
    bounds, title = iltis_build.DESIGN
    blocks = iltis_build.design_toml(bounds, title).split("[[design]]\n")
    kept = [blocks[0]] + ["[[design]]\n" + b for b in blocks[1:] for n in names
                          if re.search(rf'^name = "{n}"$', b, re.M)]
    assert len(kept) == len(names) + 1
    return head + "".join(kept) + "# ---- objectives" + tail


def final_design(record):
    """``--set PATH=VALUE`` of a finished run's final design (the left corner's path: the
    right corner follows by its drive)."""
    import h5py
    from parmbs.io.hdf5 import get_names
    paths = {name: f"spatial.forces.{force}l.{key}" for name, force, key in iltis_build.DESIGN_VARS}
    with h5py.File(record, "r") as f:
        if not f["optimize"].attrs.get("finished", False):
            sys.exit(f"{record}: the run has not finished (no /optimize/design)")
        ds = f["optimize/design"]
        return [f"{paths[n]}={v!r}" for n, v in zip(get_names(ds, "names"), ds[:].tolist())]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    w = sub.add_parser("write")
    w.add_argument("dir")
    w.add_argument("--dt", type=float, default=1e-3)
    w.add_argument("--settle", type=float, default=0.0, metavar="T0",
                   help="integrate psi4 from T0 on, the step T0 later (default 0: as shipped)")
    r = sub.add_parser("run")
    r.add_argument("dir")
    r.add_argument("experiment", choices=sorted(EXPERIMENTS))
    r.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    c = sub.add_parser("check")
    c.add_argument("dir")
    c.add_argument("experiment", choices=sorted(EXPERIMENTS))
    c.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    a = ap.parse_args()
    out = pathlib.Path(a.dir)
    if a.cmd == "write":
        out.mkdir(parents=True, exist_ok=True)
        text = (ROOT / "configs" / "iltis.toml").read_text()
        for name, names in EXPERIMENTS.items():
            (out / f"{name}.toml").write_text(variant(text, names, a.dt, a.settle))
            print(f"wrote {out / name}.toml ({', '.join(names)}; fixed dt = {a.dt:g}; settle {a.settle:g} s)")
        return
    if a.cmd == "check":
        shipped = (ROOT / "configs" / "iltis.toml").read_text()
        adapt = re.search(r"(?m)^adapt = .*\n", shipped).group(0)
        text = (out / f"{a.experiment}.toml").read_text()
        text, n = re.subn(r"(?m)^(genalpha_form = .*\n)", lambda m: m.group(1) + adapt, text)
        assert n == 1
        cfg = out / f"{a.experiment}-adaptive.toml"
        cfg.write_text(text)
        sets = final_design(out / f"{a.experiment}.h5") + a.set
        sys.exit(subprocess.call([sys.executable, "-m", "parmbs", "simulate", str(cfg), "-q"]
                                 + [x for s in sets for x in ("--set", s)]))
    cmd = [sys.executable, "-m", "parmbs", "optimize", str(out / f"{a.experiment}.toml"),
           "-o", str(out / f"{a.experiment}.h5")] + [x for s in a.set for x in ("--set", s)]
    sys.exit(subprocess.call(cmd))


if __name__ == "__main__":
    main()
