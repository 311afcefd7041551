"""Offline-model files: the two members (plan.json, weights.npz) in a zip (stored) or a directory.

Writing is atomic (a temporary file, then a rename). Reading maps the file and copies each weight once out
of it (a re-zipped, compressed file takes the slower general path, np.load with allow_pickle=False); only
the two member names are ever opened, so nothing in a file can name a path.
"""
from __future__ import annotations

import io
import mmap
import os
import secrets
import struct
import zipfile

import numpy as np

from ..errors import ModelLoadError

PLAN_JSON, WEIGHTS_NPZ = "plan.json", "weights.npz"


def write_members(text: str, arrays: dict, path) -> str:
    """Write plan.json (`text`) and weights.npz (`arrays`) to `path`: a zip file, or a directory if `path`
    is one (or ends in /). Returns the path written."""
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    path = os.fspath(path)
    if os.path.isdir(path) or path.endswith(("/", os.sep)):
        os.makedirs(path, exist_ok=True)
        for name, data in ((WEIGHTS_NPZ, buf.getbuffer()), (PLAN_JSON, text.encode())):
            _atomic_write(os.path.join(path, name), data)
        return path
    fd, tmp = _temporary(path)
    try:
        with os.fdopen(fd, "wb") as f, zipfile.ZipFile(f, "w", zipfile.ZIP_STORED) as z:
            z.writestr(PLAN_JSON, text)
            z.writestr(WEIGHTS_NPZ, buf.getbuffer())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path


def _temporary(path: str) -> tuple[int, str]:
    """A new file beside `path` with a unique name, mode 0666 less the umask (the kernel applies it: the
    process umask is never changed, which would race with other threads)."""
    for _ in range(100):
        tmp = f"{path}.{os.getpid()}.{secrets.token_hex(4)}.tmp"
        try:
            return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666), tmp
        except FileExistsError:
            continue
    raise OSError(f"no temporary name free beside {path}")


def _atomic_write(path: str, data) -> None:
    fd, tmp = _temporary(path)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def is_offline_model(model) -> bool:
    """A path to a saved plan: a `.gem` file or directory, or a directory holding plan.json."""
    if not isinstance(model, (str, os.PathLike)):
        return False
    path = os.fspath(model)
    return path.rstrip("/\\").endswith(".gem") or (
        os.path.isdir(path) and os.path.isfile(os.path.join(path, PLAN_JSON)))


def _read_members(path: str) -> tuple[bytes, bytes]:
    if os.path.isdir(path):
        out = []
        for name in (PLAN_JSON, WEIGHTS_NPZ):
            p = os.path.join(path, name)
            if not os.path.isfile(p):
                raise ModelLoadError(f"offline model '{path}': missing {name}")
            with open(p, "rb") as f:
                out.append(f.read())
        return out[0], out[1]
    if not os.path.isfile(path):
        raise ModelLoadError(f"offline model '{path}' does not exist")
    try:
        with zipfile.ZipFile(path) as z:
            names = set(z.namelist())
            for name in (PLAN_JSON, WEIGHTS_NPZ):
                if name not in names:
                    raise ModelLoadError(f"offline model '{path}': missing {name}")
            return z.read(PLAN_JSON), z.read(WEIGHTS_NPZ)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, RuntimeError) as e:
        raise ModelLoadError(f"offline model '{path}' is not a ge plan file: {e}") from e


class _ViewFile(io.RawIOBase):
    """A read-only, seekable file over a memoryview (zipfile reads only headers through it)."""

    def __init__(self, view: memoryview):
        self.view, self.pos = view, 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def seek(self, offset: int, whence: int = 0) -> int:
        self.pos = offset if whence == 0 else self.pos + offset if whence == 1 else len(self.view) + offset
        return self.pos

    def tell(self) -> int:
        return self.pos

    def read(self, n: int = -1) -> bytes:
        end = len(self.view) if n is None or n < 0 else min(len(self.view), self.pos + n)
        data = bytes(self.view[self.pos:end])
        self.pos = end
        return data


def _stored_members(view: memoryview) -> dict[str, memoryview]:
    """name -> data of each member of a zip held in `view`; all must be stored (uncompressed)."""
    out = {}
    with zipfile.ZipFile(_ViewFile(view)) as z:
        for info in z.infolist():
            if info.compress_type != zipfile.ZIP_STORED or info.flag_bits & 1:
                raise ValueError(f"member {info.filename} is compressed or encrypted")
            h = info.header_offset
            n, m = struct.unpack("<HH", view[h + 26:h + 30])
            start = h + 30 + n + m
            if view[h:h + 4] != b"PK\x03\x04" or start + info.file_size > len(view):
                raise ValueError(f"bad local header for {info.filename}")
            out[info.filename] = view[start:start + info.file_size]
    return out


def _npz_fast(view: memoryview) -> dict[str, np.ndarray]:
    """The arrays of an npz written by np.savez, each copied once out of `view` (no pickle: object dtypes
    are refused). Raises on anything unusual; the caller then falls back to np.load."""
    arrays = {}
    for name, data in _stored_members(view).items():
        if not name.endswith(".npy"):
            raise ValueError(f"member {name} is not an array")
        f = _ViewFile(data[:65536 + 16])
        version = np.lib.format.read_magic(f)
        if version == (1, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_1_0(f)
        elif version == (2, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_2_0(f)
        else:
            raise ValueError(f"npy version {version}")
        if dtype.hasobject:
            raise ValueError("object arrays need pickle")
        count = int(np.prod(shape, dtype=np.int64))
        a = np.frombuffer(data, dtype, count, offset=f.tell())
        arrays[name[:-4]] = a.reshape(shape, order="F" if fortran else "C").copy(order="K")
        del a
    return arrays


def _load_fast(path: str):
    """(plan.json bytes, arrays) through one mmap of the file: each weight is copied once. None on any
    surprise (the general path then reads the file and reports what is wrong)."""
    try:
        npz_path = os.path.join(path, WEIGHTS_NPZ) if os.path.isdir(path) else path
        with open(npz_path, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
            view = memoryview(mm)
            try:
                if os.path.isdir(path):
                    text, arrays = None, _npz_fast(view)
                else:
                    members = _stored_members(view)
                    text = bytes(members[PLAN_JSON])
                    arrays = _npz_fast(members[WEIGHTS_NPZ])
                    members = None
            finally:
                view.release()
        if text is None:
            with open(os.path.join(path, PLAN_JSON), "rb") as f:
                text = f.read()
        return text, arrays
    except Exception:  # noqa: BLE001 - any surprise: the general path decides
        return None


def read_members(path: str) -> tuple[bytes, dict[str, np.ndarray]]:
    """(plan.json bytes, the arrays of weights.npz) of an offline model; ModelLoadError when unreadable."""
    fast = _load_fast(path)
    if fast is not None:
        return fast
    text, npz = _read_members(path)
    try:
        with np.load(io.BytesIO(npz), allow_pickle=False) as z:
            return text, {k: z[k] for k in z.files}
    except Exception as e:  # noqa: BLE001 - any decode failure is a bad file
        raise ModelLoadError(f"offline model '{path}': cannot read {WEIGHTS_NPZ}: {e}") from e
