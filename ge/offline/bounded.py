"""Bounded reading of an offline model's members: nothing a file says makes ge read or allocate beyond it.

A `.gem` is untrusted input. Its numbers (a zip member's declared size, an npy header's shape) decide how
much ge inflates and allocates, so each is checked before it is acted on:
  Step 1. A zip member is inflated through a stream limited by min(its declared size, a global cap); a member
          that declares more than the cap is refused before a byte is inflated, one that inflates past its
          declared size as soon as it does. Both limits are in the message (a deflate bomb of a plan.json is
          a ModelLoadError, never a MemoryError).
  Step 2. Every npy header of weights.npz is read first and checked: no pickled (object) dtypes; the array the
          plan.json names under that key has this dtype and shape; its bytes fit in its member (the file's
          own size) and, all arrays together, in the device's capacity (weights live on the device).
  Step 3. Only then is each array allocated and read, exactly its bytes.
"""
from __future__ import annotations

import dataclasses
import io
import os
import zipfile
import zlib

import numpy as np

from ..errors import ModelLoadError

CHUNK = 1 << 20
PLAN_CAP = 512 << 20          # plan.json: a 100,000-node model's document is ~100 MB


def host_memory() -> int:
    """Physical memory of the host (weights are copied into it whatever the modelled device's size)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 1 << 50


@dataclasses.dataclass
class Check:
    """What weights.npz may hold: `want` key -> (dtype, shape) from plan.json, `cap` bytes for all arrays."""
    where: str
    cap: int
    cap_why: str
    want: dict
    total: int = 0

    def header(self, name: str, dt: np.dtype, shape: tuple, room: int) -> int:
        """The byte count of array `name` (an npy member of `room` bytes after its header), or ModelLoadError."""
        key = name[:-4]
        if dt.hasobject:
            raise ModelLoadError(f"{self.where}: array '{key[:40]}' has dtype {dt}, which needs pickle")
        if key in self.want:
            wdt, wshape, what = self.want[key]
            if ("bfloat16" if dt == np.dtype("V2") else dt.str) != wdt or tuple(shape) != wshape:
                raise ModelLoadError(f"{self.where}: {what} is declared {dt}{list(shape)} in the header of array "
                                     f"'{key[:40]}', plan.json says {wdt}{list(wshape)}; nothing was read")
        nbytes = dt.itemsize
        for d in shape:
            nbytes *= d
        self.total += nbytes
        if nbytes > room:
            raise ModelLoadError(f"{self.where}: array '{key[:40]}' declares {dt}{list(shape)} ({nbytes} bytes), "
                                 f"its member holds {room} bytes")
        if self.total > self.cap:
            raise ModelLoadError(f"{self.where}: the arrays declare {self.total} bytes, above {self.cap_why} "
                                 f"({self.cap} bytes)")
        return nbytes


Header = tuple   # (shape, fortran, dtype, data offset, element count)


def _header(f, name: str, where: str) -> Header:
    try:
        version = np.lib.format.read_magic(f)
        if version == (1, 0):
            shape, fortran, dt = np.lib.format.read_array_header_1_0(f)
        elif version == (2, 0):
            shape, fortran, dt = np.lib.format.read_array_header_2_0(f)
        else:
            raise ValueError(f"npy version {version}")
    except (ValueError, TypeError, SyntaxError, EOFError, OSError, zlib.error, zipfile.BadZipFile) as e:
        raise ModelLoadError(f"{where}: member {name[:40]!r} has no readable npy header: {e}") from None
    count = 1
    for d in shape:
        count *= d
    return shape, fortran, dt, f.tell(), count


def npz_headers(files: dict, sizes: dict, check: Check) -> dict[str, Header]:
    """Step 2: every member's npy header, checked, before any data is read."""
    heads, check.total = {}, 0
    for name, f in files.items():
        if not name.endswith(".npy"):
            raise ModelLoadError(f"{check.where}: member {name[:40]!r} is not an array")
        heads[name] = h = _header(f, name, check.where)
        check.header(name, h[2], h[0], sizes[name] - h[3])
    return heads


def npz_general(npz: bytes, check: Check, cap: int, where: str) -> dict[str, np.ndarray]:
    """Steps 2-3 over any zip of npy members (stored or compressed): headers first, then each array's bytes."""
    try:
        z = zipfile.ZipFile(io.BytesIO(npz))
    except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, OSError) as e:
        raise ModelLoadError(f"{where}: cannot read weights.npz: not an npz archive: {e}") from None
    with z:
        infos = z.infolist()
        streams = {}
        try:
            for info in infos:
                streams[info.filename] = z.open(info)
            heads = npz_headers(streams, {i.filename: i.file_size for i in infos}, check)
            arrays = {}
            for name, (shape, fortran, dt, offset, count) in heads.items():
                raw = np.empty(count * dt.itemsize, np.uint8)
                _read_exactly(streams[name], memoryview(raw), f"{where}: weights.npz: array '{name[:-4][:40]}'")
                arrays[name[:-4]] = raw.view(dt).reshape(shape, order="F" if fortran else "C")
            return arrays
        except (zipfile.BadZipFile, zlib.error, EOFError, OSError, NotImplementedError, RuntimeError) as e:
            raise ModelLoadError(f"{where}: cannot read weights.npz: {type(e).__name__}: {e}") from None
        finally:
            for s in streams.values():
                s.close()


def _read_exactly(f, out: memoryview, what: str) -> None:
    got = 0
    while got < len(out):
        n = f.readinto(out[got:got + CHUNK])
        if not n:
            raise ModelLoadError(f"{what} is truncated: {got} of {len(out)} bytes")
        got += n


def read_member(z: zipfile.ZipFile, name: str, where: str, cap: int) -> bytes:
    """Step 1: member `name` of `z`, inflated through a stream limited by its declared size and `cap`."""
    info = z.getinfo(name)
    declared = info.file_size
    if declared > cap:
        raise ModelLoadError(f"{where}: {name} declares {declared} bytes inflated, above ge's cap of {cap} "
                             f"bytes for it; nothing was inflated")
    buf = bytearray()
    try:
        with z.open(info) as f:
            while True:
                chunk = f.read(CHUNK)
                if not chunk:
                    break
                buf += chunk
                if len(buf) > declared:   # zipfile stops at the declared size; this is a second fence
                    raise ModelLoadError(f"{where}: {name} inflates past its declared size ({declared} bytes; "
                                         f"ge's cap {cap} bytes)")
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError, NotImplementedError, RuntimeError) as e:
        raise ModelLoadError(f"{where}: {name} cannot be read (declared {declared} bytes, ge's cap {cap} "
                             f"bytes): {type(e).__name__}: {e}") from None
    return bytes(buf)


def read_stored(path: str, where: str, cap: int) -> bytes:
    """A member kept as a file of a directory model, refused above `cap` before it is read."""
    size = os.path.getsize(path)
    if size > cap:
        raise ModelLoadError(f"{where} is {size} bytes, above ge's cap of {cap} bytes for it")
    with open(path, "rb") as f:
        return f.read(cap + 1)
