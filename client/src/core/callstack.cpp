#include "callstack.h"

#include <execinfo.h>
#include <link.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "gnomon/client/thread_writer.h"
#include "gnomon/gnomon.h"
#include "gnomon/protocol/messages.h"
#include "inside_library.h"
#include "profiler.h"

namespace gnomon::client {

// Not inlined: its own frame and its caller's are the two it leaves out. The caller's
// frame is found by its return address, not counted: a sanitizer's interceptor of
// backtrace() adds a frame of its own in front.
[[gnu::noinline]] size_t CaptureCallstack(uint64_t* frames, size_t depth, size_t skip) {
  constexpr size_t kSlack = 4;  // frames above the caller's that may be found
  void* raw[detail::kMaxCallstackDepth + 8 + kSlack];
  const size_t wanted = std::min<size_t>(depth + skip + 2 + kSlack, std::size(raw));
  const int captured = backtrace(raw, int(wanted));
  const void* into_caller = __builtin_return_address(0);
  int first = 2;
  for (int i = 0; i < captured && i <= int(kSlack) + 1; ++i) {
    if (raw[i] == into_caller) {
      first = i + 1;
      break;
    }
  }
  size_t n = 0;
  for (int i = first + int(skip); i < captured && n < depth; ++i)
    frames[n++] = reinterpret_cast<uintptr_t>(raw[i]);
  return n;
}

void WarmUpCallstacks() {
  InsideLibrary inside;
  uint64_t frames[4];
  CaptureCallstack(frames, 4, 0);
}

namespace {

struct Found {
  std::string path;
  uint64_t load_bias = 0, start = 0, end = 0;
  std::string build_id;
};

// The GNU build id in a PT_NOTE segment mapped at `notes`, as hex.
std::string BuildId(const uint8_t* notes, size_t size) {
  for (size_t at = 0; at + 12 <= size;) {
    uint32_t name_size, desc_size, type;
    std::memcpy(&name_size, notes + at, 4);
    std::memcpy(&desc_size, notes + at + 4, 4);
    std::memcpy(&type, notes + at + 8, 4);
    const size_t name_at = at + 12;
    const size_t desc_at = name_at + ((name_size + 3) & ~3u);
    const size_t next = desc_at + ((desc_size + 3) & ~3u);
    if (next > size) break;
    if (type == 3 /* NT_GNU_BUILD_ID */ && name_size == 4 && std::memcmp(notes + name_at, "GNU", 4) == 0) {
      static constexpr char kHex[] = "0123456789abcdef";
      std::string hex;
      for (size_t i = 0; i < desc_size; ++i) {
        hex += kHex[notes[desc_at + i] >> 4];
        hex += kHex[notes[desc_at + i] & 15];
      }
      return hex;
    }
    at = next;
  }
  return "";
}

std::string SelfPath() {
  char path[4096];
  const ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 1);
  return n > 0 ? std::string(path, size_t(n)) : "";
}

int AddModule(dl_phdr_info* info, size_t, void* data) {
  auto& found = *static_cast<std::vector<Found>*>(data);
  Found module;
  module.path = info->dlpi_name != nullptr ? info->dlpi_name : "";
  if (module.path.empty()) {
    if (!found.empty())
      return 0;  // the first is the program itself; others without a name (vdso) are not files
    module.path = SelfPath();
  }
  if (module.path.empty()) return 0;  // (the vdso is sent by its name: not a file, but named)
  module.load_bias = info->dlpi_addr;
  bool any_code = false;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type == PT_LOAD && (ph.p_flags & PF_X)) {
      const uint64_t start = info->dlpi_addr + ph.p_vaddr;
      const uint64_t end = start + ph.p_memsz;
      module.start = any_code ? std::min(module.start, start) : start;
      module.end = any_code ? std::max(module.end, end) : end;
      any_code = true;
    } else if (ph.p_type == PT_NOTE && module.build_id.empty()) {
      module.build_id =
          BuildId(reinterpret_cast<const uint8_t*>(info->dlpi_addr + ph.p_vaddr), size_t(ph.p_memsz));
    }
  }
  if (any_code) found.push_back(std::move(module));
  return 0;
}

}  // namespace

void ModuleMap::AppendNew(std::vector<uint8_t>& definitions) {
  std::vector<Found> found;
  dl_iterate_phdr(&AddModule, &found);
  for (const Found& m : found) {
    if (std::find(known_starts_.begin(), known_starts_.end(), m.start) != known_starts_.end()) continue;
    known_starts_.push_back(m.start);
    protocol::AppendMessage(definitions,
                            protocol::ModuleDef{.load_bias = m.load_bias, .start = m.start, .end = m.end},
                            {.path = ClampString(m.path.data(), m.path.size(), protocol::kMaxStringBytes),
                             .build_id = ClampString(m.build_id.data(), m.build_id.size(), 256)});
  }
}

}  // namespace gnomon::client

namespace gnomon::detail {

constinit uint32_t g_callstack_depth = 0;

bool RecordZoneBeginWithCallstack(uint32_t location_id, uint32_t depth, uint64_t events) {
  uint64_t frames[kMaxCallstackDepth];
  const size_t n = client::CaptureCallstack(frames, std::min(depth, kMaxCallstackDepth), 0);
  const protocol::CallstackTail tail{.frames = {reinterpret_cast<const uint8_t*>(frames), n}};
  uint8_t* p = Reserve(sizeof(protocol::ZoneBegin) + protocol::WireSize<protocol::Callstack>(tail), events);
  if (p == nullptr) return false;
  // Timed after the unwinding: the zone does not hold its cost.
  p = protocol::WriteMessage(p, protocol::ZoneBegin{.srcloc_id = location_id, .tick = Now()});
  Commit(protocol::WriteMessage(p, protocol::Callstack{}, tail));
  return true;
}

}  // namespace gnomon::detail
