"""Data-parallel training of a small torch model (CPU) over trainer actors that sum
their gradients with orb.collective.allreduce, checkpointing each epoch. With
--kill-at-epoch K a trainer dies as epoch K starts: the driver sees the epoch fail,
starts new trainers from the last checkpoint and carries on; the final weights match an
undisturbed run (the data and the order of every update are the same).

    PYTHONPATH=build/python python3 examples/python/data_parallel_training.py --epochs 6 --kill-at-epoch 3
"""
import argparse
import json
import os
import tempfile

import numpy as np
import torch

import orb
import orb.collective as col
from orb.exceptions import OrbError

FEATURES = 8


def make_shard(rank, world_size, samples=512):
    """Rank `rank`'s share of a fixed synthetic regression problem."""
    rng = np.random.default_rng(1234)
    x = rng.standard_normal((samples, FEATURES)).astype(np.float32)
    w = np.arange(1, FEATURES + 1, dtype=np.float32) / FEATURES
    y = (x @ w + 0.3 * np.sin(3 * x[:, 0])).astype(np.float32)
    return torch.from_numpy(x[rank::world_size].copy()), torch.from_numpy(y[rank::world_size].copy())


def make_model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(FEATURES, 16), torch.nn.Tanh(), torch.nn.Linear(16, 1))


@orb.remote
class Trainer:
    def __init__(self, rank, world_size, group, state):
        torch.set_num_threads(1)
        self.rank, self.world_size, self.group = rank, world_size, group
        self.model = make_model()
        if state is not None:
            self.model.load_state_dict({k: torch.tensor(v) for k, v in state.items()})
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.05)
        self.x, self.y = make_shard(rank, world_size)

    def train_epoch(self, batches=8):
        size = len(self.x) // batches
        total = 0.0
        for b in range(batches):
            x, y = self.x[b * size:(b + 1) * size], self.y[b * size:(b + 1) * size]
            self.optimizer.zero_grad()
            loss = torch.nn.functional.mse_loss(self.model(x).squeeze(1), y)
            loss.backward()
            for p in self.model.parameters():
                col.allreduce(p.grad, group_name=self.group)  # in place: the sum over trainers
                p.grad /= self.world_size
            self.optimizer.step()
            total += loss.item()
        return total / batches

    def state(self):
        return {k: v.numpy().copy() for k, v in self.model.state_dict().items()}

    def die(self):
        os._exit(1)  # as a crash would: no clean-up, no reply


def start_trainers(world_size, generation, state):
    group = "dp-%d" % generation
    trainers = [Trainer.remote(r, world_size, group, state) for r in range(world_size)]
    col.create_collective_group(trainers, world_size, list(range(world_size)), group_name=group)
    return trainers


def train(epochs, world_size, kill_at_epoch, checkpoint_path):
    state, generation, epoch = None, 0, 0
    trainers = start_trainers(world_size, generation, state)
    killed = False
    while epoch < epochs:
        if epoch == kill_at_epoch and not killed:
            # Queued before the epoch's call, which it never gets to run: the epoch fails
            # every time, however fast it would have been (as the C++ example does).
            trainers[-1].die.remote()
            killed = True
        refs = [t.train_epoch.remote() for t in trainers]
        try:
            losses = orb.get(refs, timeout=300)
        except OrbError as e:
            print("epoch %d failed (%s): restarting from the last checkpoint" % (epoch, type(e).__name__), flush=True)
            for t in trainers:
                orb.kill(t)
            epoch, state = 0, None
            if os.path.exists(checkpoint_path):
                with open(checkpoint_path) as f:
                    saved = json.load(f)
                epoch = saved["epoch"] + 1
                state = {k: np.array(v, dtype=np.float32) for k, v in saved["state"].items()}
            generation += 1
            trainers = start_trainers(world_size, generation, state)
            continue
        state = orb.get(trainers[0].state.remote())
        with open(checkpoint_path, "w") as f:
            json.dump({"epoch": epoch, "state": {k: v.tolist() for k, v in state.items()}}, f)
        print("epoch %d: loss %.5f" % (epoch, float(np.mean(losses))), flush=True)
        epoch += 1
    return state


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=6)
    parser.add_argument("--trainers", type=int, default=2)
    parser.add_argument("--kill-at-epoch", type=int, default=-1)
    parser.add_argument("--weights-out", help="write the final weights here (JSON)")
    parser.add_argument("--address")
    args = parser.parse_args()
    orb.init(address=args.address)
    with tempfile.TemporaryDirectory() as scratch:
        state = train(args.epochs, args.trainers, args.kill_at_epoch, os.path.join(scratch, "checkpoint.json"))
    if args.weights_out:
        with open(args.weights_out, "w") as f:
            json.dump({k: v.tolist() for k, v in state.items()}, f)
    print("trained %d epochs on %d trainers" % (args.epochs, args.trainers))
    orb.shutdown()


if __name__ == "__main__":
    main()
