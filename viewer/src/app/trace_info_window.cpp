#include "trace_info_window.h"

#include <imgui.h>

#include <ctime>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "gnomon/server/export_filter.h"
#include "gnomon/server/report.h"
#include "gnomon/server/text.h"
#include "gnomon/server/trace_cut.h"
#include "widgets.h"

namespace gnomon::viewer {
namespace {

// "2026-12-06 21:55:03 UTC"; "unknown" for 0.
std::string UtcDate(int64_t unix_ns) {
  if (unix_ns <= 0) return "unknown";
  const std::time_t seconds = std::time_t(unix_ns / 1'000'000'000);
  std::tm utc{};
  if (gmtime_r(&seconds, &utc) == nullptr) return "unknown";
  char text[40];
  std::strftime(text, sizeof(text), "%Y-%m-%d %H:%M:%S UTC", &utc);
  return text;
}

// Each GPU context: its name, zones, calibrations and the bounds at its latest one.
std::string GpuContexts(const server::TraceModel& model) {
  std::string text;
  for (const auto& [id, context] : model.gpu_contexts) {
    if (!text.empty()) text += "\n";
    const server::GpuClockModel& clock = context.clock;
    text += server::Printable(context.label()) + ": " + std::to_string(context.zones.size()) + " zones, " +
            std::to_string(clock.sample_count()) + " calibrations (" +
            std::to_string(clock.rejected_count()) + " rejected), placed " +
            server::FormatBound(clock.current_relative_ns()) + " relative, " +
            server::FormatBound(clock.current_early_ns(), clock.current_late_ns()) + " absolute";
  }
  return text.empty() ? "none" : text;
}

}  // namespace

TraceInfoWindow::~TraceInfoWindow() {
  cancel_cut_ = true;  // a cut of a big trace is not waited for to its end: it stops, writing nothing
  if (cut_thread_.joinable()) cut_thread_.join();
}

void TraceInfoWindow::DrawRange(const Session& session, std::pair<int64_t, int64_t> range,
                                JsonReport& report) {
  ImGui::Separator();
  ImGui::Text("Selected range: %s to %s (%s)", server::FormatDuration(double(range.first)).c_str(),
              server::FormatDuration(double(range.second)).c_str(),
              server::FormatDuration(double(range.second - range.first)).c_str());
  if (session.is_live() || session.path().empty() || session.programs() != 1) {
    ImGui::TextDisabled("%s",
                        session.programs() != 1
                            ? "A file of several programs: cut it with gnomon-cut FILE --range A:B"
                            : "Save the trace first (File, Save trace as), then open it to save a range");
    return;
  }
  if (range_path_for_ != session.path()) {  // a name beside the trace, the first time
    range_path_for_ = session.path();
    const std::filesystem::path path(session.path());
    const std::string proposed = (path.parent_path() / (path.stem().string() + "-range.gnomon")).string();
    std::snprintf(range_path_, sizeof(range_path_), "%s", proposed.c_str());
  }
  ImGui::SetNextItemWidth(Scaled(360));
  ImGui::InputText("##range file", range_path_, sizeof(range_path_));
  ImGui::SameLine();
  const bool busy = cutting_.load();
  ImGui::BeginDisabled(busy);
  const bool save = ImGui::Button("Save the range as a trace");
  ImGui::EndDisabled();
  const ImVec2 a = ImGui::GetItemRectMin(), b = ImGui::GetItemRectMax();
  report.Add("save_range_at", std::to_string((a.x + b.x) / 2) + "," + std::to_string((a.y + b.y) / 2));
  if (save && !busy) {
    if (cut_thread_.joinable()) cut_thread_.join();
    server::ExportFilter keep;
    keep.begin_ns = range.first;
    keep.end_ns = range.second;
    {
      std::lock_guard lock(cut_mutex_);
      cut_result_.clear();
      cut_for_ = session.path();
    }
    cutting_ = true;
    try {
      cut_thread_ = std::thread([this, input = session.path(), output = std::string(range_path_), keep] {
        std::string said;
        try {
          std::ostream quiet(nullptr);
          auto cut = server::CutTrace(input, output, keep, tracefile::Overwrite::kNo, quiet, &cancel_cut_);
          if (!cut.ok()) {
            said = cut.status().message();
          } else {
            said = "saved " + output + ": " + std::to_string(cut.value().zones_kept) + " zones, " +
                   server::FormatBytes(cut.value().bytes);
            if (!cut.value().warning.empty()) said += " (" + cut.value().warning + ")";
          }
        } catch (const std::exception& e) {  // out of memory, say: said, not the viewer's end
          said = std::string("the range could not be saved: ") + e.what();
        }
        std::lock_guard lock(cut_mutex_);
        cut_result_ = said;
        cutting_ = false;
      });
    } catch (const std::system_error& e) {
      std::lock_guard lock(cut_mutex_);
      cut_result_ = std::string("the range could not be saved: ") + e.what();
      cutting_ = false;
    }
  }
  std::string said;
  {
    std::lock_guard lock(cut_mutex_);
    // What a cut of this trace said (another trace's, opened since, is not shown).
    if (cut_for_ == session.path()) said = busy ? "saving the range..." : cut_result_;
  }
  if (!said.empty()) ImGui::TextWrapped("%s", said.c_str());
  report.Add("range_save", said);
}

void TraceInfoWindow::Draw(const server::TraceModel& model, const Session& session, Workspace& ws) {
  if (!open) return;
  ws.Place("Trace info");
  if (!ImGui::Begin("Trace info", &open)) {
    ImGui::End();
    return;
  }
  const bool has_events = model.first_tick != server::kOpenZone;
  std::string file = session.is_live() ? "live: " + session.title() : session.path();
  std::error_code ec;
  if (!session.is_live() && std::filesystem::is_regular_file(session.path(), ec)) {
    file += " (" + server::FormatBytes(std::filesystem::file_size(session.path(), ec)) + ")";
  }
  const std::string system = server::SystemLabel(model.program);
  const std::vector<std::pair<const char*, std::string>> rows{
      {"Program",
       model.has_program_info ? server::ProcessLabel(model) : "unknown (the stream had no AppInfo)"},
      {"Started", UtcDate(model.program.start_unix_ns)},
      {"Length",
       server::FormatDuration(has_events ? double(model.DurationNs(model.first_tick, model.last_tick)) : 0)},
      {"System", system.empty() ? "not recorded (a program built before it was sent)" : system},
      {"Settings",
       server::HasEnvironment(model.program) ? server::SettingsLabel(model.program) : "not recorded"},
      {"Timer", server::TimerLabel(model)},
      {"Host clock", server::HostClockLabel(model).empty()
                         ? "no exchanges (the program wrote its own file, or "
                           "the capture predates them)"
                         : server::HostClockLabel(model)},
      {"GPU", GpuContexts(model)},
      {"Zones",
       std::to_string(model.zone_count) + " on " + std::to_string(model.threads.size()) + " threads" +
           (model.zones_held
                ? std::string()
                : "; counted, not held (over --memory-limit): drawn with those under " +
                      server::FormatDuration(model.clock.ns_per_tick() * double(model.overview_resolution)) +
                      " merged, their statistics read from the file" +
                      (model.overview_truncated
                           ? " (drawn only in part: more threads and depths than the limit's "
                             "overview holds)"
                           : ""))},
      {"Dropped", server::DroppedLabel(model)},
      {"Stream", server::StreamLabel(model)},
      {"File", file},
  };
  JsonReport report;
  if (ImGui::BeginTable("trace info", 2, ImGuiTableFlags_RowBg | ImGuiTableFlags_Borders)) {
    ImGui::TableSetupColumn("##what", ImGuiTableColumnFlags_WidthFixed);
    ImGui::TableSetupColumn("##value", ImGuiTableColumnFlags_WidthStretch);
    for (const auto& [what, value] : rows) {
      ImGui::TableNextRow();
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(what);
      ImGui::TableNextColumn();
      ImGui::TextWrapped("%s", value.c_str());
      report.Add(what, value);
    }
    ImGui::EndTable();
  }
  if (ws.range) DrawRange(session, *ws.range, report);
  ws.reports["trace-info"] = report.str();
  ImGui::End();
}

}  // namespace gnomon::viewer
