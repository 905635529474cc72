// RuntimeEnv: the environment a job's, a task's or an actor's workers run in, in the
// shape of Ray's C++ RuntimeEnv (fields set by name, values kept as JSON).
//
//   orb::RuntimeEnv env;
//   env.Set("env_vars", std::map<std::string, std::string>{{"MODEL", "small"}});
//   env.Set("working_dir", std::string("/data/run-7"));
//   orb::Task(Train).SetRuntimeEnv(env).Remote();
//   config.runtime_env = env;   // the job's default (orb::Config)
//
// Fields orb runs: "env_vars" (string -> string, set in the worker's environment),
// "working_dir" (a directory on the node, the worker's current directory; relative
// paths are taken from the submitting process's), "code_search_path" (directories or
// shared libraries the worker loads remote functions from). A task's fields override
// the job's (and a nested task inherits its parent's); env_vars are merged by key.
// Other fields may be stored and read here, but a task or actor given one fails at
// Remote() with orb::RuntimeEnvError, as does a malformed value. Workers are reused
// only by work with the same environment. Not thread-safe (a value type).
//
// As in Ray, this header makes `json` (nlohmann::json) available at global scope for
// user to_json/from_json functions.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "orb/errors.h"

using json = nlohmann::json;

namespace orb {

class RuntimeEnv {
 public:
  // Sets field `name` to `value` (anything nlohmann::json converts, including user
  // types with to_json). RuntimeEnvError when it does not convert.
  template <class T>
  void Set(const std::string& name, const T& value) {
    try {
      fields_[name] = json(value);
    } catch (const std::exception& e) {
      throw RuntimeEnvError("Failed to set the field " + name + ": " + e.what());
    }
  }
  // The field as a T. RuntimeEnvError when missing or of another type.
  template <class T>
  T Get(const std::string& name) const {
    if (!fields_.contains(name)) throw RuntimeEnvError("The field " + name + " not found.");
    try {
      return fields_.at(name).get<T>();
    } catch (const std::exception& e) {
      throw RuntimeEnvError("Failed to get the field " + name + ": " + e.what());
    }
  }
  // Sets a field from JSON text; RuntimeEnvError when it does not parse.
  void SetJsonStr(const std::string& name, const std::string& json_str) {
    try {
      fields_[name] = json::parse(json_str);
    } catch (const std::exception& e) {
      throw RuntimeEnvError("Failed to set the field " + name + " by json string: " + e.what());
    }
  }
  // The field as compact JSON text.
  std::string GetJsonStr(const std::string& name) const {
    if (!fields_.contains(name)) throw RuntimeEnvError("The field " + name + " not found.");
    return fields_.at(name).dump();
  }
  bool Contains(const std::string& name) const { return fields_.contains(name); }
  // True when the field existed.
  bool Remove(const std::string& name) { return fields_.erase(name) > 0; }
  bool Empty() const { return fields_.empty(); }
  // Every field as one JSON object.
  std::string Serialize() const { return fields_.empty() ? std::string() : fields_.dump(); }
  static RuntimeEnv Deserialize(const std::string& serialized) {
    RuntimeEnv env;
    if (serialized.empty()) return env;
    try {
      env.fields_ = json::parse(serialized);
    } catch (const std::exception& e) {
      throw RuntimeEnvError("Failed to deserialize runtime env " + serialized + ": " + e.what());
    }
    if (!env.fields_.is_object()) throw RuntimeEnvError("a runtime env is a JSON object, not " + serialized);
    return env;
  }

 private:
  json fields_ = json::object();
};

}  // namespace orb
