#include "common/metrics.h"

#include <mutex>

namespace orb {
namespace {

struct Registry {
  std::mutex mu;
  std::map<std::string, int64_t> counters;
};

Registry& GlobalRegistry() {
  static Registry* registry = new Registry();  // never destroyed: counted from any thread until exit
  return *registry;
}

}  // namespace

void IncrementCounter(const std::string& name, int64_t delta) {
  Registry& r = GlobalRegistry();
  std::lock_guard<std::mutex> lock(r.mu);
  r.counters[name] += delta;
}

std::map<std::string, int64_t> CounterSnapshot() {
  Registry& r = GlobalRegistry();
  std::lock_guard<std::mutex> lock(r.mu);
  return r.counters;
}

}  // namespace orb
