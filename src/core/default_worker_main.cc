// orb_default_worker: the worker binary for jobs that load their functions from
// shared libraries (Config::code_search_path) instead of running the driver's own
// executable. Init() sees worker mode, loads the libraries and serves tasks.
#include "orb/api.h"

int main(int argc, char** argv) {
  orb::Init(argc, argv);
  return 0;
}
