"""num_returns (Ray's multiple returns): a task or actor method that returns N values
gives its caller N refs, each its own object — its own size, lifetime and place."""
import os
import tempfile
import time

import numpy as np
import pytest

import orb


@orb.remote(num_returns=3)
def three():
    return 1, "two", [3]


@orb.remote
def pair(x):
    return x, x * 2


@orb.remote
def add(a, b):
    return a + b


@orb.remote(num_returns=2)
def big_and_small(n):
    return np.arange(n, dtype=np.int64), n


@orb.remote(num_returns=3)
def returns_two():
    return "a", "b"


@orb.remote(num_returns=2)
def fails():
    raise KeyError("no such key")


@orb.remote(num_returns=2)
def ref_and_value(x):
    return orb.put(x), x


@orb.remote(num_returns=0)
def mark(path):
    with open(path, "w") as f:
        f.write("ran")


@orb.remote
class Splitter:
    def __init__(self):
        self.calls = 0

    @orb.method(num_returns=2)
    def split(self, text):
        self.calls += 1
        head, _, tail = text.partition(" ")
        return head, tail

    def parts(self, text, n):
        return tuple(text.split(" ", n - 1))

    def join(self, a, b):
        return "%s+%s" % (a, b)

    def count(self):
        return self.calls


def test_a_task_with_three_returns_gives_three_refs_each_with_its_value(cluster):
    refs = three.remote()
    assert isinstance(refs, list) and len(refs) == 3
    assert all(isinstance(r, orb.ObjectRef) for r in refs)
    assert len({r.hex() for r in refs}) == 3
    assert orb.get(refs[1]) == "two"
    assert orb.get(refs) == [1, "two", [3]]


def test_options_set_num_returns_per_call_and_one_return_stays_one_ref(cluster):
    a, b = pair.options(num_returns=2).remote(21)
    assert orb.get([a, b]) == [21, 42]
    whole = pair.remote(5)  # num_returns=1: one ref to the tuple
    assert isinstance(whole, orb.ObjectRef)
    assert orb.get(whole) == (5, 10)


def test_returns_are_separate_objects_a_large_one_in_the_store_a_small_one_inline(cluster):
    big, small = big_and_small.remote(1 << 18)  # 2 MiB of int64
    assert orb.get(small) == 1 << 18
    del small  # dropping one return leaves the other
    array = orb.get(big)
    assert array.shape == (1 << 18,) and int(array[-1]) == (1 << 18) - 1


def test_returns_feed_other_tasks_as_arguments(cluster):
    a, b = pair.options(num_returns=2).remote(7)
    assert orb.get(add.remote(a, b)) == 21
    c, d = pair.options(num_returns=2).remote(1)
    assert orb.get(add.remote(b, d)) == 16


def test_a_return_may_hold_an_object_ref(cluster):
    inner, value = ref_and_value.remote("payload")
    assert orb.get(value) == "payload"
    ref = orb.get(inner)
    assert isinstance(ref, orb.ObjectRef)
    assert orb.get(ref) == "payload"


def test_a_failing_task_fails_every_return_with_its_error(cluster):
    refs = fails.remote()
    for ref in refs:
        with pytest.raises(KeyError) as info:
            orb.get(ref)
        assert isinstance(info.value, orb.exceptions.RayTaskError)
        assert "no such key" in str(info.value)


def test_returning_the_wrong_number_of_values_is_a_clear_error_on_every_return(cluster):
    for ref in returns_two.remote():
        with pytest.raises(ValueError, match=r"returned 2 objects, but num_returns=3"):
            orb.get(ref)


def test_num_returns_zero_runs_the_task_and_gives_none(cluster):
    with tempfile.TemporaryDirectory(prefix="orb-returns-") as d:
        path = os.path.join(d, "mark")
        assert mark.remote(path) is None
        deadline = time.time() + 30
        while not os.path.exists(path) and time.time() < deadline:
            time.sleep(0.05)
        assert os.path.exists(path)


@pytest.mark.parametrize("bad, error", [(-1, ValueError), ("2", ValueError), (1.5, TypeError), (True, TypeError)])
def test_bad_num_returns_is_refused_where_it_is_given(cluster, bad, error):
    # As Ray's: a value of the wrong type is a TypeError, a wrong value a ValueError.
    with pytest.raises(error, match="num_returns"):
        pair.options(num_returns=bad)
    with pytest.raises(error, match="num_returns"):
        orb.remote(num_returns=bad)(lambda: None)


@orb.remote(num_returns="dynamic")
def dynamic_items(n, size=1, fail_at=None):
    for i in range(n):
        if i == fail_at:
            raise KeyError("item %d" % i)
        yield np.full(size, i, dtype=np.int32)


@orb.remote
def first_items(generator):
    return [int(orb.get(ref)[0]) for ref in generator]


@orb.remote
class DynamicSource:
    def items(self, n):
        for i in range(n):
            yield i * 10


def test_dynamic_generators_give_one_ref_to_all_their_items(cluster):
    items = orb.get(dynamic_items.remote(4, size=300_000))  # 1.2 MB items: in the store
    assert len(items) == 4
    assert [int(orb.get(ref)[0]) for ref in items] == [0, 1, 2, 3]
    assert len(orb.get(dynamic_items.remote(0))) == 0
    # The ref, or the generator itself, passed to another task.
    ref = dynamic_items.remote(3)
    assert orb.get(first_items.remote(ref)) == [0, 1, 2]
    assert orb.get(first_items.remote(orb.get(ref))) == [0, 1, 2]
    source = DynamicSource.remote()
    assert orb.get(list(orb.get(source.items.options(num_returns="dynamic").remote(3)))) == [0, 10, 20]


def test_a_dynamic_generator_that_raises_ends_with_its_error_and_a_plain_function_is_refused(cluster):
    first, last = orb.get(dynamic_items.remote(5, fail_at=1))
    assert int(orb.get(first)[0]) == 0
    with pytest.raises(KeyError, match="item 1"):
        orb.get(last)

    @orb.remote(num_returns="dynamic")
    def not_a_generator():
        return [1, 2]

    with pytest.raises(ValueError, match="not a generator"):
        orb.get(not_a_generator.remote())


def test_a_generator_with_num_returns_n_fills_its_returns_and_an_error_fills_the_rest(cluster):
    @orb.remote
    def count(n, fail=False):
        for i in range(n):
            yield i
        if fail:
            raise ValueError("stopped")

    assert orb.get(count.options(num_returns=3).remote(3)) == [0, 1, 2]
    assert orb.get(count.options(num_returns=1).remote(1)) == 0
    assert orb.get(count.options(num_returns=2).remote(4)) == [0, 1]  # the rest dropped, as Ray's
    a, b, c = count.options(num_returns=3).remote(1, fail=True)
    assert orb.get(a) == 0
    for ref in (b, c):
        with pytest.raises(orb.exceptions.RayTaskError, match="stopped") as info:
            orb.get(ref)
        assert isinstance(info.value.as_instanceof_cause(), ValueError)
    with pytest.raises(ValueError, match="returned 2 objects, but num_returns=3"):
        orb.get(count.options(num_returns=3).remote(2)[0])


def test_actor_methods_take_num_returns_from_orb_method_and_options(cluster):
    s = Splitter.remote()
    head, tail = s.split.remote("hello big world")
    assert orb.get([head, tail]) == ["hello", "big world"]
    a, b, c = s.parts.options(num_returns=3).remote("x y z", 3)
    assert orb.get([c, b, a]) == ["z", "y", "x"]
    # A return passed straight to the next call on the same actor (resolved in the
    # worker when both calls travel in one batch).
    h, t = s.split.remote("left right")
    assert orb.get(s.join.remote(t, h)) == "right+left"
    assert orb.get(s.count.remote()) == 2
    with pytest.raises(ValueError, match="num_returns=2"):
        orb.get(s.parts.options(num_returns=2).remote("one", 1)[1])


def test_a_handle_passed_to_a_task_keeps_the_methods_num_returns(cluster):
    @orb.remote
    def use(splitter):
        head, tail = splitter.split.remote("a b")
        return orb.get(tail) + orb.get(head)

    assert orb.get(use.remote(Splitter.remote())) == "ba"


@orb.remote(num_returns=3)
def three_items():
    for word in ("a", "b", "c"):
        yield word


def test_a_generator_with_num_returns_n_gives_its_n_items(cluster):
    assert orb.get(list(three_items.remote()), timeout=30) == ["a", "b", "c"]
    # More items than returns: the first ones, the rest dropped (Ray logs them too).
    assert orb.get(three_items.options(num_returns=2).remote(), timeout=30) == ["a", "b"]
