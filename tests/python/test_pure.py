"""Exact-value tests of the sandbox's pure functions (no GPU, no candidate code)."""
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "gpu", "sandbox"))
os.environ.setdefault("TRITON_INTERPRET", "1")

import torch  # noqa: E402

from kgym_sandbox import compare, timing  # noqa: E402


class TimingStats(unittest.TestCase):
    def test_interquartile_mean_drops_the_outer_quarters(self):
        self.assertEqual(timing.interquartile_mean([1, 2, 3, 4, 5, 6, 7, 100]), 4.5)
        self.assertEqual(timing.interquartile_mean([3, 1, 2]), 2.0)
        self.assertEqual(timing.interquartile_mean([7.0]), 7.0)

    def test_stats(self):
        s = timing.stats([4.0, 1.0, 3.0, 2.0])
        self.assertEqual((s["median_ms"], s["mean_ms"], s["min_ms"], s["n"], s["iqm_ms"]), (2.5, 2.5, 1.0, 4, 2.5))
        self.assertEqual(timing.stats([]), {"n": 0})


class Compare(unittest.TestCase):
    def test_within_tolerance_is_correct(self):
        e = torch.tensor([1.0, 2.0, 0.0])
        r = compare.compare(e, e + torch.tensor([0.005, -0.02, 0.0]), 1e-2, 1e-2)
        self.assertTrue(r["correct"])
        self.assertAlmostEqual(r["max_abs_error"], 0.02, places=6)
        self.assertAlmostEqual(r["max_rel_error"], 0.01, places=6)

    def test_outside_tolerance_counts_the_bad_values(self):
        r = compare.compare(torch.zeros(4), torch.tensor([0.0, 0.5, 0.0, -0.5]), 1e-2, 1e-2)
        self.assertFalse(r["correct"])
        self.assertIn("2 of 4 values", r["message"])

    def test_shape_dtype_nan_and_count(self):
        e = torch.zeros(2, 3)
        self.assertIn("shape (3, 2)", compare.compare(e, torch.zeros(3, 2), 1e-2, 1e-2)["message"])
        self.assertIn("dtype", compare.compare(e, torch.zeros(2, 3, dtype=torch.float64), 1e-2, 1e-2)["message"])
        nan = torch.zeros(2, 3)
        nan[0, 1] = float("nan")
        self.assertIn("1 NaN/Inf", compare.compare(e, nan, 1e-2, 1e-2)["message"])
        self.assertIn("returned 1 tensors, expected 2", compare.compare((e, e), e, 1e-2, 1e-2)["message"])

    def test_aliasing(self):
        x = torch.ones(8)
        self.assertTrue(compare.aliases(x[2:4], [x]))
        self.assertTrue(compare.aliases((torch.zeros(1), x.view(2, 4)), [x]))
        self.assertFalse(compare.aliases(x.clone(), [x]))

    def test_fingerprint_tells_equal_from_different(self):
        a = torch.arange(1000.0)
        self.assertEqual(compare.fingerprint(a), compare.fingerprint(a.clone()))
        b = a.clone()
        b[500] += 1
        self.assertNotEqual(compare.fingerprint(a), compare.fingerprint(b))


class CostModel(unittest.TestCase):
    def test_matmul_costs_its_flops_and_views_are_free(self):
        from kgym_sandbox import cost_model
        a, b = torch.ones(4, 8), torch.ones(8, 2)
        self.assertEqual(cost_model.pytorch_work(lambda x, y: x @ y, [a, b])[0], 2 * 4 * 8 * 2)
        self.assertEqual(cost_model.pytorch_work(lambda x: x.view(32).t(), [a]), (0.0, 0.0))
        self.assertEqual(cost_model.pytorch_work(lambda x: torch.relu(x) + 1, [a])[0], 64.0)

    def test_modeled_seconds_count_launches_bytes_and_flops(self):
        from kgym_sandbox import cost_model
        x = torch.ones(1 << 20)  # 4 MiB
        # relu then add: two kernels, each reads 4 MiB and writes 4 MiB (the scalar 1 is no tensor)
        _, seconds = cost_model.pytorch_work(lambda t: torch.relu(t) + 1, [x])
        self.assertAlmostEqual(seconds, 2 * cost_model.kernel_seconds(0, 8 * (1 << 20)), places=15)
        self.assertAlmostEqual(cost_model.kernel_seconds(0, 3.35e12), 1 + cost_model.LAUNCH_S)
        self.assertAlmostEqual(cost_model.kernel_seconds(67e12, 1.0), 1 + cost_model.LAUNCH_S)

    def test_kernel_traffic_counts_distinct_addresses(self):
        import numpy as np
        from kgym_sandbox import cost_model
        traffic = cost_model.KernelTraffic()
        traffic.touch(np.array([0, 4, 8, 12]), np.array([1, 1, 1, 0]), 4)
        traffic.touch(np.array([0, 4, 16]), np.array([1, 1, 1]), 4)  # re-read of 0 and 4 is free
        self.assertAlmostEqual(traffic.seconds(), cost_model.kernel_seconds(0, 4 * 4))

    def test_coverage(self):
        from kgym_sandbox import cost_model
        self.assertEqual(cost_model.coverage(100.0, 25.0), 0.75)
        self.assertEqual(cost_model.coverage(100.0, 250.0), 0.0)
        self.assertEqual(cost_model.coverage(0.0, 5.0), 0.0)


if __name__ == "__main__":
    unittest.main()
