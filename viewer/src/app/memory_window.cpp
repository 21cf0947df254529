#include "memory_window.h"

#include <imgui.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <optional>

#include "callstack_window.h"
#include "gnomon/server/memory_statistics.h"
#include "gnomon/server/text.h"
#include "widgets.h"

namespace gnomon::viewer {
namespace {

// "0x1f00" or "7936"; nullopt for anything else.
std::optional<uint64_t> ParseAddress(const char* text) {
  if (text == nullptr || text[0] == '\0') return std::nullopt;
  const bool hex = text[0] == '0' && (text[1] == 'x' || text[1] == 'X');
  char* end = nullptr;
  errno = 0;
  const unsigned long long value = std::strtoull(hex ? text + 2 : text, &end, hex ? 16 : 10);
  if (errno != 0 || end == (hex ? text + 2 : text) || *end != '\0') return std::nullopt;
  return uint64_t(value);
}

}  // namespace

void MemoryWindow::Draw(const server::TraceModel& model, Workspace& ws) {
  ws.Place("Memory");
  if (!ImGui::Begin("Memory", &open)) {
    ImGui::End();
    return;
  }
  if (model.memory_pools.empty()) {
    ImGui::TextDisabled("no memory events in this trace (GNOMON_ALLOC, gnomon/new_delete.hpp)");
    ws.reports["memory"] = JsonReport().Add("rows", 0).str();
    ImGui::End();
    return;
  }
  if (!pool_name_.empty()) {
    for (const auto& [id, p] : model.memory_pools) {
      if (p.name != pool_name_) continue;
      pool_id_ = id;  // found: the user's choice from now on
      pool_name_.clear();
      break;
    }
  }
  // An address searched for from the command line: the first pool where a block held it.
  const std::optional<uint64_t> address = ParseAddress(address_text_);
  if (pick_pool_for_address_ && address) {
    for (const auto& [id, p] : model.memory_pools) {
      if (!ListAllocationsHolding(p, *address).indexes.empty()) {
        pool_id_ = id;
        break;
      }
    }
    pick_pool_for_address_ = false;
  }
  if (!model.memory_pools.contains(pool_id_)) {
    // First the pool that matters most: the largest peak.
    pool_id_ = model.memory_pools.begin()->first;
    uint64_t largest = 0;
    for (const auto& s : server::ComputeMemoryStatistics(model)) {
      if (s.peak_bytes > largest) {
        largest = s.peak_bytes;
        pool_id_ = s.pool_id;
      }
    }
  }
  const server::MemoryPool& pool = model.memory_pools.at(pool_id_);
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 12);
  if (ImGui::BeginCombo("pool", pool.name.c_str())) {
    for (const auto& [id, p] : model.memory_pools) {
      if (ImGui::Selectable(p.name.c_str(), id == pool_id_)) pool_id_ = id;
    }
    ImGui::EndCombo();
  }
  ImGui::SameLine();
  if (ImGui::RadioButton("alive at", mode_ == Mode::kAliveAt)) mode_ = Mode::kAliveAt;
  ImGui::SameLine();
  if (ImGui::RadioButton("never freed", mode_ == Mode::kNeverFreed)) mode_ = Mode::kNeverFreed;
  ImGui::SameLine();
  if (ImGui::RadioButton("holding", mode_ == Mode::kAddress)) mode_ = Mode::kAddress;
  ImGui::SameLine();
  if (ImGui::RadioButton("call tree", mode_ == Mode::kTree)) mode_ = Mode::kTree;
  ImGui::SameLine();
  if (ImGui::RadioButton("map", mode_ == Mode::kMap)) mode_ = Mode::kMap;
  if (mode_ == Mode::kTree || mode_ == Mode::kMap) {
    if (mode_ == Mode::kTree) DrawTree(model, pool, ws);
    if (mode_ == Mode::kMap) DrawMap(model, pool, ws);
    ImGui::End();
    return;
  }
  const bool never_freed = mode_ == Mode::kNeverFreed;
  // Alive at: the end of the selected range, or the middle of the view.
  const int64_t at_ns = ws.range ? ws.range->second : (ws.view.begin_ns() + ws.view.end_ns()) / 2;
  const uint64_t at_tick = Workspace::TicksOf(model, {at_ns, at_ns}).end_tick;
  const uint64_t events = pool.allocations.size() + pool.frees;
  const uint64_t searched = address.value_or(0);
  if (list_pool_ != pool_id_ || list_mode_ != mode_ ||
      (mode_ == Mode::kAliveAt && list_at_tick_ != at_tick) ||
      (mode_ == Mode::kAddress && list_address_ != searched) || list_events_ != events) {
    list_ = mode_ == Mode::kAddress ? (address ? ListAllocationsHolding(pool, *address) : AllocationList{})
                                    : ListAllocations(pool, never_freed, at_tick);
    list_pool_ = pool_id_;
    list_mode_ = mode_;
    list_at_tick_ = at_tick;
    list_address_ = searched;
    list_events_ = events;
  }
  if (mode_ == Mode::kAliveAt) {
    ImGui::SameLine();
    ImGui::TextDisabled("%s (%s)", FormatTime(at_ns).c_str(),
                        ws.range ? "end of the range" : "middle of the view");
  } else if (mode_ == Mode::kAddress) {
    // Which blocks held an address (a pointer seen in a debugger or a crash), when, and
    // from where.
    ImGui::SameLine();
    ImGui::SetNextItemWidth(ImGui::GetFontSize() * 12);
    ImGui::InputTextWithHint("##address", "address, e.g. 0x7f3a2c001040", address_text_,
                             sizeof(address_text_));
    if (address_text_[0] != '\0' && !address) {
      ImGui::SameLine();
      ImGui::TextDisabled("not an address (hex with 0x, or decimal)");
    }
  }
  ImGui::Text("%zu allocation(s), %s", list_.indexes.size(), server::FormatBytes(list_.bytes).c_str());
  const bool stacks = model.callstacks.size() != 0;
  if (ImGui::BeginTable("allocations", stacks ? 6 : 5,
                        ImGuiTableFlags_ScrollY | ImGuiTableFlags_RowBg | ImGuiTableFlags_Resizable)) {
    ImGui::TableSetupColumn("Size");
    ImGui::TableSetupColumn("Address");
    ImGui::TableSetupColumn("Allocated");
    ImGui::TableSetupColumn("Thread");
    ImGui::TableSetupColumn("Freed", stacks ? 0 : ImGuiTableColumnFlags_WidthStretch);
    if (stacks) ImGui::TableSetupColumn("Made in", ImGuiTableColumnFlags_WidthStretch);
    ImGui::TableHeadersRow();
    ImGuiListClipper clipper;
    clipper.Begin(int(list_.indexes.size()));
    while (clipper.Step()) {
      for (int row = clipper.DisplayStart; row < clipper.DisplayEnd; ++row) {
        const uint64_t i = list_.indexes[size_t(row)];
        if (i >= pool.allocations.size()) continue;
        const server::MemoryAllocation& a = pool.allocations[i];
        ImGui::TableNextRow();
        ImGui::TableNextColumn();
        ImGui::PushID(row);
        const int64_t t = Workspace::RelNs(model, a.alloc_tick);
        if (ImGui::Selectable(server::FormatBytes(a.size_bytes).c_str(), false,
                              ImGuiSelectableFlags_SpanAllColumns)) {
          ws.JumpTo(t - 1'000'000, t + 1'000'000);
          if (a.callstack != 0) {  // and shows where it was made
            ws.callstack =
                Workspace::ShownCallstack{a.callstack, "allocation of " + server::FormatBytes(a.size_bytes)};
            ws.show_callstack = true;
          }
        }
        ImGui::PopID();
        ImGui::TableNextColumn();
        char address[24];
        std::snprintf(address, sizeof(address), "0x%" PRIx64, a.address);
        ImGui::TextUnformatted(address);
        ImGui::TableNextColumn();
        ImGui::TextUnformatted(FormatTime(t).c_str());
        ImGui::TableNextColumn();
        TextCell(Timeline::Name(model, {LaneKind::kThread, a.alloc_thread}));
        ImGui::TableNextColumn();
        if (a.is_freed()) {
          ImGui::TextUnformatted(FormatTime(Workspace::RelNs(model, a.free_tick)).c_str());
        } else {
          ImGui::TextDisabled("never");
        }
        if (stacks) {
          ImGui::TableNextColumn();
          TextCell(CallstackSummary(model, ws, a.callstack));
        }
      }
    }
    ImGui::EndTable();
  }
  ws.reports["memory"] = JsonReport()
                             .Add("pool", pool.name)
                             .Add("never_freed", never_freed ? 1 : 0)
                             .Add("holding", mode_ == Mode::kAddress ? 1 : 0)
                             .Add("rows", double(list_.indexes.size()))
                             .Add("bytes", double(list_.bytes))
                             .str();
  ImGui::End();
}

void MemoryWindow::DrawMap(const server::TraceModel& model, const server::MemoryPool& pool, Workspace& ws) {
  // Blocks closer than this share a segment of the address axis.
  constexpr uint64_t kGapMerged = 1 << 20;
  // Blocks drawn at most: more draw as the first this many (said).
  constexpr size_t kMostBlocks = 100'000;
  const uint64_t events = pool.allocations.size() + pool.frees;
  if (segments_pool_ != pool_id_ || segments_events_ != events) {
    std::vector<std::pair<uint64_t, uint64_t>> ranges;
    ranges.reserve(pool.allocations.size());
    pool.allocations.ForEach([&](const server::MemoryAllocation& a) {
      const uint64_t size = std::max<uint64_t>(a.size_bytes, 1);
      ranges.emplace_back(a.address, a.address > UINT64_MAX - size ? UINT64_MAX : a.address + size);
    });
    std::sort(ranges.begin(), ranges.end());
    segments_.clear();
    double above = 0;
    for (const auto& [begin, end] : ranges) {
      if (!segments_.empty() &&
          begin <= segments_.back().end + std::min(kGapMerged, UINT64_MAX - segments_.back().end)) {
        Segment& last = segments_.back();
        above += double(std::max(end, last.end) - last.end);
        last.end = std::max(end, last.end);
        continue;
      }
      segments_.push_back({.begin = begin, .end = end, .above = above});
      above += double(end - begin);
    }
    segments_pool_ = pool_id_;
    segments_events_ = events;
  }
  if (segments_.empty()) {
    ImGui::TextDisabled("no allocations in this pool");
    ws.reports["memory-map"] = JsonReport().Add("segments", 0).Add("blocks", 0).str();
    return;
  }
  const double total = segments_.back().above + double(segments_.back().end - segments_.back().begin);
  ImGui::TextDisabled(
      "address (%zu range(s), gaps left out) against the timeline's time; alive at the view's "
      "end in orange, freed in blue",
      segments_.size());
  const ImVec2 at = ImGui::GetCursorScreenPos();
  const ImVec2 size(
      std::max(100.0f, ImGui::GetContentRegionAvail().x),
      std::max(100.0f, ImGui::GetContentRegionAvail().y - ImGui::GetTextLineHeightWithSpacing()));
  ImGui::InvisibleButton("map", size);
  const bool hovered = ImGui::IsItemHovered();
  ImDrawList* draw = ImGui::GetWindowDrawList();
  draw->AddRectFilled(at, ImVec2(at.x + size.x, at.y + size.y), IM_COL32(25, 25, 30, 255));
  const int64_t begin_ns = ws.view.begin_ns(), end_ns = ws.view.end_ns();
  const double ns_span = double(std::max<int64_t>(end_ns - begin_ns, 1));
  const uint64_t end_tick = Workspace::TicksOf(model, {end_ns, end_ns}).end_tick;
  auto y_of = [&](uint64_t address) {
    auto it = std::upper_bound(segments_.begin(), segments_.end(), address,
                               [](uint64_t a, const Segment& s) { return a < s.begin; });
    if (it != segments_.begin()) --it;
    const double offset = it->above + double(std::min(std::max(address, it->begin), it->end) - it->begin);
    return at.y + float(offset / total * double(size.y));
  };
  // The blocks' rectangles (from the window's corner), made again only when the pool,
  // the view or the window's size changed: a frame draws them.
  const MapKey key{.pool = pool_id_,
                   .events = events,
                   .begin_ns = begin_ns,
                   .end_ns = end_ns,
                   .width = size.x,
                   .height = size.y};
  if (!(key == map_key_)) {
    map_key_ = key;
    map_blocks_.clear();
    map_in_view_ = 0;
    for (size_t i = 0; i < pool.allocations.size(); ++i) {
      const server::MemoryAllocation& a = pool.allocations[i];
      const int64_t made = Workspace::RelNs(model, a.alloc_tick);
      const int64_t freed = a.is_freed() ? Workspace::RelNs(model, a.free_tick) : end_ns;
      if (made > end_ns || freed < begin_ns) continue;
      ++map_in_view_;
      if (map_blocks_.size() == kMostBlocks) continue;
      const float x0 = float(double(std::max(made, begin_ns) - begin_ns) / ns_span * double(size.x));
      const float x1 = float(double(std::min(freed, end_ns) - begin_ns) / ns_span * double(size.x));
      const float y0 = y_of(a.address) - at.y;
      const float y1 = std::max(y_of(a.address + std::max<uint64_t>(a.size_bytes, 1)) - at.y, y0 + 1);
      const bool alive = !a.is_freed() || a.free_tick > end_tick;
      map_blocks_.push_back({x0, y0, std::max(x1, x0 + 1), y1, alive, i});
    }
  }
  std::optional<uint64_t> under_mouse;
  const ImVec2 mouse = ImGui::GetIO().MousePos;
  for (const MapBlock& b : map_blocks_) {
    draw->AddRectFilled(ImVec2(at.x + b.x0, at.y + b.y0), ImVec2(at.x + b.x1, at.y + b.y1),
                        b.alive ? IM_COL32(240, 150, 50, 220) : IM_COL32(80, 140, 220, 200));
    if (hovered && mouse.x >= at.x + b.x0 - 1 && mouse.x <= at.x + b.x1 + 1 && mouse.y >= at.y + b.y0 &&
        mouse.y <= at.y + b.y1) {
      under_mouse = b.allocation;
    }
  }
  const size_t drawn = map_blocks_.size(), in_view = map_in_view_;
  if (in_view > drawn) {
    ImGui::TextDisabled("%zu of the %zu blocks in view drawn: zoom in for the rest", drawn, in_view);
  }
  if (under_mouse) {
    const server::MemoryAllocation& a = pool.allocations[*under_mouse];
    ImGui::BeginTooltip();
    char address[24];
    std::snprintf(address, sizeof(address), "0x%" PRIx64, a.address);
    ImGui::Text("%s at %s", server::FormatBytes(a.size_bytes).c_str(), address);
    ImGui::Text("made at %s by %s", FormatTime(Workspace::RelNs(model, a.alloc_tick)).c_str(),
                Timeline::Name(model, {LaneKind::kThread, a.alloc_thread}).c_str());
    if (a.is_freed()) ImGui::Text("freed at %s", FormatTime(Workspace::RelNs(model, a.free_tick)).c_str());
    if (a.callstack != 0) ImGui::TextDisabled("in %s", CallstackSummary(model, ws, a.callstack).c_str());
    ImGui::EndTooltip();
  }
  ws.reports["memory-map"] = JsonReport()
                                 .Add("pool", pool.name)
                                 .Add("segments", double(segments_.size()))
                                 .Add("blocks", double(drawn))
                                 .Add("in_view", double(in_view))
                                 .str();
}

void MemoryWindow::DrawTree(const server::TraceModel& model, const server::MemoryPool& pool, Workspace& ws) {
  ImGui::Checkbox("bottom-up", &bottom_up_);
  ImGui::SameLine();
  ImGui::Checkbox("selected range only", &tree_in_range_);
  TreeQuery query{.pool_id = pool_id_,
                  .bottom_up = bottom_up_,
                  .range = {},
                  .events = tree_events_.Update(pool.allocations.size() + pool.frees)};
  if (tree_in_range_ && ws.range) query.range = Workspace::TicksOf(model, *ws.range);
  Session* session = ws.session;
  auto symbolizer = symbolizer_;
  tree_job_.Request(query, [session, query, symbolizer] {
    server::AllocationTree tree;
    session->WithModel([&](const server::TraceModel& m) {
      tree = server::BuildAllocationTree(m, *symbolizer, query.pool_id, query.bottom_up, query.range);
    });
    return tree;
  });
  const server::AllocationTree* tree = tree_job_.result();
  if (tree_job_.is_busy()) {
    ImGui::SameLine();
    ImGui::TextDisabled(tree ? "updating..." : "symbolizing...");
  }
  if (tree == nullptr || tree->nodes.empty()) return;
  const server::AllocationTree::Node& root = tree->nodes[0];
  ImGui::Text("%llu allocation(s), %s; %s still alive%s", static_cast<unsigned long long>(root.count),
              server::FormatBytes(root.bytes).c_str(), server::FormatBytes(root.alive_bytes).c_str(),
              query.range.end_tick != UINT64_MAX ? " at the range's end" : "");
  if (tree->without_stack != 0) {
    ImGui::TextDisabled("%llu made without a call stack (GNOMON_CALLSTACK_DEPTH=8 records them)",
                        static_cast<unsigned long long>(tree->without_stack));
  }
  // Children beyond this many under one node are summed on one row.
  constexpr size_t kMostChildren = 200;
  if (ImGui::BeginTable("tree", 5,
                        ImGuiTableFlags_ScrollY | ImGuiTableFlags_RowBg | ImGuiTableFlags_Resizable)) {
    ImGui::TableSetupScrollFreeze(0, 1);
    const float number = ImGui::CalcTextSize("1023.9 MiB").x + Scaled(8);
    ImGui::TableSetupColumn(bottom_up_ ? "Allocated in, called from" : "Function",
                            ImGuiTableColumnFlags_WidthStretch);
    ImGui::TableSetupColumn("Bytes", ImGuiTableColumnFlags_WidthFixed, number);
    ImGui::TableSetupColumn("Count", ImGuiTableColumnFlags_WidthFixed, number);
    ImGui::TableSetupColumn("Alive", ImGuiTableColumnFlags_WidthFixed, number);
    ImGui::TableSetupColumn("Alive count", ImGuiTableColumnFlags_WidthFixed, number);
    ImGui::TableHeadersRow();
    // Open at first: the top levels, and the heaviest path down.
    std::function<void(uint32_t, int, bool)> draw_node = [&](uint32_t index, int depth, bool heaviest) {
      const server::AllocationTree::Node& node = tree->nodes[index];
      ImGui::TableNextRow();
      ImGui::TableNextColumn();
      ImGuiTreeNodeFlags flags = ImGuiTreeNodeFlags_SpanFullWidth;
      if (node.children.empty()) flags |= ImGuiTreeNodeFlags_Leaf | ImGuiTreeNodeFlags_NoTreePushOnOpen;
      if (depth < 2 || (heaviest && depth < 24)) flags |= ImGuiTreeNodeFlags_DefaultOpen;
      const bool opened = ImGui::TreeNodeEx(reinterpret_cast<void*>(uintptr_t(index) + 1), flags, "%s",
                                            tree->functions[node.function].c_str());
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(server::FormatBytes(node.bytes).c_str());
      ImGui::TableNextColumn();
      ImGui::Text("%llu", static_cast<unsigned long long>(node.count));
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(server::FormatBytes(node.alive_bytes).c_str());
      ImGui::TableNextColumn();
      ImGui::Text("%llu", static_cast<unsigned long long>(node.alive_count));
      if (!opened || node.children.empty()) return;
      for (size_t i = 0; i < std::min(node.children.size(), kMostChildren); ++i)
        draw_node(node.children[i], depth + 1, heaviest && i == 0);
      if (node.children.size() > kMostChildren) {
        ImGui::TableNextRow();
        ImGui::TableNextColumn();
        ImGui::TextDisabled("... %zu more", node.children.size() - kMostChildren);
      }
      ImGui::TreePop();
    };
    draw_node(0, 0, true);
    ImGui::EndTable();
  }
  // The report: the nodes depth first, as far as a test needs them.
  constexpr size_t kReportedNodes = 400;
  std::string nodes = "[";
  size_t reported = 0;
  std::function<void(uint32_t, int)> report_node = [&](uint32_t index, int depth) {
    if (reported == kReportedNodes) return;
    const server::AllocationTree::Node& node = tree->nodes[index];
    nodes += (reported++ == 0 ? "" : ",");
    nodes += JsonReport()
                 .Add("function", tree->functions[node.function])
                 .Add("depth", depth)
                 .Add("bytes", double(node.bytes))
                 .Add("count", double(node.count))
                 .Add("alive_bytes", double(node.alive_bytes))
                 .Add("alive_count", double(node.alive_count))
                 .str();
    for (uint32_t child : node.children) report_node(child, depth + 1);
  };
  report_node(0, 0);
  nodes += "]";
  ws.reports["memory-tree"] = JsonReport()
                                  .Add("pool", pool.name)
                                  .Add("bottom_up", bottom_up_ ? 1 : 0)
                                  .Add("without_stack", double(tree->without_stack))
                                  .AddRaw("nodes", nodes)
                                  .str();
}

}  // namespace gnomon::viewer
