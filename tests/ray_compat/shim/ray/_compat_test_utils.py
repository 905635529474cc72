"""Minimal versions, written for the orb shim, of the small helpers Ray's tests import
from ray._private.test_utils / ray._common.test_utils. Nothing else is emulated."""
import asyncio
import os
import subprocess
import sys
import tempfile
import time

import orb

__all__ = ["wait_for_condition", "SignalActor", "Semaphore", "run_string_as_driver",
           "run_string_as_driver_nonblocking", "client_test_enabled", "client_mode_should_convert",
           "wait_for_pid_to_exit"]


def client_test_enabled():
    return False


def client_mode_should_convert(*args, **kwargs):
    return False


def wait_for_condition(condition_predictor, timeout=10, retry_interval_ms=100, raise_exceptions=False,
                       **kwargs):
    start = time.time()
    last_ex = None
    while time.time() - start <= timeout:
        try:
            if condition_predictor(**kwargs):
                return
        except Exception as e:
            if raise_exceptions:
                raise
            last_ex = e
        time.sleep(retry_interval_ms / 1000.0)
    message = "The condition wasn't met before the timeout expired."
    if last_ex is not None:
        message += " Last exception: %r" % (last_ex,)
    raise RuntimeError(message)


def wait_for_pid_to_exit(pid, timeout=20):
    start = time.time()
    while time.time() - start < timeout:
        try:
            os.kill(pid, 0)
        except OSError:
            return
        time.sleep(0.1)
    raise TimeoutError("Timed out while waiting for process %d to exit." % pid)


@orb.remote(num_cpus=0)
class SignalActor:
    def __init__(self):
        self.ready_event = asyncio.Event()
        self.num_waiters = 0

    async def send(self, clear=False):
        self.ready_event.set()
        if clear:
            self.ready_event.clear()

    async def wait(self, should_wait=True):
        if should_wait:
            self.num_waiters += 1
            await self.ready_event.wait()
            self.num_waiters -= 1

    async def cur_num_waiters(self):
        return self.num_waiters


@orb.remote(num_cpus=0)
class Semaphore:
    def __init__(self, value=1):
        self._sema = asyncio.Semaphore(value=value)

    async def acquire(self):
        await self._sema.acquire()

    async def release(self):
        self._sema.release()

    async def locked(self):
        return self._sema.locked()


def _driver_env(env):
    return dict(os.environ if env is None else env)


def run_string_as_driver(driver_script, env=None, encode="utf-8"):
    proc = subprocess.run([sys.executable, "-"], input=driver_script.encode(encode), stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, env=_driver_env(env), timeout=120)
    out = proc.stdout.decode(encode)
    if proc.returncode:
        raise subprocess.CalledProcessError(proc.returncode, proc.args, out)
    return out


def run_string_as_driver_nonblocking(driver_script, env=None):
    f = tempfile.NamedTemporaryFile("w", suffix=".py", delete=False)
    f.write(driver_script)
    f.close()
    return subprocess.Popen([sys.executable, f.name], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=_driver_env(env))
