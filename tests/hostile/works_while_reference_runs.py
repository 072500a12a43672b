# GPU, square_matmul (appended to tests/hostile/untraced_base.py): its work done while the
# reference's batch runs, with its own process's trace switched off. The judge alternates which
# side runs a batch pair first, starting with the reference; this candidate counts its timed
# batches, and in the pairs it runs first it answers at once (a token kernel of its own and
# unwritten buffers a call) and then, from a thread of its own with CUPTI's kernel records
# disabled (ctypes), multiplies that batch's inputs into those buffers while the judge times the
# reference, and waits for that thread before its next request. Its deliveries only copy, so their
# time is honest; its trace shows nothing between its requests; unchecked, its time is half a
# token kernel's and the reference's batches that run after it are slowed by its work. Only the
# judge's comparison of the reference's batches after the candidate's with those before it sees
# that (reference_slowed_after_candidate).
work_after_answers(lambda n: n % 2 == 0, lambda honest_s: 0.0)  # its 2nd, 4th, ... batch: it runs first
