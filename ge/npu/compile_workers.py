"""Cold kernels compiled in worker processes beside this one, into the shared on-disk Numba cache.

Numba compiles in one thread of one process (its compiler lock); a cold plan's kernels are independent
compiles of seconds each. `compile_ahead(jobs, advance)`:
Step 1 (decide): the jobs that would compile (`missing()`: read from Numba's index, nothing compiled) and that a
        worker can rebuild from data, grouped by function (one index file holds a function's specializations:
        its compiles stay in one process), longest first (compile_jobs.COSTS). Workers only when they pay: at
        least two groups and (unless a count was asked for) the estimated gain over compiling alone above
        WORKER_START seconds.
Step 2 (work): `workers` processes `python -m ge.npu.compile_workers` (any user's script: no __main__ guard,
        no fork), same environment and sys.path; each takes a group at a time over its stdin as JSON lines and
        answers on its stdout. This process compiles the longest group (it needs no start), then takes groups
        from the same queue.
        Each finished job advances the caller's progress step (name, where, seconds); the ticker names what
        the workers compile meanwhile.
Step 3 (collect): a worker that fails (exits, times out after GROUP_TIMEOUT seconds for a group, says it
        failed) is reported in one log line; what it did not finish is left to this process's own loop, which
        then loads every job: the workers' from the disk cache.
Callees shared by two kernels are compiled once: jitcache's per-function locks make the second process wait
and load (two processes filling a cold cache end with the results of one). Ctrl-C or any error: the workers
are killed and waited for (no zombies). Off (workers=0): 1 usable CPU, no idle CPU (auto), inside a
pytest-xdist worker (PYTEST_XDIST_WORKER: the suite uses the cores already), Options(compile_workers=0) or
GE_COMPILE_WORKERS=0.
"""
from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import threading
import time
from collections import deque

from . import compile_jobs
from .compile_jobs import NotDescribable

log = logging.getLogger("ge")
MAX_WORKERS = 7          # auto: usable CPUs - 1, at most this
WORKER_START = 6.0       # a worker's start (python, numpy, numba, ge: 2-3 s quiet) in COSTS' units (load 4)
GROUP_TIMEOUT = 1800.0   # seconds one group may take in a worker (a loaded 2-core machine: minutes)


def usable_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:   # not Linux
        return os.cpu_count() or 1


def worker_count(option: int | None = None, load: float | None = None) -> tuple[int, bool]:
    """(worker processes to start besides this one, asked for explicitly): the option (>= 0), else
    GE_COMPILE_WORKERS, else the idle CPUs (usable CPUs less the 1-minute load average `load`, this process
    counted in it) up to usable CPUs - 1 and MAX_WORKERS; none under pytest-xdist or on one CPU. Idle, not all:
    Linux shares a busy machine's CPUs between sessions (autogroups), not processes, so on a loaded machine
    workers split this session's share (bench/cold_start.py, load 8-15 on 2 cores: ResNet-50 cold 1.0-1.35x the
    wall time of one process, 11-20% more CPU)."""
    if os.environ.get("PYTEST_XDIST_WORKER") or usable_cpus() < 2:
        return 0, False
    if option is None or option < 0:
        env = os.environ.get("GE_COMPILE_WORKERS", "").strip()
        try:
            option = int(env) if env else -1
        except ValueError:
            log.warning("GE_COMPILE_WORKERS=%r is not a number of processes; compiling with auto", env)
            option = -1
    if option >= 0:
        return option, True
    if load is None:
        try:
            load = os.getloadavg()[0]
        except OSError:   # no load average (not Unix): assume idle
            load = 0.0
    idle = int(usable_cpus() - max(load - 1.0, 0.0))   # this process is one of the load's runners
    return max(min(usable_cpus() - 1, MAX_WORKERS, idle - 1), 0), False


# -- Step 1: what to give out ----------------------------------------------------------------------------

def groups_of(jobs) -> list[tuple[float, list, list]]:
    """[(estimated seconds, jobs, their descriptions)] of the missing, describable jobs, longest first."""
    by: dict[str, tuple[list, list]] = {}
    for job in jobs:
        try:
            if not job.missing():
                continue
            desc = job.describe()
        except NotDescribable as e:
            log.debug("compiled here, not in a worker: %s", e)
            continue
        js, ds = by.setdefault(job.group, ([], []))
        js.append(job)
        ds.append(desc)
    out = [(sum(j.cost() for j in js), js, ds) for js, ds in by.values()]
    return sorted(out, key=lambda g: -g[0])


def makespan(costs: list[float], processes: int) -> float:
    """Longest-first onto the least loaded process: the estimated wall seconds."""
    loads = [0.0] * max(processes, 1)
    for c in sorted(costs, reverse=True):
        loads[loads.index(min(loads))] += c
    return max(loads)


def pays(costs: list[float], workers: int) -> bool:
    return len(costs) >= 2 and workers > 0 and sum(costs) - makespan(costs, workers + 1) > WORKER_START


# -- Step 2: the pool --------------------------------------------------------------------------------------

class Pool:
    """Workers and this process sharing one queue of groups; `done` holds the jobs compiled by any of them."""

    def __init__(self, groups, workers: int, advance):
        self.queue = deque(groups)
        self.mine = self.queue.popleft()    # the longest: this process, which needs no start
        self.advance = advance
        self.lock = threading.Lock()
        self.done: set = set()
        self.busy: dict[int, str] = {}       # worker -> the function it compiles now
        self.procs: list[subprocess.Popen] = []
        self.threads: list[threading.Thread] = []
        self.failed: list[str] = []
        self.n_workers = workers

    def start(self) -> None:
        env = dict(os.environ, PYTHONPATH=compile_jobs.python_path(), PYTHONUNBUFFERED="1")
        env.pop("GE_PROGRESS", None)
        for k in range(self.n_workers):
            try:
                p = subprocess.Popen([sys.executable, "-m", "ge.npu.compile_workers"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True,
                                     bufsize=1)
            except (OSError, ValueError) as e:   # no interpreter to start (an embedded Python), no processes left
                self.failed.append(f"compile worker {k + 1} did not start ({e}); compiling its kernels here")
                return
            self.procs.append(p)
            errs: deque = deque(maxlen=5)
            threading.Thread(target=lambda p=p, errs=errs: errs.extend(p.stderr), daemon=True).start()
            t = threading.Thread(target=self._feed, args=(k + 1, p, errs, self.take()),
                                 name=f"ge-compile-worker-{k + 1}", daemon=True)   # its first group given now
            self.threads.append(t)
            t.start()

    def take(self):
        with self.lock:
            return self.queue.popleft() if self.queue else None

    def _feed(self, k: int, p: subprocess.Popen, errs, group) -> None:
        """One worker: hand it a group, read its answers, until the queue is empty or the worker fails."""
        while group is not None:
            _, jobs, descs = group
            try:
                p.stdin.write(json.dumps(descs) + "\n")
                p.stdin.flush()
                why = self._answers(k, p, jobs)
            except (OSError, ValueError) as e:
                why = str(e)
            if why:
                why = why if why != "exited" else (errs[-1].strip() if errs else f"exit code {p.poll()}")
                self.failed.append(f"compile worker {k} failed ({why:.200}); compiling its kernels here")
                return
            group = self.take()
        try:
            p.stdin.close()
        except OSError:
            pass

    def _answers(self, k: int, p: subprocess.Popen, jobs) -> str:
        """Read a group's answers; '' when all were compiled, else why not."""
        for _ in jobs:
            while True:
                line = p.stdout.readline()
                if not line:
                    try:
                        p.wait(timeout=5)
                    except subprocess.TimeoutExpired:
                        pass
                    return "exited"
                msg = json.loads(line)
                job = jobs[msg["job"]]
                with self.lock:
                    if msg["event"] != "start":
                        self.busy.pop(k, None)
                        break
                    self.busy[k] = job.name
            if msg["event"] != "done":
                return f"{job.name}: {msg.get('error', 'failed')}"
            with self.lock:
                self.done.add(job)
            self.advance(f"{job.name} (worker {k}: {msg['seconds']:.1f} s)", False)
        return ""

    def work_here(self) -> None:
        """This process's share: groups from the same queue, the longest first."""
        group = self.mine
        while group is not None:
            for job in group[1]:
                t0 = time.perf_counter()
                try:
                    job.compile()
                except Exception:  # noqa: BLE001 - the caller's own loop compiles it again and reports the error
                    continue
                with self.lock:
                    self.done.add(job)
                self.advance(f"{job.name} (here: {time.perf_counter() - t0:.1f} s)", False)
            group = self.take()

    def wait(self, note=None) -> None:
        """Until every worker finished (or was given up: a group longer than GROUP_TIMEOUT)."""
        deadline = time.monotonic() + GROUP_TIMEOUT
        for t, p in zip(self.threads, self.procs):
            while t.is_alive():
                t.join(0.5)
                with self.lock:
                    busy = sorted(set(self.busy.values()))
                if note is not None and busy:
                    note("workers compiling " + ", ".join(busy))
                if time.monotonic() > deadline and p.poll() is None:
                    p.kill()   # its reader sees the end of its answers: reported as failed
            deadline = max(deadline, time.monotonic() + 5.0)

    def close(self) -> None:
        """Every worker ended and reaped (also after Ctrl-C)."""
        for p in self.procs:
            if p.poll() is None:
                p.kill()
        for p in self.procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
            for f in (p.stdin, p.stdout):
                try:
                    f.close()
                except OSError:
                    pass


def compile_ahead(jobs, advance, option: int | None = None, note=None) -> set:
    """Compile the plan's cold jobs in worker processes and here at once (module doc); the set of jobs compiled
    (loaded from the disk cache afterwards by the caller's loop, which compiles anything else itself)."""
    workers, asked = worker_count(option)
    if workers == 0:
        return set()
    groups = groups_of(jobs)   # Step 1
    workers = min(workers, len(groups) - 1)
    if workers < 1 or not (asked or pays([g[0] for g in groups], workers)):   # asked: the estimate aside
        return set()
    pool = Pool(groups, workers, advance)
    log.info("compiling %d kernel functions in %d processes", len(groups), workers + 1)
    try:
        pool.start()   # Step 2
        pool.work_here()
        pool.wait(note)
    finally:
        pool.close()   # Step 3
    for line in pool.failed:
        log.warning("ge: %s", line)
    return pool.done


# -- the worker process ------------------------------------------------------------------------------------

def main() -> int:
    """Read groups (JSON lists of job descriptions) from stdin, compile each job, answer on stdout."""
    out = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)   # anything else printed goes to stderr, not into the answers

    def say(**msg):
        out.write(json.dumps(msg) + "\n")

    try:
        for line in sys.stdin:
            for i, desc in enumerate(json.loads(line)):
                say(job=i, event="start")
                t0 = time.perf_counter()
                try:
                    compile_jobs.from_description(desc).compile()
                except Exception as e:  # noqa: BLE001 - reported; the asking process compiles it itself
                    say(job=i, event="failed", error=f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
                    return 1
                say(job=i, event="done", seconds=time.perf_counter() - t0)
    except KeyboardInterrupt:   # Ctrl-C reaches the whole process group: end quietly
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
