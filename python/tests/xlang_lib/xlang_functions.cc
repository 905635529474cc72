// C++ remote functions and an actor for the cross-language tests: Python calls these
// (orb.cpp_function, orb.cpp_actor_class), and some of them call Python back
// (orb::PyFunction, orb::PyActorClass) in xlang_module.py.
#include <orb/api.h>

#include <map>
#include <string>
#include <vector>

int Plus(int a, int b) { return a + b; }
std::string Concat(std::string a, std::string b) { return a + b; }
std::vector<int> Doubled(std::vector<int> values) {
  for (auto& v : values) v *= 2;
  return values;
}
std::map<std::string, int> Lengths(std::vector<std::string> words) {
  std::map<std::string, int> out;
  for (const auto& w : words) out[w] = static_cast<int>(w.size());
  return out;
}

// C++ calling Python: a function, and an actor's methods.
int TriplePython(int x) { return *orb::Task(orb::PyFunction<int>{"xlang_module", "triple"}).Remote(x).Get(); }
int TripleDecoratedPython(int x) {
  return *orb::Task(orb::PyFunction<int>{"xlang_module", "decorated_triple"}).Remote(x).Get();
}
// `times` calls of incr(1) on a new actor of the Python class `cls` (started at 100).
int CountWithPythonActorOf(const std::string& cls, int times) {
  orb::ActorHandleXlang counter = orb::Actor(orb::PyActorClass{"xlang_module", cls}).Remote(100);
  int last = 0;
  for (int i = 0; i < times; ++i) last = *counter.Task(orb::PyActorMethod<int>{"incr"}).Remote(1).Get();
  counter.Kill();
  return last - 100;
}
int CountWithPythonActor(int times) { return CountWithPythonActorOf("PyCounter", times); }
int CountWithDecoratedPythonActor(int times) { return CountWithPythonActorOf("DecoratedCounter", times); }
// Misuse, for the errors: a wrong argument count, and a result that cannot cross.
int TriplePythonWithTwoArguments() {
  return *orb::Task(orb::PyFunction<int>{"xlang_module", "triple"}).Remote(1, 2).Get();
}
int CallPythonReturningAnObject() {
  return *orb::Task(orb::PyFunction<int>{"xlang_module", "make_object"}).Remote().Get();
}

class Counter {
 public:
  explicit Counter(int start) : n_(start) {}
  static Counter* Create(int start) { return new Counter(start); }
  int Add(int x) { return n_ += x; }
  int Get() const { return n_; }

 private:
  int n_;
};

ORB_REMOTE(Plus, Concat, Doubled, Lengths, TriplePython, TripleDecoratedPython, CountWithPythonActor,
           CountWithDecoratedPythonActor, TriplePythonWithTwoArguments, CallPythonReturningAnObject);
ORB_REMOTE(Counter::Create, &Counter::Add, &Counter::Get);
