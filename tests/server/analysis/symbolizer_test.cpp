// Addresses of this very test program turned into functions, files and lines, and the
// modules that must not be read (another build, not a file) shown by name only; a
// function's machine code; the vDSO.
#include "gnomon/server/symbolizer.h"

#include <dlfcn.h>
#include <doctest/doctest.h>
#include <link.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

using gnomon::server::Module;
using gnomon::server::Symbolizer;

namespace {

// Known to the test: its name, its file, and a line inside it.
constexpr uint32_t kKnownLine = __LINE__ + 3;
[[gnu::noinline]] int SymbolizerTestKnownFunction(int x) {
  static volatile int sink;
  sink = x * 3;
  return sink;
}

// This program's own module, as a client would announce it (without a build id).
Module SelfModule() {
  Module self;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) {
        auto& module = *static_cast<Module*>(data);
        if (module.end != 0) return 0;  // the first is the program
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const ElfW(Phdr)& ph = info->dlpi_phdr[i];
          if (ph.p_type != PT_LOAD || !(ph.p_flags & PF_X)) continue;
          module.load_bias = info->dlpi_addr;
          module.start = info->dlpi_addr + ph.p_vaddr;
          module.end = module.start + ph.p_memsz;
        }
        return 0;
      },
      &self);
  char path[4096];
  const ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 1);
  REQUIRE(n > 0);
  self.path.assign(path, size_t(n));
  return self;
}

uint64_t KnownAddress() { return reinterpret_cast<uintptr_t>(&SymbolizerTestKnownFunction); }

}  // namespace

TEST_CASE("a function of this program: its name, its file, its line") {
  CHECK(SymbolizerTestKnownFunction(1) == 3);
  Symbolizer symbolizer;
  const std::vector<Module> modules{SelfModule()};
  symbolizer.Update(modules);
  // A few bytes in: the function's body, on its own line or the line of its start.
  const auto& frame = symbolizer.Resolve(KnownAddress() + 4, false);
  CHECK(frame.function.find("SymbolizerTestKnownFunction") != std::string::npos);
  CHECK(frame.file.ends_with("symbolizer_test.cpp"));
  CHECK(frame.line >= kKnownLine - 2);
  CHECK(frame.line <= kKnownLine + 2);
  CHECK(frame.module == modules[0].path.substr(modules[0].path.rfind('/') + 1));
  // A return address is looked up one byte before: the call, still in the function.
  const auto& returned = symbolizer.Resolve(KnownAddress() + 5, true);
  CHECK(returned.function.find("SymbolizerTestKnownFunction") != std::string::npos);
}

TEST_CASE("another build's file, a path that is not a regular file, an address outside every module") {
  Module other = SelfModule();
  other.build_id = "00112233445566778899aabbccddeeff00112233";  // not this file's
  Module not_a_file = other;
  not_a_file.path = "/dev/zero";
  not_a_file.build_id.clear();
  not_a_file.start = 0x1000;
  not_a_file.end = 0x2000;
  const std::vector<Module> modules{other, not_a_file};
  Symbolizer symbolizer;
  symbolizer.Update(modules);
  CHECK(symbolizer.module_count() == 2);
  const auto& frame = symbolizer.Resolve(KnownAddress(), false);
  CHECK(frame.function == "[" + other.path.substr(other.path.rfind('/') + 1) + "]");
  CHECK(frame.file.empty());
  CHECK(symbolizer.Resolve(0x1800, false).function == "[zero]");
  const auto& outside = symbolizer.Resolve(0x10, false);
  CHECK(outside.function == "0x10");
  CHECK(outside.module.empty());
}

TEST_CASE("modules learned later are used for addresses asked about before") {
  Symbolizer symbolizer;
  CHECK(symbolizer.Resolve(KnownAddress(), false).function.starts_with("0x"));
  const std::vector<Module> modules{SelfModule()};
  symbolizer.Update(modules);
  CHECK(symbolizer.Resolve(KnownAddress(), false).function.find("SymbolizerTestKnownFunction") !=
        std::string::npos);
}

TEST_CASE("a function's machine code, read from its module's file, and where there is none, why") {
  CHECK(SymbolizerTestKnownFunction(2) == 6);
  Symbolizer symbolizer;
  const std::vector<Module> modules{SelfModule()};
  symbolizer.Update(modules);
  // From inside the function: its start, and the very bytes this process runs.
  const Symbolizer::FunctionCode code = symbolizer.CodeOf(KnownAddress() + 2);
  REQUIRE_MESSAGE(code.error.empty(), code.error);
  CHECK(code.function.find("SymbolizerTestKnownFunction") != std::string::npos);
  CHECK(code.start == KnownAddress());
  REQUIRE(!code.bytes.empty());
  CHECK(std::memcmp(code.bytes.data(), reinterpret_cast<const void*>(KnownAddress()), code.bytes.size()) ==
        0);
  // Another build of the file, and an address outside every module: no bytes, and why.
  Module other = SelfModule();
  other.build_id = "00112233445566778899aabbccddeeff00112233";
  Symbolizer rebuilt;
  rebuilt.Update(std::vector<Module>{other});
  const Symbolizer::FunctionCode missing = rebuilt.CodeOf(KnownAddress());
  CHECK(missing.bytes.empty());
  CHECK(missing.error.find("cannot read") != std::string::npos);
  CHECK(symbolizer.CodeOf(0x10).error.find("lies in no module") != std::string::npos);
}

TEST_CASE("the vDSO, named as the dynamic linker names it, is read from this machine's own") {
  Module vdso;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) {
        auto& module = *static_cast<Module*>(data);
        if (info->dlpi_name == nullptr || std::string(info->dlpi_name) != "linux-vdso.so.1") return 0;
        module.path = info->dlpi_name;
        module.load_bias = info->dlpi_addr;
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const ElfW(Phdr)& ph = info->dlpi_phdr[i];
          if (ph.p_type == PT_LOAD) {
            module.start = info->dlpi_addr + ph.p_vaddr;
            module.end = module.start + ph.p_memsz;
          }
          // Its GNU build id, as the client sends it: the note of type 3, in hex.
          const auto* notes = reinterpret_cast<const unsigned char*>(info->dlpi_addr + ph.p_vaddr);
          for (size_t at = 0; ph.p_type == PT_NOTE && at + sizeof(ElfW(Nhdr)) <= ph.p_memsz;) {
            ElfW(Nhdr) note;
            std::memcpy(&note, notes + at, sizeof(note));
            const unsigned char* name = notes + at + sizeof(note);
            const unsigned char* desc = name + ((note.n_namesz + 3) & ~3u);
            if (note.n_type == NT_GNU_BUILD_ID && note.n_namesz == 4 && std::memcmp(name, "GNU", 4) == 0) {
              static constexpr char kHex[] = "0123456789abcdef";
              for (uint32_t b = 0; b < note.n_descsz; ++b) {
                module.build_id += kHex[desc[b] >> 4];
                module.build_id += kHex[desc[b] & 15];
              }
            }
            at = size_t(desc - notes) + ((note.n_descsz + 3) & ~3u);
          }
        }
        return 1;
      },
      &vdso);
  if (vdso.path.empty()) {
    MESSAGE("this process has no vDSO");
    return;
  }
  void* handle = dlopen("linux-vdso.so.1", RTLD_NOW | RTLD_NOLOAD);
  REQUIRE(handle != nullptr);
  const auto address = reinterpret_cast<uintptr_t>(dlsym(handle, "__vdso_clock_gettime"));
  dlclose(handle);
  REQUIRE(address != 0);
  Symbolizer symbolizer;
  symbolizer.Update(std::vector<Module>{vdso});
  CHECK(symbolizer.Resolve(address + 1, false).function.find("clock_gettime") != std::string::npos);
  // Without a build id to check it against, this machine's vDSO is not taken for the trace's.
  Module unchecked = vdso;
  unchecked.build_id.clear();
  Symbolizer careful;
  careful.Update(std::vector<Module>{unchecked});
  CHECK(careful.Resolve(address + 1, false).function == "[linux-vdso.so.1]");
}
