"""A video analysis pipeline on three streams (the seeds' scenario 1): DVPP -> AICORE -> AICPU over frames.

    python examples/video_pipeline.py [--frames 16] [--trace pipeline.json]

Per frame f (ring slot f mod SLOTS):
  DVPP stream    resize the HxWx3 uint8 frame to the model's 224x224 and normalize it into the slot's input
                 buffer (waits until the AICORE stream has consumed frame f - SLOTS from that slot);
  AICORE stream  waits for the DVPP event, runs the classifier (a ge.Session, one stream) into the slot's
                 logits buffer (waits until AICPU has read frame f - SLOTS's logits);
  AICPU stream   waits for the AICORE event, softmax and top-5 into the results.
The host enqueues every task at once (ge.npu streams run asynchronously) and synchronizes at the end, so
frame f + 1's pre-processing overlaps frame f's inference and frame f - 1's post-processing. Events are
reused across frames by generation (each wait is for the record enqueued last).
"""
from __future__ import annotations

import argparse
import time

import numpy as np

import ge
from ge.npu import Event, Stream, Tracer
from ge.zoo import light_model_path

SLOTS = 2
MEAN = np.array([0.485, 0.456, 0.406], np.float32).reshape(3, 1, 1)
STD = np.array([0.229, 0.224, 0.225], np.float32).reshape(3, 1, 1)


def preprocess(frame: np.ndarray, out: np.ndarray) -> None:
    """DVPP: nearest-neighbour resize of an HxWx3 uint8 frame to out's 224x224, CHW, normalized."""
    h, w, _ = frame.shape
    size = out.shape[-1]
    rows = (np.arange(size) * h) // size
    cols = (np.arange(size) * w) // size
    img = frame[rows][:, cols].transpose(2, 0, 1).astype(np.float32) / 255.0
    out[0] = (img - MEAN) / STD


def postprocess(logits: np.ndarray, results: list, f: int) -> None:
    """AICPU: softmax and top-5 (class, probability)."""
    z = logits.reshape(-1).astype(np.float64)
    p = np.exp(z - z.max())
    p /= p.sum()
    top = np.argsort(-p)[:5]
    results[f] = [(int(c), float(p[c])) for c in top]


class Pipeline:
    def __init__(self, model=None, tracer=None):
        self.sess = ge.Session(model or light_model_path("squeezenet"), runtime="v2",
                               options=ge.Options(enable_single_stream=True))
        self.input = self.sess.get_inputs()[0]
        shape = tuple(self.input.shape)
        out_shape = tuple(self.sess.get_outputs()[0].shape)
        self.inputs = [np.zeros(shape, np.float32) for _ in range(SLOTS)]
        self.logits = [np.zeros(out_shape, np.float32) for _ in range(SLOTS)]
        self.dvpp, self.aicore, self.aicpu = (Stream(i, name=n, tracer=tracer)
                                              for i, n in enumerate(("DVPP", "AICORE", "AICPU")))
        self.pre_done = [Event(f"pre{s}") for s in range(SLOTS)]
        self.infer_done = [Event(f"infer{s}") for s in range(SLOTS)]
        self.post_done = [Event(f"post{s}") for s in range(SLOTS)]

    def infer(self, slot: int) -> None:
        self.sess.run(None, {self.input.name: self.inputs[slot]}, outputs={
            self.sess.get_outputs()[0].name: self.logits[slot]})

    def run(self, frames) -> list:
        results = [None] * len(frames)
        for f, frame in enumerate(frames):
            s = f % SLOTS
            self.dvpp.wait(self.infer_done[s])            # the slot's input was consumed
            self.dvpp.launch(preprocess, frame, self.inputs[s], name=f"resize+normalize {f}")
            self.dvpp.record(self.pre_done[s])
            self.aicore.wait(self.pre_done[s])
            self.aicore.wait(self.post_done[s])           # the slot's logits were read
            self.aicore.launch(self.infer, s, name=f"inference {f}")
            self.aicore.record(self.infer_done[s])
            self.aicpu.wait(self.infer_done[s])
            self.aicpu.launch(postprocess, self.logits[s], results, f, name=f"top5 {f}")
            self.aicpu.record(self.post_done[s])
        for st in (self.dvpp, self.aicore, self.aicpu):
            st.synchronize(timeout=300)
        return results

    def run_sequential(self, frames) -> list:
        results = [None] * len(frames)
        for f, frame in enumerate(frames):
            preprocess(frame, self.inputs[0])
            self.infer(0)
            postprocess(self.logits[0], results, f)
        return results

    def close(self) -> None:
        for st in (self.dvpp, self.aicore, self.aicpu):
            st.close()
        self.sess.close()


def frames(n: int, h: int = 480, w: int = 640, seed: int = 0) -> list:
    rng = np.random.default_rng(seed)
    return [rng.integers(0, 256, (h, w, 3), dtype=np.uint8) for _ in range(n)]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--frames", type=int, default=16)
    ap.add_argument("--trace", help="write a Chrome/Perfetto trace of the three streams")
    args = ap.parse_args(argv)
    tracer = Tracer("video pipeline")
    pipe = Pipeline(tracer=tracer)
    video = frames(args.frames)
    try:
        pipe.run(video[:2])                                 # warm-up: kernels compiled or loaded
        tracer.slices.clear()
        t0 = time.perf_counter()
        want = pipe.run_sequential(video)
        seq = time.perf_counter() - t0
        t0 = time.perf_counter()
        got = pipe.run(video)
        par = time.perf_counter() - t0
    finally:
        pipe.close()
    assert [[c for c, _ in r] for r in got] == [[c for c, _ in r] for r in want]
    st = tracer.stats()
    print(f"{args.frames} frames: sequential {seq * 1e3:.1f} ms, 3 streams {par * 1e3:.1f} ms "
          f"({seq / par:.2f}x); busy per stream (ms): "
          + ", ".join(f"{k}: {v * 1e3:.1f}" for k, v in st["busy"].items())
          + f"; overlap {st['overlap'] * 1e3:.1f} ms")
    if args.trace:
        tracer.save(args.trace)
        print(f"trace written to {args.trace}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
