// Reinforcement learning the way a platform runs it, in seven stages:
//  1. resource request: a placement group per role, N rollout workers (CPU) and M learners
//     (GPU; declared with --num-gpus on a machine without one);
//  2. pods: on an autoscaled cluster (orb up) the groups bring up the nodes they need;
//  3. sharded dispatch: rollout actors play CartPole (cartpole.h) with seeds of their own;
//  4. gradients: each learner computes the policy gradient of its shard of episodes;
//  5. sync: the learners sum their gradients with AllReduce and take the same step (or,
//     with --sync=parameter-server, a parameter-server actor sums them and steps); the new
//     policy goes to the rollout actors through the object store (one Put, read by all);
//  6. health checks and rebuild: with --kill-at-iteration=K a rollout worker and a learner
//     die at iteration K; the driver sees it, makes a new rollout actor in the lost one's
//     bundle and a new learner group, restores the last checkpoint and goes on;
//  7. release: the checkpoint is written to a file, the groups are removed (and an
//     autoscaler gives the nodes back).
// Episodes are seeded by iteration and worker, so a run that lost workers ends with the
// same policy as one that did not.
//
//   rl_training [--orb-address=H:P] [--rollouts=4] [--learners=2] [--iterations=60]
//               [--episodes=8] [--sync=allreduce|parameter-server] [--kill-at-iteration=K]
//               [--iteration-pause-ms=0]
//               [--csv=FILE] [--checkpoint=FILE]
//               [--single-process]
// Prints one JSON line per iteration (mean episode return) and "policy: p0 p1 ...".
#include <CLI/CLI.hpp>
#include <orb/api.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "cartpole.h"

namespace col = orb::collective;

namespace {
constexpr double kLearningRate = 0.05;
uint64_t Seed(int iteration, int worker) { return static_cast<uint64_t>(iteration) * 1000003 + worker; }
}  // namespace

class RolloutWorker {
 public:
  explicit RolloutWorker(int index) : index_(index) {}
  static RolloutWorker* Create(int index) { return new RolloutWorker(index); }
  std::vector<double> Collect(std::vector<double> policy, int iteration, int episodes) {
    return rl::CollectEpisodes(policy, Seed(iteration, index_), episodes);
  }
  int Die() { std::_Exit(1); }

 private:
  int index_;
};
ORB_REMOTE(RolloutWorker::Create, &RolloutWorker::Collect, &RolloutWorker::Die);

class Learner {
 public:
  static Learner* Create() { return new Learner(); }
  bool Restore(std::vector<double> state) {
    optimizer_.state = std::move(state);
    return true;
  }
  // The gradient of its two shards, summed over the group, one Adam step on every
  // learner. Returns {sum of returns, episodes} over the whole iteration.
  std::vector<double> Learn(std::string group, std::vector<double> a, std::vector<double> b) {
    a.insert(a.end(), b.begin(), b.end());
    std::vector<double> grad = rl::PolicyGradient(optimizer_.params(), a);
    col::AllReduce(col::View(grad), group, col::ReduceOp::SUM);
    optimizer_.Step(grad, 1.0 / grad[rl::kParams + 2], kLearningRate);
    return {grad[rl::kParams], grad[rl::kParams + 1]};
  }
  // With a parameter server: only the gradient of its shards for `policy`.
  std::vector<double> Gradient(std::vector<double> policy, std::vector<double> a, std::vector<double> b) {
    a.insert(a.end(), b.begin(), b.end());
    return rl::PolicyGradient(policy, a);
  }
  std::vector<double> State() const { return optimizer_.state; }
  int Die() { std::_Exit(1); }

 private:
  rl::Optimizer optimizer_;
};
ORB_REMOTE(Learner::Create, &Learner::Restore, &Learner::Learn, &Learner::Gradient, &Learner::State, &Learner::Die);

// --sync=parameter-server: the learners' gradients are summed here, where the one
// optimizer lives, instead of among the learners.
class ParameterServer {
 public:
  static ParameterServer* Create() { return new ParameterServer(); }
  bool Restore(std::vector<double> state) {
    optimizer_.state = std::move(state);
    return true;
  }
  // Sums the gradients in learner order, takes one step; {sum of returns, episodes}.
  std::vector<double> Apply(std::vector<std::vector<double>> gradients) {
    std::vector<double> sum(gradients.at(0).size(), 0.0);
    for (const auto& g : gradients) {
      for (size_t i = 0; i < sum.size(); ++i) sum[i] += g[i];
    }
    optimizer_.Step(sum, 1.0 / sum[rl::kParams + 2], kLearningRate);
    return {sum[rl::kParams], sum[rl::kParams + 1]};
  }
  std::vector<double> State() const { return optimizer_.state; }

 private:
  rl::Optimizer optimizer_;
};
ORB_REMOTE(ParameterServer::Create, &ParameterServer::Restore, &ParameterServer::Apply, &ParameterServer::State);

namespace {

struct Options {
  int rollouts = 4, learners = 2, iterations = 60, episodes = 8, kill_at = -1, pause_ms = 0;
  std::string csv, checkpoint;
  std::string sync = "allreduce";  // or "parameter-server"
  bool single_process = false;
  bool parameter_server() const { return sync == "parameter-server"; }
};

struct Roles {
  orb::PlacementGroup rollout_group, learner_group;
  std::vector<orb::ActorHandle<RolloutWorker>> rollouts;
  std::vector<orb::ActorHandle<Learner>> learners;
  std::optional<orb::ActorHandle<ParameterServer>> server;  // --sync=parameter-server
};

orb::ActorHandle<RolloutWorker> MakeRollout(const orb::PlacementGroup& pg, int index) {
  return orb::Actor(RolloutWorker::Create).SetResource("CPU", 1).SetPlacementGroup(pg, index).Remote(index);
}

// New learners in their group's bundles, a collective group of them, the checkpoint
// restored (in the parameter server, with one).
void MakeLearners(Roles& roles, const Options& o, const std::string& group, const std::vector<double>& state) {
  roles.learners.clear();
  for (int i = 0; i < o.learners; ++i) {
    roles.learners.push_back(orb::Actor(Learner::Create)
                                 .SetResources({{"CPU", 1}, {"GPU", 1}})
                                 .SetPlacementGroup(roles.learner_group, i)
                                 .Remote());
  }
  if (o.parameter_server()) {
    *roles.server->Task(&ParameterServer::Restore).Remote(state).Get();
    return;
  }
  col::CreateGroup(roles.learners, group, col::Backend::GLOO, std::chrono::seconds(60));
  std::vector<orb::ObjectRef<bool>> restored;
  for (auto& l : roles.learners) restored.push_back(l.Task(&Learner::Restore).Remote(state));
  orb::Get(restored);
}

// Every answer once all have come; throws the first failure as soon as it is known (a
// learner waiting in AllReduce for a dead peer would answer much later).
std::vector<std::vector<double>> WaitAll(const std::vector<orb::ObjectRef<std::vector<double>>>& refs) {
  while (true) {
    auto ready = orb::Wait(refs, static_cast<int>(refs.size()), 100).ready;
    for (auto& r : ready) r.Get();  // a failed one throws
    if (ready.size() == refs.size()) break;
  }
  std::vector<std::vector<double>> out;
  for (auto& r : refs) out.push_back(*r.Get());
  return out;
}

void PrintPolicy(const std::vector<double>& policy) {
  std::printf("policy:");
  for (double v : policy) std::printf(" %.17g", v);
  std::printf("\n");
}

int SingleProcess(const Options& o) {
  rl::Optimizer optimizer;
  for (int it = 0; it < o.iterations; ++it) {
    std::vector<double> episodes;
    for (int w = 0; w < o.rollouts; ++w) {
      auto part = rl::CollectEpisodes(optimizer.params(), Seed(it, w), o.episodes);
      episodes.insert(episodes.end(), part.begin(), part.end());
    }
    auto grad = rl::PolicyGradient(optimizer.params(), episodes);
    optimizer.Step(grad, 1.0 / grad[rl::kParams + 2], kLearningRate);
    std::printf("{\"iteration\": %d, \"mean_return\": %.2f}\n", it, grad[rl::kParams] / grad[rl::kParams + 1]);
  }
  PrintPolicy(optimizer.params());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{"policy-gradient training of CartPole on rollout and learner actors"};
  app.allow_extras();  // --orb-address=... is orb::Init's
  app.add_option("--rollouts", o.rollouts, "rollout workers (twice the learners)")->check(CLI::PositiveNumber);
  app.add_option("--learners", o.learners, "learners")->check(CLI::PositiveNumber);
  app.add_option("--iterations", o.iterations, "training iterations")->check(CLI::PositiveNumber);
  app.add_option("--episodes", o.episodes, "episodes per rollout worker per iteration")->check(CLI::PositiveNumber);
  app.add_option("--kill-at-iteration", o.kill_at, "kill a rollout worker and a learner at this iteration");
  app.add_option("--sync", o.sync, "how learners combine gradients: allreduce, or parameter-server")
      ->check(CLI::IsMember({"allreduce", "parameter-server"}));
  app.add_option("--iteration-pause-ms", o.pause_ms, "pause between iterations (time for faults from outside)");
  app.add_option("--csv", o.csv, "write the learning curve (iteration, mean return) here");
  app.add_option("--checkpoint", o.checkpoint, "write the final checkpoint (the optimizer's state) here");
  app.add_flag("--single-process", o.single_process, "the same training in this process, for comparison");
  CLI11_PARSE(app, argc, argv);
  if (o.rollouts != 2 * o.learners) {
    std::fprintf(stderr, "rl_training: --rollouts must be twice --learners (each learner takes two shards)\n");
    return 2;
  }
  if (o.single_process) return SingleProcess(o);

  // The embedded cluster (no --orb-address) declares what the roles need: CPUs for every
  // actor and a GPU per learner (accounted only, on a machine without GPUs).
  orb::Config config;
  config.num_cpus = o.rollouts + o.learners;
  config.num_gpus = o.learners;
  orb::Init(config, argc, argv);
  // 1. Resource request: a group per role, all or nothing.
  Roles roles;
  orb::Bundles rollout_bundles, learner_bundles;
  for (int i = 0; i < o.rollouts; ++i) rollout_bundles.push_back({{"CPU", 1}});
  for (int i = 0; i < o.learners; ++i) learner_bundles.push_back({{"CPU", 1}, {"GPU", 1}});
  roles.rollout_group = orb::CreatePlacementGroup({"rollouts", rollout_bundles, orb::PlacementStrategy::SPREAD});
  roles.learner_group = orb::CreatePlacementGroup({"learners", learner_bundles, orb::PlacementStrategy::PACK});
  // 2. Pods: on an autoscaled cluster the waits below last until the nodes are up.
  if (!roles.rollout_group.Wait(600) || !roles.learner_group.Wait(600)) {
    std::fprintf(stderr, "rl_training: the placement groups were not placed within 600 s\n");
    return 1;
  }
  std::printf("{\"stage\": \"resources\", \"rollouts\": %d, \"learners\": %d}\n", o.rollouts, o.learners);
  for (int i = 0; i < o.rollouts; ++i) roles.rollouts.push_back(MakeRollout(roles.rollout_group, i));
  int generation = 0;
  auto group = [&generation] { return "learners-" + std::to_string(generation); };
  rl::Optimizer fresh;
  // The parameter server holds no resources, so by default it could start on any node (as
  // in Ray); it is the job's state, so it stays beside the driver, whose node outlives the
  // worker pods.
  if (o.parameter_server()) {
    roles.server = orb::Actor(ParameterServer::Create)
                       .SetResource("CPU", 0)
                       .SetSchedulingStrategy(orb::NodeAffinitySchedulingStrategy{orb::GetRuntimeContext().GetNodeId(), /*soft=*/true})
                       .Remote();
  }
  MakeLearners(roles, o, group(), fresh.state);
  orb::ObjectRef<std::vector<double>> checkpoint = orb::Put(fresh.state);
  int checkpoint_iteration = 0;  // the first iteration not in the checkpoint
  orb::ObjectRef<std::vector<double>> policy = orb::Put(fresh.params());
  std::ofstream csv;
  if (!o.csv.empty()) {
    csv.open(o.csv);
    csv << "iteration,mean_return\n";
  }
  int rebuilds = 0;
  for (int it = 0; it < o.iterations;) {
    if (it == o.kill_at && rebuilds == 0) {
      std::printf("{\"stage\": \"fault\", \"iteration\": %d, \"killed\": [\"rollout %d\", \"learner %d\"]}\n", it,
                  o.rollouts - 1, o.learners - 1);
      roles.rollouts.back().Task(&RolloutWorker::Die).Remote();
      roles.learners.back().Task(&Learner::Die).Remote();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(o.pause_ms));
    // 3. Sharded dispatch: every rollout actor reads the same policy object.
    std::vector<orb::ObjectRef<std::vector<double>>> shards;
    for (auto& r : roles.rollouts) shards.push_back(r.Task(&RolloutWorker::Collect).Remote(policy, it, o.episodes));
    // 4 and 5. Gradients on the shards, summed among the learners, the same step on each
    // (or summed by the parameter server, which steps).
    std::vector<orb::ObjectRef<std::vector<double>>> learned;
    for (int l = 0; l < o.learners; ++l) {
      auto& learner = roles.learners[l];
      learned.push_back(o.parameter_server()
                            ? learner.Task(&Learner::Gradient).Remote(policy, shards[2 * l], shards[2 * l + 1])
                            : learner.Task(&Learner::Learn).Remote(group(), shards[2 * l], shards[2 * l + 1]));
    }
    try {
      std::vector<std::vector<double>> answers = WaitAll(learned);
      std::vector<double> totals = answers[0];
      if (o.parameter_server()) {
        totals = *roles.server->Task(&ParameterServer::Apply).Remote(answers).Get();
        checkpoint = roles.server->Task(&ParameterServer::State).Remote();
      } else {
        checkpoint = roles.learners[0].Task(&Learner::State).Remote();
      }
      std::vector<double> state = *checkpoint.Get();
      policy = orb::Put(std::vector<double>(state.begin(), state.begin() + rl::kParams));
      checkpoint_iteration = ++it;
      double mean = totals[0] / totals[1];
      std::printf("{\"iteration\": %d, \"mean_return\": %.2f}\n", it - 1, mean);
      std::fflush(stdout);
      if (csv.is_open()) csv << it - 1 << "," << mean << "\n";
    } catch (const orb::Error& failure) {
      // 6. Health check failed: find the dead, rebuild, resume from the checkpoint.
      std::printf("{\"stage\": \"rebuild\", \"iteration\": %d, \"resume_from\": %d, \"why\": \"%s\"}\n", it,
                  checkpoint_iteration, std::string(failure.what()).substr(0, 80).c_str());
      for (size_t i = 0; i < roles.rollouts.size(); ++i) {
        try {
          shards[i].Get(10000);
        } catch (const orb::Error&) {
          roles.rollouts[i].Kill();
          roles.rollouts[i] = MakeRollout(roles.rollout_group, static_cast<int>(i));
        }
      }
      for (auto& l : roles.learners) l.Kill();
      ++generation;
      MakeLearners(roles, o, group(), *checkpoint.Get());
      std::vector<double> state = *checkpoint.Get();
      policy = orb::Put(std::vector<double>(state.begin(), state.begin() + rl::kParams));
      it = checkpoint_iteration;
      ++rebuilds;
    }
  }
  // 7. Release: the checkpoint to a file, the groups (and their nodes) given back.
  std::vector<double> final_state = *checkpoint.Get();
  if (!o.checkpoint.empty()) {
    std::ofstream out(o.checkpoint);
    for (double v : final_state) out << v << "\n";
  }
  for (auto& r : roles.rollouts) r.Kill();
  for (auto& l : roles.learners) l.Kill();
  if (roles.server) roles.server->Kill();
  orb::RemovePlacementGroup(roles.rollout_group.GetID());
  orb::RemovePlacementGroup(roles.learner_group.GetID());
  std::printf("{\"stage\": \"released\", \"rebuilds\": %d}\n", rebuilds);
  PrintPolicy(std::vector<double>(final_state.begin(), final_state.begin() + rl::kParams));
  orb::Shutdown();
  return 0;
}
