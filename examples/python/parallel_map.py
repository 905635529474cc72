"""A parallel map: estimate pi from many independent samples, one task per chunk.

    PYTHONPATH=build/python python3 examples/python/parallel_map.py [--chunks 16]
"""
import argparse

import numpy as np

import orb


@orb.remote
def hits_in_circle(seed, samples):
    rng = np.random.default_rng(seed)
    points = rng.random((samples, 2))
    return int(((points ** 2).sum(axis=1) <= 1.0).sum())


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--chunks", type=int, default=16)
    parser.add_argument("--samples", type=int, default=200_000)
    parser.add_argument("--address")
    args = parser.parse_args()
    orb.init(address=args.address)
    hits = orb.get([hits_in_circle.remote(seed, args.samples) for seed in range(args.chunks)])
    estimate = 4.0 * sum(hits) / (args.chunks * args.samples)
    print("pi is about %.4f (%d samples in %d tasks)" % (estimate, args.chunks * args.samples, args.chunks))
    orb.shutdown()


if __name__ == "__main__":
    main()
