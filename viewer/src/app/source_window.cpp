#include "source_window.h"

#include <imgui.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>

#include "gnomon/server/report.h"
#include "gnomon/server/text.h"
#include "widgets.h"

namespace gnomon::viewer {
namespace {

constexpr size_t kHotLinesListed = 5;

}  // namespace

void SourceWindow::Show(const std::string& file, uint32_t line) {
  file_ = file;
  line_ = std::max<uint32_t>(line, 1);
  scroll_ = true;
  scroll_frames_ = 0;
  open = true;
}

void SourceWindow::Read(const std::string& path) {
  if (path == text_path_) return;
  text_path_ = path;
  text_.clear();
  std::ifstream in(path);
  readable_ = bool(in);
  std::string line;
  while (readable_ && std::getline(in, line)) text_.push_back(server::Printable(line));
}

void SourceWindow::Draw(const server::TraceModel& model, Workspace& ws) {
  ws.Place("Source");
  if (!ImGui::Begin("Source", &open)) {
    ImGui::End();
    return;
  }
  if (file_.empty()) {
    ImGui::TextDisabled("open a zone's source from Zone details, or a function's from Samples");
    ImGui::End();
    return;
  }
  // The samples' lines, counted again once a second while a live trace grows.
  const size_t samples_seen = samples_.Update(model.samples.size());
  Query query{.filter = {}, .samples = samples_seen};
  ws.LimitToRange(model, limit_to_range_, query.filter);
  if (samples_seen != 0) {
    Session* session = ws.session;
    auto symbolizer = symbolizer_;
    job_.Request(query, [session, query, symbolizer] {
      server::LineSummary lines;
      session->WithModel(
          [&](const server::TraceModel& m) { lines = server::SummarizeLines(m, *symbolizer, query.filter); });
      return lines;
    });
  }
  const server::LineSummary* result = samples_seen != 0 ? job_.result() : nullptr;
  // The file as recorded: the one of that name with the most samples, or as asked.
  std::string recorded = file_;
  std::map<uint32_t, const server::LineSamples*> counted;
  if (result != nullptr) {
    uint64_t best = 0;
    for (const server::LineSamples& l : result->lines) {
      if (server::PathEndsWith(l.file, file_) && l.total_count > best) {
        recorded = l.file;
        best = l.total_count;
      }
    }
    for (const server::LineSamples& l : result->lines) {
      if (l.file == recorded) counted.emplace(l.line, &l);
    }
  }
  const std::string path = server::MapSourcePath(recorded, source_map_);
  Read(path);
  const uint64_t all = result != nullptr ? result->sample_count : 0;

  ImGui::TextUnformatted(server::Printable(path).c_str());
  if (path != recorded) {
    ImGui::SameLine();
    ImGui::TextDisabled("(recorded as %s)", server::Printable(recorded).c_str());
  }
  if (samples_seen == 0) {
    ImGui::TextDisabled("no samples in this trace: run the program with GNOMON_SAMPLING_HZ=1000");
  } else if (job_.is_busy() && result == nullptr) {
    ImGui::TextDisabled("symbolizing...");
  } else {
    uint64_t in_file = 0;
    for (const auto& [line, l] : counted) in_file += l->self_count;
    ImGui::Text("%s of %llu sample(s) on its lines", Percent(in_file, all).c_str(),
                static_cast<unsigned long long>(all));
    ImGui::SameLine();
    ImGui::Checkbox("selected range only", &limit_to_range_);
  }
  if (!readable_) {
    ImGui::TextColored(
        ImVec4(1, 0.8f, 0.3f, 1), "cannot read it%s; the lines with samples:",
        path == recorded ? " (gnomon-viewer --source-map OLD=NEW finds it where it is now)" : "");
  }
  // Its hottest lines: a click goes there.
  std::vector<const server::LineSamples*> hottest;
  for (const auto& [line, l] : counted) hottest.push_back(l);
  std::stable_sort(hottest.begin(), hottest.end(),
                   [](const server::LineSamples* a, const server::LineSamples* b) {
                     return a->self_count > b->self_count;
                   });
  if (hottest.size() > kHotLinesListed) hottest.resize(kHotLinesListed);
  if (!hottest.empty()) {
    ImGui::TextUnformatted("hottest:");
    for (const server::LineSamples* l : hottest) {
      ImGui::SameLine();
      const std::string label = "line " + std::to_string(l->line) + " " + Percent(l->self_count, all);
      if (ImGui::SmallButton(label.c_str())) Show(file_, l->line);
    }
  }

  // The lines: every line of the file, or those with samples when it cannot be read.
  std::vector<uint32_t> rows;
  if (readable_) {
    for (uint32_t i = 1; i <= text_.size(); ++i) rows.push_back(i);
  } else {
    for (const auto& [line, l] : counted) rows.push_back(line);
  }
  if (ImGui::BeginTable("lines", 4,
                        ImGuiTableFlags_ScrollY | ImGuiTableFlags_RowBg | ImGuiTableFlags_Resizable)) {
    ImGui::TableSetupScrollFreeze(0, 1);
    const float number = ImGui::CalcTextSize("100.0%").x + Scaled(8);
    ImGui::TableSetupColumn("Line", ImGuiTableColumnFlags_WidthFixed, ImGui::CalcTextSize("100000").x);
    ImGui::TableSetupColumn("Self", ImGuiTableColumnFlags_WidthFixed, number);
    ImGui::TableSetupColumn("Total", ImGuiTableColumnFlags_WidthFixed, number);
    ImGui::TableSetupColumn("Source", ImGuiTableColumnFlags_WidthStretch);
    ImGui::TableHeadersRow();
    const float row_height = ImGui::GetTextLineHeightWithSpacing();
    if (scroll_) {  // the line asked for, a third of the way down, once the rows' height is known
      const auto at = std::lower_bound(rows.begin(), rows.end(), line_);
      const float target =
          std::max(0.0f, float(at - rows.begin()) * row_height - ImGui::GetWindowHeight() / 3);
      ImGui::SetScrollY(target);
      // Until the rows are known (the file is found once its samples are counted), and
      // then a few frames more: the table learns its height from the frame before.
      scroll_ = rows.empty() || ++scroll_frames_ < 3;
    }
    ImGuiListClipper clipper;
    clipper.Begin(int(rows.size()), row_height);
    while (clipper.Step()) {
      for (int r = clipper.DisplayStart; r < clipper.DisplayEnd; ++r) {
        const uint32_t line = rows[size_t(r)];
        ImGui::TableNextRow();
        if (line == line_) ImGui::TableSetBgColor(ImGuiTableBgTarget_RowBg1, IM_COL32(90, 80, 30, 255));
        auto it = counted.find(line);
        ImGui::TableNextColumn();
        ImGui::Text("%u", line);
        ImGui::TableNextColumn();
        if (it != counted.end() && it->second->self_count > 0)
          ImGui::TextUnformatted(Percent(it->second->self_count, all).c_str());
        ImGui::TableNextColumn();
        if (it != counted.end()) ImGui::TextUnformatted(Percent(it->second->total_count, all).c_str());
        ImGui::TableNextColumn();
        if (line <= text_.size()) ImGui::TextUnformatted(text_[line - 1].c_str());
      }
    }
    ImGui::EndTable();
  }
  std::string lines = "[";
  for (const auto& [line, l] : counted) {
    lines += (lines.size() > 1 ? "," : "") + JsonReport()
                                                 .Add("line", double(line))
                                                 .Add("self", double(l->self_count))
                                                 .Add("total", double(l->total_count))
                                                 .str();
  }
  ws.reports["source"] = JsonReport()
                             .Add("file", path)
                             .Add("line", double(line_))
                             .Add("readable", readable_ ? 1 : 0)
                             .Add("file_lines", double(text_.size()))
                             .Add("samples", double(all))
                             .AddRaw("lines", lines + "]")
                             .str();
  ImGui::End();
}

}  // namespace gnomon::viewer
