# GPU, square_matmul (appended to tests/hostile/untraced_base.py): works_in_delivery_untraced in
# its first three timed batches only, then honest: the dodge of the clock rules' confirmation
# (timing.CONFIRM_BATCHES). Its deliveries beyond the bound in the suite's few batches make the
# judge time on; behaving from then on, its three fast batches of twelve are the quarter its
# interquartile mean leaves out: OK at an honest speedup (the product by torch.matmul, about 1x),
# or HACKED where the timing's cap came before twelve batches (or the batch rule saw a deferred
# batch).
work_in_deliveries(lambda n: n <= 3)
