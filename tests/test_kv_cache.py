"""The KV cache in place (Options.kv_cache_max_len, ge.KVCache, ge.generate, `ge generate`): a decoder step export
run step by step against onnxruntime running the same export with its Concat'd presents fed back."""
from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest

import ge
from ge import exports
from ge.errors import GEError, InputError
from ge.generation import pad_prompts, pick, prompt_chunks, step_sizes
from ge.plan import aligned_empty

NAME, LAYERS, HEADS, HEAD, VOCAB = "gpt2_tiny_step", 2, 4, 16, 100
MAX = 24


@pytest.fixture(scope="module")
def model():
    return exports.load(NAME)


@pytest.fixture(scope="module")
def sess(model):
    return ge.Session(model, options=ge.Options(kv_cache_max_len=MAX))


@pytest.fixture(scope="module")
def ref(model):
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    return ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])


def _zeros(shape):
    a = aligned_empty(shape, np.float32)
    a[...] = 0
    return a


def _ort_loop(ref, prompts, new, rng=None, **sampling):
    """The reference: onnxruntime on the export, presents fed back as the next pasts."""
    ids, mask, _ = pad_prompts(prompts)
    b = ids.shape[0]
    past = {f"past_key_values.{i}.{kv}": np.zeros((b, HEADS, 0, HEAD), np.float32)
            for i in range(LAYERS) for kv in ("key", "value")}
    names = [o.name for o in ref.get_outputs()]
    out = []
    for _ in range(new):
        r = ref.run(None, {"input_ids": ids, "attention_mask": mask, **past})
        tok = pick(r[0][:, -1], rng, rng is not None, **sampling)
        out.append(tok)
        past = {n.replace("present", "past_key_values"): v for n, v in zip(names[1:], r[1:])}
        ids, mask = tok[:, None], np.concatenate([mask, np.ones((b, 1), np.int64)], axis=1)
    return np.stack(out, 1).tolist()


def test_steps_match_onnxruntime_with_the_past_in_place(sess, ref):
    plan = sess.plan
    assert [plan.tensors[i].name for i in plan.outputs] == ["logits"]   # the presents live in the cache
    assert sum(n.op_type == "CachedAttention" for n in plan.nodes) == LAYERS
    # the projections: one-row GEMVs over packed weights (gemm_to_matmul, gemv.gemv_packed)
    assert not any(n.op_type in ("Gemm", "FusedGemm") for n in plan.nodes)
    assert not any(n.op_type == "Concat" and any(plan.tensors[i].name.startswith("past_key_values")
                                                 for i in n.inputs) for n in plan.nodes)
    cache = ge.KVCache(sess, batch=2)
    buffers = {k: a.ctypes.data for k, a in cache.arrays.items()}
    rng = np.random.default_rng(1)
    ids = rng.integers(0, VOCAB, (2, 4))
    past = {f"past_key_values.{i}.{kv}": np.zeros((2, HEADS, 0, HEAD), np.float32)
            for i in range(LAYERS) for kv in ("key", "value")}
    names = [o.name for o in ref.get_outputs()]
    total = 0
    for _ in range(4):
        total += ids.shape[1]
        mask = np.ones((2, total), np.int64)
        r = ref.run(None, {"input_ids": ids, "attention_mask": mask, **past})
        (logits,) = sess.run(None, {"input_ids": ids, "attention_mask": mask}, kv_cache=cache)
        np.testing.assert_allclose(logits, r[0], rtol=1e-5, atol=1e-5)
        assert cache.length == total
        for n, v in zip(names[1:], r[1:]):
            np.testing.assert_allclose(cache.present(n.replace("present", "past_key_values")), v, atol=1e-6)
        past = {n.replace("present", "past_key_values"): v for n, v in zip(names[1:], r[1:])}
        ids = r[0][:, -1:].argmax(-1)
    assert {k: a.ctypes.data for k, a in cache.arrays.items()} == buffers
    # the presents compared above are the caller's buffers: the steps wrote their rows there, nothing copied
    assert sess.stats()["zero_copy_inputs"] >= 4 * 2 * LAYERS


def test_generate_greedy_equals_the_onnxruntime_loop(sess, ref):
    prompts = [[5, 17, 3], [40, 2, 99, 7, 61]]   # different lengths: left-padded, the padding masked
    want = _ort_loop(ref, prompts, 6)
    for _ in range(3):   # a shape's later runs replay on runtime_v2: the same tokens
        out = ge.generate(sess, prompts, 6)
        assert out.new_tokens == want
    assert out.tokens[0] == prompts[0] + want[0] and out.steps == 6 and out.tokens_per_second > 0


def test_generate_one_token_steps_equals_the_onnxruntime_loop(model, ref):
    prompts = [[5, 17, 3], [40, 2, 99, 7, 61]]   # the prompt a token a step through a plan of one-token steps
    out = ge.generate(model, prompts, 5, one_token_steps=True)
    assert out.new_tokens == _ort_loop(ref, prompts, 5)


def test_generate_sampling_is_seeded(sess, ref):
    prompts = [[1, 2, 3, 4]]
    kw = dict(temperature=1.5, top_k=20, top_p=0.9)
    a = ge.generate(sess, prompts, 6, seed=7, **kw)
    assert ge.generate(sess, prompts, 6, seed=7, **kw).new_tokens == a.new_tokens
    assert a.new_tokens == _ort_loop(ref, prompts, 6, np.random.default_rng(7), **kw)


def test_generate_stops_each_sequence_at_a_stop_token(sess, ref):
    prompts = [[5, 17, 3], [40, 2, 99, 7, 61]]
    want = _ort_loop(ref, prompts, 5)
    stop = want[0][1]
    out = ge.generate(sess, prompts, 5, stop_tokens=[stop])
    assert out.new_tokens[0] == want[0][:want[0].index(stop) + 1]
    k = want[1].index(stop) + 1 if stop in want[1] else 5
    assert out.new_tokens[1] == want[1][:k]


def test_the_cli_prints_tokens_and_their_rate(capsys, sess):
    from ge.cli import main
    assert main(["generate", NAME, "--prompt", "5,17,3;40,2,99,7,61", "--max-new-tokens", "3"]) == 0
    text = capsys.readouterr().out
    want = ge.generate(sess, [[5, 17, 3], [40, 2, 99, 7, 61]], 3).new_tokens
    assert f"sequence 0: 5 17 3 | {' '.join(map(str, want[0]))}" in text
    assert "tokens/s" in text
    for flag in ("--static-steps", "--dynamic-steps"):
        assert main(["generate", NAME, "--prompt", "5,17,3;40,2,99,7,61", "--max-new-tokens", "3", flag]) == 0
        assert f"sequence 0: 5 17 3 | {' '.join(map(str, want[0]))}" in capsys.readouterr().out


def test_bad_input_names_what_is_at_fault(sess, model):
    cache = ge.KVCache(sess, batch=1)
    ids = np.zeros((1, 1), np.int64)
    with pytest.raises(InputError, match="attention_mask"):   # a past longer than the cache
        sess.run(None, {"input_ids": ids, "attention_mask": np.ones((1, MAX + 1), np.int64)})
    with pytest.raises(InputError, match="attention_mask"):   # the mask does not follow the cache's length
        sess.run(None, {"input_ids": ids, "attention_mask": np.ones((1, 3), np.int64)}, kv_cache=cache)
    with pytest.raises(InputError, match="batch"):
        sess.run(None, {"input_ids": np.zeros((2, 1), np.int64), "attention_mask": np.ones((2, 1), np.int64)},
                 kv_cache=cache)
    feeds = {"input_ids": ids, "attention_mask": np.ones((1, 1), np.int64)}
    caches = {f"past_key_values.{i}.{kv}": _zeros((1, HEADS, MAX, HEAD))
              for i in range(LAYERS) for kv in ("key", "value")}
    unbindable = np.zeros(1 + HEADS * MAX * HEAD, np.float32)[1:].reshape(1, HEADS, MAX, HEAD)   # 4 bytes off
    with pytest.raises(InputError, match="past_key_values.1.key.*32-byte"):   # a copy would lose the step's rows
        sess.run(None, {**feeds, **caches, "past_key_values.1.key": unbindable})
    with pytest.raises(InputError, match="past_key_values.0.key"):   # heads that differ
        sess.run(None, {**feeds, **caches, "past_key_values.0.key": np.zeros((1, 3, MAX, HEAD), np.float32)})
    with pytest.raises(InputError, match="past_key_values.1.value"):   # the wrong dtype
        sess.run(None, {**feeds, **caches, "past_key_values.1.value": np.zeros((1, HEADS, MAX, HEAD))})
    with pytest.raises(InputError, match="cache rows"):
        ge.generate(sess, [[1] * 20], MAX)
    with pytest.raises(InputError, match="top_p"):
        ge.generate(sess, [[1]], 2, top_p=0)
    with pytest.raises(GEError, match="Concat"):   # no past to keep: an export without present outputs
        ge.Session(exports.load("gpt2_tiny"), options=ge.Options(kv_cache_max_len=8))
    with pytest.raises(GEError, match="runtime_v2"):   # runtime_v1 would copy the cache into its arena
        ge.Session(model, runtime="v1", options=ge.Options(kv_cache_max_len=8, input_shape="input_ids:1,1;"
                                                             "attention_mask:1,4"))
    fixed = ge.Session(model, options=ge.Options(kv_cache_max_len=8, input_shape="input_ids:1,1;attention_mask:1,4"))
    assert fixed.runtime == "v2"   # auto: a static plan with the cache in place stays on runtime_v2


# -- Options.kv_cache_static: one static step plan for every past length -----------------------------------

@pytest.fixture(scope="module")
def static(model):
    return ge.Session(model, options=ge.Options(kv_cache_max_len=MAX, kv_cache_static=True))


def test_a_static_step_serves_every_past_on_runtime_v1(static, sess, ref):
    from ge.plan import host_driven
    plan = static.plan
    assert static.runtime == "v1" and not host_driven(plan)   # auto: the task sink
    shapes = {plan.tensors[i].name: plan.tensors[i].shape for i in plan.inputs}
    assert shapes["input_ids"] == (1, 1) and shapes["attention_mask"] == (1, MAX) and shapes["past_length"] == (1,)
    cache, plain = ge.KVCache(static, batch=1), ge.KVCache(sess, batch=1)
    buffers = {k: a.ctypes.data for k, a in cache.arrays.items()}
    past = {f"past_key_values.{i}.{kv}": np.zeros((1, HEADS, 0, HEAD), np.float32)
            for i in range(LAYERS) for kv in ("key", "value")}
    names = [o.name for o in ref.get_outputs()]
    ids = np.array([[7]])
    for total in range(1, 9):   # past 0 -> 7: one plan
        mask = np.ones((1, total), np.int64)
        r = ref.run(None, {"input_ids": ids, "attention_mask": mask, **past})
        before = {k: a.copy() for k, a in cache.arrays.items()}
        (logits,) = static.run(None, {"input_ids": ids, "attention_mask": mask}, kv_cache=cache)
        for k, a in cache.arrays.items():   # memory moved a step: the new token's row of each cache, no other
            assert set(np.nonzero((a != before[k]).any(axis=(0, 1, 3)))[0]) <= {total - 1}, k
        (want,) = sess.run(None, {"input_ids": ids, "attention_mask": mask}, kv_cache=plain)
        np.testing.assert_array_equal(logits, want)   # the same bits as the step shaped by its past
        np.testing.assert_allclose(logits, r[0], rtol=1e-5, atol=1e-5)
        for n, v in zip(names[1:], r[1:]):
            np.testing.assert_array_equal(cache.present(n.replace("present", "past_key_values")),
                                          plain.present(n.replace("present", "past_key_values")))
        past = {n.replace("present", "past_key_values"): v for n, v in zip(names[1:], r[1:])}
        ids = r[0][:, -1:].argmax(-1)
    assert {k: a.ctypes.data for k, a in cache.arrays.items()} == buffers
    # runtime_v1 bound the caches, the padded mask and the past length in place, every step
    assert static.stats()["zero_copy_inputs"] >= 8 * (2 * LAYERS + 2)


def test_a_static_step_replays_on_runtime_v2(model, static):
    v2 = ge.Session(model, "v2", options=ge.Options(kv_cache_max_len=MAX, kv_cache_static=True))
    a, b = ge.KVCache(static, batch=1), ge.KVCache(v2, batch=1)
    for step in range(5):
        feeds = {"input_ids": np.array([[3 + step]]), "attention_mask": np.ones((1, step + 1), np.int64)}
        np.testing.assert_array_equal(v2.run(None, feeds, kv_cache=b)[0], static.run(None, feeds, kv_cache=a)[0])
    assert v2.stats()["last_run"] == "replayed"   # one shape for every step: recorded once, then replayed


def test_a_static_step_refuses_feeds_that_do_not_fit(static):
    caches = {f"past_key_values.{i}.{kv}": _zeros((1, HEADS, MAX, HEAD))
              for i in range(LAYERS) for kv in ("key", "value")}
    feeds = {"input_ids": np.zeros((1, 1), np.int64), "attention_mask": np.ones((1, MAX), np.int64), **caches}
    with pytest.raises(InputError, match="past_length"):   # the last row is the new token's: past < MAX
        static.run(None, {**feeds, "past_length": np.array([MAX], np.int64)})
    with pytest.raises(InputError, match="past_length"):
        static.run(None, feeds)
    with pytest.raises(InputError, match="attention_mask.*padded"):
        static.run(None, {**feeds, "attention_mask": np.ones((1, 3), np.int64), "past_length": np.array([2])})
    (logits,) = static.run(None, {**feeds, "past_length": np.array([0], np.int64)})   # the raw idiom
    assert np.isfinite(logits).all()
    with pytest.raises(GEError, match="kv_cache_static needs kv_cache_max_len"):
        ge.Options(kv_cache_static=True)
    with pytest.raises(GEError, match="kv_cache_static: .* node .* known only at run time"):   # sizes left unpadded
        ge.Session(exports.load(NAME),
                   options=ge.Options(kv_cache_max_len=MAX, kv_cache_static=True, disabled_passes=("kv_cache_pad",)))


def test_generate_static_steps_equals_the_onnxruntime_loop(model, ref, static, sess):
    prompts = [[5, 17, 3], [40, 2, 99, 7, 61]]   # the default: the prompt through a prefill gear, then the step
    out = ge.generate(model, prompts, 5)
    assert out.static and out.fallback is None and out.prompt_steps == 1
    assert out.new_tokens == _ort_loop(ref, prompts, 5)
    one = [[9, 4, 12, 33]]   # a kv_cache_static session given, its prompt session beside it
    assert ge.generate(static, one, 6, prompt_session=sess).new_tokens == _ort_loop(ref, one, 6)
    with pytest.raises(InputError, match="prompt_session"):
        ge.generate(static, one, 2, prompt_session=static)


def test_a_prefill_gear_gives_the_bits_of_the_step_shaped_by_its_past(model, sess):   # on 1 core vs the default
    geared = ge.Session(model, options=ge.Options(kv_cache_max_len=MAX, kv_cache_static=True, aicore_num=1,
                                                  input_shape="input_ids:1,-1", dynamic_dims="1;2;5"))
    assert geared.runtime == "v1" and step_sizes(geared, 1) == {1, 2, 5}
    a, b = ge.KVCache(geared, batch=1), ge.KVCache(sess, batch=1)
    ids = np.array([[4, 8, 15, 16, 23, 42, 7]])
    for lo, hi in ((0, 5), (5, 7), (7, 8)):   # a prompt of 5 (blocks), then 2 (rows), then one token
        feeds = {"input_ids": ids[:, lo:hi] if hi <= 7 else np.array([[9]]), "attention_mask": np.ones((1, hi),
                                                                                                       np.int64)}
        np.testing.assert_array_equal(geared.run(None, feeds, kv_cache=a)[0], sess.run(None, feeds, kv_cache=b)[0])
    assert a.length == 8
    with pytest.raises(InputError, match="match no gear"):
        geared.run(None, {"input_ids": ids[:, :3], "attention_mask": np.ones((1, 11), np.int64)}, kv_cache=a)
    assert prompt_chunks(13, {1, 4, 8}) == [8, 4, 1] and prompt_chunks(4, None) == [4]
    with pytest.raises(InputError, match="cannot be cut"):
        prompt_chunks(3, {2})


def test_generate_falls_back_to_steps_shaped_by_the_past_saying_why(model, ref, caplog):
    unpadded = ge.Options(disabled_passes=("kv_cache_pad",))   # the static plan then keeps sizes of the past
    with caplog.at_level("WARNING", logger="ge"):
        out = ge.generate(model, [[5, 17, 3]], 4, options=unpadded)
    assert not out.static and "kv_cache_static" in out.fallback and "no static step plan" in caplog.text
    assert out.new_tokens == _ort_loop(ref, [[5, 17, 3]], 4)
    with pytest.raises(GEError, match="kv_cache_static"):   # static_steps=True: no fallback
        ge.generate(model, [[5, 17, 3]], 4, options=unpadded, static_steps=True)
    assert not ge.generate(model, [[5, 17, 3]], 2, static_steps=False).static


def test_the_cli_says_why_the_steps_are_not_static(capsys, monkeypatch):
    from ge.cli import main

    def refuse(graph, max_len):
        raise GEError("kv_cache_static: a size ge cannot pad")
    monkeypatch.setattr(ge.kv_cache, "static_shapes", refuse)
    assert main(["generate", NAME, "--prompt", "5,17,3", "--max-new-tokens", "2"]) == 0
    assert "no static step plan for this export: kv_cache_static: a size ge cannot pad" in capsys.readouterr().out
