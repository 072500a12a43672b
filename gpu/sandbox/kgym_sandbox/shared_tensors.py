"""Tensors shared between the judge and the candidate process, without host copies on the GPU.

The judge owns every buffer it shares (inputs for the candidate, on the CPU also the output
slots): each is an allocation of its own (a sealed memfd on the CPU, a cuMemAlloc on the GPU),
so a handle to one never exposes the judge's other memory. An IPC handle opens a whole
allocation, and the caching allocator packs many tensors into one; so the judge never shares
caching-allocator memory. The candidate's timed outputs travel the other way on the GPU: its
process exports the allocation holding them, and the judge reads them after checking that
the claimed extent lies inside what the handle opened.
"""
import ctypes
import fcntl
import mmap
import os

import torch

F_ADD_SEALS, F_SEAL_SEAL, F_SEAL_SHRINK, F_SEAL_GROW = 1033, 1, 2, 4
CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS = 1
MAX_DIMS = 16


def dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).replace("torch.", "")


def dtype_of(name: str) -> torch.dtype:
    dtype = getattr(torch, str(name), None)
    if not isinstance(dtype, torch.dtype):
        raise ValueError(f"not a dtype: {name!r}")
    return dtype


def spec_of(t: torch.Tensor) -> dict:
    return {"shape": list(t.shape), "dtype": dtype_name(t.dtype)}


def nbytes_of(spec: dict) -> int:
    count = 1
    for n in spec["shape"]:
        count *= int(n)
    return count * dtype_of(spec["dtype"]).itemsize


def checked_spec(value) -> dict:
    """A tensor spec from the other side, checked before anything is allocated or mapped."""
    if not isinstance(value, dict) or not isinstance(value.get("shape"), list) or len(value["shape"]) > MAX_DIMS:
        raise ValueError("malformed tensor spec")
    if not all(isinstance(n, int) and 0 <= n < (1 << 40) for n in value["shape"]):
        raise ValueError("malformed tensor shape")
    return {"shape": list(value["shape"]), "dtype": dtype_name(dtype_of(value["dtype"]))}


# --- the CPU: memfd buffers -------------------------------------------------------------

class HostBuffer:
    """A memfd of one tensor's bytes, mapped shared. The judge makes it and seals its size
    (the candidate can then neither shrink it under the judge's mapping nor grow it)."""

    def __init__(self, spec: dict, fd: int = -1):
        self.spec = spec
        size = max(nbytes_of(spec), 1)
        if fd < 0:
            fd = os.memfd_create("kgym-tensor", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
            os.ftruncate(fd, size)
            fcntl.fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL)
        elif os.fstat(fd).st_size < size:
            raise ValueError("shared buffer smaller than its spec")
        self.fd = fd
        self.map = mmap.mmap(fd, size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
        dtype = dtype_of(spec["dtype"])
        flat = torch.frombuffer(self.map, dtype=torch.uint8, count=nbytes_of(spec))
        self.tensor = flat.view(dtype).view(spec["shape"]) if nbytes_of(spec) else torch.empty(spec["shape"], dtype=dtype)


# --- the GPU: driver allocations and IPC handles ---------------------------------------

class _IpcHandle(ctypes.Structure):
    _fields_ = [("reserved", ctypes.c_byte * 64)]


class CudaDriver:
    """The few driver calls IPC needs, on the context PyTorch made current."""

    def __init__(self):
        self.lib = ctypes.CDLL("libcuda.so.1")
        self.opened = {}  # handle bytes -> (base, size): a handle can be opened once per process
        self.exported = {}  # (base, size) -> handle: exporting costs far more than a timed call may


    def _check(self, rc: int, what: str) -> None:
        if rc != 0:
            raise RuntimeError(f"CUDA driver error {rc} in {what}")

    def alloc(self, nbytes: int) -> int:
        ptr = ctypes.c_uint64()
        self._check(self.lib.cuMemAlloc_v2(ctypes.byref(ptr), ctypes.c_size_t(max(nbytes, 1))), "cuMemAlloc")
        return ptr.value

    def allocation_of(self, ptr: int) -> tuple:
        base, size = ctypes.c_uint64(), ctypes.c_size_t()
        self._check(self.lib.cuMemGetAddressRange_v2(ctypes.byref(base), ctypes.byref(size), ctypes.c_uint64(ptr)),
                    "cuMemGetAddressRange")
        return base.value, size.value

    def export(self, ptr: int) -> tuple:
        """(handle hex, offset of ptr in its allocation) for a pointer of this process."""
        base, size = self.allocation_of(ptr)
        if (base, size) not in self.exported:
            handle = _IpcHandle()
            self._check(self.lib.cuIpcGetMemHandle(ctypes.byref(handle), ctypes.c_uint64(base)), "cuIpcGetMemHandle")
            self.exported[(base, size)] = ctypes.string_at(ctypes.addressof(handle), 64).hex()
        return self.exported[(base, size)], ptr - base

    def open(self, handle_hex: str) -> tuple:
        """(base, size) of the allocation another process exported."""
        if handle_hex not in self.opened:
            raw = bytes.fromhex(handle_hex)
            if len(raw) != 64:
                raise ValueError("malformed IPC handle")
            handle, base = _IpcHandle(), ctypes.c_uint64()
            ctypes.memmove(ctypes.addressof(handle), raw, 64)
            self._check(self.lib.cuIpcOpenMemHandle_v2(ctypes.byref(base), handle, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS),
                        "cuIpcOpenMemHandle")
            self.opened[handle_hex] = self.allocation_of(base.value)
        return self.opened[handle_hex]


class _CudaArray:
    def __init__(self, ptr: int, spec: dict, strides_bytes=None):
        typestr = torch.empty(0, dtype=dtype_of(spec["dtype"])).numpy().dtype.str
        self.__cuda_array_interface__ = {"shape": tuple(spec["shape"]), "typestr": typestr, "data": (ptr, False),
                                         "version": 3, "strides": tuple(strides_bytes) if strides_bytes else None}


def device_view(ptr: int, spec: dict, strides=None) -> torch.Tensor:
    """A tensor over device memory at `ptr` (strides in elements; None: contiguous)."""
    dtype = dtype_of(spec["dtype"])
    if dtype == torch.bfloat16:  # no array-interface type string for it: view its bytes as int16
        raw = device_view(ptr, {"shape": spec["shape"], "dtype": "int16"}, strides)
        return raw.view(torch.bfloat16)
    itemsize = dtype.itemsize
    array = _CudaArray(ptr, spec, [s * itemsize for s in strides] if strides is not None else None)
    return torch.as_tensor(array, device="cuda")


class DeviceBuffer:
    """A cuMemAlloc of one tensor's bytes (the judge's), shared with the candidate by handle."""

    def __init__(self, driver: CudaDriver, spec: dict, handle: str = ""):
        self.spec = spec
        if handle:
            base, size = driver.open(handle)
            if size < nbytes_of(spec):
                raise ValueError("shared buffer smaller than its spec")
            self.handle = handle
        else:
            base = driver.alloc(nbytes_of(spec))
            self.handle, _ = driver.export(base)
        self.tensor = device_view(base, spec) if nbytes_of(spec) else torch.empty(spec["shape"], dtype=dtype_of(spec["dtype"]),
                                                                                  device="cuda")


def extent_bytes(spec: dict, strides: list) -> int:
    """Bytes from a view's first element to one past its last (0 for an empty view)."""
    shape = spec["shape"]
    if any(n == 0 for n in shape):
        return 0
    last = sum((n - 1) * s for n, s in zip(shape, strides))
    return (last + 1) * dtype_of(spec["dtype"]).itemsize


def export_output(driver: CudaDriver, t: torch.Tensor) -> dict:
    """In the candidate process: where a timed output lies, for the judge to read."""
    handle, offset = driver.export(t.data_ptr()) if t.numel() else ("", 0)
    return {**spec_of(t), "handle": handle, "offset": offset, "strides": list(t.stride())}


def import_output(driver: CudaDriver, described: dict) -> torch.Tensor:
    """In the judge: a private copy of an output the candidate exported. Every number in
    `described` is the candidate's word: the view must lie inside the opened allocation."""
    spec = checked_spec(described)
    strides = described.get("strides")
    offset = described.get("offset")
    if not isinstance(strides, list) or len(strides) != len(spec["shape"]) or \
            not all(isinstance(s, int) and s >= 0 for s in strides) or not isinstance(offset, int) or offset < 0:
        raise ValueError("malformed output description")
    if extent_bytes(spec, strides) == 0:
        return torch.empty(spec["shape"], dtype=dtype_of(spec["dtype"]), device="cuda")
    base, size = driver.open(str(described.get("handle", "")))
    if offset + extent_bytes(spec, strides) > size or offset % dtype_of(spec["dtype"]).itemsize:
        raise ValueError("output description points outside its allocation")
    return device_view(base + offset, spec, strides).clone()
