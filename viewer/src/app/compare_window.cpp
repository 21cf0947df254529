#include "compare_window.h"

#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>

#include "gnomon/server/statistics.h"
#include "gnomon/server/text.h"
#include "widgets.h"

namespace gnomon::viewer {
namespace {

constexpr size_t kBins = 60;
constexpr uint32_t kColorA = IM_COL32(90, 150, 230, 255);
constexpr uint32_t kColorB = IM_COL32(240, 150, 60, 170);
std::string Duration(double ns) { return server::FormatDuration(ns); }

// Counts of `found` in `bins` log-scale bins over [lo, hi].
std::vector<uint64_t> Bin(const ZoneOccurrences& found, int64_t lo, int64_t hi, size_t bins,
                          uint64_t& tallest) {
  DurationHistogram h;
  h.scale = HistogramScale::kLog;
  h.min_ns = lo;
  h.max_ns = hi;
  h.counts.assign(bins, 0);
  h.Count(found.durations.sorted_ns);
  tallest = std::max(tallest, h.tallest);
  return h.counts;
}

// "1.02 ms -> 1.10 ms" and "+7.8 % [+6.0, +9.6] slower" of a checked quantile.
std::string Change(const server::QuantileChange& c, server::RegressionRow::Verdict verdict) {
  auto percent = [](double x) {
    if (!std::isfinite(x)) return std::string(x > 0 ? "+inf" : "-inf");
    char text[32];
    std::snprintf(text, sizeof text, "%+.1f", std::fabs(x) < 0.0005 ? 0.0 : 100 * x);
    return std::string(text);
  };
  const char* said = verdict == server::RegressionRow::Verdict::kSlower   ? " slower"
                     : verdict == server::RegressionRow::Verdict::kFaster ? " faster"
                                                                          : "";
  return percent(c.change) + " % [" + percent(c.low) + ", " + percent(c.high) + "]" + said;
}

// Each trace's main frame series' frame count.
uint64_t MainFrames(const server::TraceModel& model) {
  const auto main = model.frames.find(0);
  return main == model.frames.end() ? 0 : main->second.frame_count();
}

}  // namespace

void CompareWindow::Comparison::MatchChecks() {
  // The check keys a location by its name and file (or function), as ComparisonRow's
  // where names it before the line.
  std::map<std::pair<std::string, std::string>, const server::RegressionRow*> by_key;
  for (const server::RegressionRow& r : check.rows) {
    if (r.kind == server::RegressionRow::Kind::kCpuZone) by_key.emplace(std::pair{r.name, r.where}, &r);
    if (r.kind == server::RegressionRow::Kind::kFrames && r.name == "main") frames = &r;
  }
  checked.clear();
  for (const ComparisonRow& row : rows) {
    const size_t colon = row.where.rfind(':');
    const std::string file = colon == std::string::npos ? row.where : row.where.substr(0, colon);
    const auto found = by_key.find({row.name, file});
    checked.push_back(found == by_key.end() ? nullptr : found->second);
  }
}

void CompareWindow::OpenOther(const std::string& path, uint32_t max_expansion, uint64_t memory_limit) {
  CompareWith(Session::OpenFile(path, max_expansion, 0, memory_limit));
}

void CompareWindow::CompareWith(std::unique_ptr<Session> other) {
  Reset();
  other_ = std::move(other);
  open = true;
}

void CompareWindow::Reset() {
  // A read of B's file under way stops at its next block, not at its end.
  if (other_ != nullptr) other_->CancelReads();
  rows_job_.Reset();
  a_job_.Reset();
  b_job_.Reset();
  if (other_ != nullptr) other_->ResumeReads();
  picked_ = -1;
}

bool CompareWindow::is_busy() {
  return rows_job_.is_busy() || a_job_.is_busy() || b_job_.is_busy() || (other_ && other_->is_loading());
}

void CompareWindow::Draw(const server::TraceModel& model, Workspace& ws) {
  ws.Place("Compare");
  if (!ImGui::Begin("Compare", &open)) {
    ImGui::End();
    return;
  }
  if (other_ == nullptr) {
    ImGui::TextDisabled("File > Compare with... opens a second trace to compare this one with");
    ImGui::End();
    return;
  }
  if (other_->failed()) {
    ImGui::TextColored(ImVec4(1, 0.45f, 0.4f, 1), "%s", other_->error().c_str());
    ImGui::End();
    return;
  }
  if (other_->is_loading()) {
    ImGui::Text("loading %s", other_->title().c_str());
    ImGui::ProgressBar(other_->load_progress(), ImVec2(Scaled(300), 0));
    ImGui::End();
    return;
  }
  uint64_t b_zones = 0;
  bool b_held = true;
  other_->WithModel([&](const server::TraceModel& b) {
    b_zones = b.zone_count;
    b_held = b.zones_held;
  });
  if (!model.zones_held && ws.session->is_loading()) {  // its zones are read from the file once it has loaded
    ImGui::TextDisabled("waiting for %s to load", ws.session->title().c_str());
    ImGui::End();
    return;
  }
  Session* a = ws.session;
  Session* b = other_.get();
  const bool a_held = model.zones_held;
  rows_job_.Request({model.zone_count, b_zones}, [a, b, a_held, b_held] {
    std::vector<server::ZoneStatistics> stats_a, stats_b;
    Comparison c;
    c.zones_from_file = !a_held || !b_held;
    // A trace whose zones are not held: its rows read from its file.
    auto statistics_of = [&c](Session* s, bool held, std::vector<server::ZoneStatistics>& into) {
      if (held) {
        s->WithModel([&](const server::TraceModel& m) { into = server::ComputeZoneStatistics(m); });
        return true;
      }
      std::string note;
      auto streamed = s->StreamStatistics(&note);
      if (!streamed.ok()) {
        c.error = s->title() + ": reading its zones from the file failed: " + streamed.status().message();
        return false;
      }
      into = std::move(streamed.value());
      c.note += (c.note.empty() || note.empty() ? "" : " ") + note;
      return true;
    };
    if (!statistics_of(a, a_held, stats_a) || !statistics_of(b, b_held, stats_b)) return c;
    a->WithModel([&](const server::TraceModel& ma) {
      b->WithModel([&](const server::TraceModel& mb) {
        c.rows = CompareTraces(ma, stats_a, mb, stats_b);
        c.check = server::CompareForRegressions({&ma}, {&mb});
        if (c.zones_from_file) {  // a trace without its CPU zones: only its frames and GPU zones are checked
          std::erase_if(c.check.rows, [](const server::RegressionRow& row) {
            return row.kind == server::RegressionRow::Kind::kCpuZone;
          });
        }
        c.frames_a = MainFrames(ma);
        c.frames_b = MainFrames(mb);
        c.MatchChecks();
      });
    });
    return c;
  });
  ImGui::Text("A: %s   B: %s", ws.session->title().c_str(), other_->title().c_str());
  const Comparison* comparison = rows_job_.result();
  const std::vector<ComparisonRow>* rows = comparison != nullptr ? &comparison->rows : nullptr;
  if (rows == nullptr) {
    ImGui::TextDisabled(model.zones_held && b_held ? "comparing..."
                                                   : "comparing (reading zones from the files)...");
    ImGui::End();
    return;
  }
  if (!comparison->error.empty()) {
    ImGui::TextColored(ImVec4(1, 0.45f, 0.4f, 1), "%s", comparison->error.c_str());
    ImGui::End();
    return;
  }
  if (comparison->zones_from_file) {
    ImGui::TextWrapped(
        "Zones not held (--memory-limit) are read from their file: counts, totals and means are exact; the "
        "CPU zones' median changes and histograms need both traces' zones held.%s%s",
        comparison->note.empty() ? "" : " ", comparison->note.c_str());
  }
  if (picked_generation_ != rows_job_.result_generation()) {
    picked_ = rows->empty() ? -1 : 0;
    picked_generation_ = rows_job_.result_generation();
  }
  const bool can_per_frame = comparison->frames_a > 0 && comparison->frames_b > 0;
  if (can_per_frame) {
    ImGui::Checkbox("per frame", &per_frame_);
    ImGui::SameLine();
  } else {
    per_frame_ = false;
  }
  const double per_a = per_frame_ ? double(comparison->frames_a) : 1.0;
  const double per_b = per_frame_ ? double(comparison->frames_b) : 1.0;
  std::string frames_change;
  if (const server::RegressionRow* frames = comparison->frames) {
    frames_change = Change(frames->median, frames->verdict);
    ImGui::Text("frames: A %llu, median %s;  B %llu, median %s;  median %s",
                static_cast<unsigned long long>(frames->old_count),
                Duration(double(frames->median.old_ns)).c_str(),
                static_cast<unsigned long long>(frames->new_count),
                Duration(double(frames->median.new_ns)).c_str(), frames_change.c_str());
  } else {
    ImGui::TextDisabled("no frames in both");
  }
  ImGui::TextDisabled(
      "changes: B against A, with a %.0f %% interval for all rows at once (no distribution assumed)",
      100 * comparison->check.options.confidence);
  constexpr ImGuiTableFlags kFlags = ImGuiTableFlags_ScrollY | ImGuiTableFlags_RowBg |
                                     ImGuiTableFlags_Borders | ImGuiTableFlags_Resizable |
                                     ImGuiTableFlags_SizingFixedFit;
  const float table_height = std::max(Scaled(120), ImGui::GetContentRegionAvail().y - Scaled(150));
  if (ImGui::BeginTable("comparison", 12, kFlags, ImVec2(0, table_height))) {
    ImGui::TableSetupScrollFreeze(1, 1);
    // Names take the width the numbers leave.
    ImGui::TableSetupColumn("Zone", ImGuiTableColumnFlags_WidthStretch, 2);
    ImGui::TableSetupColumn("Location", ImGuiTableColumnFlags_WidthStretch, 1);
    for (const char* c :
         {per_frame_ ? "Count A / frame" : "Count A", per_frame_ ? "Count B / frame" : "Count B",
          per_frame_ ? "Total A / frame" : "Total A", per_frame_ ? "Total B / frame" : "Total B", "B - A",
          "Mean A", "Mean B", "B / A", "Median A -> B", "Median change [interval]"}) {
      ImGui::TableSetupColumn(c);
    }
    ImGui::TableHeadersRow();
    for (size_t i = 0; i < rows->size(); ++i) {
      const ComparisonRow& r = (*rows)[i];
      ImGui::TableNextRow();
      ImGui::TableNextColumn();
      ImGui::PushID(int(i));
      if (ImGui::Selectable("##pick", picked_ == int(i),
                            ImGuiSelectableFlags_SpanAllColumns | ImGuiSelectableFlags_AllowItemOverlap)) {
        picked_ = int(i);
      }
      ImGui::SameLine(0, 0);
      TextCell(r.name);
      ImGui::PopID();
      ImGui::TableNextColumn();
      TextCell(r.where);
      ImGui::TableNextColumn();
      ImGui::Text(per_frame_ ? "%.2f" : "%.0f", double(r.count_a) / per_a);
      ImGui::TableNextColumn();
      ImGui::Text(per_frame_ ? "%.2f" : "%.0f", double(r.count_b) / per_b);
      for (double v :
           {double(r.total_a_ns) / per_a, double(r.total_b_ns) / per_b,
            double(r.total_b_ns) / per_b - double(r.total_a_ns) / per_a, r.mean_a_ns, r.mean_b_ns}) {
        ImGui::TableNextColumn();
        ImGui::TextUnformatted(Duration(v).c_str());
      }
      ImGui::TableNextColumn();
      if (r.mean_ratio() > 0) ImGui::Text("%.3f", r.mean_ratio());
      const server::RegressionRow* checked = comparison->checked[i];
      ImGui::TableNextColumn();
      if (checked != nullptr && checked->old_count > 0 && checked->new_count > 0) {
        ImGui::Text("%s -> %s", Duration(double(checked->median.old_ns)).c_str(),
                    Duration(double(checked->median.new_ns)).c_str());
        ImGui::TableNextColumn();
        TextCell(Change(checked->median, checked->verdict));
      } else {
        ImGui::TableNextColumn();
      }
    }
    ImGui::EndTable();
  }
  std::string report_bars;
  if (picked_ >= 0 && size_t(picked_) < rows->size() && !comparison->zones_from_file) {
    const ComparisonRow& r = (*rows)[size_t(picked_)];
    const ZoneQuery qa{r.location_a}, qb{r.location_b};
    a_job_.Request(qa, [a, qa] {
      ZoneOccurrences f;
      if (qa.location != 0) a->WithModel([&](const server::TraceModel& m) { f = FindOccurrences(m, qa); });
      return f;
    });
    b_job_.Request(qb, [b, qb] {
      ZoneOccurrences f;
      if (qb.location != 0) b->WithModel([&](const server::TraceModel& m) { f = FindOccurrences(m, qb); });
      return f;
    });
    const ZoneOccurrences* fa = a_job_.result();
    const ZoneOccurrences* fb = b_job_.result();
    if (fa != nullptr && fb != nullptr) {
      int64_t lo = INT64_MAX, hi = 0;
      for (const ZoneOccurrences* f : {fa, fb}) {
        if (f->durations.sorted_ns.empty()) continue;
        lo = std::min(lo, f->durations.sorted_ns.front());
        hi = std::max(hi, f->durations.sorted_ns.back());
      }
      if (lo <= hi) {
        uint64_t tallest = 0;
        const std::vector<uint64_t> ca = Bin(*fa, lo, hi, kBins, tallest);
        const std::vector<uint64_t> cb = Bin(*fb, lo, hi, kBins, tallest);
        ImGui::Text("%s: durations in A (blue) and B (orange), %s .. %s, log scale", r.name.c_str(),
                    Duration(double(lo)).c_str(), Duration(double(hi)).c_str());
        const ImVec2 at = ImGui::GetCursorScreenPos();
        std::vector<HistogramBar> bars_a, bars_b;
        Histogram("##a", ca, tallest, ImVec2(-1, Scaled(100)), kColorA, nullptr, &bars_a);
        ImGui::SetCursorScreenPos(at);
        Histogram("##b", cb, tallest, ImVec2(-1, Scaled(100)), kColorB, nullptr, &bars_b, 0, true);
        report_bars = JsonReport().AddBars("a", bars_a).AddBars("b", bars_b).str();
      }
    }
  }
  std::string zones_json = "[";
  for (size_t i = 0; i < std::min<size_t>(rows->size(), 50); ++i) {
    const ComparisonRow& r = (*rows)[i];
    JsonReport zone;
    zone.Add("name", r.name)
        .Add("count_a", double(r.count_a))
        .Add("count_b", double(r.count_b))
        .Add("total_a_ns", double(r.total_a_ns))
        .Add("total_b_ns", double(r.total_b_ns));
    if (can_per_frame) {
      zone.Add("total_a_per_frame_ns", double(r.total_a_ns) / double(comparison->frames_a))
          .Add("total_b_per_frame_ns", double(r.total_b_ns) / double(comparison->frames_b));
    }
    if (const server::RegressionRow* checked = comparison->checked[i]) {
      zone.Add("median_change", Change(checked->median, checked->verdict))
          .Add("p90_change", Change(checked->p90, checked->verdict));
    }
    zones_json += (zones_json.size() > 1 ? "," : "") + zone.str();
  }
  JsonReport report;
  report.Add("rows", double(rows->size()))
      .Add("zones_from_file", comparison->zones_from_file ? 1.0 : 0.0)
      .AddRaw("zones", zones_json + "]")
      .Add("frames_change", frames_change);
  if (picked_ >= 0 && size_t(picked_) < rows->size()) report.Add("picked", (*rows)[size_t(picked_)].name);
  if (!report_bars.empty()) report.AddRaw("histograms", report_bars);
  ws.reports["compare"] = report.str();
  ImGui::End();
}

}  // namespace gnomon::viewer
