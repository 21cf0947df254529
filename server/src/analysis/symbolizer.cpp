#include "gnomon/server/symbolizer.h"

#include <cxxabi.h>
#include <dwarf.h>
#include <elf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <gelf.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace gnomon::server {
namespace {

// Debug files are looked for by build id under the standard places; the module files
// are named by the trace, never searched for.
char* g_debuginfo_path = nullptr;
const Dwfl_Callbacks kCallbacks = {
    .find_elf = dwfl_build_id_find_elf,
    .find_debuginfo = dwfl_standard_find_debuginfo,
    .section_address = dwfl_offline_section_address,
    .debuginfo_path = &g_debuginfo_path,
};

std::string Demangle(const char* name) {
  int status = 0;
  char* demangled = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  if (status != 0 || demangled == nullptr) return name;
  std::string result(demangled);
  std::free(demangled);
  return result;
}

std::string Hex(const unsigned char* bytes, int size) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string hex;
  for (int i = 0; i < size; ++i) {
    hex += kDigits[bytes[i] >> 4];
    hex += kDigits[bytes[i] & 15];
  }
  return hex;
}

std::string Hex(uint64_t address) {
  char text[24];
  std::snprintf(text, sizeof(text), "0x%" PRIx64, address);
  return text;
}

// At an address of code inlined into the function (a zone's constructor, a helper),
// the line table names the inlined code's own line; the frame is the function's, so
// its line is where the outermost inlined call was made.
void CallSiteOfInlined(Dwarf_Die* unit, Dwarf_Addr pc, SymbolizedFrame& frame) {
  Dwarf_Die* scopes = nullptr;
  const int count = dwarf_getscopes(unit, pc, &scopes);
  if (count <= 0) return;
  Dwarf_Die* outermost = nullptr;  // scopes go from the innermost out
  for (int i = 0; i < count; ++i) {
    const int tag = dwarf_tag(&scopes[i]);
    if (tag == DW_TAG_inlined_subroutine) outermost = &scopes[i];
    if (tag == DW_TAG_subprogram) break;
  }
  Dwarf_Attribute attribute;
  Dwarf_Word file_index = 0, line = 0;
  Dwarf_Files* files = nullptr;
  size_t file_count = 0;
  if (outermost != nullptr &&
      dwarf_formudata(dwarf_attr(outermost, DW_AT_call_line, &attribute), &line) == 0 &&
      dwarf_formudata(dwarf_attr(outermost, DW_AT_call_file, &attribute), &file_index) == 0 &&
      dwarf_getsrcfiles(unit, &files, &file_count) == 0 && file_index < file_count) {
    if (const char* file = dwarf_filesrc(files, file_index, nullptr, nullptr)) {
      frame.file = file;
      frame.line = uint32_t(line);
    }
  }
  std::free(scopes);
}

constexpr uint64_t kMostCodeBytes = 256 * 1024;

// The vDSO is no file: a trace names it as the dynamic linker does. This machine's own
// vDSO, copied into a memory file, stands for it (and is used only where the build
// ids agree: the same kernel). -1 when there is none.
int OwnVdsoFile() {
  const auto* image = reinterpret_cast<const unsigned char*>(getauxval(AT_SYSINFO_EHDR));
  if (image == nullptr || std::memcmp(image, ELFMAG, SELFMAG) != 0 || image[EI_CLASS] != ELFCLASS64)
    return -1;
  Elf64_Ehdr header;
  std::memcpy(&header, image, sizeof(header));
  // Its section headers come last: where they end, the image ends.
  const size_t size = size_t(header.e_shoff) + size_t(header.e_shnum) * header.e_shentsize;
  if (header.e_shoff == 0 || size > (size_t(1) << 20)) return -1;
  const int fd = memfd_create("gnomon-vdso", MFD_CLOEXEC);
  if (fd < 0) return -1;
  if (write(fd, image, size) != ssize_t(size)) {
    close(fd);
    return -1;
  }
  return fd;
}

bool IsVdso(const std::string& path) { return path == "linux-vdso.so.1" || path == "[vdso]"; }

}  // namespace

Symbolizer::Symbolizer() : dwfl_(dwfl_begin(&kCallbacks)) {}

Symbolizer::~Symbolizer() {
  if (dwfl_ != nullptr) dwfl_end(dwfl_);
}

void Symbolizer::Update(std::span<const Module> modules) {
  if (modules.size() <= modules_seen_) return;
  for (const Module& module : modules.subspan(modules_seen_)) {
    if (module.end <= module.start) continue;
    Loaded loaded{.module = module, .name = module.path.substr(module.path.rfind('/') + 1)};
    modules_.insert(std::upper_bound(modules_.begin(), modules_.end(), module.start,
                                     [](uint64_t start, const Loaded& m) { return start < m.module.start; }),
                    std::move(loaded));
  }
  modules_seen_ = modules.size();
  cache_.clear();  // an address outside every module may lie in a new one
}

Symbolizer::Loaded* Symbolizer::ModuleAt(uint64_t address) {
  auto it = std::upper_bound(modules_.begin(), modules_.end(), address,
                             [](uint64_t a, const Loaded& m) { return a < m.module.start; });
  if (it == modules_.begin()) return nullptr;
  --it;
  return address < it->module.end ? &*it : nullptr;
}

Dwfl_Module* Symbolizer::Report(Loaded& loaded) {
  if (loaded.tried) return loaded.dwfl;
  loaded.tried = true;
  // Only a regular file: a trace names paths, and a FIFO or a device is not opened.
  struct stat info {};
  // The vDSO only where the trace names its build id (this machine's must be the same),
  // and a few times at most: a trace may name any number of them.
  const bool vdso = IsVdso(loaded.module.path) && !loaded.module.build_id.empty() && vdso_reported_ < 4;
  const int fd = vdso ? OwnVdsoFile() : -1;
  vdso_reported_ += vdso ? 1 : 0;
  if (dwfl_ == nullptr ||
      (fd < 0 && (stat(loaded.module.path.c_str(), &info) != 0 || !S_ISREG(info.st_mode)))) {
    if (fd >= 0) close(fd);
    return nullptr;
  }
  dwfl_report_begin_add(dwfl_);
  Dwfl_Module* module = dwfl_report_elf(dwfl_, loaded.name.c_str(), loaded.module.path.c_str(), fd,
                                        loaded.module.load_bias, false);
  dwfl_report_end(dwfl_, nullptr, nullptr);
  if (module == nullptr) {
    if (fd >= 0) close(fd);  // libdw keeps a descriptor only when it reports the module
    return nullptr;
  }
  // The program's file, not one rebuilt since: the build ids agree (when it had one).
  const unsigned char* bits = nullptr;
  GElf_Addr vaddr = 0;
  const int size = dwfl_module_build_id(module, &bits, &vaddr);
  if (!loaded.module.build_id.empty() && (size <= 0 || Hex(bits, size) != loaded.module.build_id))
    return nullptr;
  loaded.dwfl = module;
  return module;
}

Symbolizer::FunctionCode Symbolizer::CodeOf(uint64_t address) {
  FunctionCode code;
  Loaded* loaded = ModuleAt(address);
  if (loaded == nullptr) {
    code.error = Hex(address) + " lies in no module the program loaded";
    return code;
  }
  Dwfl_Module* module = Report(*loaded);
  if (module == nullptr) {
    code.error = "cannot read " + loaded->module.path + " (missing, not a regular file, or rebuilt since)";
    return code;
  }
  GElf_Off offset = 0;
  GElf_Sym symbol{};
  const char* name = dwfl_module_addrinfo(module, address, &offset, &symbol, nullptr, nullptr, nullptr);
  if (name == nullptr || symbol.st_size == 0) {
    code.error = "no symbol with a size covers " + Hex(address) + " in " + loaded->name;
    return code;
  }
  code.function = Demangle(name);
  code.start = address - offset;
  // The bytes from the module's own file (a debug file has the symbols, not the code).
  Dwarf_Addr bias = 0;
  Elf* elf = dwfl_module_getelf(module, &bias);
  const uint64_t file_address = code.start - bias;
  for (Elf_Scn* section = elf == nullptr ? nullptr : elf_nextscn(elf, nullptr); section != nullptr;
       section = elf_nextscn(elf, section)) {
    GElf_Shdr header{};
    if (gelf_getshdr(section, &header) == nullptr || header.sh_type != SHT_PROGBITS ||
        (header.sh_flags & SHF_EXECINSTR) == 0 || file_address < header.sh_addr ||
        file_address >= header.sh_addr + header.sh_size) {
      continue;
    }
    Elf_Data* data = elf_getdata(section, nullptr);
    if (data == nullptr || data->d_buf == nullptr) break;
    const uint64_t from = file_address - header.sh_addr;
    // A function's first 256 KiB at most: a symbol may claim a whole section.
    const uint64_t size = std::min<uint64_t>(std::min<uint64_t>(symbol.st_size, kMostCodeBytes),
                                             data->d_size > from ? data->d_size - from : 0);
    code.truncated = symbol.st_size > size;
    const auto* bytes = static_cast<const uint8_t*>(data->d_buf) + from;
    code.bytes.assign(bytes, bytes + size);
    return code;
  }
  code.error = "the code of " + code.function + " is not in " + loaded->name;
  return code;
}

const SymbolizedFrame& Symbolizer::Resolve(uint64_t address, bool is_return_address) {
  const uint64_t pc = is_return_address && address != 0 ? address - 1 : address;
  auto [it, inserted] = cache_.try_emplace(pc);
  SymbolizedFrame& frame = it->second;
  if (!inserted) return frame;
  frame.address = pc;
  Loaded* loaded = ModuleAt(pc);
  if (loaded == nullptr) {
    frame.function = Hex(pc);
    return frame;
  }
  frame.module = loaded->name;
  Dwfl_Module* module = Report(*loaded);
  if (module != nullptr) {
    GElf_Off offset = 0;
    GElf_Sym symbol{};
    uint64_t function_start = 0;
    if (const char* name = dwfl_module_addrinfo(module, pc, &offset, &symbol, nullptr, nullptr, nullptr)) {
      frame.function = Demangle(name);
      function_start = pc - offset;
    }
    // Only where a compilation unit with line information covers the address, and a
    // line of the function itself: else the nearest line of other code would be taken.
    Dwarf_Addr bias = 0;
    if (Dwarf_Die* unit = dwfl_module_addrdie(module, pc, &bias)) {
      if (Dwfl_Line* line = dwfl_module_getsrc(module, pc)) {
        int number = 0;
        Dwarf_Addr line_address = 0;
        const char* file = dwfl_lineinfo(line, &line_address, &number, nullptr, nullptr, nullptr);
        if (file != nullptr && line_address >= function_start) {  // a line of this function
          frame.file = file;
          frame.line = uint32_t(std::max(number, 0));
        }
      }
      CallSiteOfInlined(unit, pc - bias, frame);
    }
  }
  // Without a symbol, the module itself: its unknown addresses add up under one name.
  if (frame.function.empty()) frame.function = "[" + loaded->name + "]";
  return frame;
}

}  // namespace gnomon::server
