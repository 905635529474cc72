// The table of remote functions: ORB_REMOTE fills it at static-initialization time in
// every process that links the code, so a driver and its workers agree on names.
// Thread-safe after static initialization (reads only).
#pragma once

#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "orb/errors.h"
#include "orb/internal/runtime.h"
#include "orb/serialization.h"

namespace orb::internal {

// Runs a function on serialized arguments and returns its serialized result.
using Invoker = std::function<std::string(const std::vector<std::shared_ptr<ValueBuffer>>& args)>;
// Runs an actor's factory: the new instance, type-erased (its deleter knows the type).
using ActorFactory = std::function<std::shared_ptr<void>(const std::vector<std::shared_ptr<ValueBuffer>>& args)>;
// Runs an actor method on an instance made by the matching factory.
using ActorMethod = std::function<std::string(void* self, const std::vector<std::shared_ptr<ValueBuffer>>& args)>;

// Thrown when an argument does not deserialize to the parameter type.
class ArgumentError : public Error {
 public:
  using Error::Error;
};

// Makes functions on demand for names nothing registered: a Python worker's functions
// arrive with its job, not at static initialization. Each member returns an empty
// function for a name it does not serve; what it returns is kept under that name.
struct FunctionResolver {
  std::function<Invoker(const std::string& name)> function;
  std::function<ActorFactory(const std::string& name)> factory;
  std::function<ActorMethod(const std::string& name)> method;
  // Interrupts the task running on `thread` (a pthread_t) because it was cancelled
  // (Python: KeyboardInterrupt; for an actor call, only an async call's coroutine is
  // cancelled); whether it did. Null: code in this language is not interrupted (C++).
  std::function<bool(uint64_t thread, bool actor_call)> interrupt;
};

class FunctionRegistry {
 public:
  static FunctionRegistry& Instance();
  // Consulted by the Find* calls below for names not registered.
  void SetResolver(FunctionResolver resolver);
  void Register(const std::string& name, const std::string& key, Invoker invoker);
  void RegisterFactory(const std::string& name, const std::string& key, ActorFactory factory);
  void RegisterMethod(const std::string& name, const std::string& key, ActorMethod method);
  // nullptr when nothing of that name (and kind) is registered in this process.
  const Invoker* Find(const std::string& name) const;
  const ActorFactory* FindFactory(const std::string& name) const;
  const ActorMethod* FindMethod(const std::string& name) const;
  // Interrupts the task running on `thread` (FunctionResolver::interrupt); false when
  // it did not.
  bool Interrupt(uint64_t thread, bool actor_call) const;
  // The registered name for a function's key, or empty.
  std::string NameOf(const std::string& key) const;
  std::vector<std::string> Names() const;

 private:
  struct Impl;
  FunctionRegistry();
  Impl* impl_;
};

template <class F>
std::string FunctionKey(F f) {
  std::string key(sizeof(F), '\0');
  std::memcpy(key.data(), &f, sizeof(F));
  return key;
}

template <class T>
T DeserializeArgument(const std::shared_ptr<ValueBuffer>& buffer, size_t index, const std::string& function) {
  try {
    msgpack::object_handle handle = UnpackInPlace(buffer->data(), buffer->size());
    return handle.get().as<T>();
  } catch (const std::exception& e) {
    throw ArgumentError("argument " + std::to_string(index) + " of '" + function +
                        "' does not deserialize to the parameter type (" + e.what() + ")");
  }
}

// Deserializes `args` as Args... and calls `f` with them; returns what f returns.
template <class R, class... Args, class F, size_t... I>
R CallWithBuffers(F&& f, const std::vector<std::shared_ptr<ValueBuffer>>& args, const std::string& name,
                  std::index_sequence<I...>) {
  if (args.size() != sizeof...(Args)) {
    throw ArgumentError("'" + name + "' takes " + std::to_string(sizeof...(Args)) + " arguments, got " +
                        std::to_string(args.size()));
  }
  // Arguments are deserialized in order before the call (braced init sequences them).
  // ObjectRefs inside them are registered with their owners before the call runs.
  std::tuple<std::decay_t<Args>...> values = [&] {
    BorrowScope scope;
    return std::tuple<std::decay_t<Args>...>{DeserializeArgument<std::decay_t<Args>>(args[I], I, name)...};
  }();
  return f(std::get<I>(values)...);
}

// As CallWithBuffers, serializing the result (nil for void).
template <class R, class... Args, class F>
std::string InvokeWithBuffers(F&& f, const std::vector<std::shared_ptr<ValueBuffer>>& args, const std::string& name) {
  auto seq = std::index_sequence_for<Args...>{};
  if constexpr (std::is_void_v<R>) {
    CallWithBuffers<R, Args...>(std::forward<F>(f), args, name, seq);
    return Serialize(msgpack::type::nil_t());
  } else {
    R result = CallWithBuffers<R, Args...>(std::forward<F>(f), args, name, seq);
    // What the result serializes is taken by the worker (TakeSerializedRefs): ObjectRefs
    // returned to the caller. Anything recorded before is not part of it.
    ClearSerializedRefs();
    return Serialize(result);
  }
}

// "Plus, &Counter::Add, ORB_FUNC(Max, int, int)" → {"Plus", "Counter::Add", "ORB_FUNC(Max,int,int)"}:
// split at top-level commas, spaces and a leading '&' dropped.
std::vector<std::string> SplitRemoteNames(const std::string& names);

template <class R, class... Args>
void RegisterOne(const std::string& name, R (*f)(Args...)) {
  using Buffers = std::vector<std::shared_ptr<ValueBuffer>>;
  if constexpr (std::is_pointer_v<R> && std::is_class_v<std::remove_pointer_t<R>>) {
    // An actor factory (Counter::Create): it makes the instance an actor lives in.
    using T = std::remove_pointer_t<R>;
    FunctionRegistry::Instance().RegisterFactory(name, FunctionKey(f), [f, name](const Buffers& args) {
      T* instance = CallWithBuffers<R, Args...>(f, args, name, std::index_sequence_for<Args...>{});
      if (!instance) throw Error("actor factory '" + name + "' returned null");
      return std::shared_ptr<void>(instance, [](void* p) { delete static_cast<T*>(p); });
    });
  } else {
    FunctionRegistry::Instance().Register(name, FunctionKey(f), [f, name](const Buffers& args) {
      return InvokeWithBuffers<R, Args...>(f, args, name);
    });
  }
}

// Actor methods (&Counter::Add), const or not.
template <class C, class R, class... Args>
void RegisterOne(const std::string& name, R (C::*method)(Args...)) {
  FunctionRegistry::Instance().RegisterMethod(
      name, FunctionKey(method), [method, name](void* self, const std::vector<std::shared_ptr<ValueBuffer>>& args) {
        auto call = [self, method](auto&... a) -> R { return (static_cast<C*>(self)->*method)(a...); };
        return InvokeWithBuffers<R, Args...>(call, args, name);
      });
}
template <class C, class R, class... Args>
void RegisterOne(const std::string& name, R (C::*method)(Args...) const) {
  FunctionRegistry::Instance().RegisterMethod(
      name, FunctionKey(method), [method, name](void* self, const std::vector<std::shared_ptr<ValueBuffer>>& args) {
        auto call = [self, method](auto&... a) -> R { return (static_cast<const C*>(self)->*method)(a...); };
        return InvokeWithBuffers<R, Args...>(call, args, name);
      });
}

template <class... Fs>
bool RegisterRemote(const char* names, Fs... fs) {
  std::vector<std::string> split = SplitRemoteNames(names);
  size_t i = 0;
  (RegisterOne(split.at(i++), fs), ...);
  return true;
}

// Selects one overload of a function by its parameter types (see ORB_FUNC). The types
// are fixed by the class template, so Of() deduces only the return (and class) type: an
// overload with more parameters never matches, and ORB_FUNC(f) names f().
template <class... Params>
struct Overload {
  template <class R>
  static constexpr auto Of(R (*f)(Params...)) -> R (*)(Params...) {
    return f;
  }
  template <class R, class C>
  static constexpr auto Of(R (C::*f)(Params...)) -> R (C::*)(Params...) {
    return f;
  }
  template <class R, class C>
  static constexpr auto Of(R (C::*f)(Params...) const) -> R (C::*)(Params...) const {
    return f;
  }
};

}  // namespace orb::internal

#define ORB_CONCAT_INNER(a, b) a##b
#define ORB_CONCAT(a, b) ORB_CONCAT_INNER(a, b)

// Registers remote functions (and actor factories and methods) by name:
//   ORB_REMOTE(Plus);
//   ORB_REMOTE(Counter::Create, &Counter::Add, &Counter::Get);
#define ORB_REMOTE(...)                                                             \
  static const bool ORB_CONCAT(orb_remote_registered_, __LINE__) [[maybe_unused]] = \
      ::orb::internal::RegisterRemote(#__VA_ARGS__, __VA_ARGS__)

// Names one overload of an overloaded function or method by its parameter types:
// ORB_FUNC(Plus, int, int), ORB_FUNC(&Counter::Add, int), ORB_FUNC(Reset) for Reset().
#define ORB_FUNC(f, ...) ::orb::internal::Overload<__VA_ARGS__>::Of(f)
