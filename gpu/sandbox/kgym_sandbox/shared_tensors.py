"""Tensors shared between the judge and the candidate process, without host copies on the GPU.

The judge owns every buffer it shares (inputs for the candidate, output slots): each is an
allocation of its own (a sealed memfd on the CPU, a cuMemCreate allocation on the GPU), handed
over as a file descriptor, so a descriptor never exposes the judge's other memory (the caching
allocator packs many tensors into one allocation; the judge never shares its memory). Outputs
come back the same way: the candidate's calls copy them into output buffers of the judge's;
nothing of the candidate's memory is ever mapped here.

A buffer lives as long as a tensor over it does, on each side: the judge replaces a side's
arena when the sets or the outputs change shape or number (the trials' one set, then the
timing's k), and the memory of the one replaced goes back to the device once neither process
has a tensor over it. Kept to the process's end, they added up: at KernelBench's level-1 sizes
(8 GiB sets) the judge held nine sets' worth at the start of the timing (bench/RESULTS.md).
"""
import ctypes
import fcntl
import mmap
import os

import torch

F_ADD_SEALS, F_SEAL_SEAL, F_SEAL_SHRINK, F_SEAL_GROW = 1033, 1, 2, 4
CU_MEM_ALLOCATION_TYPE_PINNED, CU_MEM_HANDLE_TYPE_POSIX_FD, CU_MEM_LOCATION_TYPE_DEVICE = 1, 1, 1
CU_MEM_ACCESS_FLAGS_PROT_READWRITE = 3
CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_IS_MANAGED, CU_MEMORYTYPE_DEVICE = 2, 8, 2
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


class _Location(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("id", ctypes.c_int)]


class _AllocFlags(ctypes.Structure):
    _fields_ = [("compressionType", ctypes.c_ubyte), ("gpuDirectRDMACapable", ctypes.c_ubyte),
                ("usage", ctypes.c_ushort), ("reserved", ctypes.c_ubyte * 4)]


class _AllocationProp(ctypes.Structure):  # CUmemAllocationProp (cuda.h)
    _fields_ = [("type", ctypes.c_int), ("requestedHandleTypes", ctypes.c_int), ("location", _Location),
                ("win32HandleMetaData", ctypes.c_void_p), ("allocFlags", _AllocFlags)]


class _AccessDesc(ctypes.Structure):  # CUmemAccessDesc
    _fields_ = [("location", _Location), ("flags", ctypes.c_int)]


class CudaDriver:
    """The few driver calls sharing needs, on the context PyTorch made current. Memory is
    shared through the virtual memory API: cuMemCreate, exported as a file descriptor that
    travels over the channel (SCM_RIGHTS) and is imported and mapped on the other side. Unlike
    legacy IPC handles (cuIpcGetMemHandle), which the driver ties to the exporting process's
    pid and cannot open from another pid namespace, a descriptor works whatever namespace the
    candidate's process is in, and only a process handed it can map the memory."""

    def __init__(self):
        self.lib = ctypes.CDLL("libcuda.so.1")
        self._granularity = None

    def _check(self, rc: int, what: str) -> None:
        if rc != 0:
            raise RuntimeError(f"CUDA driver error {rc} in {what}")

    allocated = 0  # bytes this process allocated for sharing, over all drivers (device_memory)

    def device_resident(self, ptr: int) -> bool:
        """Whether `ptr` lies in plain device memory: not host memory mapped into the device's
        address space, not managed memory, not memory the driver does not know (HMM): only
        there can no CPU thread write after the GPU's work is done."""
        kind, managed = ctypes.c_uint(0), ctypes.c_int(1)
        pointer = ctypes.c_uint64(ptr)
        return self.lib.cuPointerGetAttribute(ctypes.byref(kind), CU_POINTER_ATTRIBUTE_MEMORY_TYPE, pointer) == 0 \
            and kind.value == CU_MEMORYTYPE_DEVICE \
            and self.lib.cuPointerGetAttribute(ctypes.byref(managed), CU_POINTER_ATTRIBUTE_IS_MANAGED, pointer) == 0 \
            and managed.value == 0

    def _device(self) -> int:
        device = ctypes.c_int()
        self._check(self.lib.cuCtxGetDevice(ctypes.byref(device)), "cuCtxGetDevice")
        return device.value

    def _prop(self) -> _AllocationProp:
        return _AllocationProp(type=CU_MEM_ALLOCATION_TYPE_PINNED, requestedHandleTypes=CU_MEM_HANDLE_TYPE_POSIX_FD,
                               location=_Location(CU_MEM_LOCATION_TYPE_DEVICE, self._device()))

    def rounded(self, nbytes: int) -> int:
        """`nbytes` rounded up to the allocation granularity (2 MiB on an H100): the size both
        sides map."""
        if self._granularity is None:
            granularity = ctypes.c_size_t()
            self._check(self.lib.cuMemGetAllocationGranularity(ctypes.byref(granularity), ctypes.byref(self._prop()),
                                                              0), "cuMemGetAllocationGranularity")
            self._granularity = max(granularity.value, 1)
        return -(-max(nbytes, 1) // self._granularity) * self._granularity

    def _map(self, handle: ctypes.c_uint64, size: int) -> int:
        """Reserves an address range, maps the allocation there and makes it read-write for
        this device; the range's start."""
        ptr = ctypes.c_uint64()
        self._check(self.lib.cuMemAddressReserve(ctypes.byref(ptr), ctypes.c_size_t(size), ctypes.c_size_t(0),
                                                 ctypes.c_uint64(0), ctypes.c_ulonglong(0)), "cuMemAddressReserve")
        self._check(self.lib.cuMemMap(ptr, ctypes.c_size_t(size), ctypes.c_size_t(0), handle, ctypes.c_ulonglong(0)),
                    "cuMemMap")
        access = _AccessDesc(_Location(CU_MEM_LOCATION_TYPE_DEVICE, self._device()), CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
        self._check(self.lib.cuMemSetAccess(ptr, ctypes.c_size_t(size), ctypes.byref(access), ctypes.c_size_t(1)),
                    "cuMemSetAccess")
        return ptr.value

    def alloc(self, nbytes: int) -> tuple:
        """(its _Mapping here, descriptor to hand over) of a new allocation of at least `nbytes`."""
        size = self.rounded(nbytes)
        handle = ctypes.c_uint64()
        rc = self.lib.cuMemCreate(ctypes.byref(handle), ctypes.c_size_t(size), ctypes.byref(self._prop()),
                                  ctypes.c_ulonglong(0))
        if rc == CUDA_ERROR_OUT_OF_MEMORY:
            raise torch.OutOfMemoryError(f"CUDA out of memory: cuMemCreate of {size / (1 << 30):.2f} GiB to share")
        self._check(rc, "cuMemCreate")
        try:
            ptr = self._map(handle, size)
            fd = ctypes.c_int(-1)
            self._check(self.lib.cuMemExportToShareableHandle(ctypes.byref(fd), handle, CU_MEM_HANDLE_TYPE_POSIX_FD,
                                                              ctypes.c_ulonglong(0)), "cuMemExportToShareableHandle")
        except BaseException:
            self.lib.cuMemRelease(handle)  # not mapped: freed now; mapped: when the process goes
            raise
        self.lib.cuMemRelease(handle)  # the mapping and the descriptor hold the allocation now
        CudaDriver.allocated += size
        return _Mapping(self.lib, ptr, size, owned=True), fd.value

    def open(self, fd: int, nbytes: int) -> "_Mapping":
        """Maps the allocation another process handed over as `fd` (closed here).
        Mapping more than the allocation holds fails in the driver."""
        handle = ctypes.c_uint64()
        try:
            self._check(self.lib.cuMemImportFromShareableHandle(ctypes.byref(handle), ctypes.c_void_p(fd),
                                                                CU_MEM_HANDLE_TYPE_POSIX_FD),
                        "cuMemImportFromShareableHandle")
        finally:
            os.close(fd)
        try:
            size = self.rounded(nbytes)
            ptr = self._map(handle, size)
        finally:
            self.lib.cuMemRelease(handle)  # mapped: the mapping holds it; not (e.g. more than it holds): gone
        return _Mapping(self.lib, ptr, size, owned=False)


class _Mapping:
    """An address range mapped to a shared allocation. It goes when the last tensor over it
    does (each tensor holds its _CudaArray, which holds this); the allocation itself is freed
    once no process maps it and its descriptor is closed (the judge's Arena closes it)."""

    def __init__(self, lib, ptr: int, size: int, owned: bool):
        self.lib, self.ptr, self.size, self.owned = lib, ptr, size, owned

    def __del__(self):
        try:
            # Unmapping does not wait for work queued on the range (PyTorch's expandable
            # segments wait too): a copy into it may still run.
            self.lib.cuCtxSynchronize()
            self.lib.cuMemUnmap(ctypes.c_uint64(self.ptr), ctypes.c_size_t(self.size))
            self.lib.cuMemAddressFree(ctypes.c_uint64(self.ptr), ctypes.c_size_t(self.size))
        except Exception:  # at the interpreter's exit the driver may be gone: the process's end frees it
            pass
        if self.owned:
            CudaDriver.allocated -= self.size


class _CudaArray:
    """What PyTorch reads a tensor over foreign device memory from; the tensor keeps it, and so
    the mapping (`owner`), alive."""

    def __init__(self, ptr: int, spec: dict, owner=None):
        typestr = torch.empty(0, dtype=dtype_of(spec["dtype"])).numpy().dtype.str
        self.__cuda_array_interface__ = {"shape": tuple(spec["shape"]), "typestr": typestr, "data": (ptr, False),
                                         "version": 3, "strides": None}
        self.owner = owner


def device_view(ptr: int, spec: dict, owner=None) -> torch.Tensor:
    """A contiguous tensor over device memory at `ptr`, keeping `owner` (its _Mapping) alive."""
    if dtype_of(spec["dtype"]) == torch.bfloat16:  # no array-interface type string: view int16 bytes
        return device_view(ptr, {"shape": spec["shape"], "dtype": "int16"}, owner).view(torch.bfloat16)
    return torch.as_tensor(_CudaArray(ptr, spec, owner), device="cuda")


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
    candidate process as a file descriptor: a sealed memfd on the CPU (the candidate can
    neither shrink it under the judge's mapping nor grow it), an exported cuMemCreate
    allocation on the GPU. The descriptor opens the whole arena and nothing else of the
    judge's memory. `fd` given: the candidate's side, mapping what the judge described (the
    arena owns the descriptor)."""

    def __init__(self, device: str, specs: list, driver: CudaDriver = None, fd: int = -1):
        self.specs = [checked_spec(s) for s in specs]
        offsets, size = layout(self.specs)
        self.fd = -1
        if not self.specs:  # nothing to share (a build's init inputs are often numbers only): no
            self.tensors = []  # allocation, no descriptor (on the GPU a cuMemCreate, export and map each)
            if fd >= 0:
                os.close(fd)
            return
        if device == "cuda":
            if fd >= 0:
                mapping = driver.open(fd, size)
            else:
                mapping, self.fd = driver.alloc(size)
            self.tensors = [device_view(mapping.ptr + o, s, mapping) if nbytes_of(s) else
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
        return {"tensors": self.specs}

    @staticmethod
    def described_empty(described: dict) -> bool:
        """Whether the other side described an arena of no tensors (it sends no descriptor)."""
        return not described.get("tensors")

    def fds(self) -> list:
        return [self.fd] if self.fd >= 0 else []

    def __del__(self):
        # The descriptor holds the allocation too: closed, only the mappings (the tensors) do.
        if getattr(self, "fd", -1) >= 0:
            os.close(self.fd)
            self.fd = -1
