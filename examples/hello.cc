// hello: tasks, objects and errors in one page.
//
//   ./hello                                  # starts an embedded cluster for itself
//   ./hello --orb-address=127.0.0.1:6379     # joins a cluster from `orb start --head`
#include <orb/api.h>

#include <iostream>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

int Plus(int a, int b) { return a + b; }

std::string Greet(std::string name) { return "hello, " + name + " from task " + orb::GetRuntimeContext().GetTaskId(); }

double Sum(std::vector<double> values) { return std::accumulate(values.begin(), values.end(), 0.0); }

int CheckedSqrt(int x) {
  if (x < 0) throw std::invalid_argument("cannot take the square root of " + std::to_string(x));
  int r = 0;
  while ((r + 1) * (r + 1) <= x) ++r;
  return r;
}

ORB_REMOTE(Plus, Greet, Sum, CheckedSqrt);

int main(int argc, char** argv) {
  orb::Init(argc, argv);

  // A task returns an ObjectRef at once; Get waits for the value.
  orb::ObjectRef<int> three = orb::Task(Plus).Remote(1, 2);
  std::cout << "Plus(1, 2) = " << *orb::Get(three) << "\n";

  // ObjectRefs passed as arguments arrive as values.
  auto thirteen = orb::Task(Plus).Remote(three, 10);
  std::cout << "Plus(Plus(1, 2), 10) = " << *thirteen.Get() << "\n";
  std::cout << *orb::Task(Greet).Remote(std::string("orb")).Get() << "\n";

  // Large values go to the node's shared-memory object store; tasks read them in place.
  auto big = orb::Put(std::vector<double>(1 << 20, 0.5));
  std::cout << "Sum of 2^20 halves = " << *orb::Task(Sum).Remote(big).Get() << "\n";

  // Many tasks at once, then all their values.
  std::vector<orb::ObjectRef<int>> roots;
  for (int i = 0; i < 10; ++i) roots.push_back(orb::Task(CheckedSqrt).Remote(i * i));
  std::cout << "roots:";
  for (const auto& r : orb::Get(roots)) std::cout << " " << *r;
  std::cout << "\n";

  // A task's exception comes back from Get with the function name and the message.
  try {
    orb::Get(orb::Task(CheckedSqrt).Remote(-4));
  } catch (const orb::TaskError& e) {
    std::cout << "caught orb::TaskError: " << e.what() << "\n";
  }

  std::cout << "ran on node " << orb::GetRuntimeContext().GetNodeId().substr(0, 12) << " of " << orb::Nodes().size()
            << " node(s)\n";
  orb::Shutdown();
  return 0;
}
