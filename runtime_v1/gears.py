"""runtime_v1 batch gears (GE's dynamic batch, ge.dynamicBatchSize): one static plan per gear; each run
goes to the smallest gear that holds its batch.

Load (`GearedExecutor(gear_plans, device)`, gear_plans a ge.plan.GearPlans, the contract):
  1. Weights: one copy per distinct weight image. compile_gears lays the gears' constants out as one image
     (ge/memory/gear_weights.py: equal constants at equal offsets, a gear's own folded ones, e.g. a Shape
     that depends on the batch, beside them), so one image holds every gear; a gear whose constants do not
     sit at their offsets with their bytes in an existing copy (gears saved before that layout) gets its own.
  2. Feature map: one buffer of the largest feature-map size over the gears (GE's dynamic-batch assigner
     sizes it to the max gear); every gear's Executor is bound to it, so the gears share it. A "set" is
     that buffer plus one runtime_v1 Executor per gear, whose own arena holds only its I/O slots.
     Above Options.gear_memory_split_bytes (GE's 400 MiB split, ge.exec.staticMemoryPolicy=1/2) the feature
     map is several buffers instead, piece k as big as the largest gear's piece k (gear_memory.py).
  3. Sets are a pool: a run checks one out, so concurrent runs never share a feature map. The first set is
     built at load, more only when runs overlap (at most Options.executor_instances; later callers wait).
Run (`run(feeds, outputs=None)`):
  4. Batch = the inputs' shared leading dim (all must agree); gear = the smallest gear >= batch
     (InputError past the largest).
  5. Inputs shorter than the gear are padded with zero rows, the gear's Executor runs, batched outputs
     (leading dim = the batch symbol) are sliced back to the batch. Counters: `stats()` (`gear_runs`).
Padding is only sound for models whose batch rows are independent (the usual inference graph).
Dims gears (GE's dynamic_dims, gear_plans.dims non-empty): the same sets; a run takes the gear whose plan's
input shapes equal the feeds' exactly (as GE's case branch by shape), nothing padded or sliced; no match is
an InputError naming the gears (`gear_for` answers None instead, for a caller that runs those elsewhere).
"""
from __future__ import annotations

import bisect
import threading

import numpy as np

from ge.errors import GEError, InputError
from ge.npu.instance_pool import InstancePool

from ge.npu.device import memory_of

from .executor import Executor, reserve
from .model import copy_weights
from .gear_memory import piece_sizes, set_pieces
from .model import feature_bytes


def _address_need(plans) -> int:
    """The addresses a gear executor maps first: one weights image and one set (every gear's segments, an
    upper bound of the shared feature map); the memory grows past it if asked (ge/npu/memory.py)."""
    segs = [p.memory.segments for p in plans]
    return max(s["weights"] for s in segs) + sum(sum(n for k, n in s.items() if k != "weights") + (1 << 16)
                                                 for s in segs)


class _Weights:
    """One weight-segment image, shared by every gear whose constants it holds."""

    def __init__(self, plans: list, memory):
        self.nbytes = max(int(p.memory.segments["weights"]) for p in plans)
        self.buf, self._release = reserve(memory, self.nbytes, f"the weights of '{plans[0].name}' (gears)", huge=True)
        for p in plans:   # laid out by ge/memory/gear_weights.py, they agree where they overlap
            copy_weights(p, self.buf)

    def holds(self, plan) -> bool:
        if plan.memory.segments["weights"] > self.buf.size:
            return False
        for t, a in plan.constants.items():
            if a.dtype.hasobject:   # a string constant: read from the plan, not the image (host.py)
                continue
            off, b = plan.memory.tensors[t].offset, _bytes(a)
            if not np.array_equal(self.buf[off:off + b.size], b):
                return False
        return True

    def close(self) -> None:
        if self._release is not None:
            self._release()
            self._release = None


def _bytes(a) -> np.ndarray:
    return np.ascontiguousarray(a).reshape(-1).view(np.uint8)


class _Set:
    """The feature-map buffers (one, or a piece each when split) and, per gear, an Executor computing in them."""

    def __init__(self, plans: dict, weights: dict, sizes: list[int], cuts: dict, memory):
        self._releases, self.pieces = [], []
        for k, n in enumerate(sizes):
            buf, release = reserve(memory, n, "the feature map the batch gears share" +
                                   (f" (piece {k} of {len(sizes)})" if len(sizes) > 1 else ""))
            self.pieces.append(buf)
            self._releases.append(release)
        self.fm = self.pieces[0]
        self.executors = {g: Executor(p, memory, weights=weights[g].buf, cuts=cuts[g],
                                      feature_map=self.fm if not cuts[g] else self.pieces[:len(cuts[g]) + 1])
                          for g, p in plans.items()}

    def close(self) -> None:
        for ex in self.executors.values():
            ex.close()
        while self._releases:
            self._releases.pop()()


class GearedExecutor:
    """runtime_v1 over batch gears: `run(feeds, outputs=None)` -> outputs for the feeds' real batch."""

    binds_outputs = True  # bound outputs are computed in place when the batch is a gear, else copied

    def __init__(self, gear_plans, device=None):
        self.gear_plans = gear_plans
        plans = dict(gear_plans.plans)
        self.gears = tuple(sorted(plans))
        self.plan = plans[self.gears[-1]]
        if self.plan.states:   # a state's shape follows the batch: each gear would carry its own
            raise GEError("state_pairs with dynamic_batch: each batch gear would carry a state of its own size; "
                          "compile one static batch (input_shape) to carry state across runs")
        self.memory = memory_of(device, self.plan.options.device_memory_bytes, _address_need(plans.values()))
        self._inputs = gear_plans.inputs
        self._batched = gear_plans.batched
        self._dims = gear_plans.dims   # dims gears: gear by the feeds' exact shapes
        self._by_shapes = {tuple(tuple(p.tensors[i].shape) for i in p.inputs): g for g, p in plans.items()}
        # Step 1: weights, one image per distinct layout (one for all when the compiler shared the layout)
        self._images: list[_Weights] = [_Weights(list(plans.values()), self.memory)]
        self._weights = {g: self._image_for(p) for g, p in plans.items()}
        # Step 2: one feature map of the largest size serves every gear, in pieces above the split size
        opts = self.plan.options
        self.fm_bytes_per_gear = {g: feature_bytes(p) for g, p in plans.items()}
        self._cuts, self.piece_bytes = set_pieces(plans, opts.gear_memory_split_bytes)
        if len(self.piece_bytes) > 1 and opts.feature_base_refreshable:
            raise GEError("feature_base_refreshable with a split gear feature map: the refreshable base is one "
                          f"buffer, the gears' feature map is {len(self.piece_bytes)} pieces above "
                          f"gear_memory_split_bytes={opts.gear_memory_split_bytes}; drop one of the two")
        self._fm_bytes = sum(self.piece_bytes)
        # Step 3: the pool of sets
        self._plans = plans
        new_set = lambda: _Set(plans, self._weights, self.piece_bytes, self._cuts, self.memory)  # noqa: E731
        self._sets = InstancePool(new_set, 1 if opts.feature_base_refreshable else opts.executor_instances,
                                  self._close_set, new_set())
        self._count = threading.Lock()
        self._gear_runs = dict.fromkeys(self.gears, 0)
        self._padded_runs = 0

    def _image_for(self, plan) -> _Weights:
        for img in self._images:
            if img.holds(plan):
                return img
        img = _Weights([plan], self.memory)
        self._images.append(img)
        return img

    def _close_set(self, s: _Set) -> None:
        s.close()
        if not self._sets.all:  # the last user of the weights is gone
            for img in self._images:
                img.close()

    def close(self) -> None:
        self._sets.close()

    # -- running -------------------------------------------------------------------------------------
    def run(self, feeds: dict, outputs: dict | None = None, tracer=None) -> list[np.ndarray]:
        """feeds {input tensor index: array}; outputs {output position: array} written in place."""
        if self._dims:
            gear = self.gear_for(feeds)
            if gear is None:
                raise InputError(self._no_gear(feeds))
            batch = gear
        else:
            batch = self._batch(feeds)
            k = bisect.bisect_left(self.gears, batch)
            if k == len(self.gears):
                raise InputError(f"batch {batch} is larger than the largest gear: dynamic_batch gears are "
                                 f"{list(self.gears)}")
            gear = self.gears[k]
        plan = self._plans[gear]
        gear_feeds = {plan.inputs[i]: feeds[t.index] if self._dims else _pad(feeds[t.index], gear)
                      for i, t in enumerate(self._inputs)}
        with self._sets.lease() as s:
            ex = s.executors[gear]
            results = ex.run(gear_feeds, outputs if batch == gear else None) if tracer is None \
                else ex.run_traced(gear_feeds, tracer)
        if batch != gear:
            results = [r[:batch] if b else r for r, b in zip(results, self._batched)]
            for pos, buf in (outputs or {}).items():
                r = results[pos]
                if isinstance(buf, np.ndarray) and buf.shape == r.shape and buf.dtype == r.dtype \
                        and buf.flags.writeable:
                    np.copyto(buf, r)
                    results[pos] = buf
        with self._count:
            self._gear_runs[gear] += 1
            self._padded_runs += batch != gear
        return results

    execute = run

    def run_traced(self, feeds: dict, tracer) -> list[np.ndarray]:
        """One run of the feeds' gear, traced (runtime_v1's Executor.run_traced)."""
        return self.run(feeds, None, tracer)

    def allocator_stats(self) -> dict:
        return {"capacity": self.memory.capacity, "device_in_use": self.memory.in_use,
                "device_peak": self.memory.peak, "device_mapped": self.memory.mapped, "sets": len(self._sets.all)}

    def empty_cache(self) -> None:
        """Nothing is cached: the sets' memory is static."""

    @property
    def stream_threads(self) -> int:
        return max(ex.stream_threads for ex in self._sets.all[0].executors.values())

    def gear_for(self, feeds: dict):
        """Dims gears: the gear whose plan's input shapes are the feeds' shapes, or None; dtypes and ranks
        checked against the model (an InputError)."""
        shapes = []
        for t in self._inputs:
            a = feeds.get(t.index)
            if a is None:
                raise InputError(f"missing input '{t.name}' ({t.dtype}{list(t.shape)})")
            if a.dtype != t.dtype or a.ndim != len(t.shape):
                raise InputError(f"input '{t.name}' is {a.dtype}{list(a.shape)}, expected {t.dtype}{list(t.shape)}")
            shapes.append(tuple(a.shape))
        return self._by_shapes.get(tuple(shapes))

    def _no_gear(self, feeds: dict) -> str:
        got = ", ".join(f"{t.name}{list(feeds[t.index].shape)}" for t in self._inputs)
        dims = ", ".join(f"{n}[{a}]" for n, a in self._dims)
        gears = "; ".join(",".join(map(str, g)) for g in self.gears)
        return (f"input shapes {got} match no gear: dynamic_dims gears of {dims} are {gears} (a run needs an "
                "exact match, nothing is padded); runtime='auto' runs other shapes on runtime_v2")

    def _batch(self, feeds: dict) -> int:
        """The batch all inputs agree on; their dtypes and non-batch dims checked against the model."""
        batch = first = None
        for t in self._inputs:
            a = feeds.get(t.index)
            if a is None:
                raise InputError(f"missing input '{t.name}' ({t.dtype}{list(t.shape)})")
            if a.dtype != t.dtype or a.ndim != len(t.shape) or a.shape[1:] != tuple(t.shape[1:]):
                raise InputError(f"input '{t.name}' is {a.dtype}{list(a.shape)}, expected "
                                 f"{t.dtype}{list(t.shape)}")
            if batch is None:
                batch, first = a.shape[0], t.name
            elif a.shape[0] != batch:
                raise InputError(f"input '{t.name}' has batch {a.shape[0]} (leading dim '{t.shape[0]}'), but "
                                 f"input '{first}' has batch {batch}: the inputs share the batch dim")
        return batch

    # -- feature-map base refresh (Options.feature_base_refreshable: one set) ------------------------
    @property
    def feature_memory_size(self) -> int:
        return self._fm_bytes

    def update_feature_memory_base(self, buf: np.ndarray) -> None:
        """Re-bind the feature map every gear shares to the caller's buffer (>= feature_memory_size)."""
        with self._sets.lease() as s:
            for ex in s.executors.values():
                ex.update_feature_memory_base(buf)

    # -- stats ---------------------------------------------------------------------------------------
    @property
    def feature_map_bytes(self) -> int:
        """Feature-map bytes held: per set one buffer of the largest gear's size (not one per gear), or the
        sum of its pieces when split."""
        return len(self._sets.all) * self._fm_bytes

    def stats(self) -> dict:
        """Runs per gear, padded runs, sets, feature-map and weight bytes (shared vs per gear)."""
        with self._count:
            out = {"runs": sum(self._gear_runs.values()), "gear_runs": dict(self._gear_runs),
                   "padded_runs": self._padded_runs, "sets": len(self._sets.all),
                   "feature_map_bytes": len(self._sets.all) * self._fm_bytes}
        out.update(feature_map_bytes_per_gear=dict(self.fm_bytes_per_gear),
                   feature_map_pieces=list(self.piece_bytes),
                   feature_map_pieces_per_gear={g: piece_sizes(p, self._cuts[g]) for g, p in self._plans.items()},
                   weight_copies=len(self._images), weights_bytes=sum(i.nbytes for i in self._images))
        return out


def _pad(a: np.ndarray, gear: int) -> np.ndarray:
    if a.shape[0] == gear:
        return a
    out = np.full((gear,) + a.shape[1:], "" if a.dtype.hasobject else 0, a.dtype)   # strings pad with ""
    out[:a.shape[0]] = a
    return out
