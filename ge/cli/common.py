"""What the commands share: naming a model, the options the flags make, opening a session with progress,
the inputs (ones, or a file), and the few formats every command prints."""
from __future__ import annotations

import os
import sys

import numpy as np

from ..api import RUNTIMES, Session
from ..errors import GEError, InputError
from ..extras import require
from ..offline import is_offline_model
from ..offline import load as load_offline
from ..options import Options
from ..progress_bar import Progress, how
from ..zoo import DEFAULT_MODEL, LIGHT_MODELS, light_model_path

RUNTIME_CHOICES = ("auto",) + RUNTIMES


def model_path(model: str | None) -> str:
    """A file or folder as given, else a light model's short name (`ge models`), else ModelLoadError-like."""
    if model is None:
        return light_model_path(DEFAULT_MODEL)
    if os.path.exists(model):
        return model
    short = model.removeprefix("light_").removesuffix(".onnx")
    if short in LIGHT_MODELS:
        return light_model_path(short)
    hint = f"; or a light model: {', '.join(LIGHT_MODELS)} (`ge models`)" if os.sep not in model else ""
    raise GEError(f"model '{model}' is neither a file nor a folder{hint}")


def label(path: str) -> str:
    """A short name for titles: the light model's name, else the file name."""
    base = os.path.basename(path.rstrip("/\\"))
    return base.removeprefix("light_").removesuffix(".onnx")


def names(text: str | None) -> list[str] | None:
    return [n.strip() for n in text.split(",") if n.strip()] if text else None


def options_of(args, **more) -> Options:
    """Options from the flags every command takes (those a command lacks keep their defaults)."""
    kw = {"thread_budget": getattr(args, "threads", 0) or 0, "aicore_num": getattr(args, "aicore_num", 0) or 0}
    if getattr(args, "max_streams", None) is not None:
        kw["max_streams"] = args.max_streams
        kw["enable_single_stream"] = args.max_streams == 1
    if getattr(args, "input_shape", None):
        kw["input_shape"] = ";".join(args.input_shape)
    if getattr(args, "dynamic_batch", None):
        kw["dynamic_batch"] = args.dynamic_batch
    if getattr(args, "dynamic_dims", None):
        kw["dynamic_dims"] = args.dynamic_dims
    if getattr(args, "data_parallel", None) and getattr(args, "tensor_parallel", None):
        raise GEError("--data-parallel and --tensor-parallel: choose one")
    if getattr(args, "data_parallel", None):
        kw["parallel"], kw["device_count"] = "data", args.data_parallel
    if getattr(args, "tensor_parallel", None):
        kw["parallel"], kw["device_count"] = "tensor", args.tensor_parallel
    if getattr(args, "hcom_parallel", False):
        kw["hcom_parallel"] = True
    if getattr(args, "device_id", -1) not in (-1, None):
        kw["device_id"] = args.device_id
    kw.update(more)
    return Options(**kw)


def tf_names(args) -> dict:
    """inputs=/outputs= of a TensorFlow graph, from --inputs-names / --outputs-names."""
    out = {}
    if getattr(args, "inputs_names", None):
        out["inputs"] = names(args.inputs_names)
    if getattr(args, "outputs_names", None):
        out["outputs"] = names(args.outputs_names)
    return out


def check_runtime(runtime: str) -> str:
    if runtime not in RUNTIME_CHOICES:
        raise GEError(f"unknown runtime '{runtime}': choose one of {', '.join(RUNTIME_CHOICES)}")
    return runtime


def check_extras(args) -> None:
    """Every optional package a command's flags need, checked before any work (ge.extras)."""
    if getattr(args, "plot", None):
        require("plot", f"ge {args.cmd} --plot")
    if getattr(args, "vs", None) == "onnxruntime":
        require("bench", "ge bench --vs onnxruntime")
    if getattr(args, "by_op", False):
        require("bench", "ge bench --by-op")


def open_session(path: str, args, progress: Progress, runtime: str | None = None, **options) -> Session:
    """Session(path) with the command's options, timed by phase (read, compile phases, load, kernels)."""
    runtime = check_runtime(runtime or args.runtime)
    model = path
    if is_offline_model(path):
        with progress.phase("read .gem"):
            model = load_offline(path)
    with progress.phase("load"):
        sess = Session(model, runtime=runtime, options=options_of(args, **options), **tf_names(args))
    return sess


def compile_kernels(sess, progress: Progress) -> None:
    """Compile what the first run would (Session.warm_up: the phase "warm-up"), under `progress`."""
    sess.warm_up()


def warm_session(path: str, args, traced: bool = False) -> tuple:
    """(session, feeds) after --warmup untimed runs (at least one: kernels compiled or loaded, an instance
    created), with progress; for the commands that then time or trace runs (`traced`: the session that
    run_traced traces, a dynamic model's at the feeds' shapes)."""
    with Progress() as progress:
        sess = open_session(path, args, progress)
        inputs = feeds(sess, args)
        if traced and sess.runtime == "v2" and sess.plan.is_dynamic and sess.stream_threads <= 1:
            # a trace needs the plan run without shapes known only at run time: the model at the feeds' shapes
            with progress.phase("load"):
                at = sess.at_shapes(inputs)
            print(f"ge: {label(path)} has shapes known only at run time; traced at the feeds' shapes ("
                  + ", ".join(f"{i.name}{list(np.shape(inputs[i.name]))}" for i in sess.get_inputs())
                  + f"), compiled again with them fixed: {plural(len(at.plan.nodes), 'node')}"
                  + (", still dynamic" if at.plan.is_dynamic else ", static"), file=sys.stderr)
            sess = at
        compile_kernels(sess, progress)
        with progress.phase("warm-up runs"):   # the first is the session's "first run"
            for _ in range(max(args.warmup, 1)):
                sess.run(None, inputs)
    return sess, inputs


# -- inputs and outputs ------------------------------------------------------------------------------------

def feeds(sess, args, quiet: bool = False) -> dict:
    """--inputs F.npz (or F.npy for one input): the arrays named by input; else ones. A symbolic dim left
    without --input-shape is 1 on ones, said on stderr."""
    inputs = sess.get_inputs()
    if getattr(args, "inputs", None):
        return _from_file(args.inputs, inputs)
    gp = getattr(sess, "gear_plans", None)
    if gp is not None and gp.dims:   # dims gears: ones at the largest gear's shapes (a run needs a gear's)
        plan = sess.plan
        return {i.name: np.ones(plan.tensors[t].shape, i.dtype) for i, t in zip(inputs, plan.inputs)}
    out = {}
    for i in inputs:
        free = [d for d in i.shape if not isinstance(d, int)]
        if free and not quiet:
            print(f"ge: input '{i.name}' has symbolic dims {free}: running ones with each at 1 (fix them with "
                  f"--input-shape {i.name}:{','.join(str(d) if isinstance(d, int) else '1' for d in i.shape)} "
                  "or give data with --inputs F.npz)", file=sys.stderr)
        out[i.name] = np.ones(tuple(d if isinstance(d, int) else 1 for d in i.shape), i.dtype)
    return out


def _from_file(path: str, inputs) -> dict:
    try:
        data = np.load(path, allow_pickle=False)
    except (OSError, ValueError) as e:
        raise InputError(f"--inputs '{path}': cannot read it as .npz or .npy ({e})") from None
    if isinstance(data, np.ndarray):   # .npy: the one input
        if len(inputs) != 1:
            raise InputError(f"--inputs '{path}' holds one array; the model has {len(inputs)} inputs: give an "
                             f".npz with arrays named {', '.join(i.name for i in inputs)}")
        return {inputs[0].name: data}
    with data:
        arrays = {k: data[k] for k in data.files}
    wanted = {i.name for i in inputs}
    got = {}
    for k, a in arrays.items():   # TensorFlow names: "x:0" or "x"
        name = k if k in wanted else k[:-2] if k.endswith(":0") and k[:-2] in wanted else k
        got[name] = a
    missing = sorted(wanted - set(got))
    if missing:
        raise InputError(f"--inputs '{path}' has no array for input(s) {', '.join(missing)}; it holds "
                         f"{', '.join(arrays) or 'nothing'}")
    return got   # an array for no input: Session.run names it


def save_outputs(path: str, sess, outs) -> None:
    """The outputs in one .npz, each under its output name (np.load(path)[name])."""
    arrays = {o.name: a for o, a in zip(sess.get_outputs(), outs)}
    try:
        np.savez(path, **arrays)
    except OSError as e:
        raise GEError(f"--save-outputs '{path}': {e}") from None


# -- formats -----------------------------------------------------------------------------------------------

def mib(n: int) -> str:
    return f"{n / 2**20:.2f} MiB"


def memory_line(sess) -> str:
    """Weights and the feature map of the plan the session runs: the static memory plan's, or (tensors with
    shapes known only at run time) runtime_v2's caching allocator peak over the runs so far."""
    from ..partition import piece_memory
    plan = sess.plan
    piece_w, piece_fm = piece_memory(plan)   # a dynamic plan's static pieces: their own weights and plans
    line = f"memory    weights {mib(sum(a.nbytes for a in plan.constants.values()) + piece_w)}"
    s = plan.memory.stats if plan.memory is not None else None
    if not plan.is_dynamic and s is not None:   # the numbers and words of `ge plan`
        return line + (f"   feature map: no reuse {mib(s.no_reuse_bytes)}, planned {mib(s.feature_map_bytes)} "
                       f"({s.ratio:.2f}x lower bound, by {s.assigner})")
    dyn = sess.allocator_stats().get("dynamic") or {}
    line += (f"   feature map (shapes known at run time): allocator peak {mib(dyn.get('peak_allocated', 0))} "
             f"allocated, {mib(dyn.get('peak_reserved', 0))} reserved")
    if s is not None and s.feature_map_bytes:
        line += f", plus {mib(s.feature_map_bytes)} planned for the static tensors"
    if piece_fm:
        line += f", plus {mib(piece_fm)} planned for the static pieces (runtime_v1)"
    return line


def plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def cores(sess) -> str:
    """The AI cores the plan is tiled for, the tasks tiled over them, and the stream threads."""
    from ..partition import task_nodes
    plan = sess.plan
    nodes = task_nodes(plan)   # a dynamic plan's static pieces: their tasks
    tiled = sum(n.launch is not None and n.launch.block_dim > 1 for n in nodes)
    tasks = sum(n.launch is not None and not n.no_task for n in nodes)
    pulled = sess.stats().get("pulled_by_cores", 0)
    where = f"pulled by the {pulled} cores" if pulled else f"on {plural(sess.stream_threads, 'thread')}"
    return (f"{plan.options.aicore_num} AI cores ({tiled} of {tasks} tasks split into blocks), "
            f"{plural(plan.num_streams, 'stream')} {where}")


def where_time_went(progress: Progress, import_s: float, first_run_s: float | None = None) -> str:
    """One line: importing ge, the compile's phases, kernel compiles (compiled now / from the disk cache),
    the rest of loading, the first run."""
    parts = [f"import ge {import_s:.2f}"]
    read = progress.total("read .gem")
    if read.seconds:
        parts.append(f"read .gem {read.seconds:.2f}")
    for phase in ("import", "passes", "planning"):
        t = progress.total(phase)
        if t.seconds:
            parts.append(f"{'model import' if phase == 'import' else phase} {t.seconds:.2f}")
    k = progress.total("compiling kernels")
    if k.total:
        parts.append(f"kernels {k.total} in {k.seconds:.2f} ({how(k)})")
    n, seconds = progress.numba_seconds()
    if n:   # every Numba compile of the process, whatever triggered it (a thunk, a pass, a first call)
        parts.append(f"numba compiled {plural(n, 'kernel')} in {seconds:.2f}")
    load = progress.total("load").own + progress.total("runtime load").own + progress.total("warm-up").own
    parts.append(f"load {load:.2f}")
    if first_run_s is not None:
        parts.append(f"first run {first_run_s:.2f}")
    return "   ".join(parts) + " s"
