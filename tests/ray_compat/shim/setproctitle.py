"""Stand-in for the setproctitle package, which Ray bundles and its tests import (the
shim stands in for Ray): getproctitle() reads this process's command line."""


def getproctitle():
    try:
        with open("/proc/self/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return ""


def setproctitle(title):
    pass
