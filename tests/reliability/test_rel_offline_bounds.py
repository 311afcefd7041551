"""Bounded reads of `.gem` files (issue 46, items 1-2): a deflate bomb of a plan.json, an npy header that
declares more than its file holds or than plan.json says, and arrays above the device capacity are typed
ModelLoadErrors raised before the data is read, in a child process whose address space is capped at 2 GiB
(before: 6.3 GB inflated and a bare MemoryError; 8 GiB read before the refusal)."""
import io
import json
import struct
import zipfile
import zlib

import numpy as np
import pytest
from onnx import helper, numpy_helper

import ge
from ge.offline.format import seal
from limited import GIB, run_limited
from rel_models import make_model, vi



@pytest.fixture(scope="module")
def gem(tmp_path_factory):
    w = numpy_helper.from_array(np.arange(16, dtype=np.float32).reshape(4, 4), "w")
    model = make_model([helper.make_node("Add", ["x", "w"], ["a"]), helper.make_node("Relu", ["a"], ["y"])],
                       [vi("x", [4, 4])], [vi("y", None)], [w])
    path = str(tmp_path_factory.mktemp("gem") / "m.gem")
    ge.save(ge.compile(model), path)
    with zipfile.ZipFile(path) as z:
        return path, z.read("plan.json"), z.read("weights.npz")


def _zip(members) -> bytes:
    """A zip from (name, method, raw member data, declared size, crc): sizes and CRC as given, so a member
    may declare what it is not."""
    out, central = io.BytesIO(), io.BytesIO()
    for name, method, raw, size, crc in members:
        off, n = out.tell(), name.encode()
        out.write(struct.pack("<4sHHHHHIIIHH", b"PK\x03\x04", 20, 0, method, 0, 33, crc, len(raw), size, len(n), 0)
                  + n + raw)
        central.write(struct.pack("<4sHHHHHHIIIHHHHHII", b"PK\x01\x02", 20, 20, 0, method, 0, 33, crc, len(raw),
                                  size, len(n), 0, 0, 0, 0, 0, off) + n)
    cd = central.getvalue()
    return out.getvalue() + cd + struct.pack("<4sHHHHIIH", b"PK\x05\x06", 0, 0, len(members), len(members), len(cd),
                                             out.tell(), 0)


def _bomb(gib: int) -> bytes:
    """Raw deflate of `gib` GiB of spaces in ~1 MB: one fully flushed 1 MiB block repeated."""
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    block = c.compress(b" " * (1 << 20)) + c.flush(zlib.Z_FULL_FLUSH)
    return block * (gib << 10) + c.flush()


def _load_in_child(path, cap=2 * GIB):
    return run_limited(f"""
        import ge
        ge.load({path!r})
        _report(ok=True)
    """, cap)


def _typed(r, *needles):
    assert r.get("error") == "ModelLoadError", r
    for n in needles:
        assert n in r["message"], r["message"]


def test_plan_json_deflate_bomb_is_refused_before_inflating(gem, tmp_path):
    path, _, npz = gem
    bomb = _bomb(3)
    p = tmp_path / "bomb.gem"
    p.write_bytes(_zip([("plan.json", 8, bomb, 3 << 30, 0), ("weights.npz", 0, npz, len(npz), zlib.crc32(npz))]))
    _typed(_load_in_child(str(p)), "plan.json declares 3221225472 bytes inflated", "cap of 536870912 bytes")


def test_plan_json_that_lies_about_its_size_stops_at_it(gem, tmp_path):
    """Declares 1000 bytes, inflates to 3 GiB: the stream stops at the declared size (zipfile's z.read asked
    the decompressor for up to 2 GiB in one call)."""
    path, _, npz = gem
    p = tmp_path / "liar.gem"
    p.write_bytes(_zip([("plan.json", 8, _bomb(3), 1000, 0), ("weights.npz", 0, npz, len(npz), zlib.crc32(npz))]))
    _typed(_load_in_child(str(p), 1 * GIB), "plan.json cannot be read (declared 1000 bytes")


def _npy(shape, dtype=np.float32, data=b"") -> bytes:
    f = io.BytesIO()
    np.lib.format.write_array_header_1_0(f, {"descr": np.dtype(dtype).str, "fortran_order": False,
                                             "shape": tuple(shape)})
    return f.getvalue() + data


def _gem_with(tmp_path, text: bytes, members: dict, compressed_npz=False) -> str:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED if compressed_npz else zipfile.ZIP_STORED) as z:
        for k, v in members.items():
            z.writestr(k, v)
    npz = buf.getvalue()
    p = tmp_path / "w.gem"
    with zipfile.ZipFile(p, "w") as z:
        z.writestr("plan.json", text)
        z.writestr("weights.npz", npz)
    return str(p)


def _const_key(text):
    doc = json.loads(text)
    (i, key), = doc["constants"].items()
    return doc, int(i), key


@pytest.mark.parametrize("compressed", [False, True])
def test_npy_header_checked_against_plan_before_any_data(gem, tmp_path, compressed):
    """weights.npz declares the constant as float32[2^31] (8 GiB), plan.json as float32[4, 4]."""
    _, text, _ = gem
    _, _, key = _const_key(text)
    p = _gem_with(tmp_path, text, {f"{key}.npy": _npy([1 << 31], data=bytes(64))}, compressed)
    _typed(_load_in_child(p), "is declared float32[2147483648] in the header of array", f"'{key}'",
           "plan.json says <f4[4, 4]; nothing was read")


def test_npy_header_larger_than_its_member(gem, tmp_path):
    """plan.json re-sealed to agree with the header: the header still declares more than its member holds."""
    _, text, _ = gem
    doc, i, key = _const_key(text)
    doc["tensors"][i][2] = [1 << 31]
    p = _gem_with(tmp_path, seal(doc).encode(), {f"{key}.npy": _npy([1 << 31], data=bytes(64))}, True)
    _typed(_load_in_child(p), "(8589934592 bytes), its member holds 64 bytes")


def test_arrays_above_the_device_capacity(gem, tmp_path):
    _, text, _ = gem
    doc, i, key = _const_key(text)
    doc["options"]["device_memory_bytes"] = 32
    p = _gem_with(tmp_path, seal(doc).encode(), {f"{key}.npy": _npy([4, 4], data=bytes(64))})
    _typed(_load_in_child(p), "the arrays declare 64 bytes, above the device capacity plan.json names (32 bytes)")


def test_a_compressed_gem_still_loads(gem, tmp_path):
    """The general path (a re-zipped, deflated .gem and npz) gives the same weights as the fast one."""
    path, text, npz = gem
    _, _, key = _const_key(text)
    with zipfile.ZipFile(io.BytesIO(npz)) as z:
        members = {n: z.read(n) for n in z.namelist()}
    p = _gem_with(tmp_path, text, members, compressed_npz=True)
    want, got = ge.load(path), ge.load(p)
    (a,), (b,) = want.constants.values(), got.constants.values()
    np.testing.assert_array_equal(a, b)
    x = np.linspace(-9, 9, 16, dtype=np.float32).reshape(4, 4)
    with ge.Session(p) as s:
        np.testing.assert_array_equal(s.run(None, {"x": x})[0], np.maximum(x + a, 0))
