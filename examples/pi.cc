// pi: Monte Carlo estimate of π over many tasks.
//
//   ./pi [--tasks=N] [--samples=M] [--orb-address=HOST:PORT]
#include <orb/api.h>

#include <cstdint>
#include <cstring>
#include <iomanip>
#include <iostream>
#include <random>
#include <vector>

// Counts how many of `samples` random points in the unit square fall in the quarter circle.
int64_t CountInside(int64_t samples, uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  int64_t inside = 0;
  for (int64_t i = 0; i < samples; ++i) {
    double x = unit(gen), y = unit(gen);
    inside += (x * x + y * y <= 1.0);
  }
  return inside;
}
ORB_REMOTE(CountInside);

int main(int argc, char** argv) {
  int tasks = 100;
  int64_t samples = 200000;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--tasks=", 8) == 0) tasks = std::atoi(argv[i] + 8);
    if (std::strncmp(argv[i], "--samples=", 10) == 0) samples = std::atoll(argv[i] + 10);
  }
  orb::Init(argc, argv);
  std::vector<orb::ObjectRef<int64_t>> counts;
  for (int t = 0; t < tasks; ++t) counts.push_back(orb::Task(CountInside).Remote(samples, static_cast<uint64_t>(t)));
  int64_t inside = 0;
  for (const auto& c : orb::Get(counts)) inside += *c;
  double pi = 4.0 * static_cast<double>(inside) / static_cast<double>(samples * tasks);
  std::cout << "pi ~= " << std::setprecision(8) << pi << " from " << samples * tasks << " samples over " << tasks
            << " tasks\n";
  orb::Shutdown();
  return 0;
}
