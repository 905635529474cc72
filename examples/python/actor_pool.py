"""An actor pool: a few stateful workers (each loads its "model" once) serve many
requests, results in order (map) or as they finish (map_unordered).

    PYTHONPATH=build/python python3 examples/python/actor_pool.py
"""
import argparse
import os

import orb
from orb.util import ActorPool


@orb.remote
class Tokenizer:
    def __init__(self):
        self.vocabulary = {w: i for i, w in enumerate("the a of to and in is it you that".split())}
        self.pid = os.getpid()

    def encode(self, sentence):
        return [self.vocabulary.get(w, -1) for w in sentence.lower().split()], self.pid


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--actors", type=int, default=3)
    parser.add_argument("--address")
    args = parser.parse_args()
    orb.init(address=args.address)
    pool = ActorPool([Tokenizer.remote() for _ in range(args.actors)])
    sentences = ["The cat is in the hat", "It is you", "A tale of two cities", "To be and to see"] * 5
    encoded = list(pool.map(lambda actor, s: actor.encode.remote(s), sentences))
    pids = {pid for _, pid in encoded}
    for sentence, (ids, _) in list(zip(sentences, encoded))[:4]:
        print("%-24s -> %s" % (sentence, ids))
    print("%d sentences encoded by %d actors, in order" % (len(encoded), len(pids)))
    orb.shutdown()


if __name__ == "__main__":
    main()
