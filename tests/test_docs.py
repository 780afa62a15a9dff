"""The docs in docs/ are complete and true (parmbs/docs/, issue 23 item 5).

* the generated pages (config.md, cli.md, references.md) equal a fresh build, and every
  schema key has words: a key added to the schema without them fails here;
* a message in config.md is the one the loader prints for that bad value;
* the tutorial's TOML runs (simulate, gradient);
* every group, dataset, attribute and JSON key that real runs write is in output.md;
* no page and not the README cites a paper by its working label ("seed 00x").
"""
import json
import os
import re

import h5py
import pytest

from parmbs.docs import DOCS, check
from parmbs.docs.config_ref import undocumented

from cli_helpers import parmbs_in_process

ROOT = os.path.dirname(DOCS)


def _parmbs(*args, cwd=None):
    # cli.main in this process (tests/cli_helpers.py); the subprocess's env only put ROOT on
    # PYTHONPATH (and an Open MPI setting a one-process run does not read)
    r = parmbs_in_process("-q", *args, cwd=cwd)
    assert r.returncode == 0, r.stderr[-2000:]
    return r.stdout


def _read(name):
    with open(os.path.join(DOCS, name), encoding="utf-8") as fh:
        return fh.read()


# ----------------------------------------------------------------------------- generated pages

def test_generated_pages_are_current():
    assert check() == [], "run: python -m parmbs.docs (or make docs) and commit docs/"


def test_every_config_key_has_words():
    assert undocumented() == [], ("add a '# comment' beside the field in parmbs/config/schema*.py "
                                  "or an entry in parmbs/docs/descriptions.py")


def test_a_new_key_is_noticed(monkeypatch):
    """The completeness check sees a field the docs do not describe."""
    from pydantic import create_model

    from parmbs.config import schema
    from parmbs.docs import config_ref
    Extra = create_model("Extra", __base__=schema._Model, brand_new_key=(float, 1.0))
    Root = create_model("Root", __base__=schema.Config, extra_table=(Extra, Extra()))
    monkeypatch.setattr(config_ref, "Config", Root)
    assert "Extra.brand_new_key" in config_ref.undocumented()
    assert "`brand_new_key`" in config_ref.render()


@pytest.mark.parametrize("key,value", [("bodies.lower.mass", "0"), ("simulation.integrator", "bogus"),
                                       ("forces.holder.damping", "-1"), ("simulation.progress", "yes")])
def test_config_md_shows_the_loaders_message(tmp_path, key, value):
    from parmbs.config import ConfigError, load_config
    toml = tmp_path / "model.toml"
    toml.write_text(_tutorial_toml())
    with pytest.raises(ConfigError) as e:
        load_config(toml, [f"{key}={value}"])
    generic = re.sub(r"^(bodies|forces)\.[^.]+\.", r"\1.NAME.", e.value.key)
    line = f"model.toml: {generic}: {e.value.message.split(' (from --set')[0]}"
    assert f"`{line}`" in _read("config.md").replace("¦", "|") or line in _read("config.md"), line


# ----------------------------------------------------------------------------- the tutorial

def _tutorial_toml():
    m = re.search(r"```toml\n(.*?)```", _read("tutorial.md"), re.S)
    assert m, "docs/tutorial.md has no ```toml block"
    return m.group(1)


def test_tutorial_model_runs_and_shows_what_the_model_prints(tmp_path):
    """The tutorial's model runs as the tutorial runs it (simulate -o, gradient --json:
    its design variables and objectives), and the numbers quoted in the tutorial are the
    full run's (1 s, 1000 steps).  Quoted to 13 digits from one machine; another
    machine's round-off (last-bit differences, grown over 1000 steps: below 1e-11 between
    runs per README "Same input, same bytes") stays far below the 1e-9 compared here.
    (One pair of runs: a separate 0.2 s smoke run of the same commands was dropped.)"""
    (tmp_path / "first-model.toml").write_text(_tutorial_toml())
    out = _parmbs("simulate", "first-model.toml", "-o", "first.h5", cwd=tmp_path)
    assert (tmp_path / "first.h5").exists()
    quoted = dict(re.findall(r"^  (\w+)\s+= (\S+)$", _read("tutorial.md"), re.M))
    got = dict(re.findall(r"^  (\w+)\s+= (\S+)$", out, re.M))
    assert set(got) == {"tip_motion", "final_angle"} and set(quoted) == set(got), (got, quoted)
    for k, v in got.items():
        assert abs(float(v) - float(quoted[k])) <= 1e-9 * abs(float(v)), (k, v, quoted[k])
    out = _parmbs("gradient", "first-model.toml", "--json", "g.json", cwd=tmp_path)
    doc = json.loads((tmp_path / "g.json").read_text())
    assert set(doc["design"]) == {"k", "m_lower"}
    assert set(doc["objectives"]) == {"tip_motion", "final_angle"}
    pattern = r"^  (d\w+/d\w+)\s+=\s+(\S+)$"
    quoted, got = dict(re.findall(pattern, _read("tutorial.md"), re.M)), dict(re.findall(pattern, out, re.M))
    assert len(got) == 4 and set(quoted) == set(got), (got, quoted)
    for k, v in got.items():
        assert abs(float(v) - float(quoted[k])) <= 1e-9 * abs(float(v)), (k, v, quoted[k])


# ----------------------------------------------------------------------------- output layouts

def _documented_hdf5():
    """{generalised path: set of attribute names} from the tables of output.md."""
    doc = {}
    for line in _read("output.md").splitlines():
        if not line.startswith("| `/"):
            continue
        cells = [c.strip() for c in line.strip("|").split("|")]
        first = re.findall(r"`([^`]+)`", cells[0])
        attrs = set(re.findall(r"`([^`]+)`", cells[2]))
        base = first[0].rsplit("/", 1)[0]
        for p in first:
            doc[p if p.startswith("/") else f"{base}/{p}"] = attrs
    return doc


def _walk(path, names):
    """[(generalised path, attribute names)] of every object in an HDF5 file."""
    found = []

    def general(name):
        parts = name.split("/")
        out = []
        for i, s in enumerate(parts):
            if s in names["objective"]:
                s = "<objective>"
            elif s in names["design"]:
                s = "<design>"
            elif re.fullmatch(r"c[01]", s) and i > 0 and parts[i - 1] == "adjoint" and i < len(parts) - 1:
                s = "c<k>"
            elif i > 0 and parts[i - 1] == "names":
                s = "<key>"
            out.append(s)
        return "/" + "/".join(out)

    with h5py.File(path, "r") as f:
        f.visititems(lambda name, obj: found.append((general(name), set(obj.attrs.keys()))))
    return found


def _check_layout(path, names):
    doc = _documented_hdf5()
    for p, attrs in _walk(path, names):
        assert p in doc, f"{path}: {p} is not in docs/output.md"
        assert attrs <= doc[p], f"{path}: attributes {sorted(attrs - doc[p])} of {p} are not in docs/output.md"


def _json_keys(obj, skip, out):
    if isinstance(obj, dict):
        for k, v in obj.items():
            if k not in skip:
                out.add(k)
            _json_keys(v, skip, out)
    return out


PENDULUM = dict(objective={"tip_deviation", "final_angle"}, design={"m", "xG", "theta0"})
SHORT = ["--set", "simulation.t_end=0.02"]


def test_simulate_and_gradient_files_are_documented(tmp_path):
    cfg = os.path.join(ROOT, "configs", "pendulum.toml")
    _parmbs("simulate", cfg, *SHORT, "-o", str(tmp_path / "sim.h5"))
    _parmbs("gradient", cfg, *SHORT, "-o", str(tmp_path / "grad.h5"), "--json", str(tmp_path / "g.json"),
            "--history")
    _parmbs("gradient", cfg, *SHORT, "-o", str(tmp_path / "direct.h5"), "--method", "direct", "--history")
    for f in ("sim.h5", "grad.h5", "direct.h5"):
        _check_layout(tmp_path / f, PENDULUM)
    with h5py.File(tmp_path / "grad.h5") as f:
        for o in PENDULUM["objective"]:          # ψ beside each gradient, as documented
            assert "value" in f["gradient"][o].attrs, o
    doc = json.loads((tmp_path / "g.json").read_text())
    keys = _json_keys(doc, PENDULUM["objective"] | PENDULUM["design"], set())
    table = set(re.findall(r"^\| `([^`]+)`", _read("output.md").split("## Gradient JSON")[1], re.M))
    table |= {k for row in re.findall(r"^\| (`[^|]+)\|", _read("output.md").split("## Gradient JSON")[1], re.M)
              for k in re.findall(r"`([^`]+)`", row)}
    assert keys <= table, f"JSON keys not in docs/output.md: {sorted(keys - table)}"


def test_checkpointed_and_field_gradient_files_are_documented(tmp_path):
    cfg = os.path.join(ROOT, "configs", "pendulum.toml")
    _parmbs("gradient", cfg, *SHORT, "--set", "checkpoint.schedule=every:5", "-o", str(tmp_path / "ck.h5"))
    _check_layout(tmp_path / "ck.h5", PENDULUM)
    plate = os.path.join(ROOT, "configs", "plate-pendulum.toml")
    _parmbs("gradient", plate, "--set", "simulation.t_end=0.006", "-o", str(tmp_path / "plate.h5"),
            "--json", str(tmp_path / "p.json"))
    _check_layout(tmp_path / "plate.h5", dict(objective={"compliance", "tip"}, design={"x"}))
    field = json.loads((tmp_path / "p.json").read_text())["design"]["x"]
    assert set(field) == {"size", "norm", "hdf5"}


def test_adaptive_checkpoint_files_are_documented(tmp_path):
    cfg = os.path.join(ROOT, "configs", "pendulum.toml")
    adapt = ["--set", "simulation.adapt.rtol=1e-4"]
    for sched in ("all", "every:5"):
        _parmbs("gradient", cfg, *SHORT, *adapt, "--set", f"checkpoint.schedule={sched}", "-o",
                str(tmp_path / f"{sched[:3]}.h5"))
        _check_layout(tmp_path / f"{sched[:3]}.h5", PENDULUM)
        with h5py.File(tmp_path / f"{sched[:3]}.h5") as f:
            assert "grid" in f and "control" in f["checkpoint"]


def test_optimize_file_is_documented(tmp_path):
    cfg = os.path.join(ROOT, "configs", "pendulum.toml")
    _parmbs("optimize", cfg, *SHORT, "--set", "optimize.objective=tip_deviation", "--set", "optimize.max_it=1",
            "-o", str(tmp_path / "opt.h5"))
    _check_layout(tmp_path / "opt.h5", PENDULUM)


# ----------------------------------------------------------------------------- citations

def test_no_working_labels_in_user_docs():
    pages = [os.path.join(DOCS, f) for f in os.listdir(DOCS) if f.endswith(".md")]
    pages += [os.path.join(ROOT, "README.md"), os.path.join(ROOT, "benchmarks", "README.md")]
    label = re.compile(r"(?<![\"'\w])[Ss]eeds? ?00[0-4]\b|shared/seeds")   # not the value "seed003"
    bad = [f"{os.path.relpath(p, ROOT)}: {m.group(0)}" for p in pages
           for m in label.finditer(open(p, encoding="utf-8").read())]
    assert not bad, bad
