"""ADInplaceOrView: in-place and out= calls bump the version counter of what they write.

Views need no kernel here yet: the backend's view wrapper links a view to its base. The
autograd layer (view + in-place history rewriting) builds on these counters.
"""


def bump_first(below, self, *args):
    r = below(self, *args)
    self._bump_version()
    return r


def _bump_last(n):
    def bump(below, *args):
        r = below(*args)
        for t in args[-n:]:
            t._bump_version()
        return r
    return bump


bump_last = {n: _bump_last(n) for n in range(1, 5)}


def inplace_from_functional(functional_op, n_out=0):
    """In-place variant of a composite op: compute out of place, then copy_ (checks cast/shape)."""
    def kernel(self, *args):
        r = functional_op(self, *args)
        from ember.core import dtype as _dt
        if r._dtype is not self._dtype and not _dt.can_cast(r._dtype, self._dtype):
            raise RuntimeError(f"result type {r._dtype._short} can't be cast to the desired output "
                               f"type {self._dtype._short}")
        if tuple(r._shape) != tuple(self._shape):
            from ember.core.errors import fmt_shape
            raise RuntimeError(f"output with shape {fmt_shape(self._shape)} doesn't match the broadcast "
                               f"shape {fmt_shape(r._shape)}")
        return self.copy_(r)
    return kernel


def out_from_functional(functional_op, n_out=1, rule=None):
    """out= variant of a composite op: compute, resize out, copy_ (rule: the op's out_dtype check)."""
    def kernel(*args):
        outs, ins = args[-n_out:], args[:-n_out]
        if rule is not None and rule.startswith("dtype:") and ins[int(rule[6:])] is None:
            i = int(rule[6:])  # the dtype argument defaults to out's dtype (sum(x, out=o))
            ins = ins[:i] + (outs[0]._dtype,) + ins[i + 1:]
        r = functional_op(*ins)
        rs = (r,) if n_out == 1 else tuple(r)
        from ember.kernels.composite import store_out
        if rule is not None and not rule.startswith("dtype:"):
            from ember.kernels.meta._glue import check_out_dtype  # lazy: as store_out above
            for o, v in zip(outs, rs):
                check_out_dtype(rule, v._dtype, o._dtype)
        for o, v in zip(outs, rs):
            store_out(o, v, stacklevel=3)
        return outs[0] if n_out == 1 else outs
    return kernel
