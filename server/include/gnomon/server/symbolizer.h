// Turns the program's raw code addresses (call stacks, samples) into functions, source
// files and lines.
//
// The client sends addresses and the modules they lie in (path, load bias, GNU build
// id); symbols are looked up here, off the program's hot path, with elfutils' libdwfl
// reading the module files themselves (or their debug files, found by build id under
// /usr/lib/debug). A module whose file is missing, is not a regular file, or has
// another build id than the program's (rebuilt since, or another machine's) is not
// read: its addresses show as `[module]`.
//
// Use: one Symbolizer per trace, fed the model's modules (Update() again when more
// have come), then Resolve(). Each address is looked up once and cached. Not thread
// safe: one thread uses it (the report's, or the viewer's UI thread).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "gnomon/server/callstacks.h"

struct Dwfl;
struct Dwfl_Module;

namespace gnomon::server {

struct SymbolizedFrame {
  uint64_t address = 0;  // as looked up (a return address less one)
  std::string function;  // demangled; `[module]` (or the address, outside every module) when unknown
  std::string file;      // source file; empty when unknown
  uint32_t line = 0;     // 0 when unknown
  std::string module;    // file name of the module, without folders; empty outside them
};

class Symbolizer {
 public:
  Symbolizer();
  ~Symbolizer();
  Symbolizer(const Symbolizer&) = delete;
  Symbolizer& operator=(const Symbolizer&) = delete;

  // Learns the modules not seen yet (the model's list only grows). Frames resolved
  // before are forgotten: references to them are not kept across a call.
  void Update(std::span<const Module> modules);
  // The frame at `address`. A return address (every frame of a stack but a sample's
  // first) is looked up at the call, one byte before it.
  const SymbolizedFrame& Resolve(uint64_t address, bool is_return_address);
  size_t module_count() const { return modules_.size(); }

  // The machine code of the function at `address`, as its module's file holds it: where
  // the function starts (in the program's address space) and its bytes; no bytes, and
  // `error` saying why, where there is no file, no symbol or no code.
  struct FunctionCode {
    std::string function;  // demangled
    uint64_t start = 0;
    std::vector<uint8_t> bytes;
    bool truncated = false;  // the function is longer than the bytes read (256 KiB)
    std::string error;
  };
  FunctionCode CodeOf(uint64_t address);

 private:
  struct Loaded {
    Module module;
    std::string name;             // the path's last part
    Dwfl_Module* dwfl = nullptr;  // once reported; nullptr when the file is not usable
    bool tried = false;
  };
  Loaded* ModuleAt(uint64_t address);
  Dwfl_Module* Report(Loaded& loaded);

  Dwfl* dwfl_ = nullptr;
  std::vector<Loaded> modules_;  // sorted by start
  size_t modules_seen_ = 0;
  int vdso_reported_ = 0;                                // modules read from this machine's own vDSO
  std::unordered_map<uint64_t, SymbolizedFrame> cache_;  // by the address looked up
};

}  // namespace gnomon::server
