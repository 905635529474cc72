"""Reinforcement learning in seven stages, in Python (the C++ version is
examples/rl_training/): CartPole played by rollout actors, policy gradients computed by
learner actors on their shards and summed with orb.collective.allreduce, one Adam step on
every learner, the new policy sent to the rollout actors as one object in the store. Each
role has a placement group (learners ask for GPUs: declared where there are none). With
--kill-at-iteration K a rollout worker and a learner die as iteration K starts: the driver
sees the failure, replaces the rollout actor in its bundle, makes a new learner group from
the last checkpoint and goes on. Episodes are seeded by iteration and worker, so the final
policy is the one of an undisturbed run.

    PYTHONPATH=build/python python3 examples/python/rl_training.py --iterations 40 --kill-at-iteration 15
"""
import argparse
import json
import math
import os

import numpy as np

import orb
import orb.collective as col
from orb.exceptions import OrbError
from orb.util.placement_group import placement_group, remove_placement_group
from orb.util.scheduling_strategies import PlacementGroupSchedulingStrategy

OBS, ACTIONS, MAX_STEPS, RATE = 4, 2, 200, 0.05
PARAMS = ACTIONS * (OBS + 1)


def cartpole_step(s, action):
    """One step of the classic CartPole dynamics; the new state, and whether the pole is up."""
    x, x_dot, theta, theta_dot = s
    force = 10.0 if action == 1 else -10.0
    cos_t, sin_t = math.cos(theta), math.sin(theta)
    temp = (force + 0.05 * theta_dot * theta_dot * sin_t) / 1.1
    theta_acc = (9.8 * sin_t - cos_t * temp) / (0.5 * (4.0 / 3.0 - 0.1 * cos_t * cos_t / 1.1))
    x_acc = temp - 0.05 * theta_acc * cos_t / 1.1
    s = (x + 0.02 * x_dot, x_dot + 0.02 * x_acc, theta + 0.02 * theta_dot, theta_dot + 0.02 * theta_acc)
    return s, abs(s[0]) <= 2.4 and abs(s[2]) <= 12 * math.pi / 180


def probabilities(params, obs):
    logits = params.reshape(ACTIONS, OBS + 1) @ np.append(obs, 1.0)
    e = np.exp(logits - logits.max())
    return e / e.sum()


def play(params, seed, episodes):
    """Episodes as (observations [n, 4], actions [n]) with the policy `params`."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(episodes):
        s, up, obs, acts = tuple(rng.uniform(-0.05, 0.05, OBS)), True, [], []
        while up and len(acts) < MAX_STEPS:
            a = 0 if rng.random() < probabilities(params, np.array(s))[0] else 1
            obs.append(s)
            acts.append(a)
            s, up = cartpole_step(s, a)
        out.append((np.array(obs), np.array(acts)))
    return out


def policy_gradient(params, episodes, gamma=0.99):
    """REINFORCE with a per-step baseline; then the sum of returns, episodes and steps."""
    returns = []
    for _, acts in episodes:
        g, running = np.zeros(len(acts)), 0.0
        for t in range(len(acts) - 1, -1, -1):
            running = 1 + gamma * running
            g[t] = running
        returns.append(g)
    longest = max(len(g) for g in returns)
    totals, counts = np.zeros(longest), np.zeros(longest)
    for g in returns:
        totals[:len(g)] += g
        counts[:len(g)] += 1
    baseline = totals / np.maximum(counts, 1)
    grad = np.zeros(PARAMS + 3)
    for (obs, acts), g in zip(episodes, returns):
        for t in range(len(acts)):
            p = probabilities(params, obs[t])
            coef = (np.eye(ACTIONS)[acts[t]] - p) * (g[t] - baseline[t])
            grad[:PARAMS] += np.outer(coef, np.append(obs[t], 1.0)).ravel()
        grad[PARAMS:] += (len(acts), 1, len(acts))
    return grad


@orb.remote
class RolloutWorker:
    def __init__(self, index):
        self.index = index

    def collect(self, params, iteration, episodes):
        return play(np.asarray(params), iteration * 1000003 + self.index, episodes)

    def die(self):
        os._exit(1)


@orb.remote
class Learner:
    def __init__(self, group, state):
        self.group, self.state = group, np.array(state)  # params, Adam's moments, step

    def learn(self, a, b):
        params = self.state[:PARAMS]
        grad = policy_gradient(params, a + b)
        col.allreduce(grad, group_name=self.group)  # in place: the sum over learners
        m, v = self.state[PARAMS:2 * PARAMS], self.state[2 * PARAMS:3 * PARAMS]
        self.state[3 * PARAMS] += 1
        t = self.state[3 * PARAMS]
        g = grad[:PARAMS] / grad[PARAMS + 2]
        m[:] = 0.9 * m + 0.1 * g
        v[:] = 0.999 * v + 0.001 * g * g
        params += RATE * (m / (1 - 0.9 ** t)) / (np.sqrt(v / (1 - 0.999 ** t)) + 1e-8)
        return grad[PARAMS] / grad[PARAMS + 1]

    def checkpoint(self):
        return self.state.copy()

    def die(self):
        os._exit(1)


def make_learners(pg, count, generation, state):
    group = "learners-%d" % generation
    learners = [Learner.options(num_cpus=1, num_gpus=1,
                                scheduling_strategy=PlacementGroupSchedulingStrategy(pg, i)).remote(group, state)
                for i in range(count)]
    col.create_collective_group(learners, count, list(range(count)), group_name=group)
    return learners


def make_rollout(pg, index):
    return RolloutWorker.options(num_cpus=1, scheduling_strategy=PlacementGroupSchedulingStrategy(pg, index)).remote(index)


def train(args):
    # 1. Resource request (2. on an autoscaled cluster, the waits last until the pods are up).
    rollout_pg = placement_group([{"CPU": 1}] * args.rollouts, strategy="SPREAD")
    learner_pg = placement_group([{"CPU": 1, "GPU": 1}] * args.learners, strategy="PACK")
    assert rollout_pg.wait(600) and learner_pg.wait(600), "the placement groups were not placed"
    rollouts = [make_rollout(rollout_pg, i) for i in range(args.rollouts)]
    generation, checkpoint, checkpoint_iteration = 0, np.zeros(3 * PARAMS + 1), 0
    learners = make_learners(learner_pg, args.learners, generation, checkpoint)
    policy, curve, rebuilds, it = orb.put(checkpoint[:PARAMS]), [], 0, 0
    while it < args.iterations:
        if it == args.kill_at_iteration and rebuilds == 0:
            print("iteration %d: killing rollout %d and learner %d" % (it, args.rollouts - 1, args.learners - 1),
                  flush=True)
            rollouts[-1].die.remote()
            learners[-1].die.remote()
        # 3. Sharded dispatch; 4. and 5. gradients, AllReduce, the same step on each learner.
        shards = [r.collect.remote(policy, it, args.episodes) for r in rollouts]
        learned = [learners[i].learn.remote(shards[2 * i], shards[2 * i + 1]) for i in range(args.learners)]
        try:
            pending = learned
            while pending:  # a failure surfaces as soon as it happens
                ready, pending = orb.wait(pending, num_returns=len(pending), timeout=0.1)
                orb.get(ready)
            mean_return = orb.get(learned[0])
            checkpoint = orb.get(learners[0].checkpoint.remote())
            policy = orb.put(checkpoint[:PARAMS])
            checkpoint_iteration = it = it + 1
            curve.append(mean_return)
            print(json.dumps({"iteration": it - 1, "mean_return": round(mean_return, 2)}), flush=True)
        except OrbError as e:
            # 6. Health check failed: replace the dead, resume from the checkpoint.
            print("iteration %d failed (%s): rebuilding from iteration %d" % (it, type(e).__name__,
                                                                              checkpoint_iteration), flush=True)
            for i, shard in enumerate(shards):
                try:
                    orb.get(shard, timeout=10)
                except OrbError:
                    orb.kill(rollouts[i])
                    rollouts[i] = make_rollout(rollout_pg, i)
            for learner in learners:
                orb.kill(learner)
            generation += 1
            learners = make_learners(learner_pg, args.learners, generation, checkpoint)
            policy, it, rebuilds = orb.put(checkpoint[:PARAMS]), checkpoint_iteration, rebuilds + 1
    # 7. Release.
    for actor in rollouts + learners:
        orb.kill(actor)
    remove_placement_group(rollout_pg)
    remove_placement_group(learner_pg)
    return checkpoint[:PARAMS], curve, rebuilds


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rollouts", type=int, default=4)
    parser.add_argument("--learners", type=int, default=2)
    parser.add_argument("--iterations", type=int, default=40)
    parser.add_argument("--episodes", type=int, default=8)
    parser.add_argument("--kill-at-iteration", type=int, default=-1)
    parser.add_argument("--policy-out", help="write the final policy here (JSON)")
    parser.add_argument("--address")
    args = parser.parse_args()
    if args.rollouts != 2 * args.learners:
        parser.error("--rollouts must be twice --learners (each learner takes two shards)")
    if args.address:
        orb.init(address=args.address)
    else:  # a local cluster with what the roles need (GPUs declared, accounted only)
        orb.init(num_cpus=args.rollouts + args.learners, num_gpus=args.learners)
    policy, curve, rebuilds = train(args)
    print("released after %d rebuild(s); mean return %.1f over the first 5 iterations, %.1f over the last 5"
          % (rebuilds, np.mean(curve[:5]), np.mean(curve[-5:])), flush=True)
    if args.policy_out:
        with open(args.policy_out, "w") as f:
            json.dump(policy.tolist(), f)
    orb.shutdown()


if __name__ == "__main__":
    main()
