# GPU, square_matmul (appended to tests/hostile/untraced_base.py): works_while_reference_runs made
# to dodge the judge's comparison of the reference's batches after the candidate's with those
# before them: its thread first sleeps as long as its own last honest batch took (about the
# reference batch that follows its answer), so its work lands after that batch, in the judge's
# deliveries and refill and in the reference batch that opens the next pair (one the judge counts
# as "before"): the after/before ratio drops below 1. Where the judge then asks it for a delivery
# of that batch's outputs, the delivery waits for the work; the judge delivers in most pairs, so
# more than a quarter of its deliveries take longer than the reference runner's
# (delivery_slower_than_reference).
work_after_answers(lambda n: n % 2 == 0, lambda honest_s: 1.1 * honest_s)
