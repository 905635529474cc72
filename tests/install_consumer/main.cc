// Written against the public API contract only.
#include <orb/api.h>

#include <iostream>
#include <vector>

int Plus(int a, int b) { return a + b; }
ORB_REMOTE(Plus);

int main(int argc, char** argv) {
  orb::Init(argc, argv);
  std::vector<orb::ObjectRef<int>> refs;
  for (int i = 0; i < 20; ++i) refs.push_back(orb::Task(Plus).Remote(i, orb::Put(1)));
  int total = 0;
  for (const auto& v : orb::Get(refs)) total += *v;
  std::cout << "consumer ok: " << total << " on " << orb::Nodes().size() << " node(s)" << std::endl;
  orb::Shutdown();
  return total == 210 ? 0 : 1;
}
