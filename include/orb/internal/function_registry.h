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

// Thrown when an argument does not deserialize to the parameter type.
class ArgumentError : public Error {
 public:
  using Error::Error;
};

class FunctionRegistry {
 public:
  static FunctionRegistry& Instance();
  void Register(const std::string& name, const std::string& key, Invoker invoker);
  // nullptr when no function of that name is registered in this process.
  const Invoker* Find(const std::string& name) const;
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
    msgpack::object_handle handle = msgpack::unpack(buffer->data(), buffer->size());
    return handle.get().as<T>();
  } catch (const std::exception& e) {
    throw ArgumentError("argument " + std::to_string(index) + " of '" + function +
                        "' does not deserialize to the parameter type (" + e.what() + ")");
  }
}

template <class R, class... Args, size_t... I>
std::string InvokeWithBuffers(R (*f)(Args...), const std::vector<std::shared_ptr<ValueBuffer>>& args,
                              const std::string& name, std::index_sequence<I...>) {
  if (args.size() != sizeof...(Args)) {
    throw ArgumentError("'" + name + "' takes " + std::to_string(sizeof...(Args)) + " arguments, got " +
                        std::to_string(args.size()));
  }
  // Arguments are deserialized in order before the call (braced init sequences them).
  std::tuple<std::decay_t<Args>...> values{DeserializeArgument<std::decay_t<Args>>(args[I], I, name)...};
  if constexpr (std::is_void_v<R>) {
    f(std::get<I>(values)...);
    return Serialize(msgpack::type::nil_t());
  } else {
    return Serialize(f(std::get<I>(values)...));
  }
}

// "Plus, &Counter::Add, ORB_FUNC(Max, int, int)" → {"Plus", "Counter::Add", "ORB_FUNC(Max,int,int)"}:
// split at top-level commas, spaces and a leading '&' dropped.
std::vector<std::string> SplitRemoteNames(const std::string& names);

template <class R, class... Args>
void RegisterOne(const std::string& name, R (*f)(Args...)) {
  if constexpr (std::is_pointer_v<R> && std::is_class_v<std::remove_pointer_t<R>>) {
    // An actor factory (Counter::Create): registered with actors.
    FunctionRegistry::Instance().Register(name, FunctionKey(f), nullptr);
  } else {
    FunctionRegistry::Instance().Register(name, FunctionKey(f),
                                          [f, name](const std::vector<std::shared_ptr<ValueBuffer>>& args) {
                                            return InvokeWithBuffers(f, args, name, std::index_sequence_for<Args...>{});
                                          });
  }
}

// Actor methods (&Counter::Add) are named here so that ORB_REMOTE accepts them.
template <class M, std::enable_if_t<std::is_member_function_pointer_v<M>, int> = 0>
void RegisterOne(const std::string& name, M method) {
  FunctionRegistry::Instance().Register(name, FunctionKey(method), nullptr);
}

template <class... Fs>
bool RegisterRemote(const char* names, Fs... fs) {
  std::vector<std::string> split = SplitRemoteNames(names);
  size_t i = 0;
  (RegisterOne(split.at(i++), fs), ...);
  return true;
}

// Selects one overload of a function by its argument types (see ORB_FUNC).
template <class... Args, class R>
constexpr auto SelectOverload(R (*f)(Args...)) -> R (*)(Args...) {
  return f;
}

}  // namespace orb::internal

#define ORB_CONCAT_INNER(a, b) a##b
#define ORB_CONCAT(a, b) ORB_CONCAT_INNER(a, b)

// Registers remote functions (and actor factories and methods) by name:
//   ORB_REMOTE(Plus);
//   ORB_REMOTE(Counter::Create, &Counter::Add, &Counter::Get);
#define ORB_REMOTE(...)                                                             \
  static const bool ORB_CONCAT(orb_remote_registered_, __LINE__) [[maybe_unused]] = \
      ::orb::internal::RegisterRemote(#__VA_ARGS__, __VA_ARGS__)

// Names one overload of an overloaded function: ORB_FUNC(Plus, int, int).
#define ORB_FUNC(f, ...) ::orb::internal::SelectOverload<__VA_ARGS__>(f)
