#include "gnomon/server/disassembly.h"

#include <capstone/capstone.h>

#include <algorithm>
#include <optional>
#include <unordered_map>

namespace gnomon::server {
namespace {

// Capstone's x86-64 decoder, closed when it goes out of scope.
class Decoder {
 public:
  Decoder() { ok_ = cs_open(CS_ARCH_X86, CS_MODE_64, &handle_) == CS_ERR_OK; }
  ~Decoder() {
    if (ok_) cs_close(&handle_);
  }
  Decoder(const Decoder&) = delete;
  Decoder& operator=(const Decoder&) = delete;

  // Appends the instructions of `bytes` (at `address`); stops at bytes it cannot decode.
  void Decode(const std::vector<uint8_t>& bytes, uint64_t address,
              std::vector<DisassembledInstruction>& out) {
    if (!ok_) return;
    cs_insn* instruction = cs_malloc(handle_);
    const uint8_t* code = bytes.data();
    size_t size = bytes.size();
    while (cs_disasm_iter(handle_, &code, &size, &address, instruction)) {
      std::string text = instruction->mnemonic;
      if (instruction->op_str[0] != '\0') text.append(" ").append(instruction->op_str);
      out.push_back({.address = instruction->address, .text = std::move(text)});
    }
    cs_free(instruction, 1);
  }

 private:
  csh handle_ = 0;
  bool ok_ = false;
};

}  // namespace

Disassembly DisassembleSampledFunction(const TraceModel& model, Symbolizer& symbolizer,
                                       const std::string& name, const SampleFilter& filter) {
  symbolizer.Update(model.modules);
  Disassembly result;
  // The samples by the address they were found running at.
  std::unordered_map<uint64_t, uint64_t> at;
  for (size_t i = 0; i < model.samples.size(); ++i) {
    const Sample& sample = model.samples[i];
    if (!filter.Accepts(sample)) continue;
    const auto frames = model.callstacks.Frames(sample.callstack);
    if (!frames.empty()) ++at[frames[0]];
  }
  // The function: named exactly where the samples ran, or on their stacks (a function
  // that only called others), or else the busiest whose name contains `name`.
  std::unordered_map<std::string, std::pair<uint64_t, uint64_t>> containing;  // name: (samples, an address)
  std::optional<uint64_t> exact;
  for (const auto& [address, count] : at) {
    const SymbolizedFrame& frame = symbolizer.Resolve(address, false);
    if (frame.function == name) exact = address;
    if (frame.function.find(name) != std::string::npos) {
      auto& [samples, where] = containing[frame.function];
      samples += count;
      where = address;
    }
  }
  for (size_t i = 0; !exact && i < model.samples.size(); ++i) {
    if (!filter.Accepts(model.samples[i])) continue;
    const auto frames = model.callstacks.Frames(model.samples[i].callstack);
    for (size_t f = 1; f < frames.size() && !exact; ++f) {
      if (frames[f] != 0 && symbolizer.Resolve(frames[f], true).function == name) exact = frames[f] - 1;
    }
  }
  uint64_t address = 0;
  if (exact) {
    address = *exact;
  } else if (!containing.empty()) {
    auto busiest = std::max_element(containing.begin(), containing.end(), [](const auto& a, const auto& b) {
      return a.second.first < b.second.first;
    });
    address = busiest->second.second;
  } else {
    result.error = "no sample found a function named " + name + " running";
    return result;
  }
  result.module = symbolizer.Resolve(address, false).module;
  Symbolizer::FunctionCode code = symbolizer.CodeOf(address);
  result.function = code.function.empty() ? symbolizer.Resolve(address, false).function : code.function;
  result.start = code.start;
  if (code.bytes.empty()) {
    result.error = code.error;
    return result;
  }
  Decoder decoder;
  decoder.Decode(code.bytes, code.start, result.instructions);
  if (code.truncated) result.error = "the function is longer than its first 256 KiB shown here";
  if (result.instructions.empty()) {
    result.error = "the code of " + result.function + " could not be decoded";
    return result;
  }
  for (DisassembledInstruction& instruction : result.instructions) {
    const SymbolizedFrame& frame = symbolizer.Resolve(instruction.address, false);
    instruction.file = frame.file;
    instruction.line = frame.line;
    if (auto it = at.find(instruction.address); it != at.end()) {
      instruction.samples = it->second;
      result.samples += it->second;
    }
  }
  return result;
}

}  // namespace gnomon::server
