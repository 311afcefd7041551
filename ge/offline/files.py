"""Offline-model files: the two members (plan.json, weights.npz) in a zip (stored) or a directory.

Writing is atomic (a temporary file, then a rename). Reading maps the file and copies each weight once out
of it (a re-zipped, compressed file takes the slower general path, bounded.py); only the two member names
are ever opened, so nothing in a file can name a path. Reading is bounded (bounded.py): plan.json first,
then every array's npy header checked against it (`check`) before any weight is read.
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
from .bounded import Check, npz_general, npz_headers, read_member, read_stored

PLAN_JSON, WEIGHTS_NPZ = "plan.json", "weights.npz"
NPZ_SLACK = 16 << 20   # weights.npz beyond its arrays' bytes: zip headers and npy headers


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


def _npz_fast(view: memoryview, check: Check) -> dict[str, np.ndarray]:
    """The arrays of an npz written by np.savez, each copied once out of `view` (no pickle: object dtypes
    are refused). Every header is checked (`check`) before any array is copied; a ModelLoadError from it is
    the answer, anything else unusual raises ValueError and the caller takes the general path."""
    members = _stored_members(view)
    heads = npz_headers({name: _ViewFile(data[:65536 + 16]) for name, data in members.items()},
                        {name: len(data) for name, data in members.items()}, check)
    arrays = {}
    for name, (shape, fortran, dt, offset, count) in heads.items():
        a = np.frombuffer(members[name], dt, count, offset=offset)
        arrays[name[:-4]] = a.reshape(shape, order="F" if fortran else "C").copy(order="K")
        del a
    return arrays


def _zip_members(path: str):
    try:
        z = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, RuntimeError, ValueError) as e:
        raise ModelLoadError(f"offline model '{path}' is not a ge plan file: {e}") from e
    names = set(z.namelist())
    for name in (PLAN_JSON, WEIGHTS_NPZ):
        if name not in names:
            z.close()
            raise ModelLoadError(f"offline model '{path}': missing {name}")
    return z


def _where(path: str) -> str:
    if os.path.isdir(path):
        for name in (PLAN_JSON, WEIGHTS_NPZ):
            if not os.path.isfile(os.path.join(path, name)):
                raise ModelLoadError(f"offline model '{path}': missing {name}")
        return "dir"
    if not os.path.isfile(path):
        raise ModelLoadError(f"offline model '{path}' does not exist")
    return "zip"


def read_plan(path: str, cap: int) -> bytes:
    """plan.json's bytes, read through a stream limited by its declared size and `cap`."""
    if _where(path) == "dir":
        return read_stored(os.path.join(path, PLAN_JSON), f"offline model '{path}': {PLAN_JSON}", cap)
    with _zip_members(path) as z:
        return read_member(z, PLAN_JSON, f"offline model '{path}'", cap)


def _weights_fast(path: str, kind: str, check: Check) -> dict[str, np.ndarray] | None:
    """One mmap, each weight copied once; None when the file takes the general path (compressed, unusual)."""
    refused = None
    try:
        npz_path = os.path.join(path, WEIGHTS_NPZ) if kind == "dir" else path
        with open(npz_path, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
            view = memoryview(mm)
            try:
                return _npz_fast(view if kind == "dir" else _stored_members(view)[WEIGHTS_NPZ], check)
            except ModelLoadError as e:   # raised below, once no frame holds a view of the map
                refused = ModelLoadError(str(e))
            finally:
                view.release()
    except Exception:  # noqa: BLE001 - any surprise: the general path decides and says what is wrong
        if refused is None:
            return None
    raise refused


def read_weights(path: str, check: Check) -> dict[str, np.ndarray]:
    """The arrays of weights.npz; each npy header passes `check` (against plan.json, the file's size and
    `check.cap`, the device's capacity) before any of its data is read."""
    kind = _where(path)
    fast = _weights_fast(path, kind, check)
    if fast is not None:
        return fast
    where = f"offline model '{path}'"
    if kind == "dir":
        npz = read_stored(os.path.join(path, WEIGHTS_NPZ), f"{where}: {WEIGHTS_NPZ}", check.cap + NPZ_SLACK)
    else:
        with _zip_members(path) as z:
            npz = read_member(z, WEIGHTS_NPZ, f"offline model '{path}'", check.cap + NPZ_SLACK)
    return npz_general(npz, check, check.cap, where)
