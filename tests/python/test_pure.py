"""Exact-value tests of the sandbox's pure functions (no GPU, no candidate code)."""
import ctypes
import json
import math
import os
import signal
import statistics
import sys
import threading
import time
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


class EvalDefaults(unittest.TestCase):
    def test_the_sandbox_reads_the_executors_defaults(self):
        """messages/eval_defaults.json, as gpu/executor/eval_defaults.cpp's unit test sees it."""
        from kgym_sandbox import eval_defaults
        cuda, cpu = eval_defaults.options("cuda"), eval_defaults.options("cpu")
        self.assertEqual((cuda["timing_reps"], cuda["batch_memory_mb"], cuda["min_timed_s"], cuda["max_timed_s"],
                          cuda["correctness_trials"]), (1000, 16384, 0.25, 1.0, 5))
        self.assertEqual((cpu["timing_reps"], cpu["max_timed_s"], cpu["min_timed_s"]), (5, 0.5, 0.5))
        self.assertNotIn("timing_precision", cpu)
        self.assertEqual(eval_defaults.tolerance(None, None), 1e-4)
        self.assertEqual(eval_defaults.tolerance("BF16", "KERNELBENCH_TOLERANCES"), 1e-2)
        self.assertEqual(eval_defaults.tolerance("FP32", "DR_KERNEL_TOLERANCES"), 1e-2)
        with self.assertRaises(ValueError):
            eval_defaults.tolerance("FP8", None)


class Frames(unittest.TestCase):
    """The sandbox's frames are built through the schema (kgym_pb2, made by the build)."""

    def test_an_event_is_the_schemas_json_and_a_name_it_lacks_is_refused(self):
        from kgym_sandbox import frames
        self.assertEqual(frames.phase_event("timing"), {"phase": {"name": "PHASE_TIMING"}})
        self.assertEqual(frames.event(exit={"pid": 7, "exit_code": 0, "seconds": {"exit_candidate": 0.5}}),
                         {"exit": {"pid": "7", "seconds": {"exit_candidate": 0.5}}})  # int64 as proto3 JSON writes it
        with self.assertRaises(frames.MalformedFrame):
            frames.event(exit={"pid": 7, "exit_cod": 0})
        with self.assertRaises(frames.MalformedFrame):
            frames.phase_event("warmup")  # not a phase of the schema

    def test_a_result_the_schema_refuses_is_kgyms_internal_error_not_a_malformed_frame(self):
        from kgym_sandbox import frames
        good = {"request_id": "r1", "verdict": "HACKED", "failed_phase": frames.phase_value("correctness"),
                "evidence": [{"kind": "CACHED_OUTPUT", "detail": "trial 2", "source": "judge"}]}
        self.assertEqual(frames.result_event(good), {"result": good})
        bad = {**good, "evidence": [{"kind": "cached_outputs", "detail": "", "source": "judge"}]}
        answer = frames.result_event(bad)["result"]
        self.assertEqual((answer["request_id"], answer["verdict"], answer["failed_phase"]),
                         ("r1", "INTERNAL_ERROR", "PHASE_HARNESS"))
        self.assertIn("cached_outputs", answer["message"])

    def test_commands_are_read_through_the_schema(self):
        from kgym_sandbox import frames
        line = b'{"evaluate": {"workdir": "/w", "request": {"request_id": "r", "device": "CUDA"}}}\n'
        self.assertEqual(frames.command(line)["evaluate"]["workdir"], "/w")
        with self.assertRaises(frames.MalformedFrame):
            frames.command(b'{"evaluate": {"workdirr": "/w"}}\n')


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

    def test_only_plain_contiguous_outputs_are_delivered_after_the_timing(self):
        x = torch.ones(4, 6)

        class Marked(torch.Tensor):
            pass

        self.assertTrue(compare.deliverable([x, torch.zeros(3), torch.tensor(2.0)]))
        self.assertFalse(compare.deliverable([x, x.t()]))               # a copy would be a kernel
        self.assertFalse(compare.deliverable([x[:, ::2]]))
        self.assertFalse(compare.deliverable([x.as_subclass(Marked)]))  # its copy_ may be anything
        self.assertFalse(compare.deliverable([torch._neg_view(x)]))

    def test_one_buffer_returned_by_several_calls(self):
        a, b, shared = torch.ones(8), torch.ones(8), torch.ones(16)
        self.assertFalse(compare.calls_share_storage([[a], [b], [torch.zeros(0)]]))
        self.assertTrue(compare.calls_share_storage([[a], [b], [a]]))
        self.assertTrue(compare.calls_share_storage([[shared[:8]], [shared[4:12]]]))
        self.assertTrue(compare.calls_share_storage([[shared[:8]], [shared[8:]]]))  # one storage: taken as shared
        self.assertFalse(compare.calls_share_storage([[a, a]]))  # within one call: each output has its slot

    def test_fingerprint_tells_equal_from_different(self):
        a = torch.arange(1000.0)
        b = a.clone()
        b[500] += 1
        same = compare.fingerprints([a], compare.compare(a, a.clone(), 0.0, 0.0)["measured"])
        self.assertEqual(same[0], same[1])
        moved = compare.fingerprints([a], compare.compare(a, b, 2.0, 0.0)["measured"])
        self.assertNotEqual(moved[0], moved[1])
        self.assertEqual(moved[1], same[1])

    def test_measure_sums_exactly(self):
        e = torch.tensor([1.0, -2.0, 3.0, float("nan")])
        a = torch.tensor([1.5, -2.0, 3.0, float("nan")])
        m = compare.measure(e, a, 0.1, 0.0)
        self.assertEqual((m.outside, m.max_abs_error, m.squared_error), (1, 0.5, 0.25))
        self.assertEqual(m.max_abs_expected, 3.0)
        self.assertTrue(math.isnan(m.sum_expected))
        ints = compare.measure(torch.arange(4), torch.tensor([0, 1, 2, 5]), 0.0, 0.0)
        self.assertEqual((ints.outside, ints.sum_expected, ints.squares_actual, ints.squared_error), (1, 6.0, 30.0, 4.0))
        self.assertEqual(ints.sample_actual, (0.0, 1.0, 2.0, 5.0))


    def test_piecewise_checks_agree_with_whole_ones(self):
        """The checks go piece by piece (bounded temporaries at KernelBench's sizes): the same
        findings whatever the piece size, a non-contiguous output included."""
        from kgym_sandbox import tracking
        g = torch.Generator().manual_seed(1)
        expected = torch.randn(10, 13, generator=g).t()  # non-contiguous
        actual = expected.contiguous() + 1e-3 * torch.randn(13, 10, generator=g)
        actual[12, 9], actual[0, 0] = 5.0, float("inf")
        findings = []
        for piece in (1 << 25, 7):
            old, compare.PIECE = compare.PIECE, piece
            try:
                tracker = tracking.Tracker()
                tracker.add([expected], [expected + 0.5])
                findings.append((compare.compare(expected, actual, 1e-2, 1e-2),
                                 compare.compare(expected, actual.nan_to_num(posinf=0.0), 1e-2, 1e-2),
                                 compare.all_close([expected], [actual], 1e-2, 1e-2),
                                 compare.all_close([expected], [expected.clone()], 1e-2, 1e-2),
                                 compare.fingerprints([expected], compare.compare(expected, expected + 1e-3, 1e-2,
                                                                                  1e-2)["measured"]),
                                 tracker.sums))
            finally:
                compare.PIECE = old
        self.assertEqual(findings[0][0]["message"], "1 NaN/Inf values where the reference is finite")
        self.assertIn("2 of 130 values outside", findings[0][1]["message"])
        self.assertEqual(findings[0][2:4], (False, True))
        for whole, piecewise in zip(findings[0], findings[1]):
            if isinstance(whole, dict) and "correct" in whole:
                self.assertEqual(whole["message"], piecewise["message"])
                self.assertAlmostEqual(whole["max_abs_error"], piecewise["max_abs_error"], places=12)
            elif isinstance(whole, tuple):
                for (w,), (p,) in zip(whole, piecewise):  # the output's print, the reference's
                    self.assertEqual(w[:2], p[:2])
                    self.assertAlmostEqual(w[2], p[2], places=9)
                    self.assertEqual(w[4], p[4])
            elif isinstance(whole, dict):
                self.assertAlmostEqual(whole[0][3], piecewise[0][3], places=9)
            else:
                self.assertEqual(whole, piecewise)

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


class BatchSize(unittest.TestCase):
    def test_long_enough_to_amortise_a_request_within_memory(self):
        self.assertEqual(timing.batch_size(0.0027, 1 << 20, 4 << 30), 10)     # ceil(0.025 / 0.0027)
        self.assertEqual(timing.batch_size(0.2, 1 << 20, 4 << 30), 1)         # one long call is a batch
        self.assertEqual(timing.batch_size(1e-5, 1 << 20, 4 << 30), 64)       # capped
        self.assertEqual(timing.batch_size(1e-3, 1 << 30, 4 << 30), 4)        # 4 GiB budget / 1 GiB per call
        self.assertEqual(timing.batch_size(1e-3, 16 << 30, 4 << 30), 1)       # never fewer than one
        self.assertEqual(timing.batch_size(1e-3, 1 << 30, 16 << 30), 16)  # EvalOptions.batch_memory_mb 16384
        self.assertEqual(timing.batch_budget(16 << 30, 120 << 30), 16 << 30)  # the options' budget
        self.assertEqual(timing.batch_budget(16 << 30, 48 << 30), 8 << 30)    # a sixth of what is free
        self.assertEqual(timing.batch_budget(16 << 30, 0), 0)                # then one call a batch
        self.assertEqual(timing.calls_per_batch(59, 20), 5)     # 20 timed calls: 4 batches at least
        self.assertEqual(timing.calls_per_batch(59, 1000), 59)  # many: what the batch wants
        self.assertEqual(timing.calls_per_batch(8, 3), 1)       # fewer calls than batches: one a batch


class ScriptedSide:
    """A timed side whose request takes exactly `cost` + passes x k x `call` seconds."""

    def __init__(self, cost: float, call: float):
        self.cost, self.call, self.requests = cost, call, []

    def fill_sets(self, sets, phase):
        self.sets = len(sets)

    def reserve_sets(self, k, pattern=None):  # as RemoteCandidate's: buffers shaped as the pattern
        self.reserved = [[torch.zeros(t.shape) for t in pattern] for _ in range(k)]
        return self.reserved

    def expect(self, expected, phase, k=1):
        pass

    def timed_batch(self, k, rep=None, raw=False, passes=1):
        self.requests.append((k, passes))
        return self.cost + passes * k * self.call, {}

    def start_batch(self, k, passes=1):
        return self.timed_batch(k, passes=passes)

    def finish_batch(self, pending):
        self.finished = pending


class TimingPlan(unittest.TestCase):
    def test_batch_from_the_time_of_a_request(self):
        side = ScriptedSide(cost=0.0004, call=0.002)  # 2 ms a call: 25 calls make 50 ms
        started = timing.start_plan(lambda x: x * 2, side, [torch.ones(4)], warmup=3)
        self.assertEqual(side.requests, [(1, 3)])  # the warm-up: one request of three passes, sent
        planned = timing.plan(side, started, "cpu", reps=1000, new_inputs=None, batch_memory_bytes=4 << 30)
        self.assertEqual(side.finished, started["warming"])  # its answer taken before calibrating
        self.assertEqual(planned["batch"], 11)  # ceil(0.025 / 0.0024): the request's cost included
        self.assertEqual(side.requests, [(1, 3)] + [(1, 1)] * timing.CALIBRATION_REQUESTS)
        pattern = planned["expected"][0]  # the output's shape and dtype, no memory
        self.assertEqual((pattern.device.type, tuple(pattern.shape), pattern.dtype), ("meta", (4,), torch.float32))
        self.assertEqual(started["set_bytes"], 32)  # four float32 inputs, four outputs
        self.assertEqual(timing.plan(side, started, "cpu", 12, None, 4 << 30)["batch"], 3)  # 12 calls: 4 batches
        self.assertEqual(timing.plan(side, started, "cpu", 3, None, 4 << 30)["batch"], 1)

    def test_a_large_set_warms_up_after_the_trials(self):
        side, made = ScriptedSide(cost=0.0004, call=0.002), []
        old, timing.OVERLAP_MAX_BYTES = timing.OVERLAP_MAX_BYTES, 31
        try:
            started = timing.start_plan(lambda x: x * 2, side, [torch.ones(4)], warmup=3)
            self.assertFalse(timing.overlaps(started["set_bytes"]))
        finally:
            timing.OVERLAP_MAX_BYTES = old
        self.assertEqual(side.requests, [])  # 32 bytes: nothing sent before the trials
        planned = timing.plan(side, started, "cpu", 1000, lambda into=(): made.append(list(into)) or [into[0]], 4 << 30)
        self.assertEqual(made, side.reserved)  # fresh inputs for the warm-up, made in the runner's buffers
        self.assertEqual(side.requests, [(1, 3)] + [(1, 1)] * timing.CALIBRATION_REQUESTS)
        self.assertEqual((side.finished, planned["batch"]), (started["warming"], 11))

    def test_request_cost_from_one_call_against_a_batch(self):
        side = ScriptedSide(cost=0.0004, call=0.002)
        one = timing.single_calls(side, timing.Clock("cpu"))
        self.assertEqual(side.requests, [(1, 1)] * timing.CALIBRATION_REQUESTS)
        many = [side.timed_batch(21)[0], side.timed_batch(21)[0] + 0.001, side.timed_batch(21)[0] - 0.001]
        self.assertAlmostEqual(timing.request_cost(one, many, 21), 0.0004, places=12)
        two = timing.single_calls(side, timing.Clock("cpu"), passes=2)  # k = 1: two passes over one set
        self.assertAlmostEqual(timing.request_cost(one, two, 2), 0.0004, places=12)

    def test_the_cost_taken_off_leaves_every_batch_at_least_half_its_time(self):
        # Single calls measured slow under load (median 10 ms: cost up to 5 ms) against 6 ms batches.
        self.assertEqual(timing.bounded_cost(0.005, [0.006, 0.007, 0.009]), 0.003)
        self.assertEqual(timing.bounded_cost(0.0004, [0.05, 0.06]), 0.0004)  # the usual case: unchanged
        self.assertEqual(timing.bounded_cost(0.001, []), 0.001)

    def test_request_cost_never_negative_nor_above_half_a_request(self):
        self.assertEqual(timing.request_cost([0.01, 0.02, 0.01], [0.2], 8), 0.0)
        self.assertAlmostEqual(timing.request_cost([0.011], [0.018], 8), 0.0055, places=12)

    def test_ratio_rse_is_a_robust_standard_error_of_the_pairs_log_ratios_after_the_first(self):
        e = math.exp
        # Pairs after the first: log-ratios 0.01, -0.01, 0.03, 0.5 (a slow batch): median 0.02,
        # absolute deviations 0.01, 0.03, 0.01, 0.48: MAD 0.02; scale 1.4826 * 0.02, over sqrt(4).
        ref = [9.0, e(0.01), e(-0.01), e(0.03), e(0.5)]
        cand = [1.0] * 5
        self.assertAlmostEqual(timing.ratio_rse(ref, cand), 1.4826 * 0.02 / 2, places=12)
        self.assertEqual(timing.ratio_rse([1.0, 1.0, 1.0], [1.0, 1.0, 1.0]), math.inf)  # two pairs after the first

    def test_timing_stops_at_the_floor_when_steady_and_at_the_cap_when_noisy(self):
        rule = timing.StopRule(reps=1000, min_timed_s=0.5, max_timed_s=1.5, precision=0.001)
        steady = [0.05] * 11
        self.assertFalse(rule.done(steady[:9], steady[:9], 90))  # 0.45 s a side: under the floor
        self.assertTrue(rule.done(steady, steady, 110))          # 0.55 s, 10 pairs, error 0
        self.assertFalse(rule.done([0.1] * 6, [0.1] * 6, 60))    # 0.6 s but 5 pairs: too few to stop on
        noisy_ref, noisy_cand = [0.05, 0.051, 0.049] * 4, [0.05] * 12
        self.assertFalse(rule.done(noisy_ref, noisy_cand, 120))  # over the floor, error ~0.009
        self.assertTrue(rule.done(noisy_ref * 3, noisy_cand * 3, 360))  # 1.8 s a side: the cap
        self.assertTrue(rule.done(steady[:2], steady[:2], 1000))  # timing_reps calls
        self.assertFalse(rule.done([1.0], [1.0], 4))              # fewer than 5 calls
        fixed = timing.StopRule(reps=1000, min_timed_s=0.5)      # no precision: a fixed span
        self.assertTrue(fixed.done(noisy_ref, noisy_cand, 60))
        self.assertEqual(timing.StopRule(5, 1.0, 0.2).max_timed_s, 1.0)  # a cap below the floor is the floor


class InPlaceInputs(unittest.TestCase):
    """get_inputs' random tensors made in the judge's buffers (the timing's refill)."""

    def test_a_factory_of_the_targets_shape_writes_into_it_with_the_values_it_would_have_made(self):
        from kgym_sandbox import in_place_inputs
        target, other = torch.zeros(3, 4), torch.zeros(5)
        torch.manual_seed(11)
        fresh = [torch.rand(3, 4), torch.randn((5,)), torch.rand(2)]
        torch.manual_seed(11)
        with in_place_inputs.RandomInto([target, other]):
            made = [torch.rand(3, 4), torch.randn((5,)), torch.rand(2)]
        self.assertIs(made[0], target)
        self.assertIs(made[1], other)
        self.assertIsNot(made[2], target)  # no target left: made as usual
        for a, b in zip(made, fresh):
            self.assertTrue(torch.equal(a, b))

    def test_a_call_that_does_not_fit_the_next_target_runs_as_usual(self):
        from kgym_sandbox import in_place_inputs
        target = torch.zeros(4)
        with in_place_inputs.RandomInto([target]):
            scale = torch.rand(())                    # another shape
            half = torch.rand(4, dtype=torch.float16)  # another dtype
            grad = torch.rand(4, requires_grad=True)   # a leaf for autograd: not redirected
            elsewhere = torch.rand(4, device="meta")   # asked for another device
            x = torch.rand(4) * scale                  # fits: made in the target, then scaled
        self.assertFalse(torch.equal(target, torch.zeros(4)))  # x was made there before it was scaled
        self.assertEqual(elsewhere.device.type, "meta")
        for t in (scale, half, grad, x):
            self.assertNotEqual(t.data_ptr(), target.data_ptr())
        self.assertTrue(grad.requires_grad)

    def test_requested_shape_of_each_calling_form(self):
        from kgym_sandbox.in_place_inputs import RandomInto, requested_shape
        self.assertEqual(requested_shape(torch.rand, (2, 3), {}), (2, 3))
        self.assertEqual(requested_shape(torch.rand, ((2, 3),), {}), (2, 3))
        self.assertEqual(requested_shape(torch.randn, (), {"size": [4]}), (4,))
        self.assertEqual(requested_shape(torch.randint, (10, (2, 2)), {}), (2, 2))
        self.assertEqual(requested_shape(torch.randint, (0, 10, (6,)), {}), (6,))
        self.assertIsNone(requested_shape(torch.randint, (10,), {}))
        self.assertIsNone(requested_shape(torch.rand, (2.5,), {}))
        target = torch.zeros(2, 2, dtype=torch.int64)
        with RandomInto([target]):
            made = torch.randint(0, 10, (2, 2))
        self.assertIs(made, target)

    def test_settled_clones_what_lies_in_another_targets_memory(self):
        from kgym_sandbox import in_place_inputs
        a, b = torch.arange(4.0), torch.arange(4.0) + 10
        tensors, placed = in_place_inputs.settled([a, b], [a, b])
        self.assertEqual(placed, [True, True])
        self.assertIs(tensors[0], a)
        swapped, placed = in_place_inputs.settled([b, a], [a, b])  # get_inputs returned them the other way
        self.assertEqual(placed, [False, False])
        for copy, original in zip(swapped, (b, a)):
            self.assertNotEqual(copy.data_ptr(), original.data_ptr())
            self.assertTrue(torch.equal(copy, original))
        for dst, src in zip((a, b), swapped):  # the copies fill_sets then makes
            dst.copy_(src)
        self.assertEqual((a.tolist(), b.tolist()), ([10.0, 11.0, 12.0, 13.0], [0.0, 1.0, 2.0, 3.0]))
        outside = torch.ones(4)
        kept, placed = in_place_inputs.settled([outside, a[1:]], [a, b])  # a view of a, in b's place
        self.assertIs(kept[0], outside)
        self.assertEqual(placed, [False, False])
        self.assertNotEqual(kept[1].data_ptr(), a[1:].data_ptr())

    def test_make_inputs_into_a_set_gives_the_inputs_get_inputs_gives(self):
        from kgym_sandbox import evaluate

        class Task:
            @staticmethod
            def get_inputs():
                return [torch.rand(2, 3), 7, torch.randn(3)]

        plain = evaluate.make_inputs(Task, 5, "cpu")
        into = [torch.zeros(2, 3), torch.zeros(3)]
        made = evaluate.make_inputs(Task, 5, "cpu", into=into)
        self.assertIs(made[0], into[0])
        self.assertIs(made[2], into[1])
        self.assertEqual(made[1], 7)
        self.assertTrue(torch.equal(made[0], plain[0]) and torch.equal(made[2], plain[2]))
        half = evaluate.make_inputs(Task, 5, "cpu", torch.float16, into=[torch.zeros(2, 3), torch.zeros(3)])
        self.assertEqual(half[0].dtype, torch.float16)  # cast after making: not made in place


class RefillSide(ScriptedSide):
    """A timed side with an input arena of `k` sets after its first fill (RemoteCandidate's
    input_targets), that records what it was filled with."""

    def __init__(self, arena: bool, name: str = "", turns: list = None):
        super().__init__(cost=0.0001, call=0.001)
        self.arena, self.buffers, self.fills, self.keep_outputs = arena, None, [], True
        self.name, self.turns = name, turns if turns is not None else []  # turns: who delivered, in order

    def release(self, phase):
        pass

    def input_targets(self, k):
        return [[b] for b in self.buffers[:k]] if self.arena and self.buffers else []

    def reserve_sets(self, k, pattern=None):  # as RemoteCandidate's: an arena for k sets, from no set's values
        if not self.arena:
            return []
        self.fill_sets([[torch.empty(2, device="meta")]] * k, "timing")
        return self.input_targets(k)

    def fill_sets(self, sets, phase):
        self.fills.append([inputs[0] for inputs in sets])
        if self.buffers is None:
            self.buffers = [torch.zeros(inputs[0].shape) for inputs in sets]  # the arena, made at the first fill

    def delivery_size(self):
        return 1 << 30

    def deliver(self, calls, done=True):
        self.turns.append(self.name)

    def delivered_output(self, call, j):
        return [torch.zeros(2)]


class OneCallADelivery:
    """Mixed into a timed side: buffers for one call's outputs, so a delivery a compared call,
    the nth taking `delivery_ms_of(n)` ms (recorded in delivery_ms, as RemoteCandidate does)."""
    delivery_ms = ()

    def delivery_ms_of(self, n):
        return 0.1

    def delivery_size(self):
        return 1

    def deliver(self, calls, done=True):
        self.delivery_ms = list(self.delivery_ms) + [self.delivery_ms_of(len(self.delivery_ms))]


class CheckShare(unittest.TestCase):
    def test_a_short_batch_of_short_calls_has_more_of_its_calls_compared(self):
        self.assertEqual(timing.check_share(0.025, 100), 0.1)  # the usual 25 ms batch: a tenth
        self.assertEqual(timing.check_share(0.02, 100), 0.1)  # 2 ms of a tenth
        self.assertEqual(timing.check_share(0.004, 8), 0.5)  # a tenth would carry 0.4 ms
        self.assertEqual(timing.check_share(0.002, 250), 1.0)
        self.assertEqual(timing.check_share(0.0005, 50), 1.0)  # never more than every call
        self.assertEqual(timing.check_share(0.0, 8), 1.0)
        # Calls of 2 ms or more: any delivery of one carries 2 ms.
        self.assertEqual(timing.check_share(0.004, 2), 0.1)
        self.assertEqual(timing.check_share(0.0037, 1), 0.1)

    def test_time_interleaved_draws_with_the_share_of_the_faster_sides_last_batch(self):
        shares = []
        reference, candidate = RefillSide(False, "ref", []), RefillSide(False, "cand", [])
        reference.call = 0.01  # 20.1 ms a batch: a tenth of its calls would do
        timing.time_interleaved(reference, candidate, lambda into=(): [torch.ones(2)], [torch.zeros(2)],
                                lambda *a: None, timing.StopRule(reps=6, min_timed_s=0.0), k=2, device="cpu",
                                seconds={}, check_this=lambda share: shares.append(share) or False)
        # Three batches of two calls; the candidate's of 1 ms and a request cost of 0.1 ms
        # (ScriptedSide): 2.1 ms, so 2/2.1 of the calls; the last batch's last call is compared
        # without a draw.
        self.assertEqual(len(shares), 5)
        for share in shares:
            self.assertAlmostEqual(share, 0.002 / 0.0021, places=12)


class TimingRefill(unittest.TestCase):
    def test_the_sides_take_turns_at_delivering_first_batch_by_batch(self):
        turns = []
        reference, candidate = RefillSide(False, "ref", turns), RefillSide(False, "cand", turns)
        timed = timing.time_interleaved(reference, candidate, lambda into=(): [torch.ones(2)], [torch.zeros(2)],
                                        lambda *a: None, timing.StopRule(reps=6, min_timed_s=0.0), k=2, device="cpu",
                                        seconds={}, check_this=lambda share: True)
        # Batches in turn, the reference first (timing.order); each batch's outputs delivered first
        # by the side that ran it second (the next batch's first): each side every other batch.
        self.assertEqual(timed["reference_second"], [False, True, False])  # three batches of two calls
        self.assertEqual(turns, ["cand", "ref", "ref", "cand", "cand", "ref"])

    def test_each_batchs_deliveries_are_counted(self):
        class OneAtATime(OneCallADelivery, RefillSide):
            pass

        reference, candidate = OneAtATime(False), OneAtATime(False)
        chosen = iter([True, True, False, True, False])  # per call after its batch; the last's last is always compared
        timed = timing.time_interleaved(reference, candidate, lambda into=(): [torch.ones(2)], [torch.zeros(2)],
                                        lambda *a: None, timing.StopRule(reps=6, min_timed_s=0.0), k=2, device="cpu",
                                        seconds={}, check_this=lambda share: next(chosen))
        self.assertEqual(timed["delivery_parts"], [2, 1, 1])
        self.assertEqual(len(candidate.delivery_ms), 4)

    def test_a_clock_finding_on_a_few_batches_is_timed_on_until_it_holds_on_enough_or_goes(self):
        class Delivering(OneCallADelivery, RefillSide):
            def __init__(self, ms):
                super().__init__(False)
                self.delivery_ms_of = ms

        def timed_with(candidate_ms):
            reference, candidate = Delivering(lambda n: 0.1), Delivering(candidate_ms)
            return timing.time_interleaved(reference, candidate, lambda into=(): [torch.ones(2)], [torch.zeros(2)],
                                           lambda *a: None, timing.StopRule(reps=6, min_timed_s=0.0, max_timed_s=1.0),
                                           k=2, device="cpu", seconds={}, check_this=lambda share: True)

        honest = timed_with(lambda n: 0.1)  # three batches of two calls, as timing_reps asks
        self.assertEqual((len(honest["batches_ms"]["cand"]), honest["confirming_batches"]), (3, 0))
        # 1.8 ms beyond in every batch (bound 0.5): timed on to CONFIRM_BATCHES, where it still holds.
        every = timed_with(lambda n: 1.0)
        self.assertEqual(len(every["batches_ms"]["cand"]), timing.CONFIRM_BATCHES)
        self.assertEqual(every["confirming_batches"], timing.CONFIRM_BATCHES - 3)
        # Beyond only in its first two batches: the upper quartile forgets two of eight batches.
        early = timed_with(lambda n: 1.0 if n < 4 else 0.1)
        self.assertEqual((len(early["batches_ms"]["cand"]), early["confirming_batches"]), (8, 5))
        # Within the cap only: a rule whose timing is spent rules on what it has.
        capped = timing.StopRule(reps=6, min_timed_s=0.0, max_timed_s=0.001)
        self.assertFalse(capped.confirming([0.0021] * 3, [0.0021] * 3))
        self.assertTrue(capped.confirming([0.0001] * 3, [0.0001] * 3))

    def test_every_refill_is_made_in_the_reference_runners_buffers(self):
        reference, candidate, made = RefillSide(arena=True), RefillSide(arena=False), []

        def new_inputs(into=()):
            made.append(list(into))
            return [into[0] if into else torch.ones(2)]

        timing.time_interleaved(reference, candidate, new_inputs, [torch.zeros(2)], lambda *a: None,
                                timing.StopRule(reps=6, min_timed_s=0.0), k=2, device="cpu", seconds={},
                                check_this=lambda share: False)
        self.assertEqual(len(made), 6)  # three batches of two calls: no set made for the arena
        self.assertEqual([t.device.type for t in reference.fills[0]], ["meta"] * 2)  # the arena for two sets, from a pattern
        for i, into in enumerate(made):  # every batch's sets in the reference runner's own buffers
            self.assertIs(into[0], reference.buffers[i % 2])
        # The candidate is handed the very tensors the reference runner's buffers hold (its copy
        # is made from them), never buffers of its own.
        self.assertIs(candidate.fills[0][0], reference.buffers[0])
        self.assertIs(candidate.fills[1][1], reference.buffers[1])
        self.assertIsNone(candidate.input_targets(2) or None)


class DeliveringSide:
    """A side whose last batch's outputs reach `size` buffers at a time (RemoteCandidate on the
    GPU): records each delivery, answers which call each buffer holds."""

    def __init__(self, size: int, name: str = "", turns: list = None):
        self.size, self.deliveries, self.held = size, [], []
        self.name, self.turns = name, turns if turns is not None else []  # turns: who delivered, in order

    def delivery_size(self):
        return self.size

    def deliver(self, calls, done=True):
        assert len(calls) <= self.size
        self.deliveries.append((list(calls), done))
        self.turns.append(self.name)
        self.held = list(calls)

    def delivered_output(self, call, j):
        return self.held[j]


class SharedBuffersLetGo(unittest.TestCase):
    """RemoteCandidate adds a side's shared buffers when more are needed and lets go of them only
    for another layout (freed before the new ones are made), and of the reference runner's once
    it is done (at KernelBench's level-1 sizes a set is 8 GiB)."""

    def side_and_requests(self):
        import weakref
        from kgym_sandbox import remote_candidate
        side, sent, old = remote_candidate.RemoteCandidate(None, "cpu", "", traced=False), [], []

        def request(phase, message, fds=(), internal_ok=False):  # what the process is sent, and
            gone = all(ref() is None for ref in old)  # whether the buffers watched are freed by then
            sent.append((message["op"], len(message.get("sets", [])), len(message["arena"]["tensors"]),
                         bool(message.get("append")), gone))
            return {}
        side.request = request
        return side, sent, lambda arena: old.append(weakref.ref(arena))

    def test_input_sets_are_added_then_written_in_place_and_let_go_only_for_another_layout(self):
        import gc
        side, sent, watch = self.side_and_requests()
        x = torch.ones(4)
        side.fill_sets([[x]], "correctness")
        side.fill_sets([[x], [x]], "timing")
        side.fill_sets([[x * 2], [x * 3]], "timing")
        self.assertEqual(sent, [("inputs", 1, 1, False, True),   # the trials' one set
                                ("inputs", 1, 1, True, True)])   # the timing's second, added beside it
        self.assertEqual([t.tolist() for t in side.input_tensors()], [[2.0] * 4, [3.0] * 4])  # in place
        self.assertEqual(side.input_targets(2), [[side.input_arenas[0].tensors[0]], [side.input_arenas[1].tensors[0]]])
        for arena in side.input_arenas:
            watch(arena)
        arena = None
        gc.collect()
        side.fill_sets([[torch.ones(5)]], "timing")  # another layout: the old sets go first
        self.assertEqual(sent[2:], [("inputs", 0, 0, False, True), ("inputs", 1, 1, False, True)])

    def test_sets_reserved_from_a_pattern_copy_nothing_and_are_then_written_in_place(self):
        from kgym_sandbox import packing
        side, sent, watch = self.side_and_requests()
        x = torch.ones(4)
        self.assertEqual(side.reserve_sets(2), [])  # nothing shared yet: no pattern to reserve from
        targets = side.reserve_sets(1, packing.meta([x, 3]))
        self.assertEqual(sent, [("inputs", 1, 1, False, True)])
        self.assertEqual([t.shape for t in targets[0]], [torch.Size([4])])
        targets[0][0].fill_(5.0)  # a set made in place, then filled: nothing copied over it
        side.fill_sets([[targets[0][0], 3]], "load")
        self.assertEqual(len(sent), 1)
        targets = side.reserve_sets(2)  # the timing's two sets, laid out as the set shared now
        self.assertEqual(sent[1:], [("inputs", 1, 1, True, True)])  # one more, added
        self.assertEqual(len(targets), 2)
        self.assertEqual(targets[0][0].tolist(), [5.0] * 4)  # the pattern wrote nothing over the first
        self.assertEqual(packing.flat_specs(targets[1]), packing.flat_specs([x]))

    def test_output_buffers_the_same_and_a_finished_side_holds_none(self):
        import gc
        side, sent, watch = self.side_and_requests()
        side.expect([torch.ones(3)], "correctness", 1)
        first = side.slots[0][0]
        side.expect([torch.ones(3)], "timing", 4)
        self.assertEqual(sent, [("outputs", 0, 1, False, True), ("outputs", 0, 3, True, True)])
        self.assertIs(side.slots[0][0], first)
        watch(first)
        first = None
        gc.collect()
        side.expect([torch.ones(2)], "timing", 2)  # other outputs: the old buffers go first
        self.assertEqual(sent[2:], [("outputs", 0, 0, False, True), ("outputs", 0, 2, False, True)])
        side.fill_sets([[torch.ones(2)]], "timing")
        watch(side.input_arenas[0])
        watch(side.slots[0][0])
        side.let_go()
        gc.collect()
        self.assertEqual((side.input_arenas, side.slots, side.input_sets), ([], [], 0))
        side.request("timing", {"op": "ping", "arena": {"tensors": []}})
        self.assertTrue(sent[-1][4])  # nothing of the judge's left for it


class Delivery(unittest.TestCase):
    def test_a_side_holds_buffers_for_every_call_only_while_they_are_small(self):
        from kgym_sandbox import remote_candidate
        mib = 1 << 20
        self.assertEqual(remote_candidate.delivery_slots(15, 520 * mib), 1)  # KernelBench's l2_73: one output
        self.assertEqual(remote_candidate.delivery_slots(15, 64 * mib), 4)
        self.assertEqual(remote_candidate.delivery_slots(15, 100 * mib), 2)
        self.assertEqual(remote_candidate.delivery_slots(64, mib), 64)
        self.assertEqual(remote_candidate.delivery_slots(3, 4), 3)
        self.assertEqual(remote_candidate.delivery_slots(5, 0), 5)

    def test_the_upper_quartile_is_what_more_than_a_quarter_reach(self):
        self.assertEqual(timing.upper_quartile([3.0]), 3.0)
        self.assertEqual(timing.upper_quartile([1.0, 3.0, 2.0]), 3.0)  # up to three: the largest
        self.assertEqual(timing.upper_quartile([1.0, 4.0, 2.0, 3.0]), 3.0)  # one of four is a quarter
        self.assertEqual(timing.upper_quartile([5.0, 1.0, 4.0, 2.0, 3.0]), 4.0)
        self.assertEqual(timing.upper_quartile(list(range(8))), 5)  # two of eight: a quarter
        self.assertEqual(timing.upper_quartile(list(range(9))), 6)

    def test_a_deliverys_excess_is_the_upper_quartile_beyond_the_reference_runners_pair(self):
        # Honest: the two sides' deliveries differ by noise; one preempted delivery in eight moves nothing.
        self.assertEqual(timing.delivery_excess_ms([0.5] * 8, [0.5, 0.25, 0.5, 0.5, 3.5, 0.5, 0.5, 0.5]), 0.0)
        # Work done in every delivery (a 2 ms matmul a call, two calls a part) adds its whole time ...
        self.assertEqual(timing.delivery_excess_ms([0.5, 0.5, 0.5, 0.5, 0.5], [4.5, 4.5, 4.75, 4.25, 4.5]), 4.0)
        # ... and done in three of eight (its fast batches more than a quarter: its IQM moves), too.
        self.assertEqual(timing.delivery_excess_ms([0.5] * 8, [0.5, 4.5, 0.5, 4.5, 0.5, 0.5, 4.5, 0.5]), 4.0)
        self.assertIsNone(timing.delivery_excess_ms([0.5], [0.5, 0.5]))  # unpaired
        self.assertIsNone(timing.delivery_excess_ms([], []))  # copied inside the requests: no deliveries

    def test_deliveries_may_take_longer_by_half_a_millisecond_or_a_quarter_of_the_reference_runners(self):
        self.assertEqual(timing.delivery_bound_ms([0.5, 0.75, 0.25]), 0.5)
        self.assertEqual(timing.delivery_bound_ms([3.5, 4.0, 3.0]), 0.875)  # a 6 GiB output's copy
        self.assertEqual(timing.delivery_bound_ms([]), 0.5)

    def test_work_in_the_deliveries_is_found_and_said_and_noise_is_not(self):
        self.assertEqual(timing.delivery_work([0.5, 0.5], [0.75, 1.0]), "")  # 0.25 ms: within the floor
        self.assertEqual(timing.delivery_work([3.5, 3.5], [4.25, 4.25]), "")  # 0.75 ms of 3.5: within a quarter
        self.assertEqual(timing.delivery_work([], []), "")
        self.assertEqual(timing.delivery_work([0.5], [2.0]),
                         "its 1 delivery took 1.500 ms beyond the reference runner's of the same calls "
                         "(upper quartile; bound 0.500 ms; the reference runner's median 0.500 ms)")
        self.assertEqual(timing.delivery_work([0.5, 0.5, 0.5], [3.25, 3.0, 3.5]),
                         "its 3 deliveries took 3.000 ms beyond the reference runner's of the same calls "
                         "(upper quartile; bound 0.500 ms; the reference runner's median 0.500 ms)")

    def test_a_batchs_deliveries_are_ruled_on_together(self):
        # The GELU task's skips_unchosen_calls as an H200 showed it: 0.3 ms beyond in each of a
        # batch's deliveries (a few compared calls each), under the floor one by one ...
        reference, candidate = [0.25] * 12, [0.55] * 12
        self.assertEqual(timing.delivery_work(reference, candidate), "")
        # ... and 1.8 ms by the batch, six deliveries each: beyond max(0.5, a quarter of 1.5).
        self.assertEqual(timing.by_batch(candidate, [6, 6]), [3.3, 3.3])
        self.assertAlmostEqual(timing.delivery_excess_ms(reference, candidate, [6, 6]), 1.8)
        self.assertEqual(timing.delivery_bound_ms(reference, [6, 6]), 0.5)
        self.assertEqual(timing.delivery_bound_ms([1.0] * 12, [6, 6]), 1.5)  # a quarter of 6 ms
        self.assertEqual(timing.delivery_work(reference, candidate, [6, 6]),
                         "its 12 deliveries (2 batches) took 1.800 ms beyond the reference runner's of the same calls "
                         "(upper quartile of the batches; bound 0.500 ms; the reference runner's median 1.500 ms)")
        # Honest noise, +-0.05 ms a delivery, stays within it by the batch.
        self.assertEqual(timing.delivery_work(reference, [0.3, 0.2] * 6, [6, 6]), "")
        # Parts that do not cover the deliveries (a result from before them): one by one.
        self.assertEqual(timing.by_batch([1.0, 2.0, 3.0], [2]), [1.0, 2.0, 3.0])
        self.assertEqual(timing.by_batch([1.0, 2.0, 3.0], []), [1.0, 2.0, 3.0])

    def test_chosen_calls_are_delivered_a_few_at_a_time_and_each_compared_with_its_own(self):
        sides = {"ref": DeliveringSide(3), "cand": DeliveringSide(2)}
        compared, spent = [], {"timing_delivery": 0.0, "timing_checks": 0.0}
        n = timing.compare_chosen(sides, [0, 3, 5, 7, 9], lambda i, ref, cand: compared.append((i, ref, cand)), spent)
        self.assertEqual(n, 5)
        self.assertEqual(compared, [(0, 0, 0), (3, 3, 3), (5, 5, 5), (7, 7, 7), (9, 9, 9)])
        for side in sides.values():  # the fewer buffers of the two decide; the last part says done
            self.assertEqual(side.deliveries, [([0, 3], False), ([5, 7], False), ([9], True)])
        self.assertEqual(timing.compare_chosen(sides, [], lambda *a: compared.append(a), spent), 0)
        self.assertEqual(len(compared), 5)

    def test_the_references_batches_after_the_candidates_are_compared_with_those_before(self):
        second = [False, True] * 3
        self.assertEqual(timing.reference_after_ratio([10.0, 10.0, 10.0, 9.5, 10.0, 10.0], second), 1.0)
        self.assertEqual(timing.reference_after_ratio([10.0, 20.0, 10.0, 15.0, 10.0, 25.0], second), 2.0)
        # One stalled batch of eight after the candidate's moves nothing, nor three (its three fast
        # batches of sixteen would be cut by its interquartile mean); five slowed do.
        self.assertEqual(timing.reference_after_ratio([10.0] * 8 + [10.0, 30.0] + [10.0] * 6, [False, True] * 8), 1.0)
        self.assertEqual(timing.reference_after_ratio([10.0, 20.0, 10.0, 20.0] + [10.0] * 8 + [10.0, 20.0, 10.0, 10.0],
                                                      [False, True] * 8), 1.0)
        self.assertEqual(timing.reference_after_ratio([10.0, 20.0] * 5 + [10.0] * 6, [False, True] * 8), 2.0)
        # Of two after it, one slow at random is not the finding; both are.
        self.assertEqual(timing.reference_after_ratio([3.3, 3.75, 3.3, 3.3], [False, True] * 2), 1.0)
        self.assertAlmostEqual(timing.reference_after_ratio([3.3, 6.6, 3.3, 6.6], [False, True] * 2), 2.0)
        self.assertIsNone(timing.reference_after_ratio([10.0, 20.0, 10.0], [False, True, False]))  # one after
        self.assertEqual(timing.reference_slowed([10.0, 10.8, 10.0, 10.8], [False, True, False, True]), "")  # 1.08x
        self.assertNotEqual(timing.reference_slowed([10.0, 12.0, 10.0, 12.0], [False, True, False, True]), "")  # 1.2x
        self.assertEqual(timing.reference_slowed([8.0, 8.0, 12.0, 12.0], [True, True, False, False]), "")  # faster
        self.assertEqual(timing.reference_slowed([10.0, 20.0, 10.0, 15.0, 10.0, 25.0], second),
                         "the reference's 3 batches run right after the candidate's took 2.000x the 3 run before it "
                         "(what more than half reach, 20.000 against 10.000 ms; bound 1.1x)")
        # A reference whose batches spread widely, the same in both positions: one side's upper
        # quartile against the other's median would be 1.4x; the same quantile on both sides, 1.
        spread = [10.0, 10.0, 14.0, 14.0, 10.0, 10.0, 14.0, 14.0]
        self.assertEqual(timing.reference_after_ratio(spread, [False, True] * 4), 1.0)
        self.assertEqual(timing.reference_slowed(spread, [False, True] * 4), "")

    def test_a_fast_mode_of_few_batches_has_the_reference_after_them_ruled_by_the_upper_quartile(self):
        # Two of four reference batches after the candidate's slowed: under its interquartile
        # mean over all eight of its batches that gains it nothing; where its time came from a
        # fast mode of three batches (placements redrawn), it may.
        slowed = {"reference_batches_ms": [10.0, 20.0, 10.0, 20.0, 10.0, 10.0, 10.0, 10.0],
                  "reference_batches_second": [False, True] * 4, "candidate_batches_ms": [1.0] * 8,
                  "candidate_batches_timed": 8}
        self.assertEqual(timing.clock_findings(slowed, True), [])
        kinds = [kind for kind, _, _ in timing.clock_findings(dict(slowed, candidate_batches_timed=3), True)]
        self.assertEqual(kinds, ["REFERENCE_SLOWED_AFTER_CANDIDATE"])
        self.assertIn("(upper quartiles, 20.000 against 10.000 ms", timing.clock_findings(
            dict(slowed, candidate_batches_timed=3), True)[0][2])
        self.assertIs(timing.after_quantile(slowed), timing.more_than_half)
        self.assertIs(timing.after_quantile(dict(slowed, candidate_batches_timed=3)), timing.upper_quartile)
        self.assertIs(timing.after_quantile({}), timing.more_than_half)
        self.assertEqual(timing.result_after_ratio(slowed), 1.0)  # the benches' figure, the judge's quantile
        self.assertEqual(timing.result_after_ratio(dict(slowed, candidate_batches_timed=3)), 2.0)

    def test_the_judges_clock_rules_on_both_findings_at_once(self):
        honest = {"reference_delivery_ms": [0.5] * 4, "delivery_ms": [0.4] * 4,
                  "reference_batches_ms": [10.0] * 4, "reference_batches_second": [False, True] * 2}
        self.assertEqual(timing.clock_findings(honest, True), [])
        both = dict(honest, delivery_ms=[3.0] * 4, reference_batches_ms=[10.0, 20.0] * 2)
        kinds = [kind for kind, _, _ in timing.clock_findings(both, True)]
        self.assertEqual(kinds, ["DELIVERY_SLOWER_THAN_REFERENCE", "REFERENCE_SLOWED_AFTER_CANDIDATE"])
        _, message, detail = timing.clock_findings(both, True)[1]
        self.assertEqual(message, "work left running past its answers, unseen by its trace: " + detail)
        self.assertEqual(detail, timing.reference_slowed([10.0, 20.0] * 2, [False, True] * 2))
        # The reference-after rule on the GPU only: on the CPU both runners share a core.
        self.assertEqual([kind for kind, _, _ in timing.clock_findings(both, False)], ["DELIVERY_SLOWER_THAN_REFERENCE"])
        self.assertEqual(timing.clock_findings({}, True), [])  # no deliveries, no batches: nothing to pair

    def test_the_sides_take_turns_at_delivering_first(self):
        turns = []
        sides = {"ref": DeliveringSide(2, "ref", turns), "cand": DeliveringSide(2, "cand", turns)}
        spent = {"timing_delivery": 0.0, "timing_checks": 0.0}
        timing.compare_chosen(sides, [0, 1, 2, 3, 4], lambda *a: None, spent, first="cand")
        self.assertEqual(turns, ["cand", "ref", "ref", "cand", "cand", "ref"])
        turns.clear()
        timing.compare_chosen(sides, [0], lambda *a: None, spent)  # the reference runner, unless told
        self.assertEqual(turns, ["ref", "cand"])


class PlacedSide(RefillSide):
    """A side whose call takes `slow` seconds at placements the `pattern` marks True, `fast` at
    the others; each move goes to the pattern's next placement and records the pad it was given."""

    def __init__(self, pattern: list, fast: float = 0.001, slow: float = 0.0013):
        super().__init__(arena=False)
        self.pattern, self.fast, self.slow, self.placement, self.pads = pattern, fast, slow, 0, []

    def move(self, pad_bytes, phase):
        self.pads.append(pad_bytes)
        self.placement += 1

    def timed_batch(self, k, rep=None, raw=False, passes=1):
        self.requests.append((k, passes))
        call = self.slow if self.pattern[self.placement % len(self.pattern)] else self.fast
        return self.cost + passes * k * call, {}


class Placement(unittest.TestCase):
    def test_the_fast_mode_is_below_the_widest_step_above_eight_percent_with_two_batches_at_least(self):
        self.assertEqual(timing.fast_mode([1.0, 1.3, 1.01, 1.31, 0.99, 1.29]), [0, 2, 4])
        self.assertEqual(timing.fast_mode([1.0, 1.01, 1.02, 2.0]), [0, 1, 2, 3])  # one slow batch is no mode
        self.assertEqual(timing.fast_mode([1.0, 1.01, 2.0, 2.0]), [0, 1])
        self.assertEqual(timing.fast_mode([1.0, 1.02, 1.05, 1.03]), [0, 1, 2, 3])  # steps of 2-3%: one mode
        self.assertEqual(timing.fast_mode([0.5, 1.0, 1.01, 1.02]), [0, 1, 2, 3])  # a lone fast batch is no mode
        self.assertEqual(timing.fast_mode([1.0, 1.07, 1.0, 1.07]), [0, 1, 2, 3])  # 7%: below the gap
        self.assertEqual(timing.fast_mode([]), [])
        self.assertTrue(timing.two_modes([1.0, 1.3, 1.0, 1.3]))
        self.assertFalse(timing.two_modes([1.0, 1.01]))
        self.assertEqual(timing.fast_pairs([1.0, 1.3, 1.0, 1.3, 1.0], [1.0, 1.0, 1.3, 1.3, 1.0]), {0, 4})

    def test_a_fast_mode_is_compared_whole_so_skipping_work_in_a_few_batches_cannot_make_it(self):
        self.assertTrue(timing.checks_whole_batch([1.0, 1.0]))          # the first three, always
        self.assertTrue(timing.checks_whole_batch([1.0, 1.0, 1.05]))
        self.assertFalse(timing.checks_whole_batch([1.0, 1.0, 1.0, 1.0]))
        self.assertFalse(timing.checks_whole_batch([1.0, 1.0, 1.0, 1.05]))
        # 8% faster than the second slowest before it, the first left out: 0.95 x 1.08 < 1.3
        self.assertTrue(timing.checks_whole_batch([1.0, 1.3, 1.3, 0.95]))
        self.assertFalse(timing.checks_whole_batch([1.0, 1.3, 1.25, 1.25]))  # 1.25 x 1.08 > 1.25
        # A cold first batch, or one hiccup, is no slow mode: the steady batches after it are not
        # compared whole (against the slowest before, every one of them was).
        self.assertFalse(timing.checks_whole_batch([2.5, 1.0, 1.0, 1.0, 0.98]))
        self.assertFalse(timing.checks_whole_batch([1.0, 1.0, 1.0, 1.5, 1.0, 0.99]))
        self.assertTrue(timing.checks_whole_batch([1.0, 1.0, 1.0, 1.5, 1.5, 0.99]))  # two are a mode
        # The reference starts at batches compared whole and never falls: a candidate honest in
        # those cannot walk it down with batches left unchecked (each within 8% of the one before).
        walk = [1.0, 1.0, 1.0]
        for _ in range(20):
            walk.append(walk[-1] / 1.07)
            if timing.checks_whole_batch(walk):
                break
        self.assertEqual(len(walk), 5)  # the second step is 14% below the compared batches: compared
        slow_then_fast = [1.3, 1.3, 1.0, 1.0, 1.3, 1.3]
        self.assertEqual(timing.timed_batches(slow_then_fast, slow_then_fast, {0, 1, 2, 3}), ([2, 3], [2, 3]))
        # Two batches 2x faster, never compared whole (they could not be: a skipped batch is): the
        # candidate's every batch counts, the reference's fast mode as it is.
        skipped = [1.0, 1.0, 1.0, 1.0, 0.5, 0.5, 1.0, 1.0]
        self.assertEqual(timing.timed_batches([1.0] * 8, skipped, {0, 1}), (list(range(8)), list(range(8))))
        self.assertEqual(timing.timed_batches([1.0] * 8, skipped, {0, 1, 4, 5})[1], [4, 5])
        ref, cand = timing.timed_batches([1.0] * 8, skipped, {0, 1})
        self.assertEqual(set(ref) & set(cand), set(range(8)))

    def test_placements_are_drawn_every_two_batches_after_the_first_two(self):
        self.assertEqual([b for b in range(9) if timing.redraws_before(b, 2)], [2, 4, 6, 8])
        self.assertEqual([timing.placements(n, 2) for n in (1, 2, 3, 7, 8)], [1, 1, 2, 4, 4])
        self.assertEqual([b for b in range(13) if timing.redraws_before(b, 5)], [5, 10])
        self.assertEqual(timing.placements(11, 5), 3)

    def test_a_placement_holds_two_batches_or_forty_milliseconds_of_short_ones(self):
        self.assertEqual(timing.placement_batches(5, 0.005), 2)     # 25 ms batches: two
        self.assertEqual(timing.placement_batches(4, 0.0051), 2)    # 20.4 ms: two (0.04 / 0.0204 = 1.96)
        self.assertEqual(timing.placement_batches(1, 0.0046), 9)    # one call a batch, 4.6 ms: nine
        self.assertEqual(timing.placement_batches(64, 0.0001), 7)   # 6.4 ms batches: seven
        self.assertEqual(timing.placement_batches(1, 0.0001), 16)   # at most sixteen

    def test_each_side_runs_first_after_a_move_as_often_as_the_other(self):
        self.assertEqual([timing.order(b)[0] for b in range(4)], ["ref", "cand", "ref", "cand"])
        firsts = [timing.order(b, 2)[0] for b in range(8)]
        self.assertEqual(firsts, ["ref", "cand", "cand", "ref", "ref", "cand", "cand", "ref"])
        after_move = [firsts[b] for b in range(8) if b % 2 == 0]
        self.assertEqual(sorted(after_move), ["cand", "cand", "ref", "ref"])

    def test_with_redraws_the_error_is_taken_over_placements_of_kept_pairs(self):
        e = math.exp
        # Placements of two batches: [0, 1], [2, 3], [4, 5], [6, 7]. Pair 0 never counts, pair 5
        # is not kept: the means are 0.01 (pair 1), 0.02 (2, 3), -0.01 (pair 4), 0.03 (6, 7):
        # median 0.015, absolute deviations 0.005, 0.005, 0.025, 0.015: MAD 0.01, over sqrt(4).
        ref = [9.0, e(0.01), e(0.01), e(0.03), e(-0.01), e(0.5), e(0.03), e(0.03)]
        cand = [1.0] * 8
        kept = {0, 1, 2, 3, 4, 6, 7}
        self.assertAlmostEqual(timing.placement_rse(ref, cand, kept, 2), 1.4826 * 0.01 / 2, places=12)
        self.assertEqual(timing.placement_rse(ref, cand, kept, 2, min_placements=5), math.inf)
        self.assertEqual(timing.placement_rse(ref, cand, {0, 1, 2}, 2), math.inf)  # two placements
        self.assertEqual(timing.placement_rse(ref, cand, kept, 4), math.inf)  # in fours: two placements

    def test_with_redraws_timing_waits_for_four_placements_and_runs_longer_while_a_side_has_two_modes(self):
        rule = timing.StopRule(reps=100000, min_timed_s=0.25, max_timed_s=1.0, precision=0.001, every=2)
        steady = [0.05] * 16
        self.assertFalse(rule.done(steady[:14], steady[:14], 140))  # 7 placements: too few to stop on
        self.assertTrue(rule.done(steady, steady, 160))             # 8 placements, error 0
        capped = timing.StopRule(reps=100000, min_timed_s=0.25, max_timed_s=0.25, every=2)
        long = [0.1] * 7
        self.assertFalse(capped.done(long[:5], long[:5], 50))    # 0.5 s a side, past the cap: 3 placements
        self.assertTrue(capped.done(long, long, 70))             # the fourth placement's first batch
        plain = timing.StopRule(reps=100000, min_timed_s=0.25, max_timed_s=1.0, precision=0.001)
        self.assertTrue(timing.StopRule(100000, 0.25, 0.25).done(long[:5], long[:5], 50))  # kept placements
        # The candidate slow at three placements in four: its fast pairs too few to stop on; the
        # cap is twice max_timed_s while either side shows two modes.
        cand = ([0.05, 0.05] + [0.065] * 6) * 3
        ref = [0.05] * 24
        self.assertEqual(len(timing.fast_pairs(ref, cand)), 6)
        self.assertFalse(rule.done(ref, cand, 240))              # 1.2 s a side, over max_timed_s
        self.assertTrue(rule.done(ref * 2, cand * 2, 480))       # 2.4 s: the doubled cap
        self.assertTrue(plain.done(ref, cand, 240))              # kept placements: the cap is 1 s

    def test_checked_placements_take_the_error_within_placements(self):
        e = math.exp
        # Placements of two: [0, 1], [2, 3], [4, 5], [6, 7]; pair 0 never counts, so the steps
        # within a placement are 3-2, 5-4, 7-6: 0.01, -0.02, 0.0; median 0, deviations 0.01,
        # 0.02, 0: MAD 0.01, over sqrt(2) for a difference, over sqrt(7 pairs).
        logs = [9.0, 0.0, 0.02, 0.03, -0.01, -0.03, 0.05, 0.05]
        cand = [1.0] * 8
        expected = 1.4826 * 0.01 / math.sqrt(2) / math.sqrt(7)
        self.assertAlmostEqual(timing.within_placement_rse([e(x) for x in logs], cand, 2), expected, places=12)
        # A placement's shift cancels: the same with [4, 5] 10% off.
        shifted = logs[:4] + [logs[4] + 0.1, logs[5] + 0.1] + logs[6:]
        self.assertAlmostEqual(timing.within_placement_rse([e(x) for x in shifted], cand, 2), expected, places=12)
        self.assertGreater(timing.ratio_rse([e(x) for x in shifted], cand), expected)
        self.assertEqual(timing.within_placement_rse([e(x) for x in logs], cand, 2, min_pairs=8), math.inf)
        self.assertEqual(timing.within_placement_rse([e(x) for x in logs], cand, 1), math.inf)  # no steps

    def test_checked_placements_stop_as_kept_until_a_side_shows_two_modes(self):
        checked = timing.StopRule(reps=100000, min_timed_s=0.25, max_timed_s=1.0, precision=0.001, every=2,
                                  checked=True)
        redrawn = timing.StopRule(reps=100000, min_timed_s=0.25, max_timed_s=1.0, precision=0.001, every=2)
        # The reference 2% slower at every other placement: one mode; the error within placements 0.
        ref = [0.05, 0.05, 0.051, 0.051] * 5
        cand = [0.05] * 20
        self.assertFalse(checked.done(ref[:10], cand[:10], 100))  # 9 pairs counted: MIN_STOPPING_PAIRS is 10
        self.assertTrue(checked.done(ref[:11], cand[:11], 110))
        self.assertFalse(redrawn.done(ref[:11], cand[:11], 110))  # 6 placements: averaged over 8 at least
        self.assertFalse(timing.StopRule(100000, 0.25, 1.0, 0.001, checked=True).checked)  # kept: nothing to check
        # The candidate slow at three placements in four: as redrawn, to its doubled cap.
        bimodal = ([0.05, 0.05] + [0.065] * 6) * 3
        self.assertFalse(checked.done([0.05] * 24, bimodal, 240))
        self.assertEqual(checked.done([0.05] * 48, bimodal * 2, 480), redrawn.done([0.05] * 48, bimodal * 2, 480))
        self.assertTrue(checked.done([0.05] * 48, bimodal * 2, 480))

    def test_checked_timing_moves_both_sides_and_times_every_batch_of_one_mode(self):
        def timed_with(checked: bool) -> dict:
            reference, candidate = PlacedSide([False]), PlacedSide([True, False], slow=0.00102)  # 2%: one mode
            pads = iter(range(1, 100))
            return timing.time_interleaved(reference, candidate, lambda into=(): [torch.ones(2)], [torch.zeros(2)],
                                           lambda *a: None, timing.StopRule(16, 1.0, every=2, checked=checked), k=2,
                                           device="cpu", seconds={}, check_this=lambda share: False,
                                           draw_pad=lambda: next(pads))
        checked, redrawn = timed_with(True), timed_with(False)
        self.assertEqual(checked["batches_timed"], {"ref": 8, "cand": 8})
        self.assertEqual(checked["rse"], 0.0)  # within each placement both sides are steady
        self.assertGreater(redrawn["rse"], 0.0)  # over placements, the 2% between them counts
        self.assertEqual(checked["candidate_ms"], redrawn["candidate_ms"])

    def test_a_clock_finding_under_redrawn_placements_is_timed_on_too(self):
        class DeliveringPlaced(OneCallADelivery, PlacedSide):  # each delivery `ms`
            def __init__(self, ms):
                super().__init__([False])
                self.delivery_ms_of = lambda n: ms

        def timed_with(candidate_ms):
            reference, candidate = DeliveringPlaced(0.1), DeliveringPlaced(candidate_ms)
            pads = iter(range(1, 100))
            timed = timing.time_interleaved(reference, candidate, lambda into=(): [torch.ones(2)], [torch.zeros(2)],
                                            lambda *a: None, timing.StopRule(reps=16, min_timed_s=1.0, max_timed_s=1.0,
                                                                             every=2), k=2,
                                            device="cpu", seconds={}, check_this=lambda share: True,
                                            draw_pad=lambda: next(pads))
            return timed, candidate

        honest, _ = timed_with(0.1)
        self.assertEqual((len(honest["batches_ms"]["cand"]), honest["confirming_batches"]), (8, 0))
        slow, candidate = timed_with(1.0)  # 1.8 ms beyond a batch
        self.assertEqual((len(slow["batches_ms"]["cand"]), slow["confirming_batches"]), (12, 4))
        self.assertEqual(len(candidate.pads), 5)  # moved on through the added batches: before 2, 4, 6, 8, 10

    def test_redrawn_timing_moves_both_sides_and_times_each_from_its_fast_mode(self):
        # The reference fast everywhere, the candidate slow at every other placement.
        reference, candidate = PlacedSide([False]), PlacedSide([True, False])
        pads = iter(range(1, 100))
        timed = timing.time_interleaved(reference, candidate, lambda into=(): [torch.ones(2)], [torch.zeros(2)],
                                        lambda *a: None, timing.StopRule(reps=16, min_timed_s=1.0, every=2), k=2,
                                        device="cpu", seconds={}, check_this=lambda share: False, draw_pad=lambda: next(pads))
        self.assertEqual(len(timed["batches_ms"]["ref"]), 8)  # 16 calls, 2 a batch
        self.assertEqual((len(reference.pads), len(candidate.pads)), (3, 3))  # before batches 2, 4, 6
        # Drawn by the judge, for the side that runs first after the move first (timing.order).
        self.assertEqual((reference.pads, candidate.pads), ([2, 3, 6], [1, 4, 5]))
        # Each move is followed by one untimed batch (k = 2) before the next: the timed batch then
        # allocates nothing new.
        self.assertEqual(len(candidate.requests), 8 + 3)  # 8 timed, 3 untimed
        self.assertEqual(candidate.requests[:4], [(2, 1), (2, 1), (2, 1), (2, 1)])
        # The slow placements left out, and batch 3 (fast, but after one slow batch only: the
        # first, cold, counts for none) not compared whole, so not timed.
        self.assertEqual(timed["batches_timed"], {"ref": 8, "cand": 3})
        # Which of the reference's batches ran right after the candidate's: turns within each
        # placement, each placement starting with the side the last did not (timing.order).
        self.assertEqual(timed["reference_second"], [False, True, True, False, False, True, True, False])
        # Compared call by call: the first three batches, and the fast placement's after two slow.
        self.assertEqual((timed["whole_batches"], timed["checked"]), (5, 10))
        self.assertAlmostEqual(statistics.fmean(timed["candidate_ms"]), statistics.fmean(timed["reference_ms"]), places=9)


class Packing(unittest.TestCase):
    def test_round_trip_with_tensors_in_shared_buffers(self):
        from kgym_sandbox import packing
        t = torch.arange(4.0)
        buffers = []
        items = packing.pack([t, 3, (0.5, [True, None]), "x"], buffers)
        self.assertEqual(items, [{"tensor": 0}, {"value": 3}, {"tuple": [{"value": 0.5}, {"list": [{"value": True},
                                                                                                  {"value": None}]}]},
                                 {"value": "x"}])
        values = packing.unpack(items, buffers)
        self.assertTrue(torch.equal(values[0], t))
        self.assertEqual(values[1:], [3, (0.5, [True, None]), "x"])

    def test_leaves_no_reference_cycle_holding_the_tensors(self):
        # A batch's inputs must go when the judge drops them, not when the cyclic collector
        # runs (on the GPU that held a batch's inputs per batch until out of memory).
        import gc
        import weakref
        from kgym_sandbox import packing
        gc.disable()
        try:
            t = torch.arange(4.0)
            gone = weakref.ref(t)
            buffers = []
            items = packing.pack([t, (t, [t])], buffers)
            packing.unpack(items, buffers)
            del t, buffers, items
            self.assertIsNone(gone())
        finally:
            gc.enable()

    def test_refuses_what_pack_never_writes(self):
        from kgym_sandbox import packing
        for bad in ([{"tensor": 5}], [{"tensor": 0, "value": 1}], [{"code": "import os"}], {"value": 1},
                    [{"value": {"a": 1}}]):
            with self.assertRaises(ValueError):
                packing.unpack(bad, [torch.zeros(1)])


class Tracking(unittest.TestCase):
    def test_the_rule_on_exact_sums(self):
        from kgym_sandbox import tracking
        # Reference values 1, 2, 3, 4 (n 4, sum 10, squares 30): spread sqrt(30 - 25) = sqrt(5).
        rule = tracking.follows(4, 10.0, 30.0, 0.04, 0.0)
        self.assertAlmostEqual(rule["spread"], 5 ** 0.5, places=12)
        self.assertAlmostEqual(rule["error"], 0.2, places=12)
        self.assertTrue(rule["correct"])  # 0.2 <= 0.1 * 2.236
        self.assertFalse(tracking.follows(4, 10.0, 30.0, 0.25, 0.0)["correct"])  # 0.5 > 0.2236
        # Constant by design (2.5 four times, spread 0): only the precision's floor, 2^-16 * 5 = 7.63e-5.
        self.assertEqual(tracking.follows(4, 10.0, 25.0, 0.0, 2.0 ** -16)["spread"], 0.0)
        self.assertTrue(tracking.follows(4, 10.0, 25.0, 5e-9, 2.0 ** -16)["correct"])     # error 7.07e-5
        self.assertFalse(tracking.follows(4, 10.0, 25.0, 6.25e-9, 2.0 ** -16)["correct"])  # error 7.9e-5

    def test_outputs_that_ignore_their_input_fail_and_honest_ones_pass(self):
        from kgym_sandbox import tracking
        g = torch.Generator().manual_seed(0)

        def ruled(answer, dtype=torch.float32):
            tracker = tracking.Tracker()
            for _ in range(10):
                x = torch.randn(4, 16384, generator=g)
                expected = torch.softmax(x, 1).to(dtype)
                tracker.add([expected], [answer(x).to(dtype)])
            return tracker.verdict()["correct"]
        # The uniform 1/n plus a wiggle: within atol 1e-2 of every value, yet it ignores x.
        self.assertFalse(ruled(lambda x: torch.full_like(x, 1 / 16384) + 1e-7 * torch.rand_like(x)))
        self.assertTrue(ruled(lambda x: torch.exp(x - x.max(1, keepdim=True).values) /
                              torch.exp(x - x.max(1, keepdim=True).values).sum(1, keepdim=True)))
        self.assertTrue(ruled(lambda x: torch.softmax(x.double(), 1).float(), torch.bfloat16))
        # A loss answered with its expected value: error about its own spread over the calls.
        tracker = tracking.Tracker()
        for _ in range(10):
            p, t = torch.randn(256, 1024, generator=g), torch.randn(256, 1024, generator=g)
            tracker.add([torch.mean((p - t) ** 2)], [torch.tensor(2.0)])
        self.assertIn("does not follow the reference", tracker.verdict()["message"])
        # Integer outputs are left to the element-wise comparison.
        tracker = tracking.Tracker()
        tracker.add([torch.arange(4)], [torch.zeros(4, dtype=torch.int64)])
        self.assertTrue(tracker.verdict()["correct"])



class DeviceMemory(unittest.TestCase):
    def test_a_candidate_is_charged_only_beyond_half_the_device(self):
        from kgym_sandbox import device_memory
        gib = 1 << 30
        # 80 GiB device: 41 GiB on the candidate's side is above half, 40 is not.
        self.assertTrue(device_memory.over_share(41 * gib, 80 * gib))
        self.assertFalse(device_memory.over_share(40 * gib, 80 * gib))
        # NVML's count: the judge (pid 10) and the reference runner (11) are kgym's; the
        # candidate (12), its child (13) and a warming process of the next evaluation (14) are not.
        usage = {10: 30 * gib, 11: 32 * gib, 12: 8 * gib, 13: 33 * gib, 14: gib // 2}
        self.assertEqual(device_memory.candidate_side(usage, {10, 11}), 41 * gib + gib // 2)
        self.assertTrue(device_memory.over_share(device_memory.candidate_side(usage, {10, 11}), 80 * gib))
        # KernelBench level 1 at 8 GiB a tensor: the identity's process holds 16, the runner 32.
        self.assertFalse(device_memory.over_share(device_memory.candidate_side({10: 31 * gib, 11: 32 * gib, 12: 16 * gib},
                                                                               {10, 11}), 80 * gib))

    def test_memory_by_part_keeps_each_parts_most_and_laps_sample_at_every_part(self):
        from kgym_sandbox import device_memory
        from kgym_sandbox.laps import Laps
        by_part = {}
        for part, mb in (("timing_refill", 30.0), ("timing_calls", 20.0), ("timing_refill", 10.0)):
            device_memory.keep_most(by_part, part, mb)
        self.assertEqual(by_part, {"timing_refill": 30.0, "timing_calls": 20.0})
        seen, seconds = [], {}
        lap = Laps(seconds, seen.append)
        lap("load_reference")
        lap("load_build")
        lap("load_build")
        self.assertEqual(seen, ["load_reference", "load_build", "load_build"])
        self.assertEqual(sorted(seconds), ["load_build", "load_reference"])
        result = {}
        device_memory.Peak("cpu", result).sample("load_build")  # the CPU's memory is the cgroup's business
        self.assertEqual(result, {})

    def test_the_last_evaluations_exiting_processes_are_not_this_ones_peak(self):
        from unittest import mock
        from kgym_sandbox import device_memory
        gib = 1 << 30
        usage = [{7: 30 * gib, 10: 2 * gib}, {10: 2 * gib}]  # pid 7: the last evaluation's, exiting
        result = {}
        with mock.patch.object(device_memory, "exiting_pids", {7}), \
                mock.patch.object(device_memory, "per_process_usage", lambda: usage.pop(0)), \
                mock.patch.object(torch.cuda, "mem_get_info", lambda: (100 * gib, 140 * gib)), \
                mock.patch.object(torch.cuda, "memory_reserved", lambda: gib):
            peak = device_memory.Peak("cuda", result)
            peak.sample("load_reference")  # 40 GiB in use, 30 of them pid 7's
            self.assertEqual(result["device_memory_by_part_mb"], {"load_reference": 10 * 1024})
            peak.sample("load_build")  # pid 7 gone: NVML is not asked again
            self.assertNotIn("peak_device_memory_mb", result)  # the load's parts: by part only
            peak.sample("correctness_calls")
        self.assertEqual(usage, [])
        self.assertEqual(result["device_memory_by_part_mb"]["correctness_calls"], 40 * 1024)
        self.assertEqual(result["device_memory_by_part_mb"]["load_build"], 40 * 1024)
        self.assertEqual(result["peak_device_memory_mb"], 40 * 1024)
        self.assertEqual(result["judge_memory_by_part_mb"]["load_reference"], 1024)

    def test_out_of_device_memory_by_its_text(self):
        from kgym_sandbox import failures
        self.assertTrue(failures.out_of_device_memory("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate"))
        self.assertTrue(failures.out_of_device_memory("RuntimeError('CUDA error: CUBLAS_STATUS_ALLOC_FAILED when')"))
        self.assertFalse(failures.out_of_device_memory("MemoryError: can't allocate memory"))

    def test_memory_refused_by_the_os_is_a_resource_limit(self):
        import errno
        from kgym_sandbox import failures
        self.assertEqual(failures.classify(OSError(errno.ENOMEM, "Cannot allocate memory")), "RESOURCE_LIMIT")
        self.assertEqual(failures.classify(MemoryError()), "RESOURCE_LIMIT")
        self.assertEqual(failures.classify(OSError(errno.ENOENT, "No such file")), "RUNTIME_ERROR")
        self.assertEqual(failures.classify(ValueError("bad")), "RUNTIME_ERROR")

    def test_one_account_of_a_candidate_that_exhausted_the_device(self):
        from kgym_sandbox import device_memory
        message, evidence = device_memory.exhausted_account("the candidate's side held 70000 of 81000 MiB", "OOM")
        self.assertEqual(message, "the candidate exhausted the GPU's memory (the candidate's side held 70000 of "
                                  "81000 MiB): OOM")
        self.assertEqual(evidence, {"kind": "CANDIDATE_OUT_OF_DEVICE_MEMORY",
                                    "detail": "the candidate's side held 70000 of 81000 MiB", "source": "judge"})


class Numerics(unittest.TestCase):
    def test_pins_and_reads_back_the_flags(self):
        from kgym_sandbox import numerics
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.benchmark = True
        self.assertEqual(numerics.changed(numerics.current()),
                         ["float32_matmul_precision: highest -> high",  # PyTorch couples the two
                          "matmul_allow_tf32: False -> True", "cudnn_benchmark: False -> True"])
        numerics.pin()
        self.assertEqual(numerics.current(), numerics.PINNED)
        self.assertEqual(numerics.changed(numerics.current()), [])
        self.assertEqual(numerics.as_text({"matmul_allow_tf32": False, "float32_matmul_precision": "highest"}),
                         {"matmul_allow_tf32": "false", "float32_matmul_precision": "highest"})
        self.assertEqual(numerics.changed(None), ["numerics: no report"])


class SharedTensors(unittest.TestCase):
    def test_specs_from_the_other_side_are_checked(self):
        from kgym_sandbox import shared_tensors as st
        self.assertEqual(st.checked_spec({"shape": [2, 3], "dtype": "float16"}), {"shape": [2, 3], "dtype": "float16"})
        for bad in ({"shape": [-1], "dtype": "float32"}, {"shape": [2], "dtype": "os.system"},
                    {"shape": "2", "dtype": "float32"}, {"shape": [1] * 17, "dtype": "float32"}, None):
            with self.assertRaises((ValueError, KeyError)):
                st.checked_spec(bad)

    def test_arena_is_shared_and_its_size_sealed(self):
        from kgym_sandbox import shared_tensors as st
        specs = [{"shape": [4], "dtype": "float32"}, {"shape": [2, 2], "dtype": "int64"}]
        self.assertEqual(st.layout(specs), ([0, 256], 512))  # each tensor aligned to 256 bytes
        mine = st.Arena("cpu", specs)
        theirs = st.Arena("cpu", specs, fd=os.dup(mine.fd))
        theirs.tensors[0].copy_(torch.tensor([1.0, 2.0, 3.0, 4.0]))
        theirs.tensors[1].fill_(7)
        self.assertEqual(mine.tensors[0].tolist(), [1.0, 2.0, 3.0, 4.0])
        self.assertEqual(mine.tensors[1].tolist(), [[7, 7], [7, 7]])
        with self.assertRaises(OSError):  # the candidate cannot shrink it under the judge's mapping
            os.ftruncate(theirs.fd, 0)
        with self.assertRaises(ValueError):  # nor claim more tensors than it holds
            st.Arena("cpu", specs + [{"shape": [64], "dtype": "float32"}], fd=os.dup(mine.fd))

    def test_an_arena_of_no_tensors_allocates_nothing_and_sends_no_descriptor(self):
        from kgym_sandbox import shared_tensors as st
        for device in ("cpu", "cuda"):  # no CUDA call is made for it either
            empty = st.Arena(device, [], driver=None)
            self.assertEqual((empty.tensors, empty.fds(), empty.describe()), ([], [], {"tensors": []}))
            self.assertTrue(st.Arena.described_empty(empty.describe()))
        self.assertFalse(st.Arena.described_empty({"tensors": [{"shape": [4], "dtype": "float32"}]}))
        r, w = os.pipe()
        st.Arena("cpu", [], fd=r)  # a descriptor handed over anyway is closed
        with self.assertRaises(OSError):
            os.fstat(r)
        os.close(w)

    @unittest.skipUnless(torch.cuda.is_available(), "a GPU arena needs a GPU")
    def test_a_gpu_arena_cannot_be_mapped_larger_than_it_is_and_still_maps_after(self):
        from kgym_sandbox import shared_tensors as st
        driver = st.CudaDriver()
        torch.zeros(1, device="cuda")  # PyTorch's context current
        ptr, fd = driver.alloc(1 << 20)
        with self.assertRaises(RuntimeError):  # the import is released again (no handle left behind)
            driver.open(os.dup(fd), 64 << 20)
        view = st.device_view(driver.open(fd, 1 << 20), {"shape": [4], "dtype": "float32"})
        st.device_view(ptr, {"shape": [4], "dtype": "float32"}).fill_(3.0)
        self.assertEqual(view.tolist(), [3.0] * 4)


class PidNamespaces(unittest.TestCase):
    @unittest.skipUnless(os.geteuid() == 0, "a pid namespace needs root")
    def test_the_child_is_pid_1_of_its_own_and_later_children_are_not(self):
        from kgym_sandbox import isolation
        spaces = isolation.PidNamespaces()
        said_r, said_w = os.pipe()
        pid, isolated = spaces.fork()
        if pid == 0:
            os.write(said_w, str(os.getpid()).encode())
            os._exit(0)
        os.close(said_w)
        os.waitpid(pid, 0)
        self.assertTrue(isolated)
        self.assertEqual(os.read(said_r, 16), b"1")
        # back home: the next plain fork is in this process's namespace
        self.assertEqual(os.readlink("/proc/self/ns/pid_for_children"), os.readlink("/proc/self/ns/pid"))


    def test_a_clone_waits_for_the_threads_still_exiting(self):
        """A raw clone takes none of glibc's locks: a thread alive (or still exiting) at that
        moment could leave one held in the child, so it waits for one thread (in a forked child
        here: the test runner has torch's threads)."""
        import threading
        from kgym_sandbox import isolation
        child = os.fork()
        if child == 0:
            stop = threading.Event()
            alive = threading.Thread(target=stop.wait)
            alive.start()
            busy = isolation.wait_single_threaded(0.05)
            stop.set()
            alive.join()
            os._exit(0 if not busy and isolation.wait_single_threaded() else 1)
        _, status = os.waitpid(child, 0)
        self.assertEqual(os.waitstatus_to_exitcode(status), 0)

    @unittest.skipUnless(os.geteuid() == 0, "drops to an unprivileged uid first")
    def test_unprivileged_a_user_namespace_of_its_own_gives_each_child_its_own(self):
        """As an unprivileged zygote: root of its own user namespace (one uid, none to switch
        to), its chosen children pid 1 of their own namespaces, its plain ones in its own; a
        pending unshare would have forbidden its threads (which torch needs)."""
        from kgym_sandbox import isolation
        said_r, said_w = os.pipe()
        zygote = os.fork()
        if zygote == 0:
            os.setgid(65534)
            os.setuid(65534)
            ctypes.CDLL(None).prctl(4, 1, 0, 0, 0)  # PR_SET_DUMPABLE, as after an exec: /proc/self is ours
            words = [isolation.switches_uids(), isolation.own_user_namespace(), os.geteuid(),
                     isolation.switches_uids()]
            import threading
            thread = threading.Thread(target=lambda: None)
            thread.start()  # threads still allowed
            thread.join()
            pid, isolated = isolation.PidNamespaces().fork()
            if pid == 0:
                os.write(said_w, str(os.getpid()).encode())
                os._exit(0)
            os.waitpid(pid, 0)
            plain = os.fork()
            if plain == 0:
                os._exit(0 if os.readlink("/proc/self/ns/pid") == os.readlink(f"/proc/{os.getppid()}/ns/pid") else 1)
            _, status = os.waitpid(plain, 0)
            os.write(said_w, (" " + repr(words + [isolated, os.waitstatus_to_exitcode(status)])).encode())
            os._exit(0)
        os.close(said_w)
        os.waitpid(zygote, 0)
        said = os.read(said_r, 200).decode()
        self.assertEqual(said, "1 " + repr([False, True, 0, False, True, 0]))


    @unittest.skipUnless(os.geteuid() == 0, "drops to an unprivileged uid first")
    def test_unprivileged_each_untrusted_process_counts_its_own_tasks(self):
        """In an unprivileged zygote's user namespace, RLIMIT_NPROC counts every process of
        kgym's uid: with 8 other processes of it alive, a child held to 4 starts none. In a
        user namespace of its own (own_tasks_namespace) the same limit counts its own tasks:
        it starts exactly 3 (itself and 3 make 4), and it may nest no namespace deeper."""
        import resource
        from kgym_sandbox import isolation
        said_r, said_w = os.pipe()
        zygote = os.fork()
        if zygote == 0:
            os.setgid(65534)
            os.setuid(65534)
            ctypes.CDLL(None).prctl(4, 1, 0, 0, 0)  # PR_SET_DUMPABLE, as after an exec
            isolation.own_user_namespace()
            sleepers = []
            for _ in range(8):
                pid = os.fork()
                if pid == 0:
                    os.close(said_w)
                    time.sleep(30)
                    os._exit(0)
                sleepers.append(pid)

            def started_children(own: bool) -> str:
                child = os.fork()
                if child == 0:
                    granted = []
                    try:
                        if own:
                            isolation.own_tasks_namespace(granted)
                        resource.setrlimit(resource.RLIMIT_NPROC, (4, 4))
                        started = 0
                        for _ in range(10):
                            try:
                                if os.fork() == 0:
                                    os.close(said_w)
                                    time.sleep(5)
                                    os._exit(0)
                            except OSError:
                                break
                            started += 1
                        nested = ctypes.CDLL(None, use_errno=True).unshare(isolation.CLONE_NEWUSER) == 0
                        os.write(said_w, f"{started},{nested},{','.join(granted)};".encode())
                    finally:
                        os._exit(0)
                os.waitpid(child, 0)

            started_children(False)
            started_children(True)
            for pid in sleepers:
                os.kill(pid, 9)
            os._exit(0)
        os.close(said_w)
        os.waitpid(zygote, 0)
        said = b""
        while chunk := os.read(said_r, 200):
            said += chunk
        # (In the zygote's namespace the first child could still nest one: every untrusted
        # process takes its own, own_tasks_namespace, before its code runs.)
        self.assertEqual(said.decode(), f"0,True,;3,False,tasks_by_userns={isolation.CANDIDATE_MAX_TASKS};")


    def test_a_candidates_tasks_leave_kgym_its_reserve(self):
        """Exact: the cap is 512 unless kgym's uid's RLIMIT_NPROC would keep fewer than 256 for
        kgym's own next forks, and never below 32."""
        import resource
        from kgym_sandbox import isolation
        cap = isolation.candidate_task_cap
        self.assertEqual(cap(resource.RLIM_INFINITY, 10_000), 512)
        self.assertEqual(cap(100_000, 400), 512)
        self.assertEqual(cap(1024, 400), 368)          # 1024 - 400 - 256
        self.assertEqual(cap(1024, 400, reserve=0), 512)
        self.assertEqual(cap(600, 400), 32)            # no room: the floor
        self.assertGreaterEqual(isolation.uid_tasks(os.getuid()), threading.active_count())

    @unittest.skipUnless(os.geteuid() == 0, "drops to an unprivileged uid first")
    def test_unprivileged_a_low_user_limit_lowers_the_candidates_cap(self):
        """Unprivileged under a uid limit of 700 tasks, the zygote holds its next candidate to
        what leaves kgym 256 of them (measured: the uid's tasks then), and the candidate's own
        namespace says so and is limited so."""
        import resource
        from kgym_sandbox import isolation
        said_r, said_w = os.pipe()
        zygote = os.fork()
        if zygote == 0:
            try:
                os.setgid(65534)
                os.setuid(65534)
                ctypes.CDLL(None).prctl(4, 1, 0, 0, 0)  # PR_SET_DUMPABLE, as after an exec
                isolation.own_user_namespace()
                resource.setrlimit(resource.RLIMIT_NPROC, (700, 700))
                cap, used = isolation.hold_next_candidate_tasks(), isolation.uid_tasks(os.getuid())
                child = os.fork()
                if child == 0:
                    granted = []
                    isolation.own_tasks_namespace(granted)
                    os.write(said_w, f"{cap} {used} {','.join(granted)} {isolation.tasks_limit(granted)}".encode())
                    os._exit(0)
                os.waitpid(child, 0)
            finally:
                os._exit(0)
        os.close(said_w)
        os.waitpid(zygote, 0)
        cap, used, granted, limit = os.read(said_r, 200).decode().split()
        self.assertEqual(int(cap), max(32, min(512, 700 - int(used) - 256)))
        self.assertLess(int(cap), 512)
        self.assertEqual((granted, int(limit)), (f"tasks_by_userns={cap}", int(cap)))


class PairCleanup(unittest.TestCase):
    @unittest.skipUnless(sys.platform == "linux", "Linux forks and mounts")
    def test_a_refused_fork_leaves_nothing_of_the_pair(self):
        """A fork refused while an evaluation's processes are made (the candidate's, after the
        judge's: EAGAIN, as a uid at its RLIMIT_NPROC gets) raises for the zygote's retry and
        leaves nothing of the pair: the judge killed and collected, no descriptor, no mount."""
        import errno
        import tempfile
        from kgym_sandbox import isolation, zygote
        workdir = tempfile.mkdtemp(prefix="kgym-pair-test-")
        lock_fd, lock_path = tempfile.mkstemp()
        os.unlink(lock_path)
        namespaces = isolation.PidNamespaces()
        before = sorted(os.listdir("/proc/self/fd"))
        real_fork, forked = os.fork, []

        def refusing_fork():
            if forked:
                raise OSError(errno.EAGAIN, "Resource temporarily unavailable")
            forked.append(real_fork())
            return forked[-1]
        os.fork = refusing_fork
        try:
            with self.assertRaises(OSError) as raised:
                zygote.Pair(workdir, "cpu", None, lock_fd, 1, {}, isolation.NOBODY, {}, namespaces)
        finally:
            os.fork = real_fork
        self.assertEqual(raised.exception.errno, errno.EAGAIN)
        self.assertEqual(len(forked), 1)  # the judge's
        with self.assertRaises(ChildProcessError):  # killed and collected already
            os.waitpid(forked[0], os.WNOHANG)
        self.assertEqual(sorted(os.listdir("/proc/self/fd")), before)
        self.assertNotIn(os.path.join(workdir, "candidate"), [m.point for m in isolation.mounts()])
        os.close(lock_fd)


class KillTree(unittest.TestCase):
    def test_a_forking_tree_is_killed_whole_and_runs_no_more(self):
        """A candidate's process tree that keeps forking (children that left its session, each
        forking ticking grandchildren) is killed at once by kill_tree and the sweep after it, in
        a subreaper as the zygote is; nothing of it writes another tick afterwards."""
        from kgym_sandbox import zygote
        ticks_r, ticks_w = os.pipe()
        said_r, said_w = os.pipe()
        helper = os.fork()  # the zygote's part
        if helper == 0:
            try:  # never back into unittest from here
                os.close(ticks_r)
                ctypes.CDLL(None).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
                root = os.fork()
                if root == 0:
                    for _ in range(3):
                        if os.fork() == 0:
                            os.setsid()
                            while True:  # a grandchild that ticks, again and again
                                if os.fork() == 0:
                                    while True:
                                        os.write(ticks_w, b".")
                                        time.sleep(0.002)
                                time.sleep(0.01)
                    while True:
                        time.sleep(0.01)
                os.close(ticks_w)
                time.sleep(0.3)
                before = len(zygote.descendants(root, set()))
                zygote.kill_tree(root, set())
                zygote.sweep({root})
                os.write(said_w, str(before).encode())
                zygote.reap(root, 3.0)  # kills it if kill_tree had not
            finally:
                os._exit(0)
        os.close(ticks_w)
        os.close(said_w)
        os.waitpid(helper, 0)
        self.assertGreater(int(os.read(said_r, 32) or b"0"), 3, "the tree had not grown")
        os.set_blocking(ticks_r, False)
        try:
            while os.read(ticks_r, 1 << 16):  # what was written before the kill
                pass
        except BlockingIOError:
            pass
        time.sleep(0.3)
        try:
            after = os.read(ticks_r, 1 << 16)
        except BlockingIOError:
            after = b""
        self.assertEqual(after, b"", "a process of the tree ran after kill_tree and the sweep")
        os.close(ticks_r)
        os.close(said_r)


class GpuProcesses(unittest.TestCase):
    """Which processes holding a CUDA context are the candidate's (gpu_processes.py)."""

    def test_others_are_the_candidates_but_its_own_process(self):
        from kgym_sandbox import gpu_processes
        mine = {7, 9, 12}
        self.assertEqual(gpu_processes.others_on_gpu([12, 3, 9, 7, 9], 7, lambda pid: pid in mine), [9, 12])
        self.assertEqual(gpu_processes.others_on_gpu([7], 7, lambda pid: True), [])
        self.assertEqual(gpu_processes.others_on_gpu([], 7, lambda pid: True), [])

    def test_descent_follows_parents_to_the_root(self):
        from kgym_sandbox import gpu_processes
        parents = {40: 30, 30: 20, 20: 1, 50: 1}
        parent_of = lambda pid: parents.get(pid, 0)  # noqa: E731
        self.assertTrue(gpu_processes.descends_from(40, 20, parent_of))
        self.assertTrue(gpu_processes.descends_from(30, 20, parent_of))
        self.assertFalse(gpu_processes.descends_from(20, 20, parent_of))  # itself is no descendant
        self.assertFalse(gpu_processes.descends_from(50, 20, parent_of))
        self.assertFalse(gpu_processes.descends_from(40, 20, parent_of, max_depth=1))

    def test_a_grandchild_and_an_orphan_belong_a_stranger_does_not(self):
        """Real processes: the candidate's grandchild is its; a child of ours (the zygote's)
        that no pair owns is an orphan of the candidate's; ours that are known, and a process
        of another tree, are not."""
        from kgym_sandbox import gpu_processes
        import subprocess
        candidate = subprocess.Popen([sys.executable, "-c",
                                      "import subprocess, sys, time\n"
                                      "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(30)'])\n"
                                      "print(p.pid, flush=True); time.sleep(30)"], stdout=subprocess.PIPE)
        known = subprocess.Popen(["sh", "-c", "sleep 30 & echo $!; wait"], stdout=subprocess.PIPE)
        orphan = subprocess.Popen(["sleep", "30"])
        try:
            grandchild = int(candidate.stdout.readline())
            stranger = int(known.stdout.readline())  # a child of a known process of ours
            belongs = gpu_processes.belongs_to(candidate.pid, {candidate.pid, known.pid})
            self.assertTrue(belongs(grandchild))
            self.assertTrue(belongs(orphan.pid))
            self.assertFalse(belongs(known.pid))
            self.assertFalse(belongs(stranger))
            self.assertFalse(belongs(os.getpid()))
            self.assertEqual(gpu_processes.others_on_gpu([candidate.pid, grandchild, known.pid, orphan.pid],
                                                         candidate.pid, belongs), sorted([grandchild, orphan.pid]))
        finally:
            for p in (candidate, known, orphan):
                p.kill()
                p.wait()

    def test_a_look_reads_the_listing_only_where_kgyms_own_are_in_it(self):
        """NVML's listing as the watch's process gives it: without kgym's processes in it (pids
        of another namespace) nothing is ruled; with them, the candidate's child is named."""
        from kgym_sandbox import gpu_processes
        import subprocess
        candidate = subprocess.Popen([sys.executable, "-c", "import subprocess, time\n"
                                      "p = subprocess.Popen(['sleep', '30'])\nprint(p.pid, flush=True); time.sleep(30)"],
                                     stdout=subprocess.PIPE)
        try:
            child = int(candidate.stdout.readline())
            watch = gpu_processes.Watch.__new__(gpu_processes.Watch)
            watch.pid, listing = -1, set()
            watch.gpu_pids = lambda: listing
            judge = os.getpid()  # stands for kgym's processes
            listing |= {child, 999999}
            self.assertEqual(watch.look(candidate.pid, {judge}), ("descriptors", {}))  # no GPU node held here
            listing |= {judge, candidate.pid}
            how, seen = watch.look(candidate.pid, {judge})
            self.assertEqual(how, "nvml")
            self.assertEqual(list(seen), [child])
            self.assertTrue(seen[child].startswith(f"{child} (sleep"))
        finally:
            candidate.kill()
            candidate.wait()

    def test_a_watch_that_stops_answering_costs_one_look_and_is_replaced(self):
        """A real watch process with a scripted listing (kgym's pid in it), stopped as the
        hostile test AHarmedPreparedEvaluationIsReplaced stops every process of the zygote's:
        the look does not hang, it falls back to descriptors; the watch is replaced by a new
        process and the stopped one collected; a stopped watch is seen before any look."""
        from kgym_sandbox import gpu_processes

        def serve(ask_fd, answer_fd):
            os.write(answer_fd, b"ready\n")
            while os.read(ask_fd, 1):
                os.write(answer_fd, (json.dumps([os.getppid()]) + "\n").encode())
        watch = gpu_processes.Watch.start(serve)
        watch.ANSWER_S = 0.3
        kgym = {os.getpid()}
        self.assertGreater(watch.pid, 0)
        self.assertEqual(watch.look(os.getpid(), kgym), ("nvml", {}))
        self.assertEqual(watch.harmed(), "")
        self.assertIs(watch.renewed(), watch)
        os.kill(watch.pid, signal.SIGSTOP)
        started = time.monotonic()
        self.assertEqual(watch.look(os.getpid(), kgym), ("descriptors", {}))
        self.assertLess(time.monotonic() - started, 2.0)
        self.assertEqual(watch.harmed(), f"its process (pid {watch.pid}) did not answer within 0.3 s")
        old = watch.pid
        watch = watch.renewed()
        self.assertNotIn(watch.pid, (-1, old))
        with self.assertRaises(ChildProcessError):
            os.waitpid(old, os.WNOHANG)  # killed and collected
        self.assertEqual(watch.look(os.getpid(), kgym), ("nvml", {}))
        os.kill(watch.pid, signal.SIGSTOP)
        deadline = time.monotonic() + 5
        while watch.harmed() == "" and time.monotonic() < deadline:
            time.sleep(0.01)
        self.assertEqual(watch.harmed(), f"its process (pid {watch.pid}) is stopped")
        watch.stop()  # a stopped watch does not hang its zygote's exit either
        self.assertEqual(watch.pid, -1)
        with self.assertRaises(ChildProcessError):
            os.waitpid(-1, os.WNOHANG)

    @unittest.skipIf(torch.cuda.is_available(), "a GPU: NVML answers")
    def test_without_nvml_the_watch_reads_descriptors_and_leaves_no_process(self):
        from kgym_sandbox import gpu_processes
        watch = gpu_processes.Watch.start()
        self.assertEqual(watch.pid, -1)
        with self.assertRaises(ChildProcessError):
            os.waitpid(-1, os.WNOHANG)  # the NVML process that found none was collected
        self.assertEqual(watch.look(os.getpid(), set()), ("descriptors", {}))
        watch.stop()

    def test_by_descriptors_a_helper_that_opened_the_device_is_found(self):
        """The fallback on real processes, a temporary file standing for the GPU's device node,
        which the candidate's process holds open: its child that opened the node itself is
        named; one that only shares the candidate's (passed on, as a fork would) is not, nor
        one that holds none, nor the candidate's own process."""
        from kgym_sandbox import gpu_processes
        import subprocess
        import tempfile
        with tempfile.NamedTemporaryFile(prefix="kgym-fake-nvidia") as node:
            script = ("import subprocess, sys, time\n"
                      "held = open(sys.argv[1])\n"
                      "own = subprocess.Popen(['python3', '-c', 'import sys, time; f = open(sys.argv[1]); time.sleep(30)',"
                      " sys.argv[1]])\n"
                      "shared = subprocess.Popen(['sleep', '30'], pass_fds=[held.fileno()])\n"
                      "idle = subprocess.Popen(['sleep', '30'])\n"
                      "print(own.pid, shared.pid, idle.pid, flush=True); time.sleep(30)")
            candidate = subprocess.Popen([sys.executable, "-c", script, node.name], stdout=subprocess.PIPE)
            try:
                own, shared, idle = (int(x) for x in candidate.stdout.readline().split())
                deadline = time.monotonic() + 10
                while not gpu_processes.device_fds(own, node.name) and time.monotonic() < deadline:
                    time.sleep(0.05)  # until it has opened it
                self.assertEqual(len(gpu_processes.device_fds(shared, node.name)), 1)
                theirs = gpu_processes.device_fds(candidate.pid, node.name)

                def opened(pid):
                    return gpu_processes.opened_device_itself(gpu_processes.device_fds(pid, node.name), theirs, pid,
                                                              candidate.pid)
                self.assertTrue(opened(own))
                self.assertFalse(opened(shared))
                self.assertFalse(opened(idle))
                self.assertTrue(gpu_processes.opened_device_itself(None, theirs, idle, candidate.pid))  # hidden
                found = gpu_processes.device_holders(candidate.pid, set(), node.name)
                self.assertEqual(list(found), [own])
                self.assertTrue(found[own].startswith(f"{own} (python3"))
                self.assertEqual(gpu_processes.device_fds(999999999, node.name), [])  # gone: holds nothing
            finally:
                candidate.kill()
                candidate.wait()


class PrivateDirs(unittest.TestCase):
    def test_tempfile_follows_the_private_tmp_even_when_it_chose_one_before(self):
        """Imports before confinement make `tempfile` choose the caller's TMPDIR, which the
        private /tmp hides; after use_private_dirs every temporary file lands in the workdir."""
        import tempfile
        from kgym_sandbox import isolation
        saved = {v: os.environ.get(v) for v in ("HOME", "TMPDIR", "TRITON_CACHE_DIR")}
        tempfile.gettempdir()  # chosen now, as torch's and Triton's imports do
        try:
            with tempfile.TemporaryDirectory() as workdir:
                isolation.use_private_dirs(workdir)
                with tempfile.NamedTemporaryFile() as f:
                    self.assertEqual(os.path.dirname(f.name), os.path.join(workdir, "tmp"))
                self.assertEqual(os.environ["HOME"], os.path.join(workdir, "home"))
                self.assertTrue(os.path.isdir(os.environ["TRITON_CACHE_DIR"]))
        finally:
            tempfile.tempdir = None
            for var, value in saved.items():
                os.environ.pop(var, None) if value is None else os.environ.__setitem__(var, value)


class ClaimUid(unittest.TestCase):
    def test_live_processes_never_share_a_uid_and_a_freed_one_is_taken_again(self):
        import tempfile
        from kgym_sandbox import isolation
        pool = (70001, 70002)
        with tempfile.TemporaryDirectory() as locks:
            def claim_in_child(hold_r: int, hold_w: int) -> tuple:
                """A child that claims a uid, says which, and holds it until hold_w closes."""
                said_r, said_w = os.pipe()
                pid = os.fork()
                if pid == 0:
                    os.close(hold_w)
                    uid, _ = isolation.claim_uid(pool, locks, 99)
                    os.write(said_w, str(uid).encode())
                    os.read(hold_r, 1)
                    os._exit(0)
                os.close(said_w)
                return pid, int(os.read(said_r, 16))
            hold_r, hold_w = os.pipe()
            first, first_uid = claim_in_child(hold_r, hold_w)
            second, second_uid = claim_in_child(hold_r, hold_w)
            third, third_uid = claim_in_child(hold_r, hold_w)
            self.assertEqual(sorted([first_uid, second_uid]), [70001, 70002])
            self.assertEqual(third_uid, 99)  # the pool is taken: the fallback
            os.close(hold_w)
            for pid in (first, second, third):
                os.waitpid(pid, 0)
            self.assertEqual(isolation.claim_uid(pool, locks, 99)[0], 70001)  # free again


BATCHNORM_TASK = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.conv = nn.Conv2d(c, c, 3, padding=1)
        self.bn = nn.BatchNorm2d(c)
        self.drop = nn.Dropout(0.3)

    def forward(self, x):
        return self.drop(torch.relu(self.bn(self.conv(x))))

def get_inputs():
    return [torch.randn(4, 3, 8, 8)]

def get_init_inputs():
    return [3]
"""


class JudgeInProcess(unittest.TestCase):
    """The judge's evaluation on the plain harness's in-process candidate (no sandbox)."""

    def evaluate(self, candidate_source: str) -> dict:
        import tempfile
        from kgym_sandbox import evaluate, launches, local_candidate
        recorder = launches.install(interpreted=True)
        request = {"device": "CPU", "task": {"id": "bn", "source": BATCHNORM_TASK},
                   "candidate": {"source": candidate_source},
                   "options": {"no_hacking_check": True, "timing_reps": 4, "min_timed_s": 0.001}}
        result = {}
        with tempfile.TemporaryDirectory() as workdir:
            candidate = local_candidate.LocalCandidate("cpu", candidate_source, workdir, recorder)
            try:
                evaluate.evaluate(request, workdir, candidate, lambda name: None, result)
            except evaluate.Failure as failure:
                result.update(verdict=failure.verdict, message=failure.message)
        return result

    def test_batchnorm_and_dropout_identity_is_correct_in_both_modes(self):
        # The reference follows the candidate's train/eval sequence from the same state (so the
        # running statistics agree in eval mode) and each call gets one RNG seed (dropout).
        result = self.evaluate(BATCHNORM_TASK.replace("class Model(", "class ModelNew("))
        self.assertEqual(result["verdict"], "OK", result.get("message"))
        self.assertEqual([t["mode"] for t in result["trials"]], ["MODE_TRAIN", "MODE_EVAL"] * 5)

    def test_a_candidate_that_skips_the_running_statistics_fails_eval_mode(self):
        frozen = BATCHNORM_TASK.replace("class Model(", "class ModelNew(").replace(
            "self.bn = nn.BatchNorm2d(c)", "self.bn = nn.BatchNorm2d(c, track_running_stats=False)")
        result = self.evaluate(frozen)
        self.assertEqual(result["verdict"], "INCORRECT")
        self.assertIn("trial 0 (eval mode)", result["message"])


class Extensions(unittest.TestCase):
    """load_inline's calls as kgym builds them: the spec, the flags let through, the key."""

    def spec(self, *args, **kwargs):
        from kgym_sandbox import extensions
        return extensions.spec_of(args, kwargs)

    def test_positional_and_keyword_calls_give_one_spec(self):
        a = self.spec("ext", "int f();", "__global__ void k() {}", None, ["f"], [""], ["-O3", ""], verbose=True)
        b = self.spec(name="ext", cpp_sources=["int f();"], cuda_sources="__global__ void k() {}", functions="f",
                      extra_cflags=[], extra_cuda_cflags=["-O3"], build_directory="/anywhere")
        self.assertEqual(a, b)
        self.assertEqual(a, {"name": "ext", "cpp_sources": ["int f();"], "cuda_sources": ["__global__ void k() {}"],
                             "functions": ["f"], "extra_cflags": [], "extra_cuda_cflags": ["-O3"],
                             "extra_ldflags": [], "with_cuda": None, "with_pytorch_error_handling": True})

    def test_what_kgym_does_not_build_is_refused_with_a_reason(self):
        from kgym_sandbox import extensions
        for kwargs, words in (({"extra_include_paths": ["/etc"]}, "extra_include_paths"),
                              ({"is_python_module": False}, "Python modules only"),
                              ({"sources": ["a.cu"]}, "unexpected argument 'sources'")):
            with self.assertRaises(extensions.ExtensionError) as caught:
                self.spec("ext", "int f();", **kwargs)
            self.assertIn(words, str(caught.exception))
        with self.assertRaises(extensions.ExtensionError):
            self.spec("not an identifier", "int f();")

    def test_flags_outside_the_allowlist_are_named(self):
        from kgym_sandbox import extensions
        spec = self.spec("ext", "", extra_cflags=["-O3 -std=c++17", "-DBLOCK=256"],
                         extra_cuda_cflags=["--use_fast_math", "-Xptxas", "-v", "-Xcompiler", "-fplugin=/tmp/p.so",
                                            "-gencode=arch=compute_90a,code=sm_90a", "-ccbin=/tmp/cc"],
                         extra_ldflags=["-lcublas", "-L/usr/local/cuda/lib64", "-Wl,-rpath,/tmp"])
        self.assertEqual(extensions.refused_flags(spec), ["extra_cuda_cflags: -fplugin=/tmp/p.so",
                                                          "extra_cuda_cflags: -ccbin=/tmp/cc",
                                                          "extra_ldflags: -Wl,-rpath,/tmp"])

    def test_the_key_follows_every_source_flag_and_the_toolchain(self):
        from kgym_sandbox import extensions
        base = self.spec("ext", "int f();", "__global__ void k() {}", functions=["f"])
        tools = {"torch": "2.11.0", "cuda": "13.0", "arch": "9.0"}
        key = extensions.key_of(base, tools)
        self.assertEqual(len(key), 40)
        self.assertEqual(key, extensions.key_of(dict(reversed(list(base.items()))), dict(tools)))  # order-free
        for changed in ({**base, "cuda_sources": ["__global__ void k() { }"]}, {**base, "extra_cuda_cflags": ["-O3"]},
                        {**base, "name": "ext2"}):
            self.assertNotEqual(extensions.key_of(changed, tools), key)
        self.assertNotEqual(extensions.key_of(base, {**tools, "arch": "8.0"}), key)

    def test_calls_into_a_built_library_are_reported_by_name(self):
        import math
        from kgym_sandbox import extensions
        calls = []
        proxy = extensions.counted(math, calls.append)  # a built-in module stands in for a built one
        self.assertEqual(proxy.sqrt(16.0), 4.0)
        self.assertEqual(proxy.pi, math.pi)
        proxy.floor(2.5)
        self.assertEqual(calls, ["sqrt", "floor"])

    def test_a_confined_build_step_answers_even_when_it_hangs_or_raises(self):
        import tempfile
        import time
        from kgym_sandbox import extension_build, isolation
        with tempfile.TemporaryDirectory() as root:
            os.chmod(root, 0o711)
            started = time.monotonic()
            hung = extension_build.run_confined(os.path.join(root, "a"), isolation.NOBODY, 1.0,
                                                lambda inside: time.sleep(60))
            self.assertEqual(hung, {"error": "ran past its limit of 1 s", "timeout": True})
            self.assertLess(time.monotonic() - started, 10)
            raised = extension_build.run_confined(os.path.join(root, "b"), isolation.NOBODY, 10.0,
                                                  lambda inside: 1 / 0)
            self.assertIn("ZeroDivisionError", raised["error"])
            answered = extension_build.run_confined(os.path.join(root, "c"), isolation.NOBODY, 10.0,
                                                    lambda inside: {"value": 42})
            self.assertEqual(answered, {"value": 42})

    @unittest.skipUnless(os.geteuid() == 0, "runs a build step as the uid of a process it must not reach")
    def test_a_confined_build_step_signals_no_process_outside_its_own(self):
        """A candidate's import runs in a build step while its extensions are recorded. As root
        the step runs as a uid of its own, unprivileged as kgym's: either way kill(-1) there
        (every process it may signal) reaches no process outside it, a sleeper of that very
        uid included, because the step is pid 1 of a pid namespace of its own."""
        import encodings.unicode_escape  # noqa: F401  (the unprivileged step cannot read this Python's files)
        import tempfile
        from kgym_sandbox import extension_build, isolation

        def kill_all(inside):
            try:
                os.kill(-1, signal.SIGKILL)
            except ProcessLookupError:  # nothing it may signal
                pass
            return {"pid": os.getpid()}

        def survives(unprivileged: bool) -> str:
            said_r, said_w = os.pipe()
            builder = os.fork()
            if builder == 0:
                try:
                    os.close(said_r)
                    if unprivileged:
                        os.setgid(isolation.NOBODY)
                        os.setuid(isolation.NOBODY)
                        ctypes.CDLL(None).prctl(4, 1, 0, 0, 0)  # PR_SET_DUMPABLE, as after an exec
                        isolation.own_user_namespace()  # as builder.py does first
                    extension_build._pid_namespaces = None  # made in this builder, after its namespace
                    sleeper = os.fork()
                    if sleeper == 0:
                        if not unprivileged:
                            os.setgid(isolation.NOBODY)
                            os.setuid(isolation.NOBODY)  # the uid the step below runs as
                        time.sleep(30)
                        os._exit(0)
                    with tempfile.TemporaryDirectory() as root:
                        os.chmod(root, 0o711)
                        answer = extension_build.run_confined(os.path.join(root, "w"), isolation.NOBODY, 20.0,
                                                              kill_all)
                    alive = os.waitpid(sleeper, os.WNOHANG) == (0, 0)
                    os.kill(sleeper, signal.SIGKILL)
                    os.waitpid(sleeper, 0)
                    os.write(said_w, f"{answer.get('pid', answer)} {alive}".encode())
                finally:
                    os._exit(0)
            os.close(said_w)
            os.waitpid(builder, 0)
            said = os.read(said_r, 400).decode()
            os.close(said_r)
            return said

        self.assertEqual(survives(unprivileged=False), "1 True")
        self.assertEqual(survives(unprivileged=True), "1 True")

    def test_a_cpu_evaluation_refuses_load_inline_with_what_to_do(self):
        import torch.utils.cpp_extension as cpp_extension
        from kgym_sandbox import extensions
        saved = cpp_extension.load_inline, cpp_extension.load
        try:
            extensions.install_loader("/nonexistent", "cpu")
            with self.assertRaises(extensions.ExtensionError) as caught:
                cpp_extension.load_inline("ext", "int f();")
            self.assertIn("--device cuda", str(caught.exception))
        finally:
            cpp_extension.load_inline, cpp_extension.load = saved

    def test_the_loader_is_put_in_place_when_the_candidate_first_imports_cpp_extension(self):
        """Not imported at install (it cost each evaluation's processes 16-20 ms); a later
        `from torch.utils.cpp_extension import load_inline` gets kgym's, once, and `load` too."""
        import subprocess
        script = (
            "import sys; sys.path.insert(0, %r)\n"
            "import torch\n"
            "from kgym_sandbox import extensions\n"
            "extensions.install_loader('/nonexistent', 'cpu')\n"
            "print('imported at install', 'torch.utils.cpp_extension' in sys.modules)\n"
            "from torch.utils.cpp_extension import load_inline, load\n"
            "for f in (load_inline, load):\n"
            "    try:\n"
            "        f('ext', 'int f();')\n"
            "    except extensions.ExtensionError as exc:\n"
            "        print('refused', 'load_inline' in str(exc))\n"
            "print('finders left', sum(type(f).__name__ == '_PatchedOnImport' for f in sys.meta_path))\n"
            % os.path.join(os.path.dirname(__file__), "..", "..", "gpu", "sandbox"))
        out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
        self.assertEqual(out.stdout.split("\n")[:4],
                         ["imported at install False", "refused True", "refused True", "finders left 0"], out.stderr)


class Priorities(unittest.TestCase):
    """The timing core's priorities (isolation): the candidate's tree at the lowest, for good."""

    def in_child(self, body) -> str:
        """Runs body() in a forked child with a process group of its own (as the candidate's
        process has), as uid nobody when we are root; returns what it wrote."""
        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(read_end)
            try:
                os.setsid()
                if os.geteuid() == 0:
                    import resource
                    from kgym_sandbox import isolation
                    # A machine that lets its users raise their priority (RLIMIT_NICE up to 40:
                    # nice -20, as far as this one lets root raise it); lower_priority must take
                    # that back.
                    for limit, most in ((resource.RLIMIT_NICE, 40), (resource.RLIMIT_RTPRIO, 99)):
                        try:
                            resource.setrlimit(limit, (most, most))
                        except ValueError:
                            hard = resource.getrlimit(limit)[1]
                            resource.setrlimit(limit, (hard, hard))
                    os.setgroups([])
                    os.setgid(isolation.NOBODY)
                    os.setuid(isolation.NOBODY)  # no capability left: as the candidate
                os.write(write_end, body().encode())
            except BaseException as exc:
                os.write(write_end, f"error: {exc!r}".encode())
            os._exit(0)
        os.close(write_end)
        with os.fdopen(read_end) as f:
            out = f.read()
        os.waitpid(pid, 0)
        return out

    def test_every_thread_and_every_later_one_is_lowered_and_cannot_rise(self):
        from kgym_sandbox import isolation

        def body() -> str:
            import threading
            seen, go = {}, threading.Event()

            def older():  # started before the priority is lowered
                go.wait()
                seen["older"] = os.getpriority(os.PRIO_PROCESS, 0)

            thread = threading.Thread(target=older)
            thread.start()
            granted = isolation.lower_priority()
            go.set()
            thread.join()
            later = threading.Thread(target=lambda: seen.update(later=os.getpriority(os.PRIO_PROCESS, 0)))
            later.start()
            later.join()
            try:
                os.setpriority(os.PRIO_PROCESS, 0, isolation.CANDIDATE_NICE - 1)
                seen["raised"] = True
            except PermissionError:
                seen["raised"] = False
            try:
                os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(1))
                seen["realtime"] = True
            except PermissionError:
                seen["realtime"] = False
            return f"{granted} {seen['older']} {seen['later']} {seen['raised']} {seen['realtime']}"

        self.assertEqual(self.in_child(body), f"['nice={isolation.CANDIDATE_NICE}'] 19 19 False False")

    def test_run_delay_is_the_kernels_count_and_only_grows(self):
        from kgym_sandbox import isolation
        first = isolation.run_delay_s()
        sum(range(200000))
        self.assertGreaterEqual(first, 0.0)
        self.assertGreaterEqual(isolation.run_delay_s(), first)



def bench_module(name: str):
    """A script of bench/ as a module (they import each other by name, from bench/)."""
    import importlib
    bench = os.path.join(os.path.dirname(__file__), "..", "..", "bench")
    if bench not in sys.path:
        sys.path.insert(0, bench)
    return importlib.import_module(name)


class BatchShareKernels(unittest.TestCase):
    def test_each_own_kernels_median_alone_and_in_batches(self):
        """bench/batch_share_parts.py --kernels on a written trace: a padded look-ahead's idle
        kernel reads far below 1 in its batches, its working one above, another process's
        kernels (not generated) not at all."""
        import tempfile
        batch_share_parts = bench_module("batch_share_parts")
        from kgym_sandbox.frames import kgym_pb2
        lines = []

        def phase(kind, at):
            lines.append({"phase": {"kind": kind}, "at_ns": at})

        def kernel(name, start, ns, grid, generated=True, kind=None):
            lines.append({"kernel": {"name": name, "start_ns": start, "end_ns": start + ns, "grid": grid,
                                     "generated": generated, "phase": {"kind": kind or 0}}})

        phase(kgym_pb2.TRACE_EVAL, 0)
        kernel("pad", 10, 1000, [4, 1, 1], kind=kgym_pb2.TRACE_EVAL)
        kernel("work", 2000, 3000, [8, 1, 1], kind=kgym_pb2.TRACE_EVAL)
        for rep, at in enumerate((10_000, 20_000, 30_000)):  # traced calls alone
            phase(kgym_pb2.TRACE_TIMED, at)
            kernel("pad", at + 10, 1000 + rep, [4, 1, 1])
            kernel("work", at + 2000, 3000, [8, 1, 1])
        phase(kgym_pb2.TRACE_BATCH, 40_000)  # a batch of two calls: one works for both, idle pads
        kernel("pad", 40_010, 400, [4, 1, 1])
        kernel("pad", 41_010, 500, [4, 1, 1])
        kernel("work", 42_000, 6000, [8, 1, 1])
        kernel("ampere_sgemm", 49_000, 7000, [2, 1, 1], generated=False)
        phase(kgym_pb2.TRACE_IDLE, 60_000)
        with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as f:
            for i, line in enumerate(lines):
                f.write(f"{i} {json.dumps(line)}\n")
        try:
            found = batch_share_parts.kernel_medians(f.name)
        finally:
            os.unlink(f.name)
        self.assertEqual(found, {("pad", (4, 1, 1)): (1001, 450, 3, 2), ("work", (8, 1, 1)): (3000, 6000, 3, 1)})


class MemoryByProcess(unittest.TestCase):
    def test_the_peak_names_each_process_largest_first_and_the_timeline_one_line_a_second(self):
        """bench/memory_by_process.py's report over NVML's samples (seconds, MiB, {pid: MiB})."""
        memory_by_process = bench_module("memory_by_process")
        samples = [(0.0, 100, {7: 10}), (0.5, 300, {7: 90, 9: 200}), (0.9, 250, {9: 240}), (1.2, 200, {9: 190})]
        self.assertEqual(memory_by_process.peak_line(samples),
                         "peak 300 MiB in use at 0.50 s; by process (pid:MiB): 9:200, 7:90")
        self.assertEqual(memory_by_process.per_second(samples),
                         ["     0.00 s     100 MiB  7:10", "     1.20 s     200 MiB  9:190"])


class SweepStalls(unittest.TestCase):
    def test_batches_far_over_their_evaluations_median_are_counted_on_both_sides(self):
        """bench/kernelbench_sweep.py's stall count: batches over 1.5x the median of both sides'."""
        kernelbench_sweep = bench_module("kernelbench_sweep")
        result = {"reference_batches_ms": [48, 49, 135, 50], "candidate_batches_ms": [49, 127, 74, 75]}
        self.assertEqual(kernelbench_sweep.stalled_batches(result), (2, 8))  # median 62: over 93
        self.assertEqual(kernelbench_sweep.stalled_batches({"candidate_batches_ms": [10.0]}), (0, 1))
        self.assertEqual(kernelbench_sweep.stalled_batches({}), (0, 0))

    def test_identity_answers_beyond_the_bound_farthest_first(self):
        kernelbench_sweep = bench_module("kernelbench_sweep")
        ok = [{"task_id": "a", "speedup": 1.004, "speedup_rse": 0.001}, {"task_id": "b", "speedup": 0.9433,
              "speedup_rse": 0.0007}, {"task_id": "c", "speedup": 1.0105}, {"task_id": "d", "speedup": 0.995}]
        self.assertEqual(kernelbench_sweep.identity_outliers(ok), [("b", 0.9433, 0.0007), ("c", 1.0105, 0.0)])

    def test_memory_by_part_most_first(self):
        kernelbench_sweep = bench_module("kernelbench_sweep")
        result = {"device_memory_by_part_mb": {"load_build": 1024.0, "timing_refill": 55296.0, "timing_calls": 55296.0,
                                               "correctness_calls": 20480.0},
                  "judge_memory_by_part_mb": {"timing_refill": 40960.0, "timing_calls": 40960.0}}
        self.assertEqual(kernelbench_sweep.memory_parts(result, 3),
                         [("timing_calls", 54.0, 40.0), ("timing_refill", 54.0, 40.0), ("correctness_calls", 20.0, 0.0)])
        self.assertEqual(kernelbench_sweep.memory_parts({}), [])

    def test_strides_one_for_all_levels_or_one_each(self):
        kernelbench_sweep = bench_module("kernelbench_sweep")
        self.assertEqual(kernelbench_sweep.level_strides([2, 3], []), {2: 1, 3: 1})
        self.assertEqual(kernelbench_sweep.level_strides([2, 3], [5]), {2: 5, 3: 5})
        self.assertEqual(kernelbench_sweep.level_strides([2, 3], [4, 5]), {2: 4, 3: 5})
        with self.assertRaises(ValueError):
            kernelbench_sweep.level_strides([1, 2, 3], [4, 5])
        with self.assertRaises(ValueError):
            kernelbench_sweep.level_strides([1], [0])


if __name__ == "__main__":
    unittest.main()
