# GPU, square_matmul (appended to tests/hostile/untraced_base.py): works_in_delivery_untraced in
# every other timed batch only. The judge's interquartile mean leaves out a side's fastest quarter
# of batches, so half its batches fast (a token kernel a call, the matmuls done in the delivery
# with CUPTI's kernel records off) still halve its time there, while only half its deliveries
# take longer than the reference runner's: a rule on their lower quartile (or their median) would
# not see it; on their upper quartile it does (delivery_slower_than_reference).
work_in_deliveries(lambda n: n % 2 == 0)
