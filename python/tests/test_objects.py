"""Objects from Python: put/get of Python values and of a 100 MB numpy array that comes
back read-only and shares the store's memory, wait with timeouts, bad input."""
import gc
import threading

import numpy as np
import pytest

import orb


def test_values_round_trip(embedded):
    values = [1, "text", b"\x00bytes", {"a": [1, 2.5, None]}, (1, 2), {"nested": {"x": set([1, 2])}}]
    refs = [orb.put(v) for v in values]
    assert orb.get(refs) == values
    assert orb.get(refs[1]) == "text"


def test_large_array_is_read_only_and_shared(embedded):
    array = np.arange(100 * 1024 * 1024 // 8, dtype=np.float64)  # 100 MB
    ref = orb.put(array)
    got = orb.get(ref)
    assert got.shape == array.shape and got.dtype == array.dtype
    assert np.array_equal(got, array)
    assert not got.flags.writeable
    with pytest.raises(ValueError):
        got[0] = 1.0
    again = orb.get(ref)
    # Both views lie over the same memory: the store's, not copies of it.
    assert np.shares_memory(got, again)
    assert got.__array_interface__["data"][0] == again.__array_interface__["data"][0]


def test_array_outlives_its_ref(embedded):
    ref = orb.put(np.full(1 << 20, 7, dtype=np.int64))
    got = orb.get(ref)
    del ref
    gc.collect()
    assert int(got.sum()) == 7 << 20  # the view keeps the object pinned


def test_array_outlives_shutdown():
    orb.init(num_cpus=1)
    got = orb.get(orb.put(np.full(1 << 20, 3, dtype=np.int64)))
    orb.shutdown()
    # The store's mapping stays while the array lives; dropping it later is harmless.
    assert int(got.sum()) == 3 << 20
    del got
    gc.collect()


def _store_file_mapping(address):
    """The /proc/self/maps line of the mapping holding `address`, split."""
    with open("/proc/self/maps") as maps:
        for line in maps:
            fields = line.split()
            low, high = (int(x, 16) for x in fields[0].split("-"))
            if low <= address < high:
                return fields
    return None


@orb.remote
def add_in_place(tensor):
    tensor.add_(1)  # a Ray program may write to its argument tensors
    return float(tensor.sum())


def test_torch_tensor_is_shared_and_copy_on_write(embedded):
    torch = pytest.importorskip("torch")
    t = torch.arange(1 << 18, dtype=torch.float32)  # 1 MiB
    ref = orb.put(t)
    got = orb.get(ref)
    assert isinstance(got, torch.Tensor) and got.dtype == t.dtype and torch.equal(got, t)
    mapping = _store_file_mapping(got.data_ptr())
    assert mapping[5].startswith("/dev/shm/") and mapping[1] == "rw-p"  # the store's pages, privately
    got.add_(1)  # writes copy the pages they touch, for this process only
    assert float(got[0]) == 1.0
    assert torch.equal(orb.get(ref), t)  # the stored object is unchanged
    assert orb.get(add_in_place.remote(ref)) == float(t.sum()) + t.numel()
    assert orb.get(add_in_place.remote(t)) == float(t.sum()) + t.numel()
    assert torch.equal(orb.get(ref), t)
    # Small tensors are copies; transposed ones come back transposed.
    small = orb.get(orb.put(torch.ones(4)))
    small.add_(1)
    assert small.tolist() == [2.0] * 4
    m = torch.arange(512 * 256, dtype=torch.float64).reshape(512, 256)
    assert torch.equal(orb.get(orb.put(m.t())), m.t())
    assert torch.equal(orb.get(orb.put(m.t().contiguous())), m.t())


def test_wait_and_timeouts(embedded):
    refs = [orb.put(i) for i in range(3)]
    ready, not_ready = orb.wait(refs, num_returns=2, timeout=5)
    assert len(ready) == 2 and len(not_ready) == 1
    assert set(ready + not_ready) == set(refs)
    ready, not_ready = orb.wait(refs, num_returns=3, timeout=0)
    assert len(ready) == 3


def test_bad_input_is_a_clear_error(embedded):
    with pytest.raises(TypeError, match="ObjectRef"):
        orb.put(orb.put(1))
    with pytest.raises(TypeError, match="takes an ObjectRef"):
        orb.get("not a ref")
    with pytest.raises(ValueError, match="timeout"):
        orb.get(orb.put(1), timeout=-1)
    with pytest.raises(ValueError, match="num_returns"):
        orb.wait([orb.put(1)], num_returns=2)
    assert orb.get(orb.put(lambda: 1))() == 1  # cloudpickle: lambdas travel
    with pytest.raises(TypeError, match="cannot serialize value of type lock"):
        orb.put(threading.Lock())
    with pytest.raises(TypeError, match="on purpose"):
        orb.put(_Unpicklable())
    assert orb.get(orb.put("still working")) == "still working"


class _Unpicklable:
    def __reduce__(self):
        raise TypeError("cannot pickle this object on purpose")


def test_cluster_info(embedded):
    nodes = orb.nodes()
    assert len(nodes) == 1 and nodes[0]["Alive"]
    assert orb.cluster_resources()["CPU"] == 2
    assert orb.available_resources()["CPU"] <= 2
    ctx = orb.get_runtime_context()
    assert ctx.get_node_id() == nodes[0]["NodeID"]
    assert ctx.gcs_address


def test_init_twice_and_use_before_init(monkeypatch):
    assert not orb.is_initialized()
    with pytest.raises(orb.exceptions.OrbError, match="not HOST:PORT"):
        orb.init(address="not-an-address")  # the C++ error, as orb.exceptions names it
    assert not orb.is_initialized()
    monkeypatch.setenv("ORB_ENABLE_AUTO_CONNECT", "0")
    with pytest.raises(RuntimeError, match="orb.init"):
        orb.put(1)
    monkeypatch.delenv("ORB_ENABLE_AUTO_CONNECT")
    # As Ray's: the first call that needs a cluster starts one — one, when many threads
    # make their first calls at once.
    import threading
    values, errors = [], []

    def first_call(i):
        try:
            values.append(orb.get(orb.put(i)))
        except Exception as e:  # noqa: BLE001 (the test reports any)
            errors.append(e)

    threads = [threading.Thread(target=first_call, args=(i,)) for i in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert errors == [] and sorted(values) == list(range(16))
    assert orb.is_initialized() and len(orb.nodes()) == 1
    orb.shutdown()
    orb.init(num_cpus=1)
    try:
        with pytest.raises(RuntimeError, match="already"):
            orb.init()
        orb.init(ignore_reinit_error=True)
    finally:
        orb.shutdown()
    assert not orb.is_initialized()


def test_cli_cluster_objects(cli_cluster):
    orb.init(address=cli_cluster)
    try:
        assert len([n for n in orb.nodes() if n["Alive"]]) == 2
        assert orb.cluster_resources()["CPU"] == 2
        array = np.random.default_rng(3).random(1 << 18)
        assert np.array_equal(orb.get(orb.put(array)), array)
        assert orb.get(orb.put({"k": array[:4]}), timeout=10)["k"].tolist() == array[:4].tolist()
    finally:
        orb.shutdown()
