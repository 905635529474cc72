"""Plots inference_demo's CSV: latency percentiles and throughput by load, one line per
scheduler.   plot.py FIGURES.csv OUT.png"""
import csv
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main(csv_path, png_path):
    rows = list(csv.DictReader(open(csv_path)))
    schedulers = sorted({r["scheduler"] for r in rows})
    fig, (latency, throughput) = plt.subplots(1, 2, figsize=(10, 4))
    for name in schedulers:
        mine = sorted((r for r in rows if r["scheduler"] == name), key=lambda r: float(r["load_rps"]))
        loads = [float(r["load_rps"]) for r in mine]
        line, = latency.plot(loads, [float(r["p99_ms"]) for r in mine], marker="o", label=name + " p99")
        latency.plot(loads, [float(r["p50_ms"]) for r in mine], marker=".", linestyle="--",
                     color=line.get_color(), label=name + " p50")
        throughput.plot(loads, [float(r["tokens_per_s"]) for r in mine], marker="o", label=name)
    latency.set_xlabel("load (requests/s)")
    latency.set_ylabel("latency, arrival to last token (ms)")
    latency.set_yscale("log")
    latency.legend()
    latency.set_title("Latency")
    throughput.set_xlabel("load (requests/s)")
    throughput.set_ylabel("tokens/s")
    throughput.legend()
    throughput.set_title("Throughput")
    fig.suptitle("Continuous vs static batching, same requests (orb inference_demo)")
    fig.tight_layout()
    fig.savefig(png_path, dpi=100)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
