// Calling Python from C++ (the other direction is orb.cpp_function / orb.cpp_actor_class
// in Python), in the shape of Ray's C++ API:
//
//   orb::ObjectRef<int> r = orb::Task(orb::PyFunction<int>{"my_module", "add"}).Remote(1, 2);
//   orb::ActorHandleXlang c = orb::Actor(orb::PyActorClass{"my_module", "Counter"}).Remote(0);
//   orb::ObjectRef<int> n = c.Task(orb::PyActorMethod<int>{"incr"}).Remote(5);
//
// The function or class is imported by module name on a Python worker of the job (the
// module must be on the workers' search path: the job's code_search_path, or
// installed). Values cross as msgpack, as C++ values always travel: numbers, bool,
// strings, byte strings, std::vector and std::map of those (and ObjectRefs passed as
// arguments, resolved to their values first). A Python value that has no msgpack form
// fails the call with a TaskError naming its type; so does a Python exception, with its
// traceback in the message.
#pragma once

#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "orb/actor.h"
#include "orb/task_caller.h"

namespace orb {

template <class R>
struct PyFunction {
  std::string module_name;
  std::string function_name;
};

struct PyActorClass {
  std::string module_name;
  std::string class_name;
};

template <class R>
struct PyActorMethod {
  std::string method_name;
};

namespace internal {

// What a call to Python names: "pyx:<module>:<name>" (a method: "pyx:<name>").
inline std::string PythonName(const std::string& module_name, const std::string& name, const char* what) {
  if (module_name.empty() || name.empty()) {
    throw Error(std::string(what) + ": the module and the name must both be given");
  }
  return "pyx:" + module_name + ":" + name;
}

// The type an argument crosses as: its own (string literals as std::string); an
// ObjectRef<T> crosses as its value, T.
template <class A, bool = IsObjectRef<A>::value>
struct CrossParamOf {
  using type = std::conditional_t<std::is_convertible_v<A, std::string> && !std::is_same_v<A, std::string>,
                                  std::string, A>;
};
template <class A>
struct CrossParamOf<A, true> {
  using type = typename A::ValueType;
};
template <class Arg>
using CrossParam = typename CrossParamOf<std::decay_t<Arg>>::type;

template <class... Args>
std::vector<ArgData> CrossArgs(Args&&... args) {
  return std::vector<ArgData>{MakeArg<CrossParam<Args>>(std::forward<Args>(args))...};
}

}  // namespace internal

template <class R>
class TaskCaller<PyFunction<R>> : public internal::TaskOptionsSetters<TaskCaller<PyFunction<R>>> {
 public:
  explicit TaskCaller(const PyFunction<R>& f)
      : name_(internal::PythonName(f.module_name, f.function_name, "PyFunction")) {
    this->options_.language = internal::Language::kPython;
  }

  template <class... Args>
  ObjectRef<R> Remote(Args&&... args) {
    return ObjectRef<R>(internal::SubmitTask(name_, internal::CrossArgs(std::forward<Args>(args)...), this->options_),
                        internal::AdoptRef{});
  }

 private:
  std::string name_;
};

template <class R>
TaskCaller<PyFunction<R>> Task(const PyFunction<R>& f) {
  return TaskCaller<PyFunction<R>>(f);
}

template <class R>
class PyActorTaskCaller : public internal::ActorCallSetters<PyActorTaskCaller<R>> {
 public:
  PyActorTaskCaller(std::string actor_id, const PyActorMethod<R>& method) : actor_id_(std::move(actor_id)) {
    if (method.method_name.empty()) throw Error("PyActorMethod: the method name must be given");
    method_ = "pyx:" + method.method_name;
    this->options_.language = internal::Language::kPython;
  }

  template <class... Args>
  ObjectRef<R> Remote(Args&&... args) {
    return ObjectRef<R>(
        internal::SubmitActorTask(actor_id_, method_, internal::CrossArgs(std::forward<Args>(args)...), this->options_),
        internal::AdoptRef{});
  }

 private:
  std::string actor_id_;
  std::string method_;
};

// A handle to an actor written in Python (Ray's ActorHandleXlang).
class ActorHandleXlang {
 public:
  ActorHandleXlang() = default;
  explicit ActorHandleXlang(std::string actor_id) : id_(std::move(actor_id)) {}

  std::string ID() const { return internal::HexOf(id_); }

  template <class R>
  PyActorTaskCaller<R> Task(const PyActorMethod<R>& method) const {
    return PyActorTaskCaller<R>(id_, method);
  }

  void Kill(bool no_restart = true) const { internal::KillActor(id_, no_restart); }

  bool operator==(const ActorHandleXlang& other) const { return id_ == other.id_; }

  MSGPACK_DEFINE(id_);

 private:
  std::string id_;
};

template <>
class ActorCreator<PyActorClass> : public internal::ActorOptionsSetters<ActorCreator<PyActorClass>> {
 public:
  explicit ActorCreator(const PyActorClass& cls) : name_(internal::PythonName(cls.module_name, cls.class_name, "PyActorClass")) {
    options_.placement.language = internal::Language::kPython;
  }

  template <class... Args>
  ActorHandleXlang Remote(Args&&... args) {
    return ActorHandleXlang(internal::CreateActor(name_, internal::CrossArgs(std::forward<Args>(args)...), options_));
  }

 private:
  std::string name_;
};

inline ActorCreator<PyActorClass> Actor(const PyActorClass& cls) { return ActorCreator<PyActorClass>(cls); }

}  // namespace orb
