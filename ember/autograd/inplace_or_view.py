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
