// The symbol view: a sampled function's machine code, disassembled (Capstone), with the
// samples found running each instruction and the source line each instruction is of.
//
// The code is read from the module's file (Symbolizer::CodeOf): a file missing, rebuilt
// since, or without the function's symbol gives no instructions and says why.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gnomon/server/samples.h"
#include "gnomon/server/symbolizer.h"
#include "gnomon/server/trace_model.h"

namespace gnomon::server {

struct DisassembledInstruction {
  uint64_t address = 0;   // in the program's address space
  std::string text = {};  // "add rax, 1"
  std::string file = {};  // source file; empty when unknown
  uint32_t line = 0;      // 0 when unknown
  uint64_t samples = 0;   // samples found running it
};

struct Disassembly {
  std::string function;  // demangled
  std::string module;
  uint64_t start = 0;
  uint64_t samples = 0;  // samples found running the function (its instructions')
  std::vector<DisassembledInstruction> instructions;
  std::string error;  // why there are no instructions (or not all of them)
};

// The function named `name` exactly that the samples in `filter` found running, or on
// their stacks; or else the one most often running whose name contains `name`.
Disassembly DisassembleSampledFunction(const TraceModel& model, Symbolizer& symbolizer,
                                       const std::string& name, const SampleFilter& filter = {});

}  // namespace gnomon::server
