// The driver half of fuzz_node_rpc: this process joins the fuzzed node as a driver.
#include <orb/api.h>

#include <string>

// Joins the cluster at `gcs_address`; the address of this process's core worker service.
std::string StartDriver(const std::string& gcs_address) {
  orb::Config config;
  config.address = gcs_address;
  orb::Init(config);
  std::string owner = orb::Put(1).data().owner;  // "ip:port/worker"
  return owner.substr(0, owner.find('/'));
}

// The driver still stores and reads an object.
bool DriverAnswers() {
  try {
    return *orb::Put(7).Get(10000) == 7;
  } catch (const orb::Error&) {
    return false;
  }
}

void StopDriver() { orb::Shutdown(); }
