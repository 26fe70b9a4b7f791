"""TVM's binary array formats: one NDArray (``SaveDLTensor``: the
metadata section's b64ndarrays) and a parameter dict (``relay.save_param_dict``).

    array   := u64 0xDD5E40F096B4A13F, u64 0, i32 device_type, i32 device_id,
               i32 ndim, u8 code, u8 bits, u16 lanes, i64 shape[ndim],
               i64 nbytes, data (little-endian)
    params  := u64 0xF7E58D4F05049CB7, u64 0, u64 n, (u64 len, bytes name) * n,
               u64 n, array * n

DLPack type codes: 0 int, 1 uint, 2 float, 4 bfloat (bool is uint 1, one byte).
"""

from __future__ import annotations

import struct

import numpy as np

ARRAY_MAGIC = 0xDD5E40F096B4A13F
LIST_MAGIC = 0xF7E58D4F05049CB7


class ParamsError(ValueError):
    """Bytes that are not TVM's format (says where and why)."""


def _np_dtype(code, bits, lanes):
    if lanes != 1:
        raise ParamsError(f"vector dtype ({lanes} lanes) is not supported")
    if code == 1 and bits == 1:
        return np.dtype(bool)
    if code == 4 and bits == 16:
        return np.dtype(np.uint16)      # bfloat16 bits; see read_array
    kind = {0: "i", 1: "u", 2: "f"}.get(code)
    if kind is None or bits not in (8, 16, 32, 64):
        raise ParamsError(f"unsupported DLPack dtype code {code} bits {bits}")
    return np.dtype(f"<{kind}{bits // 8}")


def read_array(buf, at=0):
    """(array, offset after it); a bfloat16 array comes back as float32."""
    try:
        magic, _, _, _, ndim = struct.unpack_from("<QQiii", buf, at)
        at += 28
        if magic != ARRAY_MAGIC:
            raise ParamsError(f"not a TVM NDArray at byte {at - 28} (magic {magic:#x})")
        code, bits, lanes = struct.unpack_from("<BBH", buf, at)
        at += 4
        shape = struct.unpack_from(f"<{ndim}q", buf, at)
        at += 8 * ndim
        (nbytes,) = struct.unpack_from("<q", buf, at)
        at += 8
    except struct.error:
        raise ParamsError("truncated NDArray header") from None
    dt = _np_dtype(code, bits, lanes)
    count = int(np.prod(shape)) if shape else 1
    if nbytes != count * dt.itemsize or at + nbytes > len(buf):
        raise ParamsError(f"NDArray data of {nbytes} bytes does not fit shape {list(shape)} of {dt} "
                          f"or the {len(buf) - at} bytes left")
    arr = np.frombuffer(bytes(buf[at:at + nbytes]), dtype=dt).reshape(shape)
    if code == 4:
        arr = (arr.astype(np.uint32) << 16).view(np.float32)
    return arr.copy(), at + nbytes


def write_array(arr):
    arr = np.ascontiguousarray(arr)
    code = {"i": 0, "u": 1, "f": 2, "b": 1}[arr.dtype.kind]
    bits = 1 if arr.dtype.kind == "b" else arr.dtype.itemsize * 8
    head = struct.pack("<QQiii", ARRAY_MAGIC, 0, 1, 0, arr.ndim) + struct.pack("<BBH", code, bits, 1)
    head += struct.pack(f"<{arr.ndim}q", *arr.shape) + struct.pack("<q", arr.nbytes)
    return head + arr.astype(arr.dtype.newbyteorder("<")).tobytes()


def load_param_dict(data):
    """{name: array} from the bytes of ``relay.save_param_dict``."""
    buf = memoryview(data)
    try:
        magic, _, n = struct.unpack_from("<QQQ", buf, 0)
    except struct.error:
        raise ParamsError("too short for a TVM parameter file") from None
    if magic != LIST_MAGIC:
        raise ParamsError(f"not a TVM parameter file (relay.save_param_dict): magic {magic:#x}")
    at, names = 24, []
    for _ in range(n):
        (length,) = struct.unpack_from("<Q", buf, at)
        names.append(bytes(buf[at + 8:at + 8 + length]).decode("utf-8"))
        at += 8 + length
    (m,) = struct.unpack_from("<Q", buf, at)
    at += 8
    if m != n:
        raise ParamsError(f"{n} names but {m} arrays")
    out = {}
    for name in names:
        out[name], at = read_array(buf, at)
    return out


def save_param_dict(params):
    """The bytes ``relay.save_param_dict(params)`` writes."""
    parts = [struct.pack("<QQQ", LIST_MAGIC, 0, len(params))]
    for name in params:
        b = name.encode("utf-8")
        parts.append(struct.pack("<Q", len(b)) + b)
    parts.append(struct.pack("<Q", len(params)))
    parts += [write_array(np.asarray(v)) for v in params.values()]
    return b"".join(parts)
