"""The judge's one-pass output checks on the GPU (gpu/checks, output_kernel.py) against the
same rule done with PyTorch's operators: the same verdicts value by value, the same sums.
Exit 77 (a CTest skip) without a GPU or without the library."""
import math
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "gpu", "sandbox"))

import torch  # noqa: E402

from kgym_sandbox import compare, output_kernel  # noqa: E402


def both(e, a, atol, rtol):
    kernel = output_kernel.totals(e, a, atol, rtol)
    assert kernel is not None, "the kernel did not apply"
    return kernel.tolist(), compare.operator_totals(e, a, atol, rtol, compare.wide_dtype(e)).tolist()


class OutputKernel(unittest.TestCase):
    def test_counts_what_torch_isclose_counts_at_the_boundary(self):
        """Values placed a few float32 steps either side of atol + rtol*|e|, with NaN and
        infinities among them: the same number outside, the same maxima."""
        g = torch.Generator(device="cuda").manual_seed(3)
        for dtype in (torch.float32, torch.float16, torch.bfloat16, torch.float64):
            e = torch.randn(1 << 20, generator=g, device="cuda").to(dtype)
            allowed = 1e-2 + (1e-2 * e.float()).abs()
            steps = torch.randint(-3, 4, e.shape, generator=g, device="cuda").float()
            a = (e.float() + allowed * (1 + steps * 2.0 ** -23)).to(dtype)
            a[:8] = torch.tensor([float("nan"), float("inf"), -float("inf"), 0, 0, float("nan"), 1, 2]).to(dtype)
            e[5], e[6], e[7] = float("nan"), float("inf"), float("inf")
            kernel, operators = both(e, a, 1e-2, 1e-2)
            with self.subTest(dtype=dtype):
                wide = compare.wide_dtype(e)
                outside = int((~torch.isclose(a.to(wide), e.to(wide), rtol=1e-2, atol=1e-2, equal_nan=True)).sum())
                self.assertEqual(kernel[0], outside)
                self.assertEqual(operators[0], outside)
                self.assertEqual(kernel[9], operators[9])    # max |a - e|
                self.assertEqual(kernel[10], operators[10])  # max |e|
                self.assertTrue(math.isnan(kernel[3]) and math.isnan(operators[3]))  # e holds a NaN

    def test_sums_agree_and_repeat_bit_for_bit(self):
        g = torch.Generator(device="cuda").manual_seed(4)
        e = torch.randn(3 << 22, generator=g, device="cuda")
        a = e + 1e-3 * torch.randn(e.shape, generator=g, device="cuda")
        kernel, operators = both(e, a, 1e-2, 1e-2)
        self.assertEqual(kernel[0], 0.0)
        for column in (3, 4, 5, 6, 7):
            self.assertAlmostEqual(kernel[column] / operators[column], 1.0, places=9)
        self.assertEqual(output_kernel.totals(e, a.clone(), 1e-2, 1e-2).tolist(), kernel)

    def test_measure_takes_the_kernel_and_non_contiguous_outputs_work(self):
        e = torch.randn(300, 500, device="cuda").t()
        m = compare.measure(e, e.contiguous() + 0.5, 1e-2, 1e-2)
        self.assertEqual(m.outside, 150000)
        self.assertAlmostEqual(m.max_abs_error, 0.5, places=5)  # (e + 0.5) - e, rounded in float32
        self.assertIsNone(output_kernel.totals(torch.arange(4, device="cuda"), torch.arange(4, device="cuda"), 0, 0))
        near = e.contiguous() + 0.001
        self.assertTrue(compare.all_close([e.contiguous()], [near], 1e-2, 1e-2))
        near[7, 7] += 1.0
        self.assertFalse(compare.all_close([e.contiguous()], [near], 1e-2, 1e-2))


class DeviceResident(unittest.TestCase):
    """Which outputs a timed batch may deliver after the judge's clock: those in plain device
    memory (shared_tensors.CudaDriver.device_resident), not host memory seen as a CUDA array."""

    def test_device_memory_and_arenas_are_resident_pinned_host_memory_is_not(self):
        from kgym_sandbox import shared_tensors

        class HostMemory:
            def __init__(self, host):
                self.__cuda_array_interface__ = {"shape": tuple(host.shape), "typestr": "<f4", "version": 3,
                                                 "data": (host.data_ptr(), False), "strides": None}

        driver = shared_tensors.CudaDriver()
        self.assertTrue(driver.device_resident(torch.empty(1024, device="cuda").data_ptr()))
        arena = shared_tensors.Arena("cuda", [{"shape": [256], "dtype": "float32"}], driver)
        self.assertTrue(driver.device_resident(arena.tensors[0].data_ptr()))
        host = torch.ones(1024, pin_memory=True)
        seen = torch.as_tensor(HostMemory(host), device="cuda")
        self.assertEqual(seen.device.type, "cuda")
        self.assertFalse(driver.device_resident(seen.data_ptr()))
        self.assertFalse(driver.device_resident(torch.ones(8).data_ptr()))  # pageable host memory


class ArenaLifetime(unittest.TestCase):
    """A shared buffer's memory goes back to the device once neither side has a tensor over
    it (shared_tensors._Mapping): before, every arena of an evaluation stayed to its process's
    end, nine 8 GiB sets' worth in the judge at KernelBench's level-1 sizes."""

    def test_an_arena_is_freed_when_the_last_tensor_over_it_goes(self):
        import gc
        from kgym_sandbox import shared_tensors

        def in_use():
            torch.cuda.synchronize()
            free, total = torch.cuda.mem_get_info()
            return total - free

        driver, size = shared_tensors.CudaDriver(), 1 << 30
        warm = torch.empty(16, device="cuda").fill_(1.0)[:16].sum().item()  # the kernels' modules loaded first
        before, counted = in_use(), shared_tensors.CudaDriver.allocated
        arena = shared_tensors.Arena("cuda", [{"shape": [size // 4], "dtype": "float32"}], driver)
        arena.tensors[0].fill_(1.0)
        other = shared_tensors.Arena("cuda", arena.describe()["tensors"], driver, fd=os.dup(arena.fd))  # the other side
        view = other.tensors[0][:16]
        self.assertGreaterEqual(in_use() - before, size)
        self.assertEqual(shared_tensors.CudaDriver.allocated - counted, size)
        del arena
        gc.collect()
        self.assertGreaterEqual(in_use() - before, size)  # the other side still maps it
        self.assertEqual(shared_tensors.CudaDriver.allocated, counted)
        del other
        gc.collect()
        self.assertEqual(view.sum().item(), 16.0)  # a view of it keeps the mapping
        self.assertGreaterEqual(in_use() - before, size)
        del view
        gc.collect()
        self.assertLess(in_use() - before, size // 8, warm)  # the gigabyte is back (what else moved: MiBs)

    def test_memory_by_part_counts_the_judges_shared_buffers_and_its_reserve(self):
        from kgym_sandbox import device_memory, shared_tensors
        result, size = {}, 1 << 30
        peak = device_memory.Peak("cuda", result)
        peak.sample("before")
        arena = shared_tensors.Arena("cuda", [{"shape": [size // 4], "dtype": "float32"}], shared_tensors.CudaDriver())
        own = torch.empty(size // 4, device="cuda")
        peak.sample("held")
        del arena, own
        torch.cuda.empty_cache()
        peak.sample("after")
        device, judge = result["device_memory_by_part_mb"], result["judge_memory_by_part_mb"]
        self.assertGreaterEqual(judge["held"] - judge["before"], 2 * 1024)  # both gigabytes: shared and its own
        self.assertGreaterEqual(device["held"] - device["before"], 2 * 1024)
        self.assertLess(judge["after"] - judge["before"], 64)
        self.assertEqual(result["peak_device_memory_mb"], max(device.values()))


if __name__ == "__main__":
    if not torch.cuda.is_available():
        print("[  SKIPPED ] no GPU")
        sys.exit(77)
    if output_kernel.library() is None:
        print(f"[  SKIPPED ] no output checks library (KGYM_CHECKS_LIB={os.environ.get('KGYM_CHECKS_LIB', '')!r})")
        sys.exit(77)
    unittest.main()
