"""parmbs animate: a GIF of the mechanism from a trajectory file (io/animate.py)."""
import os

import numpy as np
import pytest

from cli_helpers import parmbs_in_process

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _parmbs(*args, cwd):
    # cli.main in this process (tests/cli_helpers.py); the subprocess's env only put ROOT on PYTHONPATH
    return parmbs_in_process("-q", *args, cwd=cwd)


@pytest.fixture(scope="module")
def run_h5(tmp_path_factory):
    d = tmp_path_factory.mktemp("anim")
    r = _parmbs("simulate", os.path.join(ROOT, "configs", "flexible-pendulum.toml"),
                "--set", "simulation.t_end=0.05", "-o", "run.h5", cwd=d)
    assert r.returncode == 0, r.stderr
    return d


def test_gif_has_the_frames_and_they_move(run_h5):
    from PIL import Image
    r = _parmbs("animate", "run.h5", "-o", "run.gif", "--frames", "6", cwd=run_h5)
    assert r.returncode == 0, r.stderr
    assert "wrote run.gif (6 frames)" in r.stdout
    im = Image.open(run_h5 / "run.gif")
    assert im.n_frames == 6
    frames = []
    for k in (0, 5):
        im.seek(k)
        frames.append(np.asarray(im.convert("L"), float))
    assert np.abs(frames[0] - frames[1]).mean() > 0.1       # the beam moved between first and last
    assert not [f for f in os.listdir(run_h5) if ".tmp-" in f]      # no working file left


@pytest.mark.parametrize("out,key,words", [("run.avi", "-o", "unknown video format"),
                                           ("nodir/run.gif", "-o", "no such directory")])
def test_bad_output_is_one_line_exit_2(run_h5, out, key, words):
    r = _parmbs("animate", "run.h5", "-o", out, cwd=run_h5)
    assert r.returncode == 2 and words in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_frame_rows_keep_first_and_last():
    from parmbs.io.animate import frame_rows
    rows = frame_rows(1000, 7)
    assert rows[0] == 0 and rows[-1] == 1000 and len(rows) == 7
    assert list(frame_rows(3, 120)) == [0, 1, 2, 3]
