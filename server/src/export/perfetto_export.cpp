#include "gnomon/server/perfetto_export.h"

#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "export/perfetto_packets.h"
#include "gnomon/protocol/messages.h"
#include "gnomon/server/counter_values.h"
#include "gnomon/server/memory_statistics.h"
#include "gnomon/server/process_timeline.h"
#include "gnomon/server/report.h"
#include "gnomon/tracefile/format.h"
#include "perfetto_trace.pb.h"

namespace gnomon::server {
namespace {

namespace pb = perfetto::protos;
using perfetto_packets::PacketWriter;
using perfetto_packets::Sequence;
using perfetto_packets::SliceTrack;

// Track uuids: (number << 3) | kind, so that no two kinds collide and the uuids that
// events repeat stay short varints.
constexpr uint64_t kProcessTrack = 1;
uint64_t ThreadTrack(size_t index) { return uint64_t(index) << 3 | 2; }  // index in TraceModel::threads
uint64_t GpuTrack(uint32_t context_id) { return uint64_t(context_id) << 3 | 3; }
uint64_t FrameTrack(uint32_t name_id) { return uint64_t(name_id) << 3 | 4; }
uint64_t CounterTrackUuid(size_t number) { return uint64_t(number) << 3 | 5; }  // in order of first use

// The process-wide packet sequence (the first of each program's): descriptors, frames,
// counters, and the messages of threads the model does not know. Each thread and each
// GPU context has one of its own after it, whose default track is its track.
constexpr uint32_t kFirstSequence = 1;
// A trace of several programs: the uuids and flows of the program at index p carry p
// here (0 for the first, so that one program's file is as it always was): 16 bits, as
// many programs as a file holds (tracefile::kMaxTraceStreams). A flow's context ordinal then has 8
// bits: past a program's 255th GPU context, flows of two programs may share ids.
constexpr int kProcessShift = 48;
static_assert(tracefile::kMaxTraceStreams <= (size_t{1} << (64 - kProcessShift)));

// Without a pid (a stream that never sent its program's), one no Linux process has; the
// same above pid_max for threads whose OS id is missing or repeated.
constexpr int32_t kUnknownPid = 0x3FFFFFFF;
constexpr int32_t kSyntheticTidBase = 0x40000000;

// A flow joins a GPU zone to where its thread recorded it: (context's place in
// TraceModel::gpu_contexts + 1) << 40 | zone index, for zones below 2^40.
constexpr uint64_t kFlowZoneLimit = uint64_t{1} << 40;
constexpr uint64_t kNoZone = std::numeric_limits<uint64_t>::max();

// A GPU zone as its recording thread saw it: when, which flow, and the innermost kept
// zone of that thread open then (kNoZone: none, the flow starts at an instant).
struct Submit {
  uint64_t tick = 0;
  uint64_t flow_id = 0;
  uint64_t cpu_zone = kNoZone;
  uint32_t thread = 0;  // index in TraceModel::threads
};

struct ThreadMessage {
  int64_t ns = 0;
  const LogMessage* message = nullptr;
  uint32_t thread = 0;  // index in TraceModel::threads
};

class PerfettoWriter {
 public:
  // Program `process` of a trace; its packet sequences are numbered from
  // `next_sequence`, which is left past the last.
  PerfettoWriter(const ProcessTimeline& timeline, uint32_t process, std::ostream& out,
                 const ExportFilter& filter, uint32_t& next_sequence)
      : model_(timeline.model()),
        timeline_(timeline),
        filter_(filter),
        writer_(out),
        main_(writer_, packet_, next_sequence++, 0),
        process_(process),
        pid_(timeline.pid() != 0 ? int32_t(timeline.pid() & 0x7FFFFFFFu) : kUnknownPid),
        next_sequence_(next_sequence) {
    const TraceModel& model = model_;
    thread_kept_.resize(model.threads.size());
    for (size_t i = 0; i < model.threads.size(); ++i) thread_kept_[i] = filter.KeepsThread(model.threads[i]);
    location_kept_.assign(model.source_locations.size() + 1, -1);
  }

  void Write() {
    WriteDescriptors();
    std::vector<Submit> submits = CollectSubmits();
    std::vector<ThreadMessage> messages = CollectMessages();
    std::span<Submit> submits_left(submits);
    std::span<const ThreadMessage> messages_left(messages);
    for (size_t i = 0; i < model_.threads.size(); ++i) {
      size_t s = 0, m = 0;
      while (s < submits_left.size() && submits_left[s].thread == i) ++s;
      while (m < messages_left.size() && messages_left[m].thread == i) ++m;
      if (thread_kept_[i]) WriteThread(i, submits_left.first(s), messages_left.first(m));
      submits_left = submits_left.subspan(s);
      messages_left = messages_left.subspan(m);
    }
    submits = {};
    messages = {};
    uint64_t ordinal = 0;
    for (const auto& [id, context] : model_.gpu_contexts) WriteGpuContext(context, ++ordinal);
    WriteFrames();
    WritePlots();
    WriteMemory();
    writer_.Flush();
  }

 private:
  int64_t Ns(uint64_t tick) const { return timeline_.Tick(tick); }
  uint64_t Uuid(uint64_t uuid) const { return uuid | uint64_t(process_) << kProcessShift; }
  uint64_t Flow(uint64_t context_ordinal, uint64_t zone_index) const {
    return FlowId(context_ordinal, zone_index) | uint64_t(process_) << kProcessShift;
  }

  // The model's thread index of a program thread id, or none.
  std::optional<size_t> ThreadIndex(uint32_t thread_id) const {
    auto it = model_.thread_index.find(thread_id);
    if (it == model_.thread_index.end() || it->second >= model_.threads.size()) return std::nullopt;
    return it->second;
  }
  bool KeepsThreadId(uint32_t thread_id) const {
    if (filter_.threads.empty()) return true;
    const auto index = ThreadIndex(thread_id);
    return index && thread_kept_[*index];
  }
  bool KeepsLocation(uint32_t location) {
    int8_t& kept = location_kept_[std::min<size_t>(location, location_kept_.size() - 1)];
    if (kept < 0) kept = filter_.KeepsZone(model_.Location(location).name);
    return kept != 0;
  }
  // The runtime attributes of a zone, if any.
  static std::optional<ZoneAttributes> Attributes(const ThreadTimeline& thread, size_t index,
                                                  const Zone& zone) {
    if (!(zone.flags & kZoneHasAttributes)) return std::nullopt;
    return thread.attributes.find(index);
  }
  bool KeepsZone(const ThreadTimeline& thread, size_t index, const Zone& zone) {
    const bool renamed = (zone.flags & kZoneHasAttributes) && !thread.attributes.Name(index).empty();
    const bool name_kept =
        renamed ? filter_.KeepsZone(thread.attributes.Name(index)) : KeepsLocation(zone.source_location);
    return name_kept &&
           filter_.Overlaps(Ns(zone.begin_tick), Ns(zone.is_open() ? model_.last_tick : zone.end_tick));
  }
  // A GPU zone the filter keeps, placed on the trace timeline; nullopt when it is not.
  std::optional<TraceModel::MappedGpuZone> KeptGpuZone(const GpuContextTimeline& context,
                                                       const GpuZone& zone) {
    if (!zone.is_timed() || !KeepsThreadId(zone.thread_id) || !KeepsLocation(zone.source_location))
      return std::nullopt;
    const auto mapped = model_.MapGpuZone(context, zone);
    if (!filter_.Overlaps(timeline_.Ns(mapped.begin_ns), timeline_.Ns(mapped.end_ns))) return std::nullopt;
    return mapped;
  }
  static uint64_t FlowId(uint64_t context_ordinal, uint64_t zone_index) {
    return context_ordinal << 40 | zone_index;
  }

  void WriteDescriptors() {
    {
      pb::TrackDescriptor& process = main_.Descriptor();
      process.set_uuid(Uuid(kProcessTrack));
      process.mutable_process()->set_pid(pid_);
      process.mutable_process()->set_process_name(timeline_.name());
      main_.Send();
    }
    std::unordered_set<int32_t> tids;
    for (size_t i = 0; i < model_.threads.size(); ++i) {
      const ThreadTimeline& thread = model_.threads[i];
      if (!thread_kept_[i]) continue;
      const int32_t os_tid = int32_t(thread.os_thread_id & 0x7FFFFFFFu);
      const bool usable = os_tid != 0 && tids.insert(os_tid).second;
      pb::TrackDescriptor& track = main_.Descriptor();
      track.set_uuid(Uuid(ThreadTrack(i)));
      track.set_parent_uuid(Uuid(kProcessTrack));
      pb::ThreadDescriptor& descriptor = *track.mutable_thread();
      descriptor.set_pid(pid_);
      descriptor.set_tid(usable ? os_tid : kSyntheticTidBase + int32_t(i & 0x3FFFFFFF));
      descriptor.set_thread_name(thread.name.empty() ? "thread " + std::to_string(thread.id) : thread.name);
      main_.Send();
    }
    for (const auto& [id, context] : model_.gpu_contexts) {
      pb::TrackDescriptor& track = main_.Descriptor();
      track.set_uuid(Uuid(GpuTrack(id)));
      track.set_parent_uuid(Uuid(kProcessTrack));
      track.set_name("GPU: " + context.label());
      main_.Send();
    }
  }

  // A counter track (its descriptor written the first time), by what it counts.
  uint64_t CounterTrack(const std::tuple<int, uint32_t, uint32_t, uint32_t>& key, const std::string& name,
                        pb::CounterDescriptor::Unit unit) {
    auto [it, added] = counter_tracks_.try_emplace(key, Uuid(CounterTrackUuid(counter_tracks_.size())));
    if (added) {
      pb::TrackDescriptor& track = main_.Descriptor();
      track.set_uuid(it->second);
      track.set_parent_uuid(Uuid(kProcessTrack));
      track.set_name(name);
      track.mutable_counter()->set_unit(unit);
      main_.Send();
    }
    return it->second;
  }

  // Every kept GPU zone whose thread is known, by thread and then time.
  std::vector<Submit> CollectSubmits() {
    std::vector<Submit> submits;
    uint64_t ordinal = 0;
    for (const auto& [id, context] : model_.gpu_contexts) {
      ++ordinal;
      for (size_t i = 0; i < context.zones.size() && i < kFlowZoneLimit; ++i) {
        const GpuZone& zone = context.zones[i];
        const auto thread = ThreadIndex(zone.thread_id);
        if (!thread || !KeptGpuZone(context, zone)) continue;
        submits.push_back({zone.cpu_begin_tick, Flow(ordinal, i), kNoZone, uint32_t(*thread)});
      }
    }
    std::sort(submits.begin(), submits.end(), [](const Submit& a, const Submit& b) {
      return std::tie(a.thread, a.tick, a.flow_id) < std::tie(b.thread, b.tick, b.flow_id);
    });
    return submits;
  }

  // The kept messages of known threads, by thread and then time; the others (a thread
  // the model does not know) go on the process track.
  std::vector<ThreadMessage> CollectMessages() {
    std::vector<ThreadMessage> messages;
    for (const LogMessage& message : model_.messages) {
      const int64_t ns = Ns(message.tick);
      if (!KeepsThreadId(message.thread_id) || !filter_.Contains(ns)) continue;
      if (const auto thread = ThreadIndex(message.thread_id)) {
        messages.push_back({ns, &message, uint32_t(*thread)});
        continue;
      }
      pb::TrackEvent& event = main_.Event(ns, pb::TrackEvent::TYPE_INSTANT);
      event.set_track_uuid(Uuid(kProcessTrack));
      WriteMessage(main_, event, message);
    }
    std::stable_sort(messages.begin(), messages.end(), [](const ThreadMessage& a, const ThreadMessage& b) {
      return std::tie(a.thread, a.ns) < std::tie(b.thread, b.ns);
    });
    return messages;
  }
  void WriteMessage(Sequence& sequence, pb::TrackEvent& event, const LogMessage& message) {
    event.set_name(message.text);
    Annotate(sequence, event, "severity").set_int_value(message.severity);
    sequence.Send();
  }

  // Gives each submit (in time order) the innermost kept zone of its thread open at its
  // tick, then orders them by that zone, those in none last, still in time order.
  void PlaceSubmits(const ThreadTimeline& thread, std::span<Submit> submits) {
    struct OpenZone {
      uint64_t begin_tick, end_tick, index;
      uint32_t depth;
    };
    std::vector<OpenZone> open;
    size_t next = 0;
    auto place_before = [&](uint64_t tick, bool all) {
      for (; next < submits.size() && (all || submits[next].tick < tick); ++next) {
        Submit& submit = submits[next];
        for (auto it = open.rbegin(); it != open.rend(); ++it) {
          if (it->begin_tick <= submit.tick && submit.tick <= it->end_tick) {
            submit.cpu_zone = it->index;
            break;
          }
        }
      }
    };
    for (size_t i = 0; i < thread.zones.size() && next < submits.size(); ++i) {
      const Zone zone = thread.zones[i];
      place_before(zone.begin_tick, false);
      while (!open.empty() && open.back().depth >= zone.depth) open.pop_back();
      if (KeepsZone(thread, i, zone))
        open.push_back({zone.begin_tick, zone.is_open() ? model_.last_tick : zone.end_tick, i, zone.depth});
    }
    place_before(0, true);
    std::stable_sort(submits.begin(), submits.end(),
                     [](const Submit& a, const Submit& b) { return a.cpu_zone < b.cpu_zone; });
  }

  void WriteThread(size_t thread_index, std::span<Submit> submits, std::span<const ThreadMessage> messages) {
    const ThreadTimeline& thread = model_.threads[thread_index];
    Sequence sequence(writer_, packet_, next_sequence_++, Uuid(ThreadTrack(thread_index)));
    PlaceSubmits(thread, submits);
    size_t placed = 0;  // the next submit placed in a zone
    size_t unplaced =
        std::find_if(submits.begin(), submits.end(), [](const Submit& s) { return s.cpu_zone == kNoZone; }) -
        submits.begin();
    size_t message = 0;
    // Messages, and submits in no kept zone (their flows start at an instant of their
    // own), in time order among the zones' begins and ends.
    SliceTrack* track_of_instants = nullptr;
    auto write_instants_before = [&](int64_t ns) {
      while (true) {
        const int64_t submit_ns =
            unplaced < submits.size() ? Ns(submits[unplaced].tick) : std::numeric_limits<int64_t>::max();
        const int64_t message_ns =
            message < messages.size() ? messages[message].ns : std::numeric_limits<int64_t>::max();
        if (std::min(submit_ns, message_ns) >= ns) break;
        if (message_ns <= submit_ns) {
          WriteMessage(sequence, track_of_instants->Instant(message_ns), *messages[message++].message);
        } else {
          pb::TrackEvent& event = track_of_instants->Instant(submit_ns);
          event.set_name_iid(sequence.Name(kSubmitName));
          event.add_flow_ids(submits[unplaced++].flow_id);
          sequence.Send();
        }
      }
    };
    SliceTrack track(sequence, 0, write_instants_before);
    track_of_instants = &track;
    for (size_t i = 0; i < thread.zones.size(); ++i) {
      const Zone zone = thread.zones[i];
      track.CloseToDepth(zone.depth);
      if (!KeepsZone(thread, i, zone)) continue;
      const uint64_t end_tick = zone.is_open() ? model_.last_tick : zone.end_tick;
      pb::TrackEvent& event = track.Open(Ns(zone.begin_tick), Ns(end_tick), zone.depth);
      const auto attributes = Attributes(thread, i, zone);
      if (attributes && !attributes->name.empty())
        event.set_name_iid(sequence.Name(attributes->name));
      else
        event.set_name_iid(sequence.LocationName(model_, zone.source_location));
      event.set_source_location_iid(sequence.SourceLocation(model_, zone.source_location));
      if (attributes) {
        if (!attributes->text.empty()) Annotate(sequence, event, "text").set_string_value(attributes->text);
        if (attributes->has_value) Annotate(sequence, event, "value").set_uint_value(attributes->value);
      }
      if (zone.is_open()) Annotate(sequence, event, "unfinished").set_bool_value(true);
      for (; placed < submits.size() && submits[placed].cpu_zone <= i; ++placed) {
        if (submits[placed].cpu_zone == i) event.add_flow_ids(submits[placed].flow_id);
      }
      sequence.Send();
    }
    track.CloseAll();
    write_instants_before(std::numeric_limits<int64_t>::max());
  }

  static pb::DebugAnnotation& Annotate(Sequence& sequence, pb::TrackEvent& event, const std::string& name) {
    pb::DebugAnnotation& annotation = *event.add_debug_annotations();
    annotation.set_name_iid(sequence.AnnotationName(name));
    return annotation;
  }

  void WriteGpuContext(const GpuContextTimeline& context, uint64_t ordinal) {
    // Zones are stored as their threads recorded them; the GPU may run them in another
    // order, so they go out sorted by their begin.
    struct Kept {
      int64_t begin_ns, end_ns;
      uint64_t index;
      uint32_t depth;
      TraceModel::MappedGpuZone mapped;
    };
    std::vector<Kept> kept;
    for (size_t i = 0; i < context.zones.size(); ++i) {
      const GpuZone& zone = context.zones[i];
      if (const auto mapped = KeptGpuZone(context, zone))
        kept.push_back(
            {timeline_.Ns(mapped->begin_ns), timeline_.Ns(mapped->end_ns), i, zone.depth, *mapped});
    }
    std::sort(kept.begin(), kept.end(), [](const Kept& a, const Kept& b) {
      return std::tie(a.begin_ns, a.depth, a.index) < std::tie(b.begin_ns, b.depth, b.index);
    });
    Sequence sequence(writer_, packet_, next_sequence_++, Uuid(GpuTrack(context.id)));
    SliceTrack track(sequence, 0);
    for (const Kept& k : kept) {
      const GpuZone& zone = context.zones[k.index];
      track.CloseEndedBy(k.begin_ns);
      pb::TrackEvent& event = track.Open(k.begin_ns, k.end_ns);
      event.set_name_iid(sequence.LocationName(model_, zone.source_location));
      event.set_source_location_iid(sequence.SourceLocation(model_, zone.source_location));
      if (ThreadIndex(zone.thread_id) && k.index < kFlowZoneLimit) event.add_flow_ids(Flow(ordinal, k.index));
      Annotate(sequence, event, "gpu_begin_ticks").set_uint_value(zone.gpu_begin);
      Annotate(sequence, event, "gpu_end_ticks").set_uint_value(zone.gpu_end);
      Annotate(sequence, event, "relative_bound_ns").set_uint_value(k.mapped.relative_ns);
      Annotate(sequence, event, "absolute_bound_ns").set_uint_value(k.mapped.absolute_ns());
      Annotate(sequence, event, "absolute_early_ns").set_uint_value(k.mapped.early_ns);
      Annotate(sequence, event, "absolute_late_ns").set_uint_value(k.mapped.late_ns);
      Annotate(sequence, event, "cpu_to_gpu_latency_ns")
          .set_int_value(k.mapped.begin_ns - model_.clock.TickToNs(zone.cpu_begin_tick));
      // On a timeline of several programs the program's own clock is placed too: its bound
      // adds to the zone's.
      if (const auto host = timeline_.At(k.mapped.begin_ns); host.valid) {
        Annotate(sequence, event, "host_bound_ns").set_uint_value(host.uncertainty_ns);
        Annotate(sequence, event, "timeline_bound_ns")
            .set_uint_value(AddBounds(k.mapped.absolute_ns(), host.uncertainty_ns));
      }
      sequence.Send();
    }
    track.CloseAll();
    kept = {};
    WriteGpuCounters(context);
  }

  // A zone's (or a frame's) counter values from its begin, back to 0 at its end.
  void WriteGpuCounters(const GpuContextTimeline& context) {
    const auto main_frames = model_.frames.find(0);
    for (const CounterSample& sample : context.counter_samples) {
      int64_t begin_ns = 0, end_ns = 0;
      if (sample.target == uint8_t(protocol::CounterTarget::kGpuZone) &&
          sample.target_index < context.zones.size() && context.zones[sample.target_index].is_timed()) {
        const auto mapped = model_.MapGpuZone(context, context.zones[sample.target_index]);
        begin_ns = timeline_.Ns(mapped.begin_ns);
        end_ns = timeline_.Ns(mapped.end_ns);
      } else if (sample.target == uint8_t(protocol::CounterTarget::kFrame) &&
                 main_frames != model_.frames.end() &&
                 size_t(sample.target_index) + 1 < main_frames->second.marks.size()) {
        begin_ns = Ns(main_frames->second.marks[sample.target_index]);
        end_ns = Ns(main_frames->second.marks[sample.target_index + 1]);
      } else {
        continue;  // untimed, or a frame past the last mark
      }
      if (!filter_.Overlaps(begin_ns, end_ns) ||
          size_t(sample.first_value) + sample.value_count > context.counter_values.size())
        continue;
      const auto set = model_.counter_sets.find(sample.set_id);
      for (uint32_t i = 0; i < sample.value_count; ++i) {
        const std::string counter =
            set != model_.counter_sets.end() ? set->second.CounterName(i) : "counter " + std::to_string(i);
        const uint64_t uuid =
            CounterTrack({0, context.id, sample.set_id, i}, context.label() + ": " + counter,
                         pb::CounterDescriptor::UNIT_UNSPECIFIED);
        const double value = NormalizedCounterValue(model_, context, sample, i);
        for (const auto& [ns, point] :
             {std::pair{begin_ns, std::isfinite(value) ? value : 0.0}, {end_ns, 0.0}}) {
          pb::TrackEvent& event = main_.Event(ns, pb::TrackEvent::TYPE_COUNTER);
          event.set_track_uuid(uuid);
          event.set_double_counter_value(point);
          main_.Send();
        }
      }
    }
  }

  void WriteFrames() {
    for (const auto& [id, series] : model_.frames) {
      const std::string name = id == 0                           ? "Frame"
                               : model_.frame_names.contains(id) ? model_.frame_names.at(id)
                                                                 : "Frame " + std::to_string(id);
      // (Lambdas take no structured bindings in Clang 14: copies.)
      const uint64_t uuid = Uuid(FrameTrack(id));
      const std::string track_name = id == 0 ? "Frames" : "Frames: " + name;
      bool described = false;
      SliceTrack track(main_, uuid);
      auto write = [&](uint64_t begin_tick, uint64_t end_tick) {
        const int64_t begin_ns = Ns(begin_tick), end_ns = Ns(end_tick);
        if (!filter_.Overlaps(begin_ns, end_ns)) return;
        if (!described) {
          described = true;
          pb::TrackDescriptor& descriptor = main_.Descriptor();
          descriptor.set_uuid(uuid);
          descriptor.set_parent_uuid(Uuid(kProcessTrack));
          descriptor.set_name(track_name);
          main_.Send();
        }
        track.CloseEndedBy(begin_ns);
        pb::TrackEvent& event = track.Open(begin_ns, end_ns);
        event.set_name_iid(main_.Name(name));
        main_.Send();
      };
      for (size_t i = 1; i < series.marks.size(); ++i) write(series.marks[i - 1], series.marks[i]);
      for (const auto& [begin, end] : series.spans) write(begin, end);
      track.CloseAll();
    }
  }

  // Calls emit(ns, value) for the points of a step counter in the filter's range; the
  // value in force when the range begins comes first, at its beginning.
  template <typename Points, typename Emit>
  void ForEachPointInRange(const Points& points, Emit emit) const {
    bool has_before = false;
    typename Points::value_type::second_type before{};
    for (const auto& [tick, value] : points) {
      const int64_t ns = Ns(tick);
      if (ns < filter_.begin_ns) {
        has_before = true;
        before = value;
        continue;
      }
      if (ns > filter_.end_ns) break;
      if (has_before && ns > filter_.begin_ns) emit(filter_.begin_ns, before);
      has_before = false;
      emit(ns, value);
    }
    if (has_before) emit(filter_.begin_ns, before);
  }

  void WritePlots() {
    for (const auto& [id, plot] : model_.plots) {
      const std::string name = plot.name.empty() ? "plot " + std::to_string(id) : plot.name;
      const uint32_t plot_id = id;
      ForEachPointInRange(plot.points, [&](int64_t ns, double value) {
        const uint64_t uuid = CounterTrack({1, plot_id, 0, 0}, name, pb::CounterDescriptor::UNIT_UNSPECIFIED);
        pb::TrackEvent& event = main_.Event(ns, pb::TrackEvent::TYPE_COUNTER);
        event.set_track_uuid(uuid);
        event.set_double_counter_value(std::isfinite(value) ? value : 0.0);
        main_.Send();
      });
    }
  }

  // Each pool's bytes in use.
  void WriteMemory() {
    for (const auto& [id, pool] : model_.memory_pools) {
      const uint32_t pool_id = id;
      const std::string name = "memory: " + pool.name;
      ForEachPointInRange(MemoryUsage(pool), [&](int64_t ns, uint64_t bytes) {
        const uint64_t uuid = CounterTrack({2, pool_id, 0, 0}, name, pb::CounterDescriptor::UNIT_SIZE_BYTES);
        pb::TrackEvent& event = main_.Event(ns, pb::TrackEvent::TYPE_COUNTER);
        event.set_track_uuid(uuid);
        event.set_counter_value(int64_t(std::min<uint64_t>(bytes, std::numeric_limits<int64_t>::max())));
        main_.Send();
      });
    }
  }

  static inline const std::string kSubmitName = "GPU submit";

  const TraceModel& model_;
  const ProcessTimeline& timeline_;
  const ExportFilter& filter_;
  PacketWriter writer_;
  pb::TracePacket packet_;  // the one packet every sequence fills in turn
  Sequence main_;
  const uint32_t process_;
  const int32_t pid_;
  uint32_t& next_sequence_;
  std::vector<bool> thread_kept_;      // by thread index
  std::vector<int8_t> location_kept_;  // by location index (the last for any past the end); -1: not yet known
  std::map<std::tuple<int, uint32_t, uint32_t, uint32_t>, uint64_t> counter_tracks_;
};

}  // namespace

void WritePerfettoTrace(const TraceModel& model, std::ostream& out, const ExportFilter& filter) {
  WritePerfettoTrace(std::vector<const TraceModel*>{&model}, out, filter);
}

void WritePerfettoTrace(const std::vector<const TraceModel*>& processes, std::ostream& out,
                        const ExportFilter& filter) {
  const std::vector<ProcessTimeline> timelines = ProcessTimeline::Of(processes);
  uint32_t next_sequence = kFirstSequence;
  for (size_t i = 0; i < timelines.size(); ++i) {
    PerfettoWriter(timelines[i], uint32_t(i), out, filter, next_sequence).Write();
  }
}

}  // namespace gnomon::server
