"""Pool (Ray's ray.util.multiprocessing.Pool): the standard library's
multiprocessing.Pool API, with its processes as actors on the cluster.

    with Pool(processes=4) as pool:
        pool.map(f, range(100)); pool.imap_unordered(f, items); pool.apply_async(f, (x,)).get()
"""
from orb.util.multiprocessing.pool import AsyncResult, Pool, TimeoutError  # noqa: F401

__all__ = ["Pool", "AsyncResult", "TimeoutError"]
