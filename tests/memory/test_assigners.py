"""Assigners on hand-made requests: GE's level-1/level-2 rules, binary ranges, best fit, hybrid."""
import pytest

from ge.memory.block_assigner import BLOCK_STRATEGIES, Strategy, assign_blocks, level1, no_reuse
from ge.memory.hybrid import ASSIGNERS, assign
from ge.memory.lifetime import NEVER, Buffer, live_lower_bound
from ge.memory.ranges import LARGE_BLOCK, binary_ranges, size_class
from ge.memory.two_sided import two_sided_fit

KB = 1024


def buf(i, size, begin, end, stream=0, late=False, free_at=()):
    return Buffer(i, ("tensor", i), size, begin, end, stream, late, free_at)


def check(buffers, a):
    for x in buffers:
        for y in buffers:
            if x.id < y.id and x.conflicts(y):
                ox, oy = a.offsets[x.id], a.offsets[y.id]
                assert ox + x.size <= oy or oy + y.size <= ox, (x, y, ox, oy)
    assert a.total >= max(a.offsets[b.id] + b.size for b in buffers)


def test_level1_reuses_exact_size_class_only_after_release():
    bs = [buf(0, 4 * KB, 0, 1), buf(1, 4 * KB, 1, 2), buf(2, 4 * KB, 2, 3), buf(3, 8 * KB, 3, 4)]
    blocks = level1(bs, lambda s: s)
    # 0 and 1 overlap at step 1; 2 takes 0's block (released at 1 < 2); 3 has another size class
    assert [[m.id for m in b.members] for b in blocks] == [[0, 2], [1], [3]]


def test_level1_last_released_first_by_default_first_released_with_flag():
    bs = [buf(0, KB, 0, 2), buf(1, KB, 1, 3), buf(2, KB, 5, 6)]
    lifo = level1(bs, lambda s: s)
    fifo = level1(bs, lambda s: s, first_release=True)
    assert [m.id for m in lifo[1].members] == [1, 2]
    assert [m.id for m in fifo[0].members] == [0, 2]


def test_workspace_of_previous_node_is_reusable_not_own_inputs():
    # a workspace lives one step; the next node's output may take it, the node's own inputs stay live
    bs = [buf(0, KB, 0, 1), buf(1, KB, 0, 0, late=True), buf(2, KB, 1, 2)]
    a = assign_blocks(bs, BLOCK_STRATEGIES[0])
    check(bs, a)
    assert a.offsets[2] == a.offsets[1] and a.total == 2 * KB


def test_level2_nests_small_block_in_free_time_of_large_one():
    bs = [buf(0, 8 * KB, 0, 1), buf(1, 2 * KB, 0, 3), buf(2, 4 * KB, 2, 3), buf(3, 4 * KB, 2, 3)]
    a = assign_blocks(bs, Strategy("t", "exact"))
    check(bs, a)
    assert a.total == 10 * KB  # the two 4 KiB blocks nest in the 8 KiB block after it is free


def test_streams_share_only_what_events_order():
    # without events the two streams are never ordered: no sharing
    bs = [buf(0, KB, 0, 0, stream=0), buf(1, KB, 5, 5, stream=1)]
    for name in ASSIGNERS:
        a = ASSIGNERS[name](bs)
        check(bs, a)
        assert a.total == 2 * KB, name
    # request 0 (stream 0) is free for stream 1 from step 3 (an event): request 2 there may take its bytes,
    # request 1 (stream 1, step 2) may not; 1 and 2 overlap in time on stream 1
    bs = [buf(0, 2 * KB, 0, 1, stream=0, free_at=(2, 3)), buf(1, KB, 2, 4, stream=1, free_at=(NEVER, 5)),
          buf(2, 2 * KB, 3, 4, stream=1, free_at=(NEVER, 5))]
    assert not bs[0].conflicts(bs[2]) and bs[0].conflicts(bs[1]) and bs[1].conflicts(bs[2])
    assert live_lower_bound(bs, 5) == 3 * KB
    for name in ASSIGNERS:
        a = ASSIGNERS[name](bs)
        check(bs, a)
        if name not in ("no-reuse", "max-block"):
            assert a.total == 3 * KB, name


def test_binary_ranges_follow_ge_rules():
    sizes = [512] * 10 + [4096] * 10 + [65536] * 10
    r = binary_ranges(sizes)
    assert r == sorted(r) and r[-1] == 65536 and all(s in r for s in (512, 4096))
    assert size_class(r, 600) == 4096 and size_class(r, 10 ** 9) == 10 ** 9
    # large buckets (>= 8 MiB, 2+ sizes) are never merged away
    big = binary_ranges([512] * 50 + [LARGE_BLOCK, LARGE_BLOCK + 512, 4 * LARGE_BLOCK])
    assert LARGE_BLOCK + 512 in big


def test_no_reuse_is_the_sum():
    bs = [buf(i, KB * (i + 1), i, i) for i in range(4)]
    assert no_reuse(bs).total == 10 * KB


@pytest.mark.parametrize("name", list(ASSIGNERS))
def test_every_assigner_is_valid_on_a_chain_with_skips(name):
    bs = []
    for i in range(30):
        bs.append(buf(len(bs), (1 + i % 5) * KB, i, i + 1 + (i % 3) * 2))
        if i % 4 == 0:
            bs.append(buf(len(bs), 3 * KB, i, i, late=True))
    a = ASSIGNERS[name](bs)
    check(bs, a)
    assert a.total >= live_lower_bound(bs, 40)


def test_hybrid_keeps_the_smallest():
    bs = [buf(i, (i % 7 + 1) * KB, i, i + 3) for i in range(20)]
    best, totals, _ = assign(bs)
    assert best.total == min(totals.values()) and "no-reuse" not in totals
    with pytest.raises(ValueError, match="unknown memory assigner"):
        assign(bs, "nope")


def test_two_sided_fit_ping_pongs_a_residual_chain_to_the_bound():
    # ResNet's pattern: a long-lived tensor per block, two small ones, and a big one-step workspace
    bs = []
    for blk in range(4):
        t = 3 * blk
        bs.append(buf(len(bs), 4 * KB, t, t + 3))          # the block's input, read by the next block too
        bs.append(buf(len(bs), KB, t + 1, t + 2))
        bs.append(buf(len(bs), KB, t + 2, t + 3))
        bs.append(buf(len(bs), 9 * KB, t + 2, t + 2, late=True))
    bound = live_lower_bound(bs, 20)
    a = two_sided_fit(bs)
    check(bs, a)
    assert a.total == bound
    assert ASSIGNERS["best-fit-size"](bs).total > bound  # greedy by size stacks the workspaces
