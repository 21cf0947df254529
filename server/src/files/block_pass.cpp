#include "files/block_pass.h"

#include <sched.h>

#include <map>

namespace gnomon::server {

Program::Program(const TraceModel& m) : model(m) {
  for (const auto& [id, index] : model.location_index) {
    if (id >= location_of_id.size()) location_of_id.resize(size_t{id} + 1, 0);
    location_of_id[id] = index < model.source_locations.size() ? index : 0;
  }
}

Status OpenPass(Pass& pass, const std::vector<StreamedProgram>& programs) {
  const TraceSource& source = pass.source;
  if (!source.ReadAt(&pass.header, sizeof(pass.header), 0))
    return Status::Error("cannot read " + source.name());
  FileAnomalies anomalies;
  Notes notes;  // said by the load, which indexed the same blocks
  pass.blocks = IndexBlocks(source, source.size(), pass.header,
                            std::max<uint32_t>(1, pass.options.max_expansion), anomalies, notes);
  std::map<uint32_t, size_t> program_of_stream;
  for (size_t p = 0; p < programs.size(); ++p) {
    program_of_stream[programs[p].stream] = p;
    pass.programs.emplace_back(*programs[p].model);
  }
  for (const IndexedBlock& block : pass.blocks) {
    const auto program = program_of_stream.find(block.stream);
    if (block.rejected || program == program_of_stream.end()) continue;
    const auto& starts = pass.programs[program->second].model.block_start_threads;
    const auto start = starts.find(block.sequence);
    if (start == starts.end()) continue;  // the load did not decode it
    pass.wanted.push_back({&block, program->second, start->second});
    pass.largest_block =
        std::max<size_t>(pass.largest_block, size_t{block.raw_bytes} + block.compressed_bytes);
  }
  return Status::Ok();
}

size_t Workers(const Pass& pass, size_t each_bytes) {
  constexpr size_t kMaxWorkers = 16;
  constexpr size_t kWorkersBytes = size_t{512} << 20;
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  const size_t cores = sched_getaffinity(0, sizeof(cpus), &cpus) == 0 ? size_t(CPU_COUNT(&cpus))
                                                                      : std::thread::hardware_concurrency();
  return std::clamp<size_t>(
      std::min<size_t>({cores, kMaxWorkers, kWorkersBytes / (pass.largest_block + each_bytes)}), 1,
      std::max<size_t>(pass.wanted.size(), 1));
}

}  // namespace gnomon::server
