#!/usr/bin/python3
"""A stand-in for NVIDIA's DCGM exporter in the metric-rules test: serves
DCGM_FI_DEV_GPU_UTIL for one node type in the Prometheus text format, at a value the
test sets.

    gpu_exporter.py --port-file FILE --node-type TYPE
    curl -X POST 'http://127.0.0.1:PORT/set?value=85'
"""
import argparse
import http.server
import os
import threading
import urllib.parse


class Exporter(http.server.BaseHTTPRequestHandler):
    value = 0.0
    node_type = ""
    lock = threading.Lock()

    def do_GET(self):
        if self.path != "/metrics":
            self.send_error(404)
            return
        with Exporter.lock:
            value = Exporter.value
        body = ("# HELP DCGM_FI_DEV_GPU_UTIL GPU utilization (in %%).\n"
                "# TYPE DCGM_FI_DEV_GPU_UTIL gauge\n"
                'DCGM_FI_DEV_GPU_UTIL{gpu="0",node_type="%s"} %g\n' % (Exporter.node_type, value)).encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; version=0.0.4")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):
        url = urllib.parse.urlparse(self.path)
        values = urllib.parse.parse_qs(url.query).get("value")
        if url.path != "/set" or not values:
            self.send_error(400, "POST /set?value=N")
            return
        with Exporter.lock:
            Exporter.value = float(values[0])
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args):
        pass


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port-file", required=True)
    parser.add_argument("--node-type", required=True)
    args = parser.parse_args()
    Exporter.node_type = args.node_type
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Exporter)
    tmp = args.port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write(str(server.server_address[1]))
    os.rename(tmp, args.port_file)
    server.serve_forever()


if __name__ == "__main__":
    main()
