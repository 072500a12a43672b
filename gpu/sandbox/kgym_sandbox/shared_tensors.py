"""Tensors shared between the judge and the candidate process, without host copies on the GPU.

The judge owns every buffer it shares (inputs for the candidate, on the CPU also the output
slots): each is an allocation of its own (a sealed memfd on the CPU, a cuMemAlloc on the GPU),
so a handle to one never exposes the judge's other memory. An IPC handle opens a whole
allocation, and the caching allocator packs many tensors into one; so the judge never shares
caching-allocator memory. Outputs come back the same way: the candidate's calls copy them
into output buffers of the judge's; nothing of the candidate's memory is ever mapped here.
"""
import ctypes
import fcntl
import mmap
import os

import torch

F_ADD_SEALS, F_SEAL_SEAL, F_SEAL_SHRINK, F_SEAL_GROW = 1033, 1, 2, 4
CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS = 1
CUDA_ERROR_OUT_OF_MEMORY = 2
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


class _IpcHandle(ctypes.Structure):
    _fields_ = [("reserved", ctypes.c_byte * 64)]


class CudaDriver:
    """The few driver calls IPC needs, on the context PyTorch made current."""

    def __init__(self):
        self.lib = ctypes.CDLL("libcuda.so.1")
        self.opened = {}  # handle bytes -> (base, size): a handle can be opened once per process


    def _check(self, rc: int, what: str) -> None:
        if rc != 0:
            raise RuntimeError(f"CUDA driver error {rc} in {what}")

    allocated = 0  # bytes this process allocated for sharing, over all drivers (device_memory)

    def alloc(self, nbytes: int) -> int:
        ptr = ctypes.c_uint64()
        rc = self.lib.cuMemAlloc_v2(ctypes.byref(ptr), ctypes.c_size_t(max(nbytes, 1)))
        if rc == CUDA_ERROR_OUT_OF_MEMORY:
            raise torch.OutOfMemoryError(f"CUDA out of memory: cuMemAlloc of {nbytes / (1 << 30):.2f} GiB to share")
        self._check(rc, "cuMemAlloc")
        CudaDriver.allocated += max(nbytes, 1)
        return ptr.value

    def allocation_of(self, ptr: int) -> tuple:
        base, size = ctypes.c_uint64(), ctypes.c_size_t()
        self._check(self.lib.cuMemGetAddressRange_v2(ctypes.byref(base), ctypes.byref(size), ctypes.c_uint64(ptr)),
                    "cuMemGetAddressRange")
        return base.value, size.value

    def export(self, base: int) -> str:
        """The IPC handle (hex) of an allocation of this process."""
        handle = _IpcHandle()
        self._check(self.lib.cuIpcGetMemHandle(ctypes.byref(handle), ctypes.c_uint64(base)), "cuIpcGetMemHandle")
        return ctypes.string_at(ctypes.addressof(handle), 64).hex()

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
    def __init__(self, ptr: int, spec: dict):
        typestr = torch.empty(0, dtype=dtype_of(spec["dtype"])).numpy().dtype.str
        self.__cuda_array_interface__ = {"shape": tuple(spec["shape"]), "typestr": typestr, "data": (ptr, False),
                                         "version": 3, "strides": None}


def device_view(ptr: int, spec: dict) -> torch.Tensor:
    """A contiguous tensor over device memory at `ptr`."""
    if dtype_of(spec["dtype"]) == torch.bfloat16:  # no array-interface type string: view int16 bytes
        return device_view(ptr, {"shape": spec["shape"], "dtype": "int16"}).view(torch.bfloat16)
    return torch.as_tensor(_CudaArray(ptr, spec), device="cuda")


ALIGN = 256


def layout(specs: list) -> tuple:
    """(offsets, total bytes) of tensors laid out one after another, each aligned."""
    offsets, total = [], 0
    for spec in specs:
        offsets.append(total)
        total += -(-nbytes_of(spec) // ALIGN) * ALIGN
    return offsets, max(total, ALIGN)


class Arena:
    """Tensors in one allocation of their own, made by the judge and shared with the
    candidate process: a sealed memfd on the CPU (the candidate can neither shrink it under the
    judge's mapping nor grow it), a cuMemAlloc shared by IPC handle on the GPU. One handle
    opens the whole arena and nothing else of the judge's memory. `handle`/`fd` given: the
    candidate's side, mapping what the judge described."""

    def __init__(self, device: str, specs: list, driver: CudaDriver = None, handle: str = "", fd: int = -1):
        self.specs = [checked_spec(s) for s in specs]
        offsets, size = layout(self.specs)
        self.handle, self.fd = "", -1
        if device == "cuda":
            if handle:
                base, opened = driver.open(handle)
                if opened < size:
                    raise ValueError("shared arena smaller than its tensors")
                self.handle = handle
            else:
                base = driver.alloc(size)
                self.handle = driver.export(base)
            self.tensors = [device_view(base + o, s) if nbytes_of(s) else
                            torch.empty(s["shape"], dtype=dtype_of(s["dtype"]), device="cuda")
                            for o, s in zip(offsets, self.specs)]
            return
        if fd < 0:
            fd = os.memfd_create("kgym-arena", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
            os.ftruncate(fd, size)
            fcntl.fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL)
        elif os.fstat(fd).st_size < size:
            raise ValueError("shared arena smaller than its tensors")
        self.fd = fd
        self.map = mmap.mmap(fd, size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
        self.tensors = [torch.frombuffer(self.map, dtype=torch.uint8, count=nbytes_of(s), offset=o)
                        .view(dtype_of(s["dtype"])).view(s["shape"]) if nbytes_of(s) else
                        torch.empty(s["shape"], dtype=dtype_of(s["dtype"])) for o, s in zip(offsets, self.specs)]

    def describe(self) -> dict:
        return {"handle": self.handle, "tensors": self.specs}

    def fds(self) -> list:
        return [self.fd] if self.fd >= 0 else []
