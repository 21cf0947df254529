// What the report says of code: the source lines the samples found running (--hot-lines),
// one file's lines around a line with their counts (--source), read from disk where the
// trace says they were built or where a path map says, and a memory pool's allocations
// as a call tree (--memory-tree).
#include <sys/stat.h>

#include <algorithm>
#include <cinttypes>
#include <fstream>

#include "gnomon/server/report.h"
#include "gnomon/server/samples.h"
#include "gnomon/server/text.h"

namespace gnomon::server {
namespace {

std::string Percent(uint64_t count, uint64_t all) {
  return Format("%6.1f%%", 100.0 * double(count) / double(std::max<uint64_t>(all, 1)));
}

int64_t ModifiedNs(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) return -1;
  return int64_t(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
}

}  // namespace

std::string MapSourcePath(const std::string& path,
                          const std::vector<std::pair<std::string, std::string>>& map) {
  for (const auto& [from, to] : map) {
    if (!from.empty() && path.starts_with(from)) return to + path.substr(from.size());
  }
  return path;
}

void PrintHotLines(const TraceModel& model, std::ostream& out, size_t limit) {
  if (model.samples.size() == 0) {
    out << "\nHot lines: the trace has no samples (record with GNOMON_SAMPLING_HZ=1000)\n";
    return;
  }
  Symbolizer symbolizer;
  const LineSummary summary = SummarizeLines(model, symbolizer, {});
  out << "\nHot lines (" << summary.sample_count << " samples, the " << std::min(limit, summary.lines.size())
      << " source lines most often running, of " << summary.lines.size() << " with debug information)\n";
  out << FitColumn("Where", 40)
      << Format(" %8s %7s %8s %7s  %s\n", "Self", "Self%", "Total", "Total%", "Function");
  for (size_t i = 0; i < summary.lines.size() && i < limit; ++i) {
    const LineSamples& l = summary.lines[i];
    const std::string where = l.file.substr(l.file.rfind('/') + 1) + ":" + std::to_string(l.line);
    out << FitColumn(where, 40) << Format(" %8" PRIu64 " ", l.self_count)
        << Percent(l.self_count, summary.sample_count) << Format(" %8" PRIu64 " ", l.total_count)
        << Percent(l.total_count, summary.sample_count) << "  " << Printable(ShortenSymbol(l.function, 60))
        << "\n";
  }
}

const MemoryPool* FindPool(const TraceModel& model, const std::string& name) {
  for (const auto& [id, pool] : model.memory_pools) {
    if (pool.name == name || std::to_string(id) == name) return &pool;
  }
  return nullptr;
}

bool PrintMemoryTree(const TraceModel& model, std::ostream& out, const std::string& pool_name, bool bottom_up,
                     size_t limit) {
  const MemoryPool* pool = FindPool(model, pool_name);
  if (pool == nullptr) {
    out << "gnomon-report: --memory-tree: the trace has no memory pool " << Printable(pool_name) << " (";
    bool first = true;
    for (const auto& [id, p] : model.memory_pools)
      out << (first ? "" : ", ") << Printable(p.name), first = false;
    out << (first ? "none" : "") << ")\n";
    return false;
  }
  Symbolizer symbolizer;
  const AllocationTree tree = BuildAllocationTree(model, symbolizer, pool->id, bottom_up);
  const AllocationTree::Node& root = tree.nodes[0];
  out << "\nMemory tree of pool " << Printable(pool->name) << " ("
      << (bottom_up ? "bottom-up: from the function that allocated out"
                    : "top-down: from the outermost caller in")
      << "; " << root.count << " allocations, " << tree.without_stack << " without a call stack"
      << (tree.without_stack == root.count ? ": record with GNOMON_CALLSTACK_DEPTH=8" : "") << ")\n";
  out << Format("%14s %10s %14s %10s  %s\n", "Bytes", "Count", "Alive bytes", "Alive", "Function");
  // Depth first, the biggest child first, up to `limit` rows.
  size_t rows = 0;
  std::vector<std::pair<uint32_t, uint32_t>> pending{{0, 0}};  // (node, depth)
  while (!pending.empty() && rows < limit) {
    const auto [n, depth] = pending.back();
    pending.pop_back();
    const AllocationTree::Node& node = tree.nodes[n];
    out << Format("%14" PRIu64 " %10" PRIu64 " %14" PRIu64 " %10" PRIu64 "  ", node.bytes, node.count,
                  node.alive_bytes, node.alive_count)
        << std::string(2 * size_t(depth), ' ') << Printable(ShortenSymbol(tree.functions[node.function], 80))
        << "\n";
    ++rows;
    for (auto c = node.children.rbegin(); c != node.children.rend(); ++c) pending.emplace_back(*c, depth + 1);
  }
  if (rows < tree.nodes.size()) out << "  (" << tree.nodes.size() - rows << " more nodes)\n";
  return true;
}

bool PrintSourceLines(const TraceModel& model, std::ostream& out, const SourceRequest& request) {
  Symbolizer symbolizer;
  const LineSummary summary = SummarizeLines(model, symbolizer, {});
  // The recorded file the request names (the one with the most samples, when several do).
  std::string recorded;
  uint64_t best = 0;
  for (const LineSamples& l : summary.lines) {
    if (PathEndsWith(l.file, request.file) && (recorded.empty() || l.total_count > best)) {
      recorded = l.file;
      best = l.total_count;
    }
  }
  if (recorded.empty()) {
    out << "gnomon-report: --source: no sample is in a file named " << Printable(request.file)
        << " (--hot-lines lists the files the samples found)\n";
    return false;
  }
  std::vector<const LineSamples*> counted;
  std::string module;
  for (const LineSamples& l : summary.lines) {
    if (l.file != recorded) continue;
    counted.push_back(&l);
    if (module.empty()) module = l.module;
  }
  const std::string path = MapSourcePath(recorded, request.source_map);
  std::ifstream in(path);
  out << "\nSource " << Printable(path)
      << (path != recorded ? " (recorded as " + Printable(recorded) + ")" : "") << ", "
      << summary.sample_count << " samples in the trace\n";
  if (!in) {
    out << "  cannot read it" << (path == recorded ? "; --source-map OLD=NEW finds it where it is now" : "")
        << "; the lines with samples:\n";
  }
  // A source changed after its module was built may no longer match the line numbers.
  for (const Module& m : model.modules) {
    if (m.path.substr(m.path.rfind('/') + 1) != module) continue;
    const int64_t source_ns = ModifiedNs(path), module_ns = ModifiedNs(m.path);
    if (source_ns > 0 && module_ns > 0 && source_ns > module_ns)
      out << "  note: it changed after " << Printable(m.path) << " was built: lines may have moved\n";
  }
  out << Format("%7s %8s %7s %8s %7s  %s\n", "Line", "Self", "Self%", "Total", "Total%", "Source");
  auto counts = [&](uint32_t line) -> const LineSamples* {
    for (const LineSamples* l : counted) {
      if (l->line == line) return l;
    }
    return nullptr;
  };
  const uint32_t first = request.line > request.context ? request.line - request.context : 1;
  const uint32_t last = request.line + request.context;
  auto print = [&](uint32_t line, const std::string& text) {
    const LineSamples* l = counts(line);
    out << (line == request.line ? ">" : " ") << Format("%6u ", line);
    if (l != nullptr) {
      out << Format("%8" PRIu64 " ", l->self_count) << Percent(l->self_count, summary.sample_count)
          << Format(" %8" PRIu64 " ", l->total_count) << Percent(l->total_count, summary.sample_count);
    } else {
      out << Format("%8s %7s %8s %7s", "", "", "", "");
    }
    out << "  " << Printable(text) << "\n";
  };
  if (in) {
    std::string text;
    for (uint32_t line = 1; std::getline(in, text) && line <= last; ++line) {
      if (line >= first) print(line, text);
    }
  } else {
    std::sort(counted.begin(), counted.end(),
              [](const LineSamples* a, const LineSamples* b) { return a->line < b->line; });
    for (const LineSamples* l : counted) print(l->line, "");
  }
  return true;
}

}  // namespace gnomon::server
