// Private, copy-on-write views of store memory, for torch tensors rebuilt over the
// store: torch has no read-only tensors, so a tensor from orb.get lies on a private
// mapping of the same pages of the store's file. Reading shares the store's pages (no
// copy); a write copies the page it touches, for this process alone, and never changes
// the object that other processes read.
#include "private_view.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <optional>
#include <string>

namespace py = pybind11;

namespace orb::python {
namespace {

// One line of /proc/self/maps: a file mapping.
struct FileMapping {
  uintptr_t start = 0, end = 0;
  uint64_t file_offset = 0;
  std::string path;
};

// The shared file mapping that holds `address`, if it is one of the object store's
// (/dev/shm) files. The last answer is kept: every view lies in the same arena.
std::optional<FileMapping> StoreMappingOf(uintptr_t address) {
  static std::mutex mu;
  static FileMapping cached;
  std::lock_guard<std::mutex> lock(mu);
  if (address >= cached.start && address < cached.end) return cached;
  FILE* maps = std::fopen("/proc/self/maps", "r");
  if (maps == nullptr) return std::nullopt;
  char line[4096];
  std::optional<FileMapping> found;
  while (std::fgets(line, sizeof line, maps) != nullptr) {
    uintptr_t start = 0, end = 0;
    uint64_t offset = 0;
    char perms[8] = {0};
    int path_at = 0;
    if (std::sscanf(line, "%" SCNxPTR "-%" SCNxPTR " %7s %" SCNx64 " %*s %*s %n", &start, &end, perms, &offset,
                    &path_at) < 4) {
      continue;
    }
    if (address < start || address >= end) continue;
    std::string path(line + path_at);
    while (!path.empty() && (path.back() == '\n' || path.back() == ' ')) path.pop_back();
    if (perms[3] == 's' && path.rfind("/dev/shm/", 0) == 0) found = FileMapping{start, end, offset, path};
    break;
  }
  std::fclose(maps);
  if (found) cached = *found;
  return found;
}

// A writable buffer over a private mapping; holds the view it copies (which keeps the
// object pinned in the store: unwritten pages still read the store's file).
class PrivateView {
 public:
  PrivateView(py::object source, void* mapping, size_t mapping_size, char* data, size_t size)
      : source_(std::move(source)), mapping_(mapping), mapping_size_(mapping_size), data_(data), size_(size) {}
  ~PrivateView() { ::munmap(mapping_, mapping_size_); }
  PrivateView(const PrivateView&) = delete;
  PrivateView& operator=(const PrivateView&) = delete;

  char* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  py::object source_;
  void* mapping_;
  size_t mapping_size_;
  char* data_;
  size_t size_;
};

// A PrivateView of `source`'s bytes (a contiguous buffer over the store), or None when
// they are not in the store.
py::object MakePrivateView(const py::buffer& source) {
  py::buffer_info info = source.request();
  auto address = reinterpret_cast<uintptr_t>(info.ptr);
  size_t size = static_cast<size_t>(info.size * info.itemsize);
  if (size == 0) return py::none();
  auto mapping = StoreMappingOf(address);
  if (!mapping || address + size > mapping->end) return py::none();
  const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  uint64_t file_at = mapping->file_offset + (address - mapping->start);
  uint64_t first = file_at / page * page;
  size_t length = static_cast<size_t>((file_at + size + page - 1) / page * page - first);
  int fd = ::open(mapping->path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return py::none();
  void* p = ::mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, static_cast<off_t>(first));
  ::close(fd);
  if (p == MAP_FAILED) return py::none();
  return py::cast(std::make_unique<PrivateView>(source, p, length, static_cast<char*>(p) + (file_at - first), size));
}

}  // namespace

void DefinePrivateViews(py::module_& m) {
  py::class_<PrivateView>(m, "PrivateView", py::buffer_protocol())
      .def_buffer([](PrivateView& v) {
        return py::buffer_info(v.data(), 1, py::format_descriptor<uint8_t>::format(), 1,
                               {static_cast<py::ssize_t>(v.size())}, {1}, /*readonly=*/false);
      })
      .def("__len__", &PrivateView::size);
  m.def("private_view", &MakePrivateView,
        "a writable, copy-on-write view of a buffer over the object store (None elsewhere)");
}

}  // namespace orb::python
