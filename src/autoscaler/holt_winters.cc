#include "autoscaler/holt_winters.h"

#include <algorithm>

namespace orb::autoscaler {

namespace {

HoltWintersParams AtLeastOneStep(HoltWintersParams p) {
  p.season_length = std::max<size_t>(p.season_length, 1);
  return p;
}

}  // namespace

HoltWinters::HoltWinters(HoltWintersParams params) : p_(AtLeastOneStep(params)) {}

void HoltWinters::Initialize() {
  // Level: the first season's mean; trend: the mean step from season one to two;
  // season: each step's offset from its season's mean, averaged over both seasons.
  const size_t m = p_.season_length;
  double mean1 = 0, mean2 = 0;
  for (size_t i = 0; i < m; ++i) {
    mean1 += first_[i];
    mean2 += first_[m + i];
  }
  mean1 /= m;
  mean2 /= m;
  trend_ = (mean2 - mean1) / m;
  season_.assign(m, 0);
  for (size_t i = 0; i < m; ++i) season_[i] = ((first_[i] - mean1) + (first_[m + i] - mean2)) / 2;
  // Walk the second season so the level and trend stand at its end.
  level_ = mean1;
  for (size_t i = 0; i < m; ++i) {
    double x = first_[m + i];
    double previous_level = level_;
    level_ = p_.alpha * (x - season_[i]) + (1 - p_.alpha) * (level_ + trend_);
    trend_ = p_.beta * (level_ - previous_level) + (1 - p_.beta) * trend_;
    season_[i] = p_.gamma * (x - level_) + (1 - p_.gamma) * season_[i];
  }
  ready_ = true;
  first_.clear();
}

void HoltWinters::Add(double x) {
  last_ = x;
  const size_t m = p_.season_length;
  if (!ready_) {
    first_.push_back(x);
    count_++;
    if (first_.size() == 2 * m) Initialize();
    return;
  }
  size_t i = count_ % m;
  double previous_level = level_;
  level_ = p_.alpha * (x - season_[i]) + (1 - p_.alpha) * (level_ + trend_);
  trend_ = p_.beta * (level_ - previous_level) + (1 - p_.beta) * trend_;
  season_[i] = p_.gamma * (x - level_) + (1 - p_.gamma) * season_[i];
  count_++;
}

double HoltWinters::Forecast(size_t h) const {
  if (!ready_) return last_;
  h = std::max<size_t>(h, 1);
  // count_ is the index of the next sample; the season slot of the one h steps on.
  size_t slot = (count_ + h - 1) % p_.season_length;
  return level_ + static_cast<double>(h) * trend_ + season_[slot];
}

}  // namespace orb::autoscaler
