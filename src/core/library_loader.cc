#include "core/library_loader.h"

#include <dlfcn.h>

#include <filesystem>
#include <sstream>

namespace fs = std::filesystem;

namespace orb {

absl::Status LoadCodeSearchPath(const std::string& path) {
  absl::Status first = absl::OkStatus();
  std::stringstream ss(path);
  std::string entry;
  auto load = [&](const std::string& file) {
    if (!dlopen(file.c_str(), RTLD_NOW | RTLD_GLOBAL) && first.ok()) {
      first = absl::NotFoundError("cannot load " + file + ": " + dlerror());
    }
  };
  while (std::getline(ss, entry, ':')) {
    if (entry.empty()) continue;
    std::error_code ec;
    if (fs::is_directory(entry, ec)) {
      for (const auto& f : fs::directory_iterator(entry, ec)) {
        if (f.path().extension() == ".so") load(f.path().string());
      }
    } else if (fs::exists(entry, ec)) {
      load(entry);
    } else if (first.ok()) {
      first = absl::NotFoundError("code_search_path entry " + entry + " does not exist");
    }
  }
  return first;
}

}  // namespace orb
