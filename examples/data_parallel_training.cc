// Data-parallel training of a logistic regression with orb actors and collectives.
//
// N trainer actors each hold a shard of a synthetic data set. Every epoch each one
// computes the gradient on its shard, the group sums the gradients with AllReduce, and
// every trainer takes the same step. After each epoch rank 0's weights are kept as a
// checkpoint (an object in the cluster's store). With --kill-at-epoch=K one trainer
// dies during epoch K: the driver sees the failure, makes new trainers and a new group,
// restores the last checkpoint, and finishes — with the same final weights as an
// undisturbed run.
//
//   data_parallel_training [--orb-address=H:P] [--ranks=2] [--epochs=40]
//                          [--kill-at-epoch=K] [--single-process]
// Prints the loss per epoch, the final accuracy, and "weights: w0 w1 ..." (full precision).
#include <orb/api.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

namespace col = orb::collective;

namespace {

constexpr int kSamples = 4096;
constexpr int kFeatures = 8;
constexpr double kLearningRate = 0.5;

// Sample i of the synthetic set (deterministic): features in [-1, 1), and a label from
// a fixed "true" weight vector with some label noise.
void MakeSample(int i, double* x, double* y) {
  uint64_t s = 0x9E3779B97F4A7C15ull * static_cast<uint64_t>(i + 1);
  auto next = [&s] {
    s ^= s >> 12;
    s ^= s << 25;
    s ^= s >> 27;
    return static_cast<double>((s * 0x2545F4914F6CDD1Dull) >> 11) / static_cast<double>(1ull << 53);
  };
  double z = 0.3;
  for (int f = 0; f < kFeatures; ++f) {
    x[f] = 2 * next() - 1;
    z += x[f] * (f % 2 == 0 ? 1.5 : -1.0) / (1 + f);
  }
  *y = (z + 0.3 * (next() - 0.5) > 0) ? 1.0 : 0.0;
}

double Sigmoid(double z) { return 1 / (1 + std::exp(-z)); }

// Gradient (summed, not averaged) and loss over samples [begin, end) for weights w
// (the last entry is the bias).
double Gradient(const std::vector<double>& w, int begin, int end, std::vector<double>* grad) {
  double loss = 0, x[kFeatures], y;
  for (int i = begin; i < end; ++i) {
    MakeSample(i, x, &y);
    double z = w[kFeatures];
    for (int f = 0; f < kFeatures; ++f) z += w[f] * x[f];
    double p = Sigmoid(z);
    loss -= y * std::log(p + 1e-12) + (1 - y) * std::log(1 - p + 1e-12);
    for (int f = 0; f < kFeatures; ++f) (*grad)[f] += (p - y) * x[f];
    (*grad)[kFeatures] += p - y;
  }
  return loss;
}

double Accuracy(const std::vector<double>& w) {
  int right = 0;
  double x[kFeatures], y;
  for (int i = 0; i < kSamples; ++i) {
    MakeSample(i, x, &y);
    double z = w[kFeatures];
    for (int f = 0; f < kFeatures; ++f) z += w[f] * x[f];
    right += (z > 0) == (y > 0.5);
  }
  return static_cast<double>(right) / kSamples;
}

}  // namespace

class Trainer {
 public:
  static Trainer* Create(int rank, int world) { return new Trainer(rank, world); }
  Trainer(int rank, int world)
      : begin_(kSamples * rank / world), end_(kSamples * (rank + 1) / world), w_(kFeatures + 1, 0.0) {}

  bool SetWeights(std::vector<double> w) {
    w_ = std::move(w);
    return true;
  }
  // One step: local gradient, summed over the group, the same update on every rank.
  // Returns the loss summed over the group (before the step).
  double Step(std::string group) {
    std::vector<double> grad(kFeatures + 2, 0.0);  // gradient, then the loss
    grad[kFeatures + 1] = Gradient(w_, begin_, end_, &grad);
    col::AllReduce(col::View(grad), group, col::ReduceOp::SUM);
    for (int f = 0; f <= kFeatures; ++f) w_[f] -= kLearningRate * grad[f] / kSamples;
    return grad[kFeatures + 1] / kSamples;
  }
  std::vector<double> Weights() const { return w_; }
  int Die() { std::_Exit(1); }

 private:
  int begin_, end_;
  std::vector<double> w_;
};
ORB_REMOTE(Trainer::Create, &Trainer::SetWeights, &Trainer::Step, &Trainer::Weights, &Trainer::Die);

namespace {

std::vector<orb::ActorHandle<Trainer>> MakeTrainers(int ranks, const std::vector<double>& weights,
                                                    const std::string& group) {
  std::vector<orb::ActorHandle<Trainer>> trainers;
  for (int r = 0; r < ranks; ++r) {
    trainers.push_back(orb::Actor(Trainer::Create)
                           .SetSchedulingStrategy(orb::SpreadSchedulingStrategy{})
                           .Remote(r, ranks));
  }
  col::CreateGroup(trainers, group, col::Backend::GLOO, std::chrono::seconds(60));
  std::vector<orb::ObjectRef<bool>> set;
  for (auto& t : trainers) set.push_back(t.Task(&Trainer::SetWeights).Remote(weights));
  orb::Get(set);
  return trainers;
}

void PrintWeights(const std::vector<double>& w) {
  std::printf("weights:");
  for (double v : w) std::printf(" %.17g", v);
  std::printf("\n");
}

int Flag(int argc, char** argv, const char* name, int fallback) {
  size_t n = std::strlen(name);
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], name, n) == 0 && argv[i][n] == '=') return std::atoi(argv[i] + n + 1);
  }
  return fallback;
}

bool HasFlag(int argc, char** argv, const char* name) {
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], name) == 0) return true;
  }
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  int ranks = Flag(argc, argv, "--ranks", 2);
  int epochs = Flag(argc, argv, "--epochs", 40);
  int kill_at = Flag(argc, argv, "--kill-at-epoch", -1);

  if (HasFlag(argc, argv, "--single-process")) {
    std::vector<double> w(kFeatures + 1, 0.0);
    for (int e = 0; e < epochs; ++e) {
      std::vector<double> grad(kFeatures + 1, 0.0);
      double loss = Gradient(w, 0, kSamples, &grad) / kSamples;
      for (int f = 0; f <= kFeatures; ++f) w[f] -= kLearningRate * grad[f] / kSamples;
      std::printf("epoch %d loss %.6f\n", e, loss);
    }
    std::printf("final accuracy %.4f\n", Accuracy(w));
    PrintWeights(w);
    return 0;
  }

  orb::Init(argc, argv);
  std::string group = "data-parallel";
  std::vector<double> start(kFeatures + 1, 0.0);
  auto trainers = MakeTrainers(ranks, start, group);
  orb::ObjectRef<std::vector<double>> checkpoint = orb::Put(start);
  int checkpoint_epoch = 0;  // the first epoch not in the checkpoint
  int restarts = 0;
  for (int e = 0; e < epochs;) {
    if (e == kill_at && restarts == 0) {
      std::printf("epoch %d: killing trainer %d\n", e, ranks - 1);
      trainers[ranks - 1].Task(&Trainer::Die).Remote();
    }
    std::vector<orb::ObjectRef<double>> steps;
    for (auto& t : trainers) steps.push_back(t.Task(&Trainer::Step).Remote(group));
    try {
      double loss = *orb::Get(steps)[0];
      std::printf("epoch %d loss %.6f\n", e, loss);
      checkpoint = trainers[0].Task(&Trainer::Weights).Remote();  // rank 0's weights, kept in the store
      orb::Get(checkpoint);
      checkpoint_epoch = ++e;
    } catch (const orb::Error& failure) {
      std::printf("epoch %d failed (%s); restoring the checkpoint of epoch %d\n", e,
                  std::string(failure.what()).substr(0, 120).c_str(), checkpoint_epoch);
      for (auto& t : trainers) t.Kill();
      trainers = MakeTrainers(ranks, *orb::Get(checkpoint), group);
      e = checkpoint_epoch;
      ++restarts;
    }
  }
  std::vector<double> w = *trainers[0].Task(&Trainer::Weights).Remote().Get();
  std::printf("final accuracy %.4f after %d restart(s)\n", Accuracy(w), restarts);
  PrintWeights(w);
  orb::Shutdown();
  return 0;
}
