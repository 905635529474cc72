"""Python functions and an actor that C++ calls (xlang_lib/xlang_functions.cc), plain
and decorated with @orb.remote (as Ray's own cross-language modules write them)."""
import orb


def triple(x):
    return 3 * x


def make_object():
    return object()


class PyCounter:
    def __init__(self, start):
        self.n = start

    def incr(self, by):
        self.n += by
        return self.n


@orb.remote
def decorated_triple(x):
    return 3 * x


@orb.remote
class DecoratedCounter(PyCounter):
    pass
