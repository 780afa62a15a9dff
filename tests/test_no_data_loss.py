"""No data lost, ever (issue 17): every output is built under a working name beside its
target and renamed onto it only once complete (parmbs/io/outputs.py).

Each case below was seen to destroy or damage a file before:
* ``-o`` onto a good result, then a run that fails (exit 1): the good file was damaged;
* ``optimize -o`` onto an existing gradient file: damaged at start-up;
* ``-o``/``--json``/``--plot`` naming the config: the config overwritten, exit 0;
* ``gradient`` with ``checkpoint.schedule = every:K`` and no ``-o`` wrote ``fivebar.h5``
  into the current directory, and the next run silently resumed from it;
and findings of a bad-input/kill harness: an h5py RuntimeError from a corrupted file
escaped as a traceback at the final /gradient write; a file locked by a concurrent run
was called "corrupt or truncated"; ``PARMBS_RANK_FAIL`` never fired with ``-o``; the
fault hooks were live without any test switch; ``optimize --restart`` needed every
``--set`` of the first run again.

All runs are short (the five-bar over 0.05 s = 50 steps; optimizations of 1–2
iterations), each a subprocess of the CLI as a user runs it.
"""
import hashlib
import json
import os
import shutil
import subprocess
import sys

import h5py
import numpy as np
import pytest

from conftest import CONFIGS, FAULTS

SHORT = ["--set", "simulation.t_end=0.05", "--set", "simulation.progress=false"]
FAIL = ["--set", "simulation.newton.max_it=1"]          # Newton fails at step 1: exit 1
OPT = ["--set", "optimize.objective=psi1", "--set", "optimize.max_it=1"]
TS = ["--set", "simulation.formulation=penalty", "--set", "simulation.integrator=ts-beuler"]


def _env(**kw):
    env = {k: v for k, v in os.environ.items() if not k.startswith("PARMBS_")}
    env.update({k: str(v) for k, v in kw.items()})
    return env


def parmbs(*args, cwd, env=None):
    return subprocess.run([sys.executable, "-m", "parmbs", *map(str, args)], cwd=cwd, capture_output=True,
                          text=True, timeout=300, env=env or _env())


@pytest.fixture
def cfg(tmp_path):
    """A private copy of the five-bar config (some cases try to overwrite it)."""
    p = tmp_path / "fb.toml"
    shutil.copy(CONFIGS / "fivebar.toml", p)
    return p


def digest(path):
    return hashlib.sha256(open(path, "rb").read()).hexdigest()


def one_line(r, code, *words):
    assert r.returncode == code, (r.returncode, r.stdout[-2000:], r.stderr[-2000:])
    assert "Traceback" not in r.stderr, r.stderr
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("parmbs: error: "), r.stderr
    for w in words:
        assert w in lines[0], (w, lines[0])
    return lines[0]


def litter(d, *keep):
    """Files in ``d`` other than ``keep``: working files a finished or failed run left."""
    return sorted(p.name for p in d.iterdir() if p.name not in keep)


# ------------------------------------------------------------------ a failed run leaves earlier files


@pytest.mark.parametrize("model", [[], TS], ids=["index3-checkpoint", "penalty-ts-writer"])
def test_failed_simulate_keeps_the_earlier_result(tmp_path, cfg, model):
    """index3 and fixed-step penalty/TS: ``-o`` is a checkpoint file (OUT.h5.partial
    until done; adaptive TS runs stream their trajectory to OUT.tmp-PID.h5).  Either way
    the failure leaves OUT.h5 as it was and no working file behind (a fresh run whose
    computation failed: nothing to resume)."""
    out, png = tmp_path / "good.h5", tmp_path / "good.png"
    r = parmbs("simulate", cfg, *SHORT, *model, "-o", out, "--plot", png, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    before = digest(out), digest(png)
    r = parmbs("simulate", cfg, *SHORT, *model, *FAIL, "-o", out, "--plot", png, cwd=tmp_path)
    one_line(r, 1, "computation failed")
    assert (digest(out), digest(png)) == before
    assert litter(tmp_path, "fb.toml", "good.h5", "good.png") == []


def test_failed_gradient_keeps_json_and_hdf5(tmp_path, cfg):
    js, h5 = tmp_path / "g.json", tmp_path / "g.h5"
    r = parmbs("gradient", cfg, *SHORT, "--json", js, "-o", h5, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    before = digest(js), digest(h5)
    r = parmbs("gradient", cfg, *SHORT, *FAIL, "--json", js, "-o", h5, cwd=tmp_path)
    one_line(r, 1, "computation failed")
    assert (digest(js), digest(h5)) == before
    assert litter(tmp_path, "fb.toml", "g.json", "g.h5") == []


def test_optimize_onto_a_gradient_file(tmp_path, cfg):
    """A failing optimization leaves the gradient file as it was (before: replaced by an
    empty record at start-up); a finished one replaces it whole, at the end."""
    h5 = tmp_path / "g.h5"
    r = parmbs("gradient", cfg, *SHORT, "-o", h5, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    before = digest(h5)
    r = parmbs("optimize", cfg, *SHORT, *OPT, *FAIL, "-o", h5, cwd=tmp_path)
    one_line(r, 1, "initial design")
    assert digest(h5) == before
    assert litter(tmp_path, "fb.toml", "g.h5") == []      # no record left: not one evaluation
    r = parmbs("optimize", cfg, *SHORT, *OPT, "-o", h5, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    with h5py.File(h5, "r") as f:
        assert f["optimize"].attrs["finished"] and "design" in f["optimize"] and "gradient" not in f
    assert litter(tmp_path, "fb.toml", "g.h5", "g.png") == []


# ------------------------------------------------------------------ an output is never an input


CLASHES = [
    (["gradient", "{cfg}", "--json", "{cfg}"], "--json", "config"),
    (["gradient", "{cfg}", "-o", "{cfg}"], "-o", "config"),
    (["simulate", "{cfg}", "-o", "{cfg}"], "-o", "config"),
    (["simulate", "{cfg}", "--plot", "./fb.toml"], "--plot", "config"),
    (["optimize", "{cfg}", "-o", "{cfg}"], "-o", "config"),
    (["gradient", "{cfg}", "-o", "x.h5", "--json", "x.h5"], "--json", "-o"),
    (["simulate", "{cfg}", "-o", "x.h5", "--plot", "x.h5"], "--plot", "-o"),
    (["gradient", "{cfg}", "--restart", "done.h5", "--json", "done.h5"], "--json", "--restart"),
    (["plot", "done.h5", "-o", "done.h5"], "-o", "FILE"),
    (["gradient", "{cfg}", "--json", "nodir/g.json"], "--json", "no such directory"),
]


@pytest.fixture(scope="module")
def done(tmp_path_factory):
    """A finished gradient result (trajectory + /gradient) to be an input."""
    d = tmp_path_factory.mktemp("done")
    shutil.copy(CONFIGS / "fivebar.toml", d / "fb.toml")
    r = parmbs("gradient", d / "fb.toml", *SHORT, "-o", d / "done.h5", cwd=d)
    assert r.returncode == 0, r.stderr
    return d / "done.h5"


@pytest.mark.parametrize("argv, option, what", CLASHES, ids=[f"{a[0]}{a[2]}{a[-1]}" for a, _, _ in CLASHES])
def test_output_equal_to_an_input_is_refused(tmp_path, cfg, done, argv, option, what):
    """Exit 2, one line naming the option and the file; nothing written or changed."""
    shutil.copy(done, tmp_path / "done.h5")
    files = {p.name: digest(p) for p in tmp_path.iterdir()}
    r = parmbs(*[a.format(cfg=cfg) for a in argv], *(SHORT if argv[0] != "plot" else []), cwd=tmp_path)
    line = one_line(r, 2, option, what)
    assert argv[-1].format(cfg=cfg).split("/")[-1] in line
    assert {p.name: digest(p) for p in tmp_path.iterdir()} == files


def test_hard_link_to_the_config_is_refused(tmp_path, cfg):
    """The same file under another name (a hard link) is the same file."""
    os.link(cfg, tmp_path / "alias.json")
    before = digest(cfg)
    one_line(parmbs("gradient", cfg, *SHORT, "--json", tmp_path / "alias.json", cwd=tmp_path), 2, "--json", "config")
    assert digest(cfg) == before


# ------------------------------------------------------------------ kills: resumable, earlier file intact


def test_kill_keeps_the_earlier_result_and_a_resumable_partial(tmp_path, cfg):
    """A finished run.h5, then a new ``-o run.h5`` killed (SIGKILL) in its adjoint sweep:
    run.h5 is untouched, run.h5.partial holds the killed run; a fresh ``-o run.h5`` is
    refused while it exists; ``--restart run.h5`` finishes it and replaces run.h5."""
    h5, js = tmp_path / "run.h5", tmp_path / "g.json"
    sets = [*SHORT, "--set", "checkpoint.schedule=revolve:3"]
    r = parmbs("gradient", cfg, *sets, "-o", h5, "--json", js, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    before, grad0 = digest(h5), json.loads(js.read_text())["objectives"]
    r = parmbs("gradient", cfg, *sets, "-o", h5, cwd=tmp_path,
               env=_env(PARMBS_CHECKPOINT_KILL="adjoint:20", PARMBS_CHECKPOINT_INTERVAL=0, **FAULTS))
    assert r.returncode == -9, (r.returncode, r.stderr)
    part = tmp_path / "run.h5.partial"
    assert digest(h5) == before and part.exists()
    with h5py.File(part, "r") as f:
        assert 0 < int(f["adjoint/marker"][1]) < 50             # killed inside the adjoint sweep
    one_line(parmbs("gradient", cfg, *sets, "-o", h5, cwd=tmp_path), 2, "-o", "run.h5.partial", "--restart")
    assert part.exists() and digest(h5) == before
    r = parmbs("gradient", cfg, *sets, "--restart", h5, "--json", js, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "run.h5.partial: resuming (forward complete, adjoint at step" in r.stdout
    assert not part.exists() and digest(h5) != before
    with h5py.File(h5, "r") as f:
        assert "gradient" in f and int(f["adjoint/marker"][1]) == 0
    grad = json.loads(js.read_text())["objectives"]
    assert grad.keys() == grad0.keys()
    for o in grad:
        a, b = (np.array(list(g[o]["gradient"].values())) for g in (grad, grad0))
        # same config, same deterministic steps; bitwise restarts are test_checkpoint.py's
        # subject: here 1e-12 relative (the contract), far above round-off of one sweep
        assert np.max(np.abs(a - b)) <= 1e-12 * np.max(np.abs(b)), o


def test_no_file_left_without_o(tmp_path, cfg):
    """every:K without -o: the states go to a temporary file, removed at the end; a second
    run starts afresh (before: fivebar.h5 in the current directory, resumed next time)."""
    sets = [*SHORT, "--set", "checkpoint.schedule=every:5"]
    for _ in range(2):
        r = parmbs("gradient", cfg, *sets, cwd=tmp_path)
        assert r.returncode == 0, r.stderr
        assert "temporary" in r.stdout and "resuming" not in r.stdout
        assert litter(tmp_path, "fb.toml") == []


# ------------------------------------------------------------------ harness findings


def test_runtime_error_at_the_gradient_write_is_one_line(tmp_path, cfg, done):
    """A finished file whose /gradient is corrupted (8 bytes inside the object header of
    one gradient dataset): h5py raises RuntimeError ('Can't unlink object') when the
    restart rewrites /gradient.  Exit 2, one line naming the file and /gradient; the file
    itself is left as it was (the restart works in a copy)."""
    h5 = tmp_path / "bad.h5"
    shutil.copy(done, h5)
    with h5py.File(h5, "r") as f:
        objs = list(f["gradient"])
        addr = h5py.h5o.get_info(f["gradient"][objs[-1]][list(f["gradient"][objs[-1]])[1]].id).addr
    with open(h5, "r+b") as fh:
        fh.seek(addr + 2)
        fh.write(b"\xff" * 8)
    before = digest(h5)
    one_line(parmbs("gradient", cfg, *SHORT, "--restart", h5, cwd=tmp_path), 2, "bad.h5", "/gradient")
    assert digest(h5) == before and litter(tmp_path, "fb.toml", "bad.h5") == []


def test_locked_file_is_reported_in_use(tmp_path, cfg, done):
    """A file another process holds open for writing (HDF5's lock) is 'in use by another
    process', not 'corrupt or truncated'."""
    if os.environ.get("HDF5_USE_FILE_LOCKING", "").upper() == "FALSE":
        pytest.skip("HDF5 file locking disabled in this environment")
    h5 = tmp_path / "run.h5"
    shutil.copy(done, h5.with_name("run.h5.partial"))
    with h5py.File(h5.with_name("run.h5.partial"), "r+"):           # this process: the other run
        one_line(parmbs("gradient", cfg, *SHORT, "--restart", h5, cwd=tmp_path), 2, "run.h5.partial",
                 "in use by another process")
        one_line(parmbs("gradient", cfg, *SHORT, "-o", h5, cwd=tmp_path), 2, "run.h5.partial",
                 "in use by another process")
    shutil.copy(done, h5)
    with h5py.File(h5, "r+"):
        line = one_line(parmbs("plot", h5, "-o", tmp_path / "p.png", cwd=tmp_path), 2, "run.h5",
                        "in use by another process")
        assert "corrupt" not in line


def test_fault_hooks_need_the_test_switch(tmp_path, cfg):
    """Every hook variable is ignored without PARMBS_TEST_FAULTS=1; with it, the rank
    hook fires on the checkpointed ``-o`` path too (before: never with -o)."""
    hooks = {"PARMBS_RANK_FAIL": "0:forward:5:raise", "PARMBS_CHECKPOINT_KILL": "forward:3",
             "PARMBS_OPTIMIZE_KILL": "forward:1", "PARMBS_OPTIMIZE_FAIL": "1"}
    r = parmbs("simulate", cfg, *SHORT, "-o", tmp_path / "a.h5", cwd=tmp_path, env=_env(**hooks))
    assert r.returncode == 0, r.stderr
    r = parmbs("optimize", cfg, *SHORT, *OPT, "-o", tmp_path / "o.h5", cwd=tmp_path, env=_env(**hooks))
    assert r.returncode == 0 and "done:" in r.stdout, r.stderr
    r = parmbs("simulate", cfg, *SHORT, "-o", tmp_path / "b.h5", cwd=tmp_path,
               env=_env(PARMBS_RANK_FAIL="0:forward:5:raise", **FAULTS))
    one_line(r, 1, "PARMBS_RANK_FAIL: forward step 5 failed on rank 0")
    assert not (tmp_path / "b.h5").exists() and not (tmp_path / "b.h5.partial").exists()


# ------------------------------------------------------------------ optimize --restart remembers --set


def test_optimize_restart_remembers_the_overrides(tmp_path, cfg):
    rec = tmp_path / "rec.h5"
    first = [*SHORT, *OPT, "--set", "simulation.dt=2e-3"]
    r = parmbs("optimize", cfg, *first, "-o", rec, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    with h5py.File(rec, "r") as f:
        rows = int(f["optimize/history"].attrs["rows"])
    # only the run length changes: the record's --set overrides are applied again
    r = parmbs("optimize", cfg, "--set", "optimize.max_it=2", "--restart", rec, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "resumed:" in r.stdout and "done:" in r.stdout
    with h5py.File(rec, "r") as f:
        assert int(f["optimize/history"].attrs["rows"]) > rows          # it went on
        assert json.loads(f["optimize"].attrs["sets"])[-1] == "optimize.max_it=2"
    # a different value: refused, naming the key and both values
    before = digest(rec)
    one_line(parmbs("optimize", cfg, "--set", "simulation.dt=1e-3", "--restart", rec, cwd=tmp_path), 2,
             "rec.h5", "simulation.dt = 0.002 in the record, 0.001 now")
    # another config file: the key it changes
    other = tmp_path / "other.toml"
    other.write_text(cfg.read_text().replace("[sensitivity]", "[sensitivity]\nfd_step = 1e-5", 1))
    one_line(parmbs("optimize", other, "--restart", rec, cwd=tmp_path), 2, "sensitivity.fd_step")
    assert digest(rec) == before and litter(tmp_path, "fb.toml", "rec.h5", "rec.png", "other.toml") == []
