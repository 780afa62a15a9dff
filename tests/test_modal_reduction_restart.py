"""Kill + ``--restart`` of the modally reduced crank (continua.crank.reduction) gives the
bits of the uninterrupted run — for a checkpointed gradient and for an MMA
optimization.

The 8 × 3 crank of tests/test_modal_reduction.py (K = 6 + the pin's two attachment
modes) written to a TOML file.  What could differ after a restart: the reduced body
data are recomputed from the densities in a new process (eigensolve, attachment modes
scaled by constants of the nominal design — ``Reduction._ascale``, fixed by the
config's densities at System construction, not by the design the restart resumes
at).  Same input, same bytes: the asserted equality is bitwise.
"""
import signal

import h5py
import numpy as np
import pytest
import tomli_w

from test_checkpoint import _cli, _partial, _state
from test_modal_reduction import crank

GRADIENT_KILLS = ["forward:4", "write:6", "adjoint:3", "adjoint:4"]


@pytest.fixture(scope="module")
def config(tmp_path_factory):
    d = tmp_path_factory.mktemp("reduced")
    data = crank(K=6, attachment=True)
    data["optimize"].update(max_it=3, filter_radius=0.05)
    path = d / "crank.toml"
    path.write_text(tomli_w.dumps(data))
    return path


def test_gradient_killed_in_forward_and_adjoint_restarts_to_the_same_bits(config, tmp_path):
    """SIGKILLs at forward steps, between a write and its marker, and at adjoint
    steps (10 steps, a checkpoint per step); each run resumes the previous one."""
    ref = tmp_path / "ref.h5"
    r = _cli("gradient", config, "-o", ref, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    h5 = tmp_path / "run.h5"
    seen = set()
    for i, kill in enumerate(GRADIENT_KILLS):
        where = ["-o", h5] if i == 0 else ["--restart", h5]
        r = _cli("gradient", config, *where, cwd=tmp_path, PARMBS_CHECKPOINT_INTERVAL=0,
                 PARMBS_CHECKPOINT_KILL=kill)
        assert r.returncode == -signal.SIGKILL, (kill, r.returncode, r.stderr)
        fwd, adj = _state(_partial(h5))
        seen.add("forward" if adj < 0 else "adjoint")
    assert seen == {"forward", "adjoint"}
    r = _cli("gradient", config, "--restart", h5, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "resuming" in r.stdout
    g0, g = _gradient(ref), _gradient(h5)
    assert len(g) == 24 and np.array_equal(g, g0)


def _gradient(h5):
    """∇ψ over the 24 densities as the run's record holds it (a field gradient is
    written to HDF5, the --json names the dataset)."""
    with h5py.File(h5, "r") as f:
        return f["gradient/compliance/x"][:]


def _iterates(h5):
    with h5py.File(h5, "r") as f:
        n = f["optimize"].attrs["evaluations"]
        return f["optimize/x"][:n], f["optimize/history"][:n]


@pytest.fixture(scope="module")
def optimized(config, tmp_path_factory):
    """The uninterrupted MMA run: its iterates x_0…x_3 and history."""
    d = tmp_path_factory.mktemp("ref")
    r = _cli("optimize", config, "-o", d / "ref.h5", cwd=d)
    assert r.returncode == 0, r.stderr
    return _iterates(d / "ref.h5")


@pytest.mark.parametrize("event", ["forward:2", "adjoint:3", "write:4"])
def test_optimization_killed_then_restarted_gives_the_same_iterates(config, optimized, tmp_path, event):
    """MMA over the 24 densities (V ≤ 0.5, the shipped [optimize]), killed after the
    2nd forward run, after the 3rd gradient, or between the 2nd MMA state's data and
    its counter; the restart's iterates x_0…x_3 and objectives equal the
    uninterrupted run's bit for bit (the designs differ from the nominal one, so the
    restarted process rebuilds the basis at a design other than its first)."""
    x0, h0 = optimized
    assert len(x0) == 4 and np.max(np.abs(x0[3] - x0[0])) > 0.05       # the design moved
    h5 = tmp_path / "k.h5"
    r = _cli("optimize", config, "-o", h5, cwd=tmp_path, PARMBS_OPTIMIZE_KILL=event)
    assert r.returncode == -signal.SIGKILL, (r.returncode, r.stderr)
    r = _cli("optimize", config, "--restart", h5, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "resumed: MMA state after" in r.stdout
    x, h = _iterates(h5)
    assert np.array_equal(x, x0)
    assert np.array_equal(h[:, 1], h0[:, 1])                           # objectives
