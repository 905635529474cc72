// Additive Holt-Winters (triple exponential smoothing): a level, a trend and a season
// of `season_length` steps, each smoothed by its own factor. The autoscaler feeds it a
// demand sample per step and asks where demand will be `h` steps ahead, to add nodes
// before a daily (or hourly) peak rather than after it.
//
// Until two full seasons have been seen it cannot separate trend from season, and
// Forecast returns the last sample (no prescaling on a guess).
#pragma once

#include <cstddef>
#include <vector>

namespace orb::autoscaler {

struct HoltWintersParams {
  double alpha = 0.5;  // level
  double beta = 0.1;   // trend
  double gamma = 0.3;  // season
  size_t season_length = 24;
};

class HoltWinters {
 public:
  explicit HoltWinters(HoltWintersParams params);
  void Add(double sample);
  // Demand `h` (>= 1) steps after the last sample.
  double Forecast(size_t h) const;
  bool Ready() const { return ready_; }
  size_t samples() const { return count_; }

 private:
  void Initialize();

  const HoltWintersParams p_;
  std::vector<double> first_;  // the first two seasons, for initialization
  std::vector<double> season_;
  double level_ = 0;
  double trend_ = 0;
  double last_ = 0;
  size_t count_ = 0;
  bool ready_ = false;
};

}  // namespace orb::autoscaler
