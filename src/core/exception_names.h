// The name of an exception's type as a user reads it ("std::logic_error"), for the
// messages of failed tasks.
#pragma once

#include <cxxabi.h>

#include <cstdlib>
#include <exception>
#include <string>
#include <typeinfo>

namespace orb {

inline std::string ExceptionTypeName(const std::exception& e) {
  int status = 0;
  char* demangled = abi::__cxa_demangle(typeid(e).name(), nullptr, nullptr, &status);
  std::string name = status == 0 && demangled ? demangled : typeid(e).name();
  std::free(demangled);
  return name;
}

}  // namespace orb
