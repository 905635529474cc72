"""Calls across languages: Python → C++ functions and actors, and C++ → Python (C++
functions, run by C++ workers of this Python job, that call Python functions and
actors), with the errors each side gets."""
import os

import pytest

import orb
from orb.exceptions import TaskError

LIB_DIR = os.environ.get("ORB_XLANG_LIB_DIR", "")


@pytest.fixture
def xlang():
    if not os.path.isdir(LIB_DIR):
        pytest.skip("the cross-language test library is not built (ORB_XLANG_LIB_DIR)")
    orb.init(num_cpus=2, code_search_path=[LIB_DIR])
    yield
    orb.shutdown()


def test_python_calls_cpp(xlang):
    plus = orb.cpp_function("Plus")
    assert orb.get(plus.remote(1, 2)) == 3
    assert orb.get(plus.remote(plus.remote(1, 1), 5)) == 7  # a C++ result as an argument
    assert orb.get(orb.cpp_function("Concat").remote("ab", "cd")) == "abcd"
    assert orb.get(orb.cpp_function("Doubled").remote([1, 2, 3])) == [2, 4, 6]
    assert orb.get(orb.cpp_function("Lengths").remote(["a", "abc"])) == {"a": 1, "abc": 3}
    counter = orb.cpp_actor_class("Counter::Create").remote(10)
    assert orb.get(counter.Add.remote(5)) == 15
    assert orb.get([counter.Add.remote(1) for _ in range(3)]) == [16, 17, 18]
    assert orb.get(counter.Get.remote()) == 18


def test_cpp_calls_python(xlang):
    assert orb.get(orb.cpp_function("TriplePython").remote(7)) == 21
    assert orb.get(orb.cpp_function("CountWithPythonActor").remote(4)) == 4
    # Classes and functions decorated with @orb.remote: C++ uses what is underneath.
    assert orb.get(orb.cpp_function("TripleDecoratedPython").remote(5)) == 15
    assert orb.get(orb.cpp_function("CountWithDecoratedPythonActor").remote(3)) == 3


def test_cross_language_errors(xlang):
    with pytest.raises(TaskError, match="'NoSuchFunction' is not registered"):
        orb.get(orb.cpp_function("NoSuchFunction").remote(1))
    with pytest.raises(TaskError, match="takes 2 arguments, got 3"):
        orb.get(orb.cpp_function("Plus").remote(1, 2, 3))
    with pytest.raises(TaskError, match="does not deserialize"):
        orb.get(orb.cpp_function("Plus").remote("one", 2))
    with pytest.raises(TypeError, match="argument 1 of Plus, of type object, cannot cross"):
        orb.cpp_function("Plus").remote(1, object())
    with pytest.raises(TypeError, match="keyword"):
        orb.cpp_function("Plus").remote(1, b=2)
    # C++ calling Python wrongly: the Python error, with its traceback, reaches the caller.
    with pytest.raises(TaskError, match="triple\\(\\) takes 1 positional argument but 2 were given"):
        orb.get(orb.cpp_function("TriplePythonWithTwoArguments").remote())
    with pytest.raises(TaskError, match="the result of xlang_module:make_object, of type object, cannot cross"):
        orb.get(orb.cpp_function("CallPythonReturningAnObject").remote())
    # Everything still works.
    assert orb.get(orb.cpp_function("Plus").remote(2, 2)) == 4
