// The viewer's side windows: statistics, find zone, zone details, GPU clocks, messages,
// debug.
#include <algorithm>
#include <cmath>

#include "app.h"
#include "gnomon/protocol/messages.h"
#include "gnomon/server/counter_values.h"
#include "gnomon/server/text.h"

namespace gnomon::viewer {
namespace {

constexpr auto kLiveStatisticsPeriod = std::chrono::seconds(1);

std::string Duration(double ns) { return server::FormatDuration(ns); }

}  // namespace

void App::StatisticsWindow(const server::TraceModel& model) {
  ImGui::SetNextWindowSize(ImVec2(760, 360), ImGuiCond_FirstUseEver);
  ImGui::SetNextWindowPos(ImVec2(20, 520), ImGuiCond_FirstUseEver);
  if (!ImGui::Begin("Statistics", &show_statistics_)) {
    ImGui::End();
    return;
  }
  bool gpu = gpu_statistics_;
  if (ImGui::RadioButton("CPU zones", !gpu)) gpu = false;
  ImGui::SameLine();
  if (ImGui::RadioButton("GPU zones", gpu)) gpu = true;
  ImGui::SameLine();
  statistics_filter_.Draw("filter by name", 200);
  const auto now = std::chrono::steady_clock::now();
  const bool stale = model.zone_count != statistics_zone_count_ && now - statistics_time_ >= kLiveStatisticsPeriod;
  if (gpu != gpu_statistics_ || stale || statistics_zone_count_ == UINT64_MAX) {
    gpu_statistics_ = gpu;
    statistics_ = gpu ? server::ComputeGpuZoneStatistics(model) : server::ComputeZoneStatistics(model);
    // GPU zones: a column per counter (its mean per zone), as many as fit.
    counter_columns_.clear();
    counter_means_.clear();
    if (gpu) {
      for (const server::CounterStatistics& c : server::ComputeCounterStatistics(model)) {
        const uint64_t column = uint64_t(c.set_id) << 32 | c.counter;
        if (std::find(counter_columns_.begin(), counter_columns_.end(), column) == counter_columns_.end() &&
            counter_columns_.size() < kMaxCounterColumns) {
          counter_columns_.push_back(column);
        }
        counter_means_[{c.source_location, column}] = c.mean;
      }
    }
    statistics_zone_count_ = model.zone_count;
    statistics_time_ = now;
  }
  constexpr ImGuiTableFlags kFlags = ImGuiTableFlags_Sortable | ImGuiTableFlags_RowBg | ImGuiTableFlags_Borders |
                                     ImGuiTableFlags_ScrollY | ImGuiTableFlags_Resizable;
  if (ImGui::BeginTable("stats", 9 + int(counter_columns_.size()), kFlags)) {
    ImGui::TableSetupScrollFreeze(0, 1);
    ImGui::TableSetupColumn("Zone", ImGuiTableColumnFlags_WidthStretch);
    ImGui::TableSetupColumn("Location");
    ImGui::TableSetupColumn("Count");
    ImGui::TableSetupColumn("Total", ImGuiTableColumnFlags_DefaultSort | ImGuiTableColumnFlags_PreferSortDescending);
    ImGui::TableSetupColumn("Self");
    ImGui::TableSetupColumn("Mean");
    ImGui::TableSetupColumn("Median");
    ImGui::TableSetupColumn("Min");
    ImGui::TableSetupColumn("Max");
    for (uint64_t column : counter_columns_) {
      const server::CounterSet& set = model.counter_sets.at(uint32_t(column >> 32));
      const uint32_t index = uint32_t(column & 0xFFFFFFFF);
      const std::string unit = server::CounterUnit(set, index);
      ImGui::TableSetupColumn((set.CounterName(index) + (unit.empty() ? "" : " (" + unit + ")")).c_str());
    }
    ImGui::TableHeadersRow();
    if (ImGuiTableSortSpecs* sort = ImGui::TableGetSortSpecs(); sort && sort->SpecsCount > 0) {
      const ImGuiTableColumnSortSpecs& spec = sort->Specs[0];
      const bool ascending = spec.SortDirection == ImGuiSortDirection_Ascending;
      auto key = [&](const server::ZoneStatistics& s) -> double {
        switch (spec.ColumnIndex) {
          case 2: return double(s.count);
          case 3: return double(s.total_ns);
          case 4: return double(s.self_ns);
          case 5: return s.mean_ns;
          case 6: return double(s.median_ns);
          case 7: return double(s.min_ns);
          case 8: return double(s.max_ns);
          default: {
            const size_t column = size_t(spec.ColumnIndex) - 9;
            if (column >= counter_columns_.size()) return 0;
            auto it = counter_means_.find({s.source_location, counter_columns_[column]});
            return it == counter_means_.end() ? -1 : it->second;
          }
        }
      };
      std::stable_sort(statistics_.begin(), statistics_.end(), [&](const auto& a, const auto& b) {
        if (spec.ColumnIndex <= 1) {
          const auto& na = model.Location(a.source_location).name;
          const auto& nb = model.Location(b.source_location).name;
          return ascending ? na < nb : na > nb;
        }
        return ascending ? key(a) < key(b) : key(a) > key(b);
      });
    }
    for (const server::ZoneStatistics& s : statistics_) {
      const server::SourceLocation& location = model.Location(s.source_location);
      if (!statistics_filter_.PassFilter(location.name.c_str())) continue;
      ImGui::TableNextRow();
      ImGui::TableNextColumn();
      ImGui::PushID(int(s.source_location));
      if (ImGui::Selectable(location.name.c_str(), find_location_ == s.source_location && show_find_zone_,
                            ImGuiSelectableFlags_SpanAllColumns)) {
        find_location_ = s.source_location;
        find_gpu_ = gpu_statistics_;
        show_find_zone_ = true;
      }
      ImGui::PopID();
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(location.ShortLabel().c_str());
      ImGui::TableNextColumn();
      ImGui::Text("%llu", static_cast<unsigned long long>(s.count));
      for (double v : {double(s.total_ns), double(s.self_ns), s.mean_ns, double(s.median_ns), double(s.min_ns),
                       double(s.max_ns)}) {
        ImGui::TableNextColumn();
        ImGui::TextUnformatted(Duration(v).c_str());
      }
      for (uint64_t column : counter_columns_) {
        ImGui::TableNextColumn();
        auto it = counter_means_.find({s.source_location, column});
        if (it != counter_means_.end()) ImGui::Text("%.6g", it->second);
      }
    }
    ImGui::EndTable();
  }
  ImGui::End();
}

void App::FindZoneWindow(const server::TraceModel& model) {
  ImGui::SetNextWindowSize(ImVec2(520, 360), ImGuiCond_FirstUseEver);
  if (!ImGui::Begin("Find zone", &show_find_zone_)) {
    ImGui::End();
    return;
  }
  struct Occurrence {
    LaneKey lane;
    uint32_t index;
    int64_t begin_ns;
    int64_t duration_ns;
  };
  std::vector<Occurrence> found;
  if (!find_gpu_) {
    for (const auto& thread : model.threads) {
      for (size_t i = 0; i < thread.zones.size(); ++i) {
        const auto& z = thread.zones[i];
        if (z.source_location != find_location_ || z.is_open()) continue;
        found.push_back({{LaneKind::kThread, thread.id}, uint32_t(i), RelNs(model, z.begin_tick),
                         model.DurationNs(z.begin_tick, z.end_tick)});
      }
    }
  } else {
    for (const auto& [id, context] : model.gpu_contexts) {
      for (size_t i = 0; i < context.zones.size(); ++i) {
        const auto& z = context.zones[i];
        if (z.source_location != find_location_ || !z.is_timed()) continue;
        const Span span = timeline_.GpuSpan(id, uint32_t(i));
        found.push_back({{LaneKind::kGpu, id}, uint32_t(i), span.begin_ns, span.end_ns - span.begin_ns});
      }
    }
  }
  ImGui::Text("%s: %zu occurrences", model.Location(find_location_).name.c_str(), found.size());
  if (!found.empty()) {
    // A histogram of durations on a log scale.
    int64_t lo = found[0].duration_ns, hi = lo;
    for (const auto& o : found) {
      lo = std::min(lo, o.duration_ns);
      hi = std::max(hi, o.duration_ns);
    }
    constexpr int kBins = 60;
    float bins[kBins] = {};
    const double log_lo = std::log(double(std::max<int64_t>(lo, 1)));
    const double log_hi = std::log(double(std::max<int64_t>(hi, 2)));
    for (const auto& o : found) {
      const double v = std::log(double(std::max<int64_t>(o.duration_ns, 1)));
      const int bin = log_hi > log_lo ? std::clamp(int((v - log_lo) / (log_hi - log_lo) * (kBins - 1)), 0, kBins - 1) : 0;
      bins[bin] += 1;
    }
    ImGui::PlotHistogram("##histogram", bins, kBins, 0, nullptr, 0, FLT_MAX, ImVec2(-1, 80));
    ImGui::Text("%s  ...  %s (log scale)", Duration(double(lo)).c_str(), Duration(double(hi)).c_str());
    if (ImGui::BeginTable("occurrences", 3, ImGuiTableFlags_ScrollY | ImGuiTableFlags_RowBg)) {
      ImGui::TableSetupColumn("Start");
      ImGui::TableSetupColumn("Duration");
      ImGui::TableSetupColumn("Lane");
      ImGui::TableHeadersRow();
      ImGuiListClipper clipper;
      clipper.Begin(int(found.size()));
      while (clipper.Step()) {
        for (int row = clipper.DisplayStart; row < clipper.DisplayEnd; ++row) {
          const Occurrence& o = found[size_t(row)];
          ImGui::TableNextRow();
          ImGui::TableNextColumn();
          ImGui::PushID(row);
          if (ImGui::Selectable(Duration(double(o.begin_ns)).c_str(), false, ImGuiSelectableFlags_SpanAllColumns)) {
            JumpTo(o.begin_ns, o.begin_ns + o.duration_ns);
            selected_ = Selection{o.lane, find_gpu_ ? DrawItem::Kind::kGpuZone : DrawItem::Kind::kZone, o.index};
          }
          ImGui::PopID();
          ImGui::TableNextColumn();
          ImGui::TextUnformatted(Duration(double(o.duration_ns)).c_str());
          ImGui::TableNextColumn();
          ImGui::Text("%s %u", o.lane.kind == LaneKind::kGpu ? "GPU" : "thread", o.lane.id);
        }
      }
      ImGui::EndTable();
    }
  }
  ImGui::End();
}

void App::DetailsWindow(const server::TraceModel& model) {
  // Taller when it opens on a GPU zone with counters, to show their table.
  const bool has_counters = selected_->kind == DrawItem::Kind::kGpuZone &&
                            model.gpu_contexts.contains(selected_->lane.id) &&
                            server::FindZoneCounters(model.gpu_contexts.at(selected_->lane.id), selected_->index);
  ImGui::SetNextWindowSize(ImVec2(440, has_counters ? 300 : 190), ImGuiCond_FirstUseEver);
  ImGui::SetNextWindowPos(ImVec2(800, 520), ImGuiCond_FirstUseEver);
  bool open = true;
  if (!ImGui::Begin("Zone details", &open)) {
    ImGui::End();
    return;
  }
  const Selection s = *selected_;
  if (s.kind == DrawItem::Kind::kZone && model.thread_index.contains(s.lane.id)) {
    const auto& thread = model.threads[model.thread_index.at(s.lane.id)];
    const server::Zone& z = thread.zones[s.index];
    const auto& location = model.Location(z.source_location);
    int64_t children = 0;
    size_t child_count = 0;
    for (size_t i = s.index + 1; i < thread.zones.size() && thread.zones[i].depth > z.depth; ++i) {
      const auto& c = thread.zones[i];
      if (c.depth == z.depth + 1 && !c.is_open()) {
        if (__builtin_add_overflow(children, model.DurationNs(c.begin_tick, c.end_tick), &children)) children = INT64_MAX;
        ++child_count;
      }
    }
    const int64_t duration = z.is_open() ? -1 : model.DurationNs(z.begin_tick, z.end_tick);
    ImGui::Text("Zone      %s", model.ZoneName(thread, s.index).c_str());
    ImGui::Text("Location  %s:%u (%s)", location.file.c_str(), location.line, location.function.c_str());
    ImGui::Text("Thread    %s", thread.name.empty() ? std::to_string(thread.id).c_str() : thread.name.c_str());
    ImGui::Text("Start     %s", Duration(double(RelNs(model, z.begin_tick))).c_str());
    ImGui::Text("Duration  %s", duration < 0 ? "unfinished" : Duration(double(duration)).c_str());
    ImGui::Text("Self      %s", duration < 0 ? "-" : Duration(double(duration - children)).c_str());
    ImGui::Text("Children  %zu", child_count);
    if (z.flags & server::kZoneHasAttributes) {
      const auto& a = thread.attributes.at(s.index);
      if (!a.text.empty()) ImGui::Text("Text      %s", a.text.c_str());
      if (a.has_value) ImGui::Text("Value     %llu", static_cast<unsigned long long>(a.value));
    }
  } else if (s.kind == DrawItem::Kind::kGpuZone && model.gpu_contexts.contains(s.lane.id)) {
    const auto& context = model.gpu_contexts.at(s.lane.id);
    const server::GpuZone& z = context.zones[s.index];
    const auto mapped = model.MapGpuZone(context, z);
    ImGui::Text("GPU zone  %s", model.Location(z.source_location).name.c_str());
    ImGui::Text("Context   %s", context.label().c_str());
    ImGui::Text("Raw ticks %llu .. %llu", static_cast<unsigned long long>(z.gpu_begin),
                static_cast<unsigned long long>(z.gpu_end));
    ImGui::Text("Start     %s +/- %s", Duration(double(mapped.begin_ns - model.clock.TickToNs(model.first_tick))).c_str(),
                Duration(double(mapped.uncertainty_ns)).c_str());
    ImGui::Text("Duration  %s (GPU clock)", Duration(context.clock.TicksToNs(z.gpu_end - z.gpu_begin)).c_str());
    ImGui::Text("Latency   %s from CPU record to GPU start",
                Duration(double(mapped.begin_ns - model.clock.TickToNs(z.cpu_begin_tick))).c_str());
    ImGui::Text("Thread    %u", z.thread_id);
    if (const server::CounterSample* sample = server::FindZoneCounters(context, s.index)) {
      const server::CounterSet& set = model.counter_sets.at(sample->set_id);
      ImGui::Separator();
      ImGui::Text("Counters  %s%s%s", set.name.c_str(),
                  sample->flags & protocol::kCounterFrequencyChanged ? "  (frequency changed)" : "",
                  sample->flags & protocol::kCounterSplitOccurred ? "  (split occurred)" : "");
      if (ImGui::BeginTable("zone counters", 3, ImGuiTableFlags_RowBg | ImGuiTableFlags_Borders)) {
        ImGui::TableSetupColumn("Counter", ImGuiTableColumnFlags_WidthStretch);
        ImGui::TableSetupColumn("Value");
        ImGui::TableSetupColumn("Raw");
        ImGui::TableHeadersRow();
        for (uint32_t i = 0; i < sample->value_count; ++i) {
          const std::string unit = server::CounterUnit(set, i);
          ImGui::TableNextRow();
          ImGui::TableNextColumn();
          ImGui::TextUnformatted(set.CounterName(i).c_str());
          const server::CounterInfo* counter = set.Find(i);
          if (ImGui::IsItemHovered() && counter != nullptr && !counter->description.empty()) {
            ImGui::SetTooltip("%s", counter->description.c_str());
          }
          ImGui::TableNextColumn();
          ImGui::Text("%.6g%s%s", server::NormalizedCounterValue(model, context, *sample, i), unit.empty() ? "" : " ",
                      unit.c_str());
          ImGui::TableNextColumn();
          ImGui::Text("%.6g", context.counter_values[sample->first_value + i]);
        }
        ImGui::EndTable();
      }
    }
  }
  ImGui::End();
  if (!open) selected_.reset();
}

void App::ClockWindow(const server::TraceModel& model) {
  ImGui::SetNextWindowSize(ImVec2(560, 210), ImGuiCond_FirstUseEver);
  ImGui::SetNextWindowPos(ImVec2(600, 300), ImGuiCond_FirstUseEver);
  if (!ImGui::Begin("GPU clocks", &show_clock_)) {
    ImGui::End();
    return;
  }
  ImGui::Text("CPU timer: %.6f GHz from %zu pairs, residual %s rms", 1.0 / model.clock.ns_per_tick(),
              model.clock.pairs().size(), Duration(model.clock.ResidualRmsNs()).c_str());
  if (model.gpu_contexts.empty()) ImGui::TextDisabled("no GPU contexts in this trace");
  for (const auto& [id, context] : model.gpu_contexts) {
    const server::GpuClockModel& clock = context.clock;
    ImGui::Separator();
    ImGui::Text("%s (context %u)", context.label().c_str(), id);
    ImGui::Text("drift %+.3f ppm   samples %zu (%zu rejected)   uncertainty %s   period %llu/%llu ns, %u bits",
                clock.drift_ppm(), clock.sample_count(), clock.rejected_count(),
                clock.current_uncertainty_ns() == UINT32_MAX ? "?" : Duration(clock.current_uncertainty_ns()).c_str(),
                static_cast<unsigned long long>(clock.period().numerator_ns),
                static_cast<unsigned long long>(clock.period().denominator), unsigned{clock.valid_bits()});
    const std::vector<double> residuals = clock.Residuals();
    std::vector<float> values(residuals.begin(), residuals.end());
    ImGui::PushID(int(id));
    if (!values.empty()) {
      const auto [lo, hi] = std::minmax_element(values.begin(), values.end());
      ImGui::PlotLines("##residuals", values.data(), int(values.size()), 0, nullptr, *lo, *hi, ImVec2(-1, 70));
      ImGui::Text("residuals from the fitted line, per calibration: %s .. %s", Duration(*lo).c_str(),
                  Duration(*hi).c_str());
    }
    ImGui::PopID();
  }
  ImGui::End();
}

void App::MessagesWindow(const server::TraceModel& model) {
  ImGui::SetNextWindowSize(ImVec2(560, 210), ImGuiCond_FirstUseEver);
  ImGui::SetNextWindowPos(ImVec2(20, 300), ImGuiCond_FirstUseEver);
  if (!ImGui::Begin("Messages", &show_messages_)) {
    ImGui::End();
    return;
  }
  messages_filter_.Draw("filter", 200);
  if (ImGui::BeginTable("messages", 4, ImGuiTableFlags_ScrollY | ImGuiTableFlags_RowBg | ImGuiTableFlags_Resizable)) {
    ImGui::TableSetupColumn("Time");
    ImGui::TableSetupColumn("Severity");
    ImGui::TableSetupColumn("Thread");
    ImGui::TableSetupColumn("Text", ImGuiTableColumnFlags_WidthStretch);
    ImGui::TableHeadersRow();
    for (size_t i = 0; i < model.messages.size(); ++i) {
      const server::LogMessage& m = model.messages[i];
      if (!messages_filter_.PassFilter(m.text.c_str())) continue;
      ImGui::TableNextRow();
      ImGui::TableNextColumn();
      ImGui::PushID(int(i));
      const int64_t t = RelNs(model, m.tick);
      if (ImGui::Selectable(Duration(double(t)).c_str(), false, ImGuiSelectableFlags_SpanAllColumns)) {
        JumpTo(t - 1'000'000, t + 1'000'000);
      }
      ImGui::PopID();
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(protocol::SeverityName(m.severity));
      ImGui::TableNextColumn();
      ImGui::Text("%u", m.thread_id);
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(m.text.c_str());
    }
    ImGui::EndTable();
  }
  ImGui::End();
}

void App::DebugWindow(const server::TraceModel& model) {
  ImGui::SetNextWindowSize(ImVec2(440, 160), ImGuiCond_FirstUseEver);
  ImGui::SetNextWindowPos(ImVec2(800, 720), ImGuiCond_FirstUseEver);
  if (!ImGui::Begin("Debug", &show_debug_)) {
    ImGui::End();
    return;
  }
  const server::Diagnostics& d = model.diagnostics;
  ImGui::Text("Session      %s (%s)", session_->title().c_str(), session_->is_live() ? "live" : "file");
  ImGui::Text("State        %s", session_->StateText().c_str());
  ImGui::Text("Received     %.2f MB, %.2f MB/s, %.0f zones/s", double(session_->bytes_received()) / 1e6,
              bytes_per_s_ / 1e6, zones_per_s_);
  ImGui::Text("Zones        %llu (%llu unfinished), %.1f MB in zone arrays",
              static_cast<unsigned long long>(model.zone_count), static_cast<unsigned long long>(model.open_zone_count),
              double(model.zone_bytes()) / 1e6);
  ImGui::Text("Dropped      %llu events (by the program)", static_cast<unsigned long long>(d.client_dropped_events));
  ImGui::Text("Decode       %llu ends without begin, %llu orphan attributes, %llu invalid ids",
              static_cast<unsigned long long>(d.zone_ends_without_begin),
              static_cast<unsigned long long>(d.attributes_without_zone), static_cast<unsigned long long>(d.invalid_ids));
  ImGui::Text("GPU          %llu unknown-context events, %llu rejected calibrations",
              static_cast<unsigned long long>(d.gpu_events_for_unknown_context),
              static_cast<unsigned long long>(d.gpu_rejected_calibrations));
  ImGui::Text("CPU clock    %zu pairs, %.6f GHz", model.clock.pairs().size(), 1.0 / model.clock.ns_per_tick());
  ImGui::Text("Frame        %.1f ms (%.0f fps)", 1000.0 / ImGui::GetIO().Framerate, ImGui::GetIO().Framerate);
  if (!session_->error().empty()) ImGui::TextColored(ImVec4(1, 0.45f, 0.4f, 1), "%s", session_->error().c_str());
  ImGui::End();
}

}  // namespace gnomon::viewer
