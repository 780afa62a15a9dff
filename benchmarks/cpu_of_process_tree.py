"""CPU seconds (user + sys) of a command and every process it starts, including those
never waited for.

Why: ``/usr/bin/time`` (getrusage of children) counts a descendant only when its parent
waited for it.  Under ``mpirun`` an aborted job's ranks are killed and not reaped by
anything that is waited for, so ``/usr/bin/time pytest tests/test_rank_failure.py::...``
printed 0.8 s for a case whose two ranks had used ≈ 5 s each (benchmarks/README.md,
"Serial-suite CPU, round 6").  Here every process carrying a marker in its environment
(inherited by all descendants: pytest, mpirun, the ranks) is sampled from
``/proc/PID/stat`` (utime + stime, its own, not its children's) every 0.1 s, and each
process's last value is summed — a process's last < 0.1 s is missed.  Linux only.

    python benchmarks/cpu_of_process_tree.py COMMAND [ARGS...]

prints ``CPUSAMPLE total X s over N processes, rc R`` on stderr and exits with the
command's code."""
import os
import subprocess
import sys
import time

TICK = os.sysconf("SC_CLK_TCK")


def main(argv):
    marker = f"CPU_OF_PROCESS_TREE_{os.getpid()}"
    p = subprocess.Popen(argv, env=dict(os.environ, CPU_OF_PROCESS_TREE=marker))
    seen = {}

    def scan():
        for d in os.listdir("/proc"):
            if not d.isdigit():
                continue
            try:
                with open(f"/proc/{d}/environ", "rb") as f:
                    if marker.encode() not in f.read():
                        continue
                with open(f"/proc/{d}/stat") as f:
                    s = f.read()
            except OSError:             # gone meanwhile, or not ours to read
                continue
            fields = s[s.rindex(")") + 2:].split()
            cpu = (int(fields[11]) + int(fields[12])) / TICK
            key = (d, fields[19])       # pid and start time: a reused pid is another process
            seen[key] = max(seen.get(key, 0.0), cpu)

    while p.poll() is None:
        scan()
        time.sleep(0.1)
    scan()
    print(f"CPUSAMPLE total {sum(seen.values()):.2f} s over {len(seen)} processes, rc {p.returncode}",
          file=sys.stderr)
    return p.returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
