"""Which feature-map requests may be alive together, found through an index instead of testing every pair.

`Buffer.conflicts` (lifetime.py) compares two requests; the assigners tested each request against every one
placed before it: n^2 tests (a 10,000-input node spent half its compile there, issue 46). Per pair of
streams the rule is an interval overlap, which an index answers in O(log n) plus the answers:
  requests a on stream sa and b on stream sb conflict iff [a.begin, a.free_for(sb)) and [b.begin, b.free_for(sa))
  intersect (on one stream: [begin, end + 1), so their closed step intervals overlap).
Steps:
  1. Per (owner stream, asking stream): the owner's requests sorted by begin, and a max-tree (`MaxTree`) over
     their free_for(asking stream) in that order; every leaf is empty (-1) until its request is added.
     O(log n) an insertion, O(log n + k) a query answering k requests (but for BUCKET's constant).
  2. add(b): b's leaf in each tree of its stream takes b.free_for(that asking stream).
  3. conflicting(b): per owner stream s, the added requests that begin before b is free for s (a prefix:
     bisect on the begins) and are still in use when b begins (leaves above b.begin): the tree's canonical
     nodes for the prefix, descending only where a node's max is above b.begin.
  4. Requests with `starts` (a no-task Concat's block written on several streams: Buffer.before's own rule)
     stay out of the trees: they are few, and tested pairwise against each query; a query that has starts
     tests every added request.
With `plain=True` every request goes into the trees and `starts` is ignored: the interval rule alone, by
which best_fit.conflict_bytes weighs requests.
"""
from __future__ import annotations

import bisect


BUCKET = 16  # leaves scanned together: a list comprehension over a bucket costs less than a descent per leaf


class MaxTree:
    """Leaves 0..n-1 holding ints (-1: empty) in buckets of BUCKET, over a binary tree of the buckets' maxima:
    a prefix query for the leaves above a floor scans only the buckets whose max is above it."""
    __slots__ = ("values", "size", "top")

    def __init__(self, values: list[int]):
        self.values = values
        buckets = -(-len(values) // BUCKET)
        self.size = 1
        while self.size < buckets:
            self.size *= 2
        self.top = top = [-1] * (2 * self.size)
        for q in range(buckets):
            top[self.size + q] = max(values[q * BUCKET:(q + 1) * BUCKET])
        for i in range(self.size - 1, 0, -1):
            top[i] = max(top[2 * i], top[2 * i + 1])

    def set(self, leaf: int, value: int) -> None:
        values, top = self.values, self.top
        old, values[leaf] = values[leaf], value
        i = leaf // BUCKET + self.size
        if value >= old:  # a raise: up while it is the new max
            while i and top[i] < value:
                top[i] = value
                i >>= 1
            return
        if top[i] > old:  # a lower value where the max was elsewhere: nothing above changes
            return
        q = leaf // BUCKET
        top[i] = max(values[q * BUCKET:(q + 1) * BUCKET])
        i >>= 1
        while i:
            m = max(top[2 * i], top[2 * i + 1])
            if top[i] == m:  # the ancestors' maxima stay as they are
                break
            top[i] = m
            i >>= 1

    def above(self, end: int, floor: int) -> list[int]:
        """The leaves in [0, end) whose value is above floor (in no particular order)."""
        values, top, size = self.values, self.top, self.size
        end = min(end, len(values))
        full = end // BUCKET  # whole buckets below end; the rest is scanned leaf by leaf
        lo, hi, stack = size, full + size, []
        while lo < hi:  # the canonical nodes covering buckets [0, full)
            if lo & 1:
                stack.append(lo)
                lo += 1
            if hi & 1:
                hi -= 1
                stack.append(hi)
            lo >>= 1
            hi >>= 1
        out = [k for k in range(full * BUCKET, end) if values[k] > floor]
        while stack:
            i = stack.pop()
            if top[i] <= floor:
                continue
            if i >= size:
                first = (i - size) * BUCKET
                out += [k for k in range(first, first + BUCKET) if values[k] > floor]
            else:
                stack.append(2 * i)
                stack.append(2 * i + 1)
        return out


class ConflictIndex:
    """The added requests, asked for the ones that conflict with a request (Buffer.conflicts)."""

    def __init__(self, buffers, plain: bool = False):
        self.plain = plain
        self.streams = 1 + max((b.stream for b in buffers), default=0)
        self.added: list = []   # every added request (a query with starts tests them all)
        self.odd: list = []     # added requests with starts (Step 4)
        owned: dict[int, list] = {}
        for b in buffers:
            if plain or not b.starts:
                owned.setdefault(b.stream, []).append(b)
        self.leaf = {}          # id -> its leaf in its stream's trees
        self.owners = {}        # stream -> (begins, requests in leaf order, {asking stream: MaxTree})
        for s, bs in owned.items():  # Step 1
            bs.sort(key=lambda b: (b.begin, b.id))
            self.leaf.update((b.id, k) for k, b in enumerate(bs))
            self.owners[s] = ([b.begin for b in bs], bs, {a: MaxTree([-1] * len(bs)) for a in range(self.streams)})

    def add(self, b) -> None:
        self.added.append(b)
        if b.id not in self.leaf or self.owners[b.stream][1][self.leaf[b.id]] is not b:
            self.odd.append(b)
            return
        for asking, tree in self.owners[b.stream][2].items():  # Step 2
            tree.set(self.leaf[b.id], b.free_for(asking))

    def conflicting(self, b) -> list:
        """Every added request other than b that may be alive with it."""
        if b.starts and not self.plain:  # Step 4
            return [a for a in self.added if a is not b and a.conflicts(b)]
        out = []
        for s, (begins, bs, trees) in self.owners.items():  # Step 3
            end = bisect.bisect_left(begins, b.free_for(s))
            out += [bs[k] for k in trees[b.stream].above(end, b.begin) if bs[k] is not b]
        return out + [a for a in self.odd if a is not b and a.conflicts(b)]
