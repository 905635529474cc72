// CartPole (the classic control task: push a cart left or right to keep a pole upright;
// +1 reward a step, at most 200 steps) and a linear softmax policy trained with REINFORCE
// and Adam. Deterministic: an episode's randomness comes from its seed.
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

namespace rl {

constexpr int kObs = 4;
constexpr int kActions = 2;
constexpr int kParams = kActions * (kObs + 1);  // a weight per action and feature, and a bias
constexpr int kMaxSteps = 200;

class Random {
 public:
  explicit Random(uint64_t seed) : s_(seed * 0x9E3779B97F4A7C15ull + 0x632BE59BD9B4E019ull) {}
  double Uniform() {  // [0, 1)
    s_ ^= s_ >> 12, s_ ^= s_ << 25, s_ ^= s_ >> 27;
    return static_cast<double>((s_ * 0x2545F4914F6CDD1Dull) >> 11) / static_cast<double>(1ull << 53);
  }

 private:
  uint64_t s_;
};

class CartPole {
 public:
  explicit CartPole(Random* random) {
    for (double& v : state_) v = 0.1 * random->Uniform() - 0.05;
  }
  const double* observation() const { return state_; }
  // Pushes left (0) or right (1); false once the pole has fallen or the cart left the track.
  bool Step(int action) {
    const double gravity = 9.8, cart = 1.0, pole = 0.1, half_length = 0.5, tau = 0.02;
    double force = action == 1 ? 10.0 : -10.0;
    double x = state_[0], x_dot = state_[1], theta = state_[2], theta_dot = state_[3];
    double cos_t = std::cos(theta), sin_t = std::sin(theta);
    double temp = (force + pole * half_length * theta_dot * theta_dot * sin_t) / (cart + pole);
    double theta_acc = (gravity * sin_t - cos_t * temp) /
                       (half_length * (4.0 / 3.0 - pole * cos_t * cos_t / (cart + pole)));
    double x_acc = temp - pole * half_length * theta_acc * cos_t / (cart + pole);
    state_[0] = x + tau * x_dot;
    state_[1] = x_dot + tau * x_acc;
    state_[2] = theta + tau * theta_dot;
    state_[3] = theta_dot + tau * theta_acc;
    return std::fabs(state_[0]) <= 2.4 && std::fabs(state_[2]) <= 12 * M_PI / 180;
  }

 private:
  double state_[kObs];
};

// π(a | s) for the linear softmax policy `params` (action-major: weights, then bias).
inline void Probabilities(const std::vector<double>& params, const double* obs, double* p) {
  double logits[kActions], most = -1e300;
  for (int a = 0; a < kActions; ++a) {
    const double* w = &params[a * (kObs + 1)];
    logits[a] = w[kObs];
    for (int i = 0; i < kObs; ++i) logits[a] += w[i] * obs[i];
    most = std::max(most, logits[a]);
  }
  double sum = 0;
  for (int a = 0; a < kActions; ++a) sum += p[a] = std::exp(logits[a] - most);
  for (int a = 0; a < kActions; ++a) p[a] /= sum;
}

// Episodes, flattened: per episode its length n, then n steps of (obs[4], action).
// Every step's reward is 1, so an episode's return is its length.
inline std::vector<double> CollectEpisodes(const std::vector<double>& params, uint64_t seed, int episodes) {
  std::vector<double> out;
  Random random(seed);
  for (int e = 0; e < episodes; ++e) {
    CartPole env(&random);
    size_t header = out.size();
    out.push_back(0);
    int n = 0;
    bool up = true;
    while (up && n < kMaxSteps) {
      double p[kActions];
      Probabilities(params, env.observation(), p);
      int action = random.Uniform() < p[0] ? 0 : 1;
      out.insert(out.end(), env.observation(), env.observation() + kObs);
      out.push_back(action);
      up = env.Step(action);
      ++n;
    }
    out[header] = n;
  }
  return out;
}

// The REINFORCE gradient (to ascend) summed over the episodes in `batch`, with the
// discounted return-to-go less a per-step-index baseline (its mean over the batch).
// Appends the sum of returns and the number of episodes and of steps.
inline std::vector<double> PolicyGradient(const std::vector<double>& params, const std::vector<double>& batch) {
  const double gamma = 0.99;
  std::vector<std::vector<double>> returns;  // per episode, per step
  std::vector<size_t> starts;
  for (size_t i = 0; i < batch.size();) {
    int n = static_cast<int>(batch[i]);
    starts.push_back(i + 1);
    std::vector<double> g(n);
    double running = 0;
    for (int t = n - 1; t >= 0; --t) g[t] = running = 1 + gamma * running;
    returns.push_back(std::move(g));
    i += 1 + static_cast<size_t>(n) * (kObs + 1);
  }
  std::vector<double> baseline(kMaxSteps, 0), count(kMaxSteps, 0);
  for (const auto& g : returns) {
    for (size_t t = 0; t < g.size(); ++t) baseline[t] += g[t], count[t] += 1;
  }
  for (int t = 0; t < kMaxSteps; ++t) baseline[t] = count[t] > 0 ? baseline[t] / count[t] : 0;
  std::vector<double> grad(kParams + 3, 0.0);
  for (size_t e = 0; e < returns.size(); ++e) {
    const auto& g = returns[e];
    for (size_t t = 0; t < g.size(); ++t) {
      const double* obs = &batch[starts[e] + t * (kObs + 1)];
      int action = static_cast<int>(obs[kObs]);
      double p[kActions];
      Probabilities(params, obs, p);
      double advantage = g[t] - baseline[t];
      for (int a = 0; a < kActions; ++a) {
        double coef = ((a == action ? 1.0 : 0.0) - p[a]) * advantage;
        for (int i = 0; i < kObs; ++i) grad[a * (kObs + 1) + i] += coef * obs[i];
        grad[a * (kObs + 1) + kObs] += coef;
      }
    }
    grad[kParams] += static_cast<double>(g.size());  // its return (undiscounted)
    grad[kParams + 1] += 1;
    grad[kParams + 2] += static_cast<double>(g.size());
  }
  return grad;
}

// Adam, ascending: parameters, then first and second moments, then the step count.
struct Optimizer {
  std::vector<double> state = std::vector<double>(3 * kParams + 1, 0.0);
  void Step(const std::vector<double>& gradient, double scale, double rate) {
    double* params = &state[0];
    double* m = &state[kParams];
    double* v = &state[2 * kParams];
    double t = ++state[3 * kParams];
    for (int i = 0; i < kParams; ++i) {
      double g = gradient[i] * scale;
      m[i] = 0.9 * m[i] + 0.1 * g;
      v[i] = 0.999 * v[i] + 0.001 * g * g;
      params[i] += rate * (m[i] / (1 - std::pow(0.9, t))) / (std::sqrt(v[i] / (1 - std::pow(0.999, t))) + 1e-8);
    }
  }
  std::vector<double> params() const { return {state.begin(), state.begin() + kParams}; }
};

}  // namespace rl
