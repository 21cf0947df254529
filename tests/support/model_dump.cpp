#include "model_dump.h"

#include <bit>
#include <cinttypes>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <type_traits>
#include <utility>

namespace gnomon::test {
namespace {

// FNV-1a over the bytes of trivially copyable values and of strings.
class Hash {
 public:
  // T must have no padding: its bytes are hashed as they are.
  template <typename T>
  Hash& Add(const T& value) {
    static_assert(std::is_trivially_copyable_v<T> && std::has_unique_object_representations_v<T>);
    unsigned char bytes[sizeof(T)];
    std::memcpy(bytes, &value, sizeof(T));
    for (unsigned char b : bytes) Byte(b);
    return *this;
  }
  Hash& Add(double value) { return Add(std::bit_cast<uint64_t>(value)); }
  template <typename A, typename B>
  Hash& Add(const std::pair<A, B>& pair) {
    return Add(pair.first).Add(pair.second);
  }
  Hash& Add(const std::string& text) {
    Add(text.size());
    for (char c : text) Byte(uint8_t(c));
    return *this;
  }
  uint64_t value() const { return h_; }

 private:
  void Byte(uint8_t b) { h_ = (h_ ^ b) * 0x100000001b3ull; }
  uint64_t h_ = 0xcbf29ce484222325ull;
};

std::string Line(const char* format, ...) __attribute__((format(printf, 1, 2)));
std::string Line(const char* format, ...) {
  char buffer[512];
  va_list args;
  va_start(args, format);
  std::vsnprintf(buffer, sizeof(buffer), format, args);
  va_end(args);
  return std::string(buffer) + "\n";
}

constexpr size_t kShown = 3;  // entries shown in full per collection

}  // namespace

std::string DumpModel(const server::TraceModel& m) {
  std::string out;
  const auto& p = m.program;
  out += Line("program '%s' pid %u timer %u rate %" PRIu64 " start %" PRId64 " tick %" PRIu64 " info %d",
              p.name.c_str(), p.pid, p.timer_kind, p.ticks_per_second_estimate, p.start_unix_ns, p.start_tick,
              int(m.has_program_info));
  Hash pairs;
  for (const auto& pair : m.clock.pairs()) {
    pairs.Add(pair.tick).Add(pair.monotonic_raw_ns).Add(pair.monotonic_ns).Add(pair.uncertainty_ns);
  }
  out += Line("cpu pairs %zu hash %016" PRIx64 " ns_per_tick %.9g", m.clock.pairs().size(), pairs.value(),
              m.clock.ns_per_tick());
  out += Line("range %" PRIu64 " .. %" PRIu64 " zones %" PRIu64 " open %" PRIu64, m.first_tick, m.last_tick,
              m.zone_count, m.open_zone_count);
  for (size_t i = 0; i < m.source_locations.size(); ++i) {
    const auto& l = m.source_locations[i];
    out += Line("location %zu id %u '%s' '%s' '%s' line %u color %08x defined %d", i, l.id, l.name.c_str(),
                l.function.c_str(), l.file.c_str(), l.line, l.color, int(l.is_defined));
  }
  for (const auto& t : m.threads) {
    Hash zones;
    for (size_t i = 0; i < t.zones.size(); ++i) zones.Add(t.zones[i]);
    Hash attributes;
    for (size_t i = 0; i < t.zones.size(); ++i) {
      const auto a = t.attributes.find(i);
      if (!a) continue;
      attributes.Add(i).Add(a->name).Add(a->text).Add(a->color).Add(a->value);
    }
    out += Line("thread %u os %u '%s' zones %zu hash %016" PRIx64 " attributes %zu hash %016" PRIx64, t.id,
                t.os_thread_id, t.name.c_str(), t.zones.size(), zones.value(), t.attributes.size(),
                attributes.value());
    for (size_t i = 0; i < t.zones.size() && i < kShown; ++i) {
      const server::Zone z = t.zones[i];
      out += Line("  zone %zu %" PRIu64 " .. %" PRIu64 " location %u depth %u flags %u", i, z.begin_tick,
                  z.end_tick, z.source_location, z.depth, z.flags);
    }
  }
  for (const auto& [id, f] : m.frames) {
    Hash h;
    for (uint64_t mark : f.marks) h.Add(mark);
    for (const auto& span : f.spans) h.Add(span);
    out += Line("frames %u '%s' marks %zu spans %zu hash %016" PRIx64, id, f.name.c_str(), f.marks.size(),
                f.spans.size(), h.value());
  }
  for (const auto& [id, name] : m.frame_names) out += Line("frame name %u '%s'", id, name.c_str());
  for (const auto& [id, plot] : m.plots) {
    Hash h;
    for (const auto& point : plot.points) h.Add(point);
    out += Line("plot %u '%s' points %zu hash %016" PRIx64, id, plot.name.c_str(), plot.points.size(),
                h.value());
  }
  Hash messages;
  for (const auto& message : m.messages)
    messages.Add(message.tick).Add(message.thread_id).Add(message.severity).Add(message.text);
  out += Line("messages %zu hash %016" PRIx64, m.messages.size(), messages.value());
  for (size_t i = 0; i < m.messages.size() && i < kShown; ++i) {
    out += Line("  message %" PRIu64 " thread %u severity %u '%s'", m.messages[i].tick,
                m.messages[i].thread_id, m.messages[i].severity, m.messages[i].text.c_str());
  }
  for (const auto& [id, c] : m.gpu_contexts) {
    Hash zones;
    for (size_t i = 0; i < c.zones.size(); ++i) zones.Add(c.zones[i]);
    Hash knots;
    for (const auto& knot : c.clock.knots())
      knots.Add(knot.gpu_ticks).Add(knot.cpu_ns).Add(knot.uncertainty_ns);
    Hash counters;
    for (const auto& sample : c.counter_samples) counters.Add(sample);
    for (double v : c.counter_values) counters.Add(v);
    out += Line("gpu %u api %u flags %u '%s' '%s' period %" PRIu64 "/%" PRIu64 " bits %u epoch %u", id, c.api,
                c.flags, c.device_name.c_str(), c.name.c_str(), c.clock.period().numerator_ns,
                c.clock.period().denominator, c.clock.valid_bits(), c.clock.epoch());
    out += Line("  zones %zu hash %016" PRIx64 " knots %zu hash %016" PRIx64
                " samples %zu rejected %zu unmatched %" PRIu64,
                c.zones.size(), zones.value(), c.clock.knots().size(), knots.value(), c.clock.sample_count(),
                c.clock.rejected_count(), c.unmatched_gpu_times);
    out += Line("  counter samples %zu values %zu hash %016" PRIx64, c.counter_samples.size(),
                c.counter_values.size(), counters.value());
    if (const auto range = c.clock.offset_range(); range.brackets > 0) {
      out += Line("  brackets %zu offset %.0f .. %.0f contradicted %d rejected %zu", range.brackets,
                  range.min_ns, range.max_ns, int(range.contradicted), c.clock.flags().bad_brackets);
    }
  }
  for (const auto& [id, set] : m.counter_sets) {
    out += Line("counter set %u context %u '%s' declared %u defined %zu", id, set.context_id,
                set.name.c_str(), set.counter_count, set.counters.size());
    for (const auto& c : set.counters) {
      out += Line("  counter %u '%s' type %u data %u raw_max %" PRIu64, c.index, c.name.c_str(), c.type,
                  c.data_type, c.raw_max);
    }
  }
  const auto& d = m.diagnostics;
  out += Line("diagnostics %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64
              " dropped %" PRIu64 " ended %d gpu %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64
              " counters %" PRIu64,
              d.zone_ends_without_begin, d.attributes_without_zone, d.events_without_thread,
              d.clamped_zone_ends, d.invalid_ids, d.frame_ends_without_begin, d.client_dropped_events,
              int(d.ended_cleanly), d.gpu_events_for_unknown_context, d.gpu_queries_reused_before_time,
              d.gpu_rejected_calibrations, d.gpu_zone_ends_without_begin, d.counter_results_dropped);
  return out;
}

}  // namespace gnomon::test
