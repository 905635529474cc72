"""Plots rl_training's learning curves: mean episode return by iteration, one line per CSV.
   plot.py OUT.png LABEL=curve.csv [LABEL=curve.csv ...]"""
import csv
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main(png_path, curves):
    fig, ax = plt.subplots(figsize=(7, 4))
    for i, spec in enumerate(curves):
        label, path = spec.split("=", 1)
        rows = list(csv.DictReader(open(path)))
        # Later curves dashed over a wide first one: a rebuilt run lies exactly on the undisturbed one.
        style = {"linewidth": 6, "alpha": 0.4} if i == 0 else {"linestyle": "--", "linewidth": 1.5}
        ax.plot([int(r["iteration"]) for r in rows], [float(r["mean_return"]) for r in rows], label=label, **style)
    ax.set_xlabel("iteration")
    ax.set_ylabel("mean episode return (CartPole, at most 200)")
    ax.set_title("Policy gradient on rollout and learner actors (orb rl_training)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(png_path, dpi=100)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
