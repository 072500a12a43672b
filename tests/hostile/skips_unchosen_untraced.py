# GPU, gelu_scale_residual (tests/hostile/untraced_base.py, then the fused candidate, then this):
# skips_unchosen_calls with its correctness calls worked out with CUPTI's kernel records off too,
# so every call its trace shows, timed or not, is one token kernel: its batches are like its calls
# (batch_launches sees nothing). Only the judge's clock around the deliveries sees the work the
# chosen calls get in them; one delivery's share is under the rule's 0.5 ms floor (H200: 0.31 ms),
# a batch's deliveries ruled together are over it (timing.by_batch).


class ModelNew(ModelNew):
    def forward(self, x):
        out = torch.empty_like(x)
        _token_kernel[(1,)](out, BLOCK=128)  # the only kernel of its own any trace shows
        call = (x, self.scale, out)
        if _state["defer"]:
            _state["pending"].append(call)
        else:
            _untraced_calls([call], torch.cuda.current_stream())
        return out


_state["compute"] = lambda call: gelu_scale_residual(call[0], call[1], out=call[2])
work_in_deliveries(lambda n: True)
