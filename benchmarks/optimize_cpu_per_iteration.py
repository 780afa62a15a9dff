"""CPU seconds per iteration of a ``parmbs optimize`` run: the run's own record has wall
times only (optimize/log.py), which on a shared machine measure the load.  Runs
``python -m parmbs optimize ARGS`` as a child (its stdout to LOG) and, every 2 s, reads
the child's utime + stime from /proc/PID/stat (Linux); each new ``it`` line of LOG is
printed with the CPU at which it was seen and the difference to the previous one.
Resolution: the 2 s poll, i.e. at most 2 s × (the child's CPU share) per iteration.

    PYTHONPATH=$PWD python benchmarks/optimize_cpu_per_iteration.py LOG \\
        configs/double-wishbone-opt.toml -o /tmp/x.h5 --set simulation.t_end=0.1 \\
        --set optimize.max_it=3 [--set optimize.gradient=fd]
"""
import os
import subprocess
import sys
import time


def cpu(pid):
    """utime + stime [s] of ``pid`` (fields 14, 15 of /proc/PID/stat, after the name)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main(log, args):
    with open(log, "w") as out:
        child = subprocess.Popen([sys.executable, "-m", "parmbs", "optimize", *args], stdout=out,
                                 stderr=subprocess.STDOUT)
    seen, last = 0, None
    while True:
        done = child.poll() is not None
        try:
            c = None if done else cpu(child.pid)
        except OSError:
            c = None
        with open(log, errors="replace") as f:
            lines = [x.strip() for x in f if x.startswith("it ")]
        for line in lines[seen:]:
            d = "" if c is None or last is None else f" (+{c - last:.1f})"
            print(f"cpu {c if c is not None else float('nan'):8.1f}{d} | {line}", flush=True)
            last = c
        seen = len(lines)
        if done:
            return child.returncode
        time.sleep(2.0)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2:]))
