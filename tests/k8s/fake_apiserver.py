#!/usr/bin/python3
"""A fake Kubernetes API server (plain HTTP on 127.0.0.1) with an optional fake kubelet, for tests.

  fake_apiserver.py --port 0 --state-dir DIR [--kubelet] [--kubelet-ip 127.0.0.1] [--token T]
                    [--kubelet-env-passthrough VAR,VAR] [--kubelet-start-delay-ms N]

Writes DIR/port once listening and pod logs to DIR/pods/<namespace>_<name>.log. See README.md.
Standard library only.
"""

import argparse
import os
import signal
import sys
import threading
import time

sys.dont_write_bytecode = True   # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from fakek8s.api import Api  # noqa: E402
from fakek8s.faults import FaultInjector  # noqa: E402
from fakek8s.kubelet import FakeKubelet  # noqa: E402
from fakek8s.resources import Registry  # noqa: E402
from fakek8s.server import FakeApiServer  # noqa: E402
from fakek8s.store import Store  # noqa: E402
from fakek8s.watch import WatchHub  # noqa: E402


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--port", type=int, default=0, help="port to listen on (0: a free one)")
    p.add_argument("--state-dir", required=True, help="where `port` and pods/<ns>_<name>.log are written")
    p.add_argument("--token", help="require Authorization: Bearer TOKEN")
    p.add_argument("--kubelet", action="store_true", help="run pods as local processes")
    p.add_argument("--kubelet-ip", default="127.0.0.1", help="the podIP/hostIP the kubelet reports")
    p.add_argument("--kubelet-node-name", default="fake-node")
    p.add_argument("--kubelet-env-passthrough", default="",
                   help="comma-separated variables of this process passed on to pod processes")
    p.add_argument("--kubelet-start-delay-ms", type=int, default=0, help="delay before a pod is scheduled")
    p.add_argument("--max-shutdown-grace-s", type=float, default=10.0,
                   help="cap on a pod's grace period when the fake itself stops")
    p.add_argument("--history", type=int, default=1000, help="watch events kept for resuming watches")
    p.add_argument("--max-lifetime-s", type=float, default=0,
                   help="stop by itself after this long (0: never), so a hung test leaves nothing behind")
    return p.parse_args(argv)


def write_port_file(state_dir, port):
    tmp = os.path.join(state_dir, ".port.%d" % os.getpid())
    with open(tmp, "w") as f:
        f.write("%d\n" % port)
    os.rename(tmp, os.path.join(state_dir, "port"))


def main(argv=None):
    args = parse_args(argv)
    os.makedirs(os.path.join(args.state_dir, "pods"), exist_ok=True)
    registry = Registry()
    store = Store(WatchHub(args.history))
    kubelet = None
    if args.kubelet:
        passthrough = [v for v in args.kubelet_env_passthrough.split(",") if v]
        kubelet = FakeKubelet(store, registry, args.state_dir, args.kubelet_ip, args.kubelet_node_name,
                              passthrough, args.kubelet_start_delay_ms, args.max_shutdown_grace_s)
    api = Api(registry, store, kubelet)
    api.bootstrap()
    faults = FaultInjector(store.compact, store.hub.drop_all)
    server = FakeApiServer(args.port, api, faults, registry, kubelet, args.token)
    port = server.server_address[1]
    if kubelet:
        kubelet.start(port)

    done = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: done.set())
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.2}, daemon=True)
    thread.start()
    write_port_file(args.state_dir, port)
    sys.stderr.write("fake-apiserver: listening on http://127.0.0.1:%d\n" % port)
    deadline = time.monotonic() + args.max_lifetime_s if args.max_lifetime_s > 0 else None
    while not done.wait(0.5):
        if deadline and time.monotonic() > deadline:
            sys.stderr.write("fake-apiserver: --max-lifetime-s reached\n")
            break
    sys.stderr.write("fake-apiserver: stopping\n")
    server.stopping.set()
    if kubelet:
        kubelet.stop()
    server.shutdown()
    server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
