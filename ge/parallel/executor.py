"""Running a plan on every device of its HCCL group, behind the Executor protocol Session uses.

- `join(plan, options, load)`: under mpiexec, this rank's device on the MPI engine (the plans of all ranks
  checked equal first); otherwise Options.device_count devices of this process on shared memory, one
  executor each, loaded from one plan bound per device (ge.hccl.ops.bind_plan).
- A run feeds each device its slice of the batch when the plan is data parallel (the rows of axis 0; the
  caller gives the whole batch, on every rank), runs the devices on threads of their own (the first on the
  caller's), and returns device 0's outputs: gathered, every device holds them all. A device's error is
  raised on the caller, named; its peers then fail their collectives within Options.hccl_timeout.
"""
from __future__ import annotations

import threading

from ..errors import GEError
from ..hccl.check import check_plans
from ..hccl.ops import bind_plan
from ..hccl.transport import PeerError
from ..hccl.world import local_world, mpi_end, under_mpi


def resolve(options):
    """Options with device_id and device_count of this process's group (the MPI world under mpiexec)."""
    if under_mpi():
        end = mpi_end(options)
        return options.replace(device_id=end.rank, device_count=end.size), end
    if options.device_id >= options.device_count:
        raise GEError(f"device_id {options.device_id} is outside the {options.device_count} devices of this "
                      "process (device_count)")
    return options.replace(device_id=max(options.device_id, 0)), None


def join(plan, options, load, end=None, compile_for=None):
    """An executor over the plan's group: this rank's device on `end` (the MPI engine), else the devices
    of this process. `compile_for(device)`: the plan of another device of this process, when the devices'
    plans differ (tensor parallel: each holds its own slices)."""
    if end is not None:
        check_plans(end, plan)
        return GroupExecutor(plan, [load(bind_plan(plan, end))], [end.rank], end.size, [end])
    n = options.device_count
    world = local_world(options)
    ends = world.ends
    if options.device_id > 0 and n > 1:
        raise GEError(f"device_id {options.device_id}: a process that holds all {n} devices of its group runs "
                      "them all (device_id applies under mpiexec)")
    plans = [plan] + [compile_for(d) if compile_for else plan for d in range(1, n)]
    return GroupExecutor(plan, [load(bind_plan(p, e)) for p, e in zip(plans, ends)], list(range(n)), n, ends,
                         world)


class GroupExecutor:
    """The devices of this process in one group: one executor each."""
    binds_outputs = False

    def __init__(self, plan, executors, ranks, size, ends, world=None):
        self.plan, self.executors, self.ranks, self.size, self.ends = plan, executors, ranks, size, ends
        self.world = world
        self.data = plan.options.parallel == "data"

    def _slice(self, feeds, rank):
        if not self.data:
            return feeds
        out = {}
        for t, a in feeds.items():
            b = a.shape[0] // self.size
            out[t] = a[rank * b:(rank + 1) * b]
        return out

    def run(self, feeds, outputs=None, tracer=None):
        first = (lambda ex, f: ex.run_traced(f, tracer)) if tracer is not None else (lambda ex, f: ex.run(f))
        if len(self.executors) == 1:
            return first(self.executors[0], self._slice(feeds, self.ranks[0]))
        results, errors = [None] * len(self.executors), [None] * len(self.executors)

        def device(k):
            try:
                run = first if k == 0 else (lambda ex, f: ex.run(f))
                results[k] = run(self.executors[k], self._slice(feeds, self.ranks[k]))
            except BaseException as e:   # raised on the caller below
                errors[k] = e
                if self.world is not None:
                    self.world.fail(self.ranks[k])   # its peers stop waiting for it
        threads = [threading.Thread(target=device, args=(k,), name=f"ge-device-{k}", daemon=True)
                   for k in range(1, len(self.executors))]
        for t in threads:
            t.start()
        device(0)
        for t in threads:
            t.join()
        # the cause first: a device's own error before its peers' "did not answer"
        failed = [e for e in errors if e is not None]
        if failed:
            raise next((e for e in failed if not _peer(e)), failed[0])
        return results[0]

    def run_traced(self, feeds, tracer):
        """A run with this process's first device traced (its peers run untraced: one timeline a trace)."""
        return self.run(feeds, tracer=tracer)

    def stats(self) -> dict:
        return {**self.executors[0].stats(), "devices": len(self.executors), "group_size": self.size}

    def allocator_stats(self) -> dict:
        return self.executors[0].allocator_stats()

    def empty_cache(self) -> None:
        for ex in self.executors:
            ex.empty_cache()

    def close(self) -> None:
        for ex in self.executors:
            ex.close()
        for e in self.ends:
            e.close()

    @property
    def stream_threads(self) -> int:
        return self.executors[0].stream_threads


def _peer(e: BaseException) -> bool:
    """A peer's "did not answer" (the runtimes wrap it naming the node)."""
    while e is not None:
        if isinstance(e, PeerError):
            return True
        e = e.__cause__ or e.__context__
    return False
