"""Python functions and an actor that C++ calls (xlang_lib/xlang_functions.cc)."""


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
