#include "orb/internal/function_registry.h"

#include <map>
#include <mutex>

namespace orb::internal {

struct FunctionRegistry::Impl {
  mutable std::mutex mu;
  std::map<std::string, Invoker> by_name;
  std::map<std::string, ActorFactory> factories;
  std::map<std::string, ActorMethod> methods;
  std::map<std::string, std::string> name_by_key;
  FunctionResolver resolver;
};

namespace {

// The entry for `name` in `table`, made by `resolve` when there is none (and it can).
template <class Fn, class Resolve>
const Fn* FindOrResolve(std::map<std::string, Fn>& table, const std::string& name, const Resolve& resolve) {
  auto it = table.find(name);
  if (it != table.end()) return it->second ? &it->second : nullptr;
  if (!resolve) return nullptr;
  Fn made = resolve(name);
  if (!made) return nullptr;
  return &table.emplace(name, std::move(made)).first->second;
}

}  // namespace

FunctionRegistry::FunctionRegistry() : impl_(new Impl) {}

FunctionRegistry& FunctionRegistry::Instance() {
  // Never destroyed: static destructors of user code may still look functions up.
  static FunctionRegistry* registry = new FunctionRegistry();
  return *registry;
}

void FunctionRegistry::Register(const std::string& name, const std::string& key, Invoker invoker) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->by_name[name] = std::move(invoker);
  impl_->name_by_key[key] = name;
}

void FunctionRegistry::RegisterFactory(const std::string& name, const std::string& key, ActorFactory factory) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->factories[name] = std::move(factory);
  impl_->name_by_key[key] = name;
}

void FunctionRegistry::RegisterMethod(const std::string& name, const std::string& key, ActorMethod method) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->methods[name] = std::move(method);
  impl_->name_by_key[key] = name;
}

void FunctionRegistry::SetResolver(FunctionResolver resolver) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->resolver = std::move(resolver);
}

bool FunctionRegistry::Interrupt(uint64_t thread, bool actor_call) const {
  std::function<bool(uint64_t, bool)> interrupt;
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    interrupt = impl_->resolver.interrupt;
  }
  return interrupt && interrupt(thread, actor_call);
}

const ActorFactory* FunctionRegistry::FindFactory(const std::string& name) const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return FindOrResolve(impl_->factories, name, impl_->resolver.factory);
}

const ActorMethod* FunctionRegistry::FindMethod(const std::string& name) const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return FindOrResolve(impl_->methods, name, impl_->resolver.method);
}

const Invoker* FunctionRegistry::Find(const std::string& name) const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return FindOrResolve(impl_->by_name, name, impl_->resolver.function);
}

std::string FunctionRegistry::NameOf(const std::string& key) const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  auto it = impl_->name_by_key.find(key);
  return it == impl_->name_by_key.end() ? std::string() : it->second;
}

std::vector<std::string> FunctionRegistry::Names() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  std::vector<std::string> names;
  for (const auto& [name, invoker] : impl_->by_name) names.push_back(name);
  for (const auto& [name, factory] : impl_->factories) names.push_back(name);
  for (const auto& [name, method] : impl_->methods) names.push_back(name);
  return names;
}

std::vector<std::string> SplitRemoteNames(const std::string& names) {
  std::vector<std::string> out;
  std::string current;
  int depth = 0;
  for (char c : names) {
    if (c == '(' || c == '<') ++depth;
    if (c == ')' || c == '>') --depth;
    if (c == ',' && depth == 0) {
      out.push_back(current);
      current.clear();
      continue;
    }
    if (c == ' ' || c == '\t' || c == '\n') continue;
    if (c == '&' && current.empty()) continue;
    current.push_back(c);
  }
  if (!current.empty()) out.push_back(current);
  return out;
}

}  // namespace orb::internal
