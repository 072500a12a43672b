# GPU, square_matmul (appended to tests/hostile/untraced_base.py): its work moved into the
# deliveries, with its own process's trace switched off around it. Honest in the correctness
# trials and the traced calls; in the timed batches each call runs a token kernel of its own and
# returns an unwritten buffer; then, in each delivery, before the asked-for copies, it multiplies
# the named calls' inputs into those buffers with the CUPTI library's kernel records disabled
# (cuptiActivityDisable through ctypes: the library is mapped into its process), so its trace
# shows no kernel between its requests. Unchecked, its speedup is the matmul's time over a token
# kernel's; only the judge's clock around both sides' deliveries sees the work
# (delivery_slower_than_reference).
work_in_deliveries(lambda n: True)
