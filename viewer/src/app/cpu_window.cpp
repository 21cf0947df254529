#include "cpu_window.h"

#include <imgui.h>

#include <algorithm>
#include <cstdio>
#include <unordered_map>

#include "gnomon/server/samples.h"
#include "gnomon/server/text.h"
#include "widgets.h"

namespace gnomon::viewer {
namespace {

// The mean of a plot's points in [begin, end] (ticks), or a negative number without any.
double PlotMean(const server::TraceModel& model, const std::string& name, server::TickRange range) {
  for (const auto& [id, plot] : model.plots) {
    if (plot.name != name) continue;
    double sum = 0;
    size_t n = 0;
    for (const auto& [tick, value] : plot.points) {
      if (!range.Contains(tick)) continue;
      sum += value;
      ++n;
    }
    return n == 0 ? -1 : sum / double(n);
  }
  return -1;
}

}  // namespace

std::vector<CpuWindow::ThreadRow> CpuWindow::CountThreads(const server::TraceModel& model,
                                                          server::TickRange range) {
  std::unordered_map<uint32_t, const server::ThreadTimeline*> named;
  for (const server::ThreadTimeline& t : model.threads) named.emplace(t.os_thread_id, &t);
  std::vector<ThreadRow> rows;
  for (const auto& [tid, thread] : server::ComputeThreadRunning(model)) {
    auto it = named.find(tid);
    ThreadRow row{.os_thread_id = tid,
                  .name = it != named.end() ? Timeline::Name(model, {LaneKind::kThread, it->second->id})
                                            : "tid " + std::to_string(tid)};
    const server::RunSpan* before = nullptr;
    for (const server::RunSpan& span : thread.spans) {
      const uint64_t begin = std::max(span.begin_tick, range.begin_tick);
      const uint64_t end = std::min(span.end_tick, range.end_tick);
      if (begin >= end) continue;
      row.running_ns += model.DurationNs(begin, end);
      if (before != nullptr) {
        row.migrations += before->cpu != span.cpu ? 1 : 0;
        row.longest_wait_ns =
            std::max(row.longest_wait_ns, model.DurationNs(before->end_tick, span.begin_tick));
      }
      // Each span but one still running at the range's end ended with a switch out.
      if (span.end_tick <= range.end_tick && span.end_tick < model.last_tick) {
        ++row.switches;
        row.preempted += span.preempted ? 1 : 0;
      }
      before = &span;
    }
    if (row.running_ns > 0) rows.push_back(row);
  }
  std::sort(rows.begin(), rows.end(), [](const ThreadRow& a, const ThreadRow& b) {
    return a.running_ns != b.running_ns ? a.running_ns > b.running_ns : a.os_thread_id < b.os_thread_id;
  });
  return rows;
}

void CpuWindow::Draw(const server::TraceModel& model, Workspace& ws) {
  ws.Place("CPU data");
  if (!ImGui::Begin("CPU data", &open)) {
    ImGui::End();
    return;
  }
  if (model.context_switches.size() == 0) {
    ImGui::TextDisabled("no context switches in this trace: run the program with GNOMON_CONTEXT_SWITCHES=1");
    ws.reports["cpu-data"] = JsonReport().Add("threads", 0).str();
    ImGui::End();
    return;
  }
  server::TickRange range;
  if (limit_to_range_ && ws.range) range = Workspace::TicksOf(model, *ws.range);
  const Query query{.begin_tick = range.begin_tick,
                    .end_tick = range.end_tick,
                    .switches = switches_.Update(model.context_switches.size())};
  Session* session = ws.session;
  job_.Request(query, [session, query] {
    std::vector<ThreadRow> rows;
    session->WithModel([&](const server::TraceModel& m) {
      rows = CountThreads(m, {.begin_tick = query.begin_tick, .end_tick = query.end_tick});
    });
    return rows;
  });
  ImGui::Checkbox("selected range only", &limit_to_range_);
  const double machine = PlotMean(model, "CPU: machine (cores busy)", range);
  const double program = PlotMean(model, "CPU: this program (cores busy)", range);
  if (machine >= 0 && program >= 0) {
    ImGui::SameLine();
    ImGui::Text("cores busy on average: this program %.2f, the machine %.2f (the two CPU plots)", program,
                machine);
  }
  const std::vector<ThreadRow>* rows = job_.result();
  if (rows == nullptr) {
    ImGui::TextDisabled("counting...");
    ImGui::End();
    return;
  }
  const uint64_t first = std::max(range.begin_tick, model.first_tick);
  const uint64_t last = std::min(range.end_tick, model.last_tick);
  const double length = double(std::max<int64_t>(model.DurationNs(first, std::max(first, last)), 1));
  if (ImGui::BeginTable("threads", 7,
                        ImGuiTableFlags_ScrollY | ImGuiTableFlags_RowBg | ImGuiTableFlags_Resizable)) {
    ImGui::TableSetupScrollFreeze(0, 1);
    ImGui::TableSetupColumn("Thread", ImGuiTableColumnFlags_WidthStretch);
    for (const char* title : {"Running", "Share", "Switched out", "Preempted", "Moved core", "Longest wait"})
      ImGui::TableSetupColumn(title, ImGuiTableColumnFlags_WidthFixed,
                              ImGui::CalcTextSize(title).x + Scaled(16));
    ImGui::TableHeadersRow();
    ImGuiListClipper clipper;
    clipper.Begin(int(rows->size()));
    while (clipper.Step()) {
      for (int r = clipper.DisplayStart; r < clipper.DisplayEnd; ++r) {
        const ThreadRow& row = (*rows)[size_t(r)];
        ImGui::TableNextRow();
        ImGui::TableNextColumn();
        TextCell(row.name);
        ImGui::TableNextColumn();
        ImGui::TextUnformatted(server::FormatDuration(double(row.running_ns)).c_str());
        ImGui::TableNextColumn();
        ImGui::Text("%.1f%%", 100.0 * double(row.running_ns) / length);
        ImGui::TableNextColumn();
        ImGui::Text("%llu", static_cast<unsigned long long>(row.switches));
        ImGui::TableNextColumn();
        ImGui::Text("%llu", static_cast<unsigned long long>(row.preempted));
        ImGui::TableNextColumn();
        ImGui::Text("%llu", static_cast<unsigned long long>(row.migrations));
        ImGui::TableNextColumn();
        ImGui::TextUnformatted(server::FormatDuration(double(row.longest_wait_ns)).c_str());
      }
    }
    ImGui::EndTable();
  }
  // The report: the busiest threads, as many as a test needs.
  constexpr size_t kReportedRows = 100;
  std::string threads = "[";
  for (size_t i = 0; i < std::min(rows->size(), kReportedRows); ++i) {
    const ThreadRow& row = (*rows)[i];
    threads += (i == 0 ? "" : ",") + JsonReport()
                                         .Add("os_thread_id", double(row.os_thread_id))
                                         .Add("running_ns", double(row.running_ns))
                                         .Add("switches", double(row.switches))
                                         .Add("preempted", double(row.preempted))
                                         .Add("migrations", double(row.migrations))
                                         .Add("longest_wait_ns", double(row.longest_wait_ns))
                                         .str();
  }
  ws.reports["cpu-data"] = JsonReport()
                               .Add("threads", double(rows->size()))
                               .Add("program_cores", program)
                               .Add("machine_cores", machine)
                               .AddRaw("rows", threads + "]")
                               .str();
  ImGui::End();
}

}  // namespace gnomon::viewer
