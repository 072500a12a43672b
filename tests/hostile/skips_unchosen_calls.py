# GPU, gelu_scale_residual (tests/hostile/untraced_base.py, then the fused candidate, then this):
# a fast answer that does not do its timed calls at all. Each returns a token kernel's unwritten
# buffer at once; in the delivery that follows it works out only the calls the judge chose to
# compare (with CUPTI's kernel records off, through ctypes), and the rest are never computed. A
# call skipped so saves about 0.1 ms (H200: 0.17 ms a call honest, 0.064 ms deferred), so at a
# tenth of a batch's 22 calls chosen a delivery carried about 0.2 ms, under the delivery rule's
# 0.5 ms floor; the judge compares more of a fast side's short batch (timing.check_share), and
# then the chosen calls' work is over it (delivery_slower_than_reference).


class ModelNew(ModelNew):
    def forward(self, x):
        out = torch.empty_like(x)
        _token_kernel[(1,)](out, BLOCK=128)  # a kernel of its own in every call's window
        if _state["defer"]:
            _state["pending"].append((x, self.scale, out))
            return out
        return super().forward(x)


_state["compute"] = lambda call: gelu_scale_residual(call[0], call[1], out=call[2])
work_in_deliveries(lambda n: True)
