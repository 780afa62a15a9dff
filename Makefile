# parmbs set-up, demo and tests on Debian 12 (run as root on a fresh machine, or as a
# user once the Debian packages are there).  `make demo` and `make test` do all set-up.
SHELL := /bin/bash
APT_PKGS := python3-petsc4py python3-mpi4py python3-h5py-mpi python3-numpy \
            python3-scipy python3-matplotlib python3-threadpoolctl python3-numba python3-venv python3-pip openmpi-bin
SLURM_PKGS := slurmd slurmctld slurm-client munge
VENV := .venv
PY := $(VENV)/bin/python
export OMPI_ALLOW_RUN_AS_ROOT := 1
export OMPI_ALLOW_RUN_AS_ROOT_CONFIRM := 1
export OMPI_MCA_rmaps_base_oversubscribe := 1
MPIRUN := mpirun -n 2
# the serial suite on this many pytest-xdist workers (one per core of the 2-core reference machine);
# --dist loadfile keeps each test file on one worker: its module- and session-scoped fixtures (reference
# runs, tests/test_slurm.py's private SLURM) are made once, as serially.  (xdist_group marks with
# --dist loadgroup would be finer, but pytest-xdist 3.8 cannot apply them under pytest 9: its worker
# sets item._nodeid, which pytest 9's nodeid no longer reads.)
TEST_WORKERS ?= 2

.PHONY: setup slurm-pkgs demo test test-serial test-mpi bench docs clean

setup: $(VENV)/.stamp

# 1. the reference stack from Debian (PETSc 3.18, OpenMPI; numba 0.56 for the compiled step
#    of small models, parmbs/compiled — optional at run time) if any piece is missing;
# 2. a venv on Debian's python3 that sees those packages, plus the pip-only pieces.
$(VENV)/.stamp: pyproject.toml
	@if ! command -v mpirun >/dev/null || ! /usr/bin/python3 -c "import mpi4py, h5py, numpy, scipy, matplotlib, threadpoolctl, numba" 2>/dev/null \
	    || ! ls -d /usr/lib/petscdir/petsc*/*-real/lib/python3 >/dev/null 2>&1; then \
	  echo "installing the Debian reference stack: $(APT_PKGS)"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $(APT_PKGS); \
	fi
	/usr/bin/python3 -m venv --system-site-packages $(VENV)
	$(PY) -m pip install -q --disable-pip-version-check -e '.[test]'
	@touch $@

# the five-bar simulated and plotted (the first picture) and its gradient, serially (a small
# model gains nothing from ranks: README "Parallel groups and load cases"); then a job where
# ranks help: the buggy's lane change at 4 speeds, one forward + adjoint per speed, 2 per rank
demo: setup
	@mkdir -p out
	$(VENV)/bin/parmbs simulate configs/fivebar.toml -o out/fivebar.h5 --plot out/fivebar.png
	$(VENV)/bin/parmbs gradient configs/fivebar.toml --json out/fivebar-gradient.json
	$(MPIRUN) $(VENV)/bin/parmbs gradient configs/buggy-lane-change-speeds.toml --json out/buggy-speeds-gradient.json

# tests/test_slurm.py starts a private single-node SLURM; as root, install it if missing
# (the test skips, saying why, where it cannot run)
slurm-pkgs:
	@export PATH="$$PATH:/usr/sbin"; \
	if [ "$$(id -u)" = 0 ] && ! { command -v slurmctld && command -v slurmd && command -v munged; } >/dev/null; then \
	  echo "installing SLURM for tests/test_slurm.py: $(SLURM_PKGS)"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $(SLURM_PKGS); \
	fi

# every CLI run, mpirun rank and worker the suites start is a new Python process: with
# PYTHONDONTWRITEBYTECODE set (as in this machine's environment) each one compiled parmbs's
# and the test modules' sources again, no __pycache__ being written (`parmbs simulate` of the
# pendulum, 0.05 s: 1.14 s CPU without .pyc files, 1.00 s with; `pytest tests/test_cli.py`,
# 40 CLI tests: 34.2 and 35.8 s CPU without, 30.0 (writing them), 32.5 and 30.7 s with, at
# load 16-22).  A .pyc is checked against its source's mtime and size: an edited file is
# compiled again
NO_PYC_ENV := env -u PYTHONDONTWRITEBYTECODE

# --durations: the 25 slowest test phases (≥ 5 s wall) at the end of every run, so each CI log
# says where the suite's time goes (issue 19's suite time)
test-serial: setup slurm-pkgs
	$(NO_PYC_ENV) $(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadfile --durations=25 --durations-min=5 tests

test-mpi: setup
	$(NO_PYC_ENV) $(MPIRUN) $(PY) -m pytest -q --with-mpi -m mpi tests

test: test-serial test-mpi

docs: setup
	$(PY) -m parmbs.docs

bench: setup
	$(PY) benchmarks/forward.py

clean:
	rm -rf $(VENV) out *.egg-info
