"""A throw-away single-node SLURM cluster on localhost, for testing jobs/*.sbatch.

`SlurmCluster` starts its own munged (as user munge, private key and socket), slurmctld
and slurmd (as root, ``-D`` in the foreground) from one slurm.conf in a temporary
directory, on two free TCP ports, so it neither needs nor touches a system SLURM or
munge.  Client commands reach it through ``SLURM_CONF`` (``cluster.env``).  The node
``localhost`` has CPUs=2; JobRequeue=1; a requeued job may start again after
``cred_expire`` seconds (AuthInfo), the scheduler runs every second.

`start()` raises `Unavailable` with the reason when the binaries are missing, we are
not root, or a daemon does not come up (its log tail is in the message); the pytest
fixture in tests/test_slurm.py turns that into a skip.  Debian 12:
``apt-get install slurmd slurmctld slurm-client munge``.

Run ``python tests/slurm_cluster.py`` to start one by hand (prints SLURM_CONF, Ctrl-C ends it).
"""
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time

BINARIES = ("munged", "slurmctld", "slurmd", "sbatch", "squeue", "scontrol", "scancel", "sinfo")
NODE = "localhost"
CRED_EXPIRE = 5          # s a requeued job waits before it may start again (SLURM: default 120, minimum 5)


class Unavailable(RuntimeError):
    """SLURM cannot run here; the message says why."""


def _free_ports(n):
    socks = []
    try:
        for _ in range(n):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def _tail(path, n=15):
    try:
        with open(path, errors="replace") as f:
            return "".join(f.readlines()[-n:])
    except OSError:
        return "(no log)"


SLURM_CONF = """\
ClusterName=parmbs-test
SlurmctldHost={node}
SlurmctldPort={ctld_port}
SlurmdPort={slurmd_port}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={munge_socket},cred_expire={cred_expire}
StateSaveLocation={d}/state
SlurmdSpoolDir={d}/spool
SlurmctldPidFile={d}/slurmctld.pid
SlurmdPidFile={d}/slurmd.pid
SlurmctldLogFile={d}/slurmctld.log
SlurmdLogFile={d}/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
SwitchType=switch/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc={d}/jobcomp.log
SchedulerType=sched/backfill
SchedulerParameters=sched_interval=1,bf_interval=1
ReturnToService=2
JobRequeue=1
SlurmctldTimeout=10
SlurmdTimeout=30
MinJobAge=600
KillWait=5
InactiveLimit=0
Waittime=0
NodeName={node} NodeAddr=127.0.0.1 CPUs=2 State=UNKNOWN
PartitionName=test Nodes={node} Default=YES MaxTime=INFINITE State=UP
"""


class SlurmCluster:
    """munged + slurmctld + slurmd on localhost in `self.dir`; use as a context manager."""

    def __init__(self, root=None):
        self.root = root
        self.procs = {}
        self.dir = None

    # -- set-up ----------------------------------------------------------------------------
    def start(self, timeout=60.0):
        missing = [b for b in BINARIES if not shutil.which(b, path=os.environ.get("PATH", "") + ":/usr/sbin:/sbin")]
        if missing:
            raise Unavailable(f"SLURM/munge binaries not found: {', '.join(missing)} "
                              "(Debian: apt-get install slurmd slurmctld slurm-client munge)")
        if os.geteuid() != 0:
            raise Unavailable("a private SLURM needs root (slurmd runs jobs as their user, munged as munge)")
        try:
            munge = pwd.getpwnam("munge")
        except KeyError:
            raise Unavailable("no user 'munge' (install the munge package)") from None
        self.dir = tempfile.mkdtemp(prefix="parmbs-slurm-", dir=self.root)
        d = self.dir
        # munged checks that its directories belong to it and are not writable by others
        mdir = os.path.join(d, "munge")
        os.makedirs(mdir)
        os.chmod(mdir, 0o711)          # the socket must be reachable by every user
        os.chmod(d, 0o755)
        key = os.path.join(mdir, "munge.key")
        with open(os.open(key, os.O_WRONLY | os.O_CREAT, 0o600), "wb") as f:
            f.write(os.urandom(1024))
        for p in (mdir, key):
            os.chown(p, munge.pw_uid, munge.pw_gid)
        for sub in ("state", "spool"):
            os.makedirs(os.path.join(d, sub), mode=0o755)
        self.munge_socket = os.path.join(mdir, "munge.socket")
        ctld_port, slurmd_port = _free_ports(2)
        self.conf = os.path.join(d, "slurm.conf")
        with open(self.conf, "w") as f:
            f.write(SLURM_CONF.format(d=d, node=NODE, ctld_port=ctld_port, slurmd_port=slurmd_port,
                                      munge_socket=self.munge_socket, cred_expire=CRED_EXPIRE))
        self.env = dict(os.environ, SLURM_CONF=self.conf)
        for k in [k for k in self.env if k.startswith(("SLURM_", "SBATCH_", "SQUEUE_")) and k != "SLURM_CONF"]:
            del self.env[k]          # a test run inside a SLURM job must not leak its job's settings

        deadline = time.monotonic() + timeout
        self._spawn("munged", ["munged", "-F", "--socket", self.munge_socket, "--key-file", key,
                               "--pid-file", os.path.join(mdir, "munged.pid"),
                               "--log-file", os.path.join(mdir, "munged.log"),
                               "--seed-file", os.path.join(mdir, "munged.seed")],
                    log=os.path.join(mdir, "munged.log"), user=munge.pw_uid, group=munge.pw_gid)
        self._wait(lambda: os.path.exists(self.munge_socket), deadline, "munged", os.path.join(mdir, "munged.log"))
        self._spawn("slurmctld", ["slurmctld", "-D", "-c", "-i", "-f", self.conf],
                    log=os.path.join(d, "slurmctld.log"))
        self._spawn("slurmd", ["slurmd", "-D", "-N", NODE, "-f", self.conf], log=os.path.join(d, "slurmd.log"))
        self._wait(lambda: self.node_state() == "idle", deadline, "slurmd",
                   os.path.join(d, "slurmd.log"), os.path.join(d, "slurmctld.log"))
        return self

    def _spawn(self, name, argv, log, **kw):
        out = open(os.path.join(self.dir, f"{name}.stdout"), "w")
        self.procs[name] = (subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=self.env,
                                             start_new_session=True, **kw), log)
        out.close()

    def _wait(self, ready, deadline, what, *logs):
        while time.monotonic() < deadline:
            dead = [n for n, (p, _) in self.procs.items() if p.poll() is not None]
            if dead:
                break
            if ready():
                return
            time.sleep(0.2)
        msg = "; ".join(f"{n} exited ({self.procs[n][0].returncode})" for n in dead) if dead \
            else f"{what} not ready in time"
        tails = "\n".join(f"--- {log}:\n{_tail(log)}" for log in logs + tuple(
            os.path.join(self.dir, f"{n}.stdout") for n in self.procs))
        self.cleanup()
        raise Unavailable(f"private SLURM did not start: {msg}\n{tails}")

    # -- queries ---------------------------------------------------------------------------
    def run(self, *argv, check=True, timeout=30, env=None):
        r = subprocess.run(argv, capture_output=True, text=True, env=env or self.env, timeout=timeout)
        if check and r.returncode != 0:
            raise RuntimeError(f"{' '.join(argv)}: exit {r.returncode}: {r.stderr.strip()}")
        return r.stdout

    def node_state(self):
        try:
            return self.run("sinfo", "-h", "-n", NODE, "-o", "%t", check=False, timeout=10).strip()
        except subprocess.TimeoutExpired:
            return ""

    def job(self, jobid):
        """`scontrol show job` as a dict (JobState, Restarts, RunTime, ...); {} once it is gone."""
        r = subprocess.run(["scontrol", "-o", "show", "job", str(jobid)], capture_output=True, text=True,
                           env=self.env, timeout=10)
        if r.returncode != 0:
            return {}
        return dict(kv.split("=", 1) for kv in r.stdout.split() if "=" in kv)

    # -- tear-down -------------------------------------------------------------------------
    def stop(self):
        if "slurmctld" in self.procs and self.procs["slurmctld"][0].poll() is None:
            subprocess.run(["scancel", "--full", "--user=root", "--signal=KILL"], env=self.env,
                           capture_output=True, timeout=10)
            subprocess.run(["scancel", "--user=root"], env=self.env, capture_output=True, timeout=10)
            t = time.monotonic() + 10
            while time.monotonic() < t and self.run("squeue", "-h", check=False).strip():
                time.sleep(0.2)
        for name in ("slurmd", "slurmctld", "munged"):
            if name not in self.procs:
                continue
            p = self.procs.pop(name)[0]
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(10)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait(5)

    def cleanup(self):
        self.stop()
        if self.dir:
            shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()


if __name__ == "__main__":
    c = SlurmCluster().start()
    print(f"export SLURM_CONF={c.conf}    # logs in {c.dir}; Ctrl-C ends it and removes them", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        c.cleanup()
