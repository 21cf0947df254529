// The Perfetto export, read back with the classes generated from its schema as a reader
// (trace_processor) reads it: each sequence's interned names and default track applied.
// Every zone becomes a slice with its name and times, begins and ends pair up on each
// track, GPU zones sit on their queue's track joined by a flow to where they were
// recorded, counters carry values, the filters cut what they cut from the Chrome export,
// and a damaged model exports without harm.
#include "gnomon/server/perfetto_export.h"

#include <doctest/doctest.h>
#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <deque>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "../../support/build_model.h"
#include "../../support/json_check.h"
#include "gnomon/server/chrome_export.h"
#include "gnomon/server/process_timeline.h"
#include "gnomon/server/trace_loader.h"
#include "perfetto_trace.pb.h"

using gnomon::server::ExportFilter;
using gnomon::server::TraceModel;
using gnomon::test::StreamWriter;
namespace pb = perfetto::protos;

namespace {

struct Event {
  uint64_t track = 0;
  pb::TrackEvent::Type type = pb::TrackEvent::TYPE_UNSPECIFIED;
  uint64_t ns = 0;
  std::string name;
  std::vector<uint64_t> flows;
  std::map<std::string, std::string> annotations;  // values as text
  std::string file;                                // of its source location
  double value = 0;                                // counters
};

struct Slice {
  uint64_t begin_ns = 0, end_ns = 0;
  std::string name;
};

struct ReadBack {
  std::map<uint64_t, pb::TrackDescriptor> tracks;  // by uuid
  std::vector<Event> events;                       // in file order
  std::map<uint64_t, std::vector<Slice>> slices;   // by track, in begin order

  std::vector<Event> Of(pb::TrackEvent::Type type, const std::string& track_kind) const {
    std::vector<Event> found;
    for (const Event& e : events) {
      if (e.type == type && KindOf(e.track) == track_kind) found.push_back(e);
    }
    return found;
  }
  // "process", "thread", "counter", or "other" (GPU queues and frames, named tracks).
  std::string KindOf(uint64_t uuid) const {
    const pb::TrackDescriptor& track = tracks.at(uuid);
    return track.has_process()   ? "process"
           : track.has_thread()  ? "thread"
           : track.has_counter() ? "counter"
                                 : "other";
  }
  std::vector<const pb::TrackDescriptor*> Named(const std::string& prefix) const {
    std::vector<const pb::TrackDescriptor*> found;
    for (const auto& [uuid, track] : tracks) {
      if (track.name().starts_with(prefix)) found.push_back(&track);
    }
    return found;
  }
};

// Parses `bytes` as a Trace and checks what any reader relies on: sequence flags,
// interning, descriptors before use, and on each track events in time order with
// every end matching a begin.
// The packets of a trace whose packets all come in deflated batches
// (TracePacket.compressed_packets), in order, as Perfetto's readers unpack them.
pb::Trace Unpack(const std::string& bytes) {
  pb::Trace outer;
  REQUIRE(outer.ParseFromString(bytes));
  pb::Trace trace;
  for (const pb::TracePacket& batch : outer.packet()) {
    REQUIRE(batch.has_compressed_packets());
    const std::string& deflated = batch.compressed_packets();
    z_stream stream{};
    REQUIRE(inflateInit(&stream) == Z_OK);
    stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(deflated.data()));
    stream.avail_in = uInt(deflated.size());
    std::string inflated;
    int status = Z_OK;
    while (status == Z_OK) {
      char piece[1 << 16];
      stream.next_out = reinterpret_cast<Bytef*>(piece);
      stream.avail_out = sizeof(piece);
      status = inflate(&stream, Z_NO_FLUSH);
      inflated.append(piece, sizeof(piece) - stream.avail_out);
    }
    inflateEnd(&stream);
    REQUIRE(status == Z_STREAM_END);
    pb::Trace part;
    REQUIRE(part.ParseFromString(inflated));
    for (const pb::TracePacket& packet : part.packet()) *trace.add_packet() = packet;
  }
  return trace;
}

ReadBack Read(const std::string& bytes) {
  const pb::Trace trace = Unpack(bytes);
  struct SequenceState {
    uint64_t default_track = 0;
    std::map<uint64_t, std::string> names, annotation_names, files;
  };
  std::map<uint32_t, SequenceState> sequences;
  std::map<uint64_t, std::vector<size_t>> open;  // by track: indices in slices[track]
  std::map<uint64_t, uint64_t> last_ns;
  ReadBack read;
  for (const pb::TracePacket& packet : trace.packet()) {
    REQUIRE(packet.has_trusted_packet_sequence_id());
    const uint32_t id = packet.trusted_packet_sequence_id();
    CHECK(id != 0);
    const bool first = !sequences.contains(id);
    SequenceState& sequence = sequences[id];
    CHECK(packet.sequence_flags() == (first ? pb::TracePacket::SEQ_INCREMENTAL_STATE_CLEARED
                                            : pb::TracePacket::SEQ_NEEDS_INCREMENTAL_STATE));
    if (packet.has_trace_packet_defaults()) {
      CHECK(first);
      sequence.default_track = packet.trace_packet_defaults().track_event_defaults().track_uuid();
    }
    const pb::InternedData& interned = packet.interned_data();
    for (const pb::EventName& name : interned.event_names())
      CHECK(sequence.names.emplace(name.iid(), name.name()).second);
    for (const pb::DebugAnnotationName& name : interned.debug_annotation_names())
      CHECK(sequence.annotation_names.emplace(name.iid(), name.name()).second);
    for (const pb::SourceLocation& location : interned.source_locations())
      CHECK(sequence.files.emplace(location.iid(), location.file_name()).second);
    if (packet.has_track_descriptor()) {
      const pb::TrackDescriptor& track = packet.track_descriptor();
      CHECK(track.uuid() != 0);
      CHECK(read.tracks.emplace(track.uuid(), track).second);
      if (track.has_parent_uuid()) CHECK(read.tracks.contains(track.parent_uuid()));
    }
    if (!packet.has_track_event()) continue;
    const pb::TrackEvent& te = packet.track_event();
    Event e;
    e.track = te.has_track_uuid() ? te.track_uuid() : sequence.default_track;
    REQUIRE_MESSAGE(read.tracks.contains(e.track), "an event on track ", e.track, " before its descriptor");
    e.type = te.type();
    e.ns = packet.timestamp();
    if (te.has_name_iid()) {
      REQUIRE_MESSAGE(sequence.names.contains(te.name_iid()), "name iid ", te.name_iid(), " not interned");
      e.name = sequence.names[te.name_iid()];
    } else {
      e.name = te.name();
    }
    if (te.has_source_location_iid()) {
      REQUIRE(sequence.files.contains(te.source_location_iid()));
      e.file = sequence.files[te.source_location_iid()];
    }
    e.flows.assign(te.flow_ids().begin(), te.flow_ids().end());
    for (const pb::DebugAnnotation& a : te.debug_annotations()) {
      REQUIRE(sequence.annotation_names.contains(a.name_iid()));
      e.annotations[sequence.annotation_names[a.name_iid()]] =
          a.has_string_value() ? a.string_value()
          : a.has_bool_value() ? std::to_string(a.bool_value())
          : a.has_int_value()  ? std::to_string(a.int_value())
                               : std::to_string(a.uint_value());
    }
    e.value = te.has_double_counter_value() ? te.double_counter_value() : double(te.counter_value());
    const bool is_counter_track = read.tracks.at(e.track).has_counter();
    CHECK(is_counter_track == (e.type == pb::TrackEvent::TYPE_COUNTER));
    if (!is_counter_track) {
      CHECK_MESSAGE(e.ns >= last_ns[e.track], "track ", e.track, " goes back in time");
      last_ns[e.track] = e.ns;
    }
    if (e.type == pb::TrackEvent::TYPE_SLICE_BEGIN) {
      open[e.track].push_back(read.slices[e.track].size());
      read.slices[e.track].push_back({e.ns, 0, e.name});
    } else if (e.type == pb::TrackEvent::TYPE_SLICE_END) {
      REQUIRE_MESSAGE(!open[e.track].empty(), "an end without a begin on track ", e.track);
      read.slices[e.track][open[e.track].back()].end_ns = e.ns;
      open[e.track].pop_back();
    }
    read.events.push_back(std::move(e));
  }
  for (const auto& [track, indices] : open) {
    const uint64_t uuid = track;  // (doctest's messages are lambdas, which take no bindings in Clang 14)
    CHECK_MESSAGE(indices.empty(), "track ", uuid, " left open");
  }
  return read;
}

std::string Export(const TraceModel& model, const ExportFilter& filter = {}) {
  std::ostringstream out;
  gnomon::server::WritePerfettoTrace(model, out, filter);
  return out.str();
}

TraceModel Load(const std::string& name) {
  TraceModel model;
  auto loaded = gnomon::server::LoadTrace(std::string(GNOMON_DATA_DIR) + "/" + name, model);
  REQUIRE_MESSAGE(loaded.ok(), loaded.status().message());
  return model;
}

// The Chrome export's events of one category (or of none: "").
std::vector<gnomon::test::JsonValue> ChromeEvents(const TraceModel& model, const std::string& ph,
                                                  const std::string& category) {
  std::ostringstream out;
  gnomon::server::WriteChromeTrace(model, out);
  gnomon::test::JsonValue root;
  std::string error;
  REQUIRE_MESSAGE(gnomon::test::ParseJson(out.str(), root, error), error);
  std::vector<gnomon::test::JsonValue> found;
  for (const auto& e : root.Find("traceEvents")->array) {
    const auto* cat = e.Find("cat");
    if (e.Find("ph")->string == ph && (cat ? cat->string : "") == category) found.push_back(e);
  }
  return found;
}

}  // namespace

TEST_CASE("perfetto: every zone of a capture is a slice with its name and times, on its thread's track") {
  const TraceModel model = Load("h200_vulkan_demo.gnomon");
  const ReadBack read = Read(Export(model));

  const auto& process = read.tracks.at(1);
  CHECK(process.process().pid() == int32_t(model.program.pid));
  CHECK(process.process().process_name() == model.program.name);
  size_t zones = 0;
  for (const auto& thread : model.threads) {
    const pb::TrackDescriptor* track = nullptr;
    for (const auto& [uuid, t] : read.tracks) {
      if (t.has_thread() && t.thread().thread_name() == thread.name) track = &t;
    }
    REQUIRE_MESSAGE(track != nullptr, thread.name);
    CHECK(track->thread().pid() == int32_t(model.program.pid));
    CHECK(track->thread().tid() == int32_t(thread.os_thread_id));
    CHECK(track->parent_uuid() == 1);
    // The slices, in begin order, are the zones: names and times as the Chrome export's.
    const std::vector<Slice>& slices = read.slices.at(track->uuid());
    REQUIRE(slices.size() == thread.zones.size());
    for (size_t i = 0; i < slices.size(); ++i) {
      const auto zone = thread.zones[i];
      CHECK(slices[i].name == model.ZoneName(thread, i));
      CHECK(int64_t(slices[i].begin_ns) == model.RelativeNs(zone.begin_tick));
      CHECK(int64_t(slices[i].end_ns) == model.RelativeNs(zone.end_tick));
    }
    zones += slices.size();
  }
  CHECK(zones == model.zone_count);
  CHECK(read.Of(pb::TrackEvent::TYPE_SLICE_BEGIN, "thread").size() == model.zone_count);
  for (const Event& e : read.Of(pb::TrackEvent::TYPE_SLICE_BEGIN, "thread"))
    CHECK(e.file.ends_with("vulkan_demo.cpp"));

  // A frame slice per frame, on a frame track of its own.
  const auto frames = read.Named("Frames");
  REQUIRE(frames.size() == 1);
  CHECK(read.slices.at(frames[0]->uuid()).size() == model.frames.at(0).marks.size() - 1);
}

TEST_CASE(
    "perfetto: GPU zones are on their queue's track, each with a flow from a zone of the thread that "
    "recorded it") {
  const TraceModel model = Load("h200_vulkan_demo.gnomon");
  const ReadBack read = Read(Export(model));
  REQUIRE(model.gpu_contexts.size() == 1);
  const auto& context = model.gpu_contexts.begin()->second;
  size_t timed = 0;
  for (size_t i = 0; i < context.zones.size(); ++i) timed += context.zones[i].is_timed();
  REQUIRE(timed > 0);

  const auto queues = read.Named("GPU: ");
  REQUIRE(queues.size() == 1);
  CHECK(queues[0]->name() == "GPU: " + context.label());
  CHECK(queues[0]->parent_uuid() == 1);
  std::vector<Event> gpu;
  for (const Event& e : read.events) {
    if (e.track == queues[0]->uuid() && e.type == pb::TrackEvent::TYPE_SLICE_BEGIN) gpu.push_back(e);
  }
  CHECK(gpu.size() == timed);
  CHECK(read.slices.at(queues[0]->uuid()).size() == timed);

  std::map<uint64_t, const Event*> cpu_side;  // flow id -> the CPU event it leaves from
  for (const Event& e : read.events) {
    if (read.KindOf(e.track) != "thread") continue;
    for (uint64_t flow : e.flows) CHECK(cpu_side.emplace(flow, &e).second);
  }
  std::set<uint64_t> gpu_flows;
  size_t on_zones = 0;
  for (const Event& e : gpu) {
    CHECK(!e.name.empty());
    CHECK(e.annotations.contains("cpu_to_gpu_latency_ns"));
    REQUIRE(e.flows.size() == 1);
    CHECK(gpu_flows.insert(e.flows[0]).second);
    REQUIRE_MESSAGE(cpu_side.contains(e.flows[0]), "flow ", e.flows[0], " has no CPU end");
    const Event& cpu = *cpu_side.at(e.flows[0]);
    // Recorded before the GPU ran it: the CPU end is no later than the GPU zone's begin.
    CHECK(cpu.ns <= e.ns);
    on_zones += cpu.type == pb::TrackEvent::TYPE_SLICE_BEGIN;
  }
  CHECK(cpu_side.size() == gpu_flows.size());
  // The demo records its GPU work inside zones: every flow leaves from one.
  CHECK(on_zones == gpu.size());
}

TEST_CASE("perfetto: names, text, messages, plots, memory and frames of a small trace") {
  StreamWriter w;
  w.AppInfo("reporter", 5).SourceLocation(1, "Load", "load", "io.cpp", 3);
  w.SourceLocation(2, "Parse", "parse", "io.cpp", 9).ThreadInfo(1, 11, "io thread").ThreadContext(1);
  w.ZoneBegin(1, 1000).ZoneBegin(2, 2000).ZoneText("tab\there").ZoneValue(7).ZoneEnd(5000);
  w.ZoneBegin(2, 6000).ZoneName("Parse again").ZoneEnd(7000).ZoneEnd(9000);
  w.ZoneBegin(1, 9100);  // never ends
  w.Frame(gnomon::protocol::MessageType::kFrameMark, 0, 1000)
      .Frame(gnomon::protocol::MessageType::kFrameMark, 0, 9000);
  w.String(4, gnomon::protocol::StringKind::kPlotName, "queue depth").Plot(4, 3000, 1.5);
  w.Alloc(0, 0x1000, 4096, 3500).Free(0, 0x1000, 4500);
  w.Message(4000, 4, "disk \"full\"\n").End(9500);
  const TraceModel model = gnomon::test::BuildModel(w);
  const ReadBack read = Read(Export(model));

  const auto slices = read.Of(pb::TrackEvent::TYPE_SLICE_BEGIN, "thread");
  REQUIRE(slices.size() == 4);
  CHECK(slices[0].name == "Load");
  CHECK(slices[1].name == "Parse");
  CHECK(slices[1].annotations.at("text") == "tab\there");
  CHECK(slices[1].annotations.at("value") == "7");
  CHECK(slices[1].file == "io.cpp");
  CHECK(slices[2].name == "Parse again");
  CHECK(slices[3].annotations.at("unfinished") == "1");
  const auto& thread_slices = read.slices.at(slices[0].track);
  CHECK(thread_slices[1].begin_ns == 1000);  // from the first event, at 1,000
  CHECK(thread_slices[1].end_ns == 4000);
  CHECK(thread_slices[3].end_ns == 8500);  // unfinished: to the trace's end

  const auto messages = read.Of(pb::TrackEvent::TYPE_INSTANT, "thread");
  REQUIRE(messages.size() == 1);
  CHECK(messages[0].name == "disk \"full\"\n");
  CHECK(messages[0].ns == 3000);
  CHECK(messages[0].track == slices[0].track);
  CHECK(messages[0].annotations.at("severity") == "4");

  const auto plot = read.Named("queue depth");
  REQUIRE(plot.size() == 1);
  std::vector<double> plot_values, bytes;
  for (const Event& e : read.events) {
    if (e.track == plot[0]->uuid()) plot_values.push_back(e.value);
  }
  CHECK(plot_values == std::vector<double>{1.5});
  const auto pool = read.Named("memory: ");
  REQUIRE(pool.size() == 1);
  CHECK(pool[0]->counter().unit() == pb::CounterDescriptor::UNIT_SIZE_BYTES);
  for (const Event& e : read.events) {
    if (e.track == pool[0]->uuid()) bytes.push_back(e.value);
  }
  CHECK(bytes == std::vector<double>{4096, 0});
  CHECK(read.slices.at(read.Named("Frames")[0]->uuid()).size() == 1);
}

TEST_CASE("perfetto: GPU counters, plots and memory carry as many values as in the Chrome export") {
  for (const char* file : {"lavapipe_vulkan_counters.gnomon", "cuda-h200-memory.gnomon"}) {
    CAPTURE(file);
    const TraceModel model = Load(file);
    const ReadBack read = Read(Export(model));
    size_t gpu_counters = 0, plots = 0, memory = 0;
    bool some_nonzero = false;
    for (const Event& e : read.Of(pb::TrackEvent::TYPE_COUNTER, "counter")) {
      const std::string& name = read.tracks.at(e.track).name();
      if (name.starts_with("memory: ")) {
        ++memory;
      } else if (model.plots.empty() || std::none_of(model.plots.begin(), model.plots.end(),
                                                     [&](const auto& p) { return p.second.name == name; })) {
        ++gpu_counters;
        some_nonzero |= e.value != 0;
      } else {
        ++plots;
      }
    }
    CHECK(gpu_counters == ChromeEvents(model, "C", "counter").size());
    CHECK(memory == ChromeEvents(model, "C", "memory").size());
    CHECK(plots == ChromeEvents(model, "C", "").size());
    CHECK(gpu_counters + memory > 0);
    if (gpu_counters > 0) CHECK(some_nonzero);
  }
}

TEST_CASE("perfetto: the range, the threads and the zone filter cut what they say") {
  StreamWriter w;
  w.AppInfo("filtered", 3).SourceLocation(1, "Load", "load", "io.cpp", 1);
  w.SourceLocation(2, "Parse", "parse", "io.cpp", 2).SourceLocation(3, "Draw", "draw", "gfx.cpp", 3);
  w.ThreadInfo(1, 11, "io").ThreadInfo(2, 12, "render");
  // From the first event (1,000): Load 0-2,000, Parse 4,000-5,000 and a message at
  // 4,500 on "io"; Draw 1,000-7,000 on "render"; a plot value at 3,000.
  w.ThreadContext(1).ZoneBegin(1, 1000).ZoneEnd(3000).ZoneBegin(2, 5000).ZoneEnd(6000).Message(5500, 2,
                                                                                               "parsed");
  w.ThreadContext(2).ZoneBegin(3, 2000).ZoneEnd(8000);
  w.String(9, gnomon::protocol::StringKind::kPlotName, "load").Plot(9, 4000, 1.0).End(9000);
  const TraceModel model = gnomon::test::BuildModel(w);
  struct Kept {
    std::multiset<std::string> zones, threads;
    size_t messages = 0, plot_values = 0;
  };
  auto kept = [&](const std::string& range, const std::string& threads, const std::string& zones) {
    ExportFilter filter;
    if (!range.empty()) REQUIRE(filter.ParseRange(range).empty());
    filter.ParseThreads(threads);
    filter.zones = zones;
    const ReadBack read = Read(Export(model, filter));
    Kept k;
    for (const Event& e : read.Of(pb::TrackEvent::TYPE_SLICE_BEGIN, "thread")) k.zones.insert(e.name);
    for (const auto& [uuid, track] : read.tracks) {
      if (track.has_thread()) k.threads.insert(track.thread().thread_name());
    }
    k.messages = read.Of(pb::TrackEvent::TYPE_INSTANT, "thread").size();
    k.plot_values = read.Of(pb::TrackEvent::TYPE_COUNTER, "counter").size();
    return k;
  };
  const Kept all = kept("", "", "");
  CHECK(all.zones == std::multiset<std::string>{"Load", "Parse", "Draw"});
  CHECK(all.threads == std::multiset<std::string>{"io", "render"});
  CHECK(all.messages == 1);
  CHECK(all.plot_values == 1);
  // 2,500 to 4,500 ns: Load is before it; the message at its very end is in.
  const Kept range = kept("0.0025:0.0045", "", "");
  CHECK(range.zones == std::multiset<std::string>{"Parse", "Draw"});
  CHECK(range.messages == 1);
  CHECK(range.plot_values == 1);
  CHECK(kept(":0.0005", "", "").zones == std::multiset<std::string>{"Load"});
  CHECK(kept("0.0065:", "", "").plot_values == 1);  // the value set before the range holds in it
  CHECK(kept(":0.0025", "", "").plot_values == 0);
  const Kept render = kept("", "render", "");
  CHECK(render.zones == std::multiset<std::string>{"Draw"});
  CHECK(render.threads == std::multiset<std::string>{"render"});
  CHECK(render.messages == 0);
  CHECK(render.plot_values == 1);
  CHECK(kept("", "11,nobody", "").zones == std::multiset<std::string>{"Load", "Parse"});
  CHECK(kept("", "", "PAR").zones == std::multiset<std::string>{"Parse"});
}

TEST_CASE("perfetto: filters on a capture keep the zones they say, and GPU flows keep a CPU end") {
  const TraceModel model = Load("h200_vulkan_demo.gnomon");
  const auto& thread = model.threads.at(0);
  // Only "Record" zones: GPU zones recorded inside them keep their flow from them; those
  // recorded elsewhere start at an instant.
  ExportFilter record;
  record.zones = "record";
  ReadBack read = Read(Export(model, record));
  size_t expected = 0;
  for (size_t i = 0; i < thread.zones.size(); ++i) expected += model.ZoneName(thread, i) == "Record";
  const auto begins = read.Of(pb::TrackEvent::TYPE_SLICE_BEGIN, "thread");
  CHECK(begins.size() == expected);
  for (const Event& e : begins) CHECK(e.name == "Record");
  std::set<uint64_t> cpu_flows;
  for (const Event& e : read.events) {
    if (read.KindOf(e.track) == "thread") cpu_flows.insert(e.flows.begin(), e.flows.end());
  }
  for (const Event& e : read.Of(pb::TrackEvent::TYPE_SLICE_BEGIN, "other")) {
    if (!read.tracks.at(e.track).name().starts_with("GPU: ")) continue;
    CHECK(e.name.find("ecord") != std::string::npos);  // the filter holds for GPU zones too
    for (uint64_t flow : e.flows) CHECK(cpu_flows.contains(flow));
  }

  // A range: only the zones that overlap it, whole.
  ExportFilter middle;
  REQUIRE(middle.ParseRange("100:200").empty());
  read = Read(Export(model, middle));
  expected = 0;
  for (size_t i = 0; i < thread.zones.size(); ++i) {
    const auto zone = thread.zones[i];
    expected += middle.Overlaps(model.RelativeNs(zone.begin_tick), model.RelativeNs(zone.end_tick));
  }
  REQUIRE(expected > 0);
  CHECK(expected < thread.zones.size());
  size_t slices = 0;
  for (const auto& [uuid, list] : read.slices) {
    if (read.KindOf(uuid) != "thread") continue;
    for (const Slice& s : list) {
      ++slices;
      CHECK(middle.Overlaps(int64_t(s.begin_ns), int64_t(s.end_ns)));
    }
  }
  CHECK(slices == expected);
}

TEST_CASE("perfetto: an empty or damaged model exports without harm") {
  SUBCASE("empty") {
    const ReadBack read = Read(Export(TraceModel()));
    CHECK(read.tracks.size() == 1);  // the process
    CHECK(read.events.empty());
  }
  SUBCASE("damaged by hand") {
    TraceModel model;
    model.first_tick = 100;
    model.last_tick = 400;
    gnomon::server::ThreadTimeline thread;
    thread.id = 1;  // no OS id
    // A location past the table; a child that outlives its parent; a zone that begins
    // before the one before it ended; an open zone far deeper than its parent.
    thread.zones.push_back({100, 200, 999, 0, 0});
    thread.zones.push_back({150, 300, 0, 1, 0});
    thread.zones.push_back({120, 130, 0, 0, 0});
    thread.zones.push_back({140, gnomon::server::kOpenZone, 0, 9, 0});
    model.threads.push_back(std::move(thread));
    model.thread_index[1] = 0;
    model.thread_index[2] = 57;  // an index past the threads
    gnomon::server::GpuContextTimeline context;
    context.id = 7;
    gnomon::server::GpuZone zone;
    zone.gpu_begin = 1000;
    zone.gpu_end = 500;  // ends before it begins
    zone.thread_id = 2;
    zone.source_location = 12345;
    context.zones.push_back(zone);
    zone.thread_id = 1;
    context.zones.push_back(zone);
    context.counter_samples.push_back({99, 0, 10, 5, uint8_t(gnomon::protocol::CounterTarget::kGpuZone), 0});
    context.counter_samples.push_back({99, 77, 0, 1, uint8_t(gnomon::protocol::CounterTarget::kFrame), 0});
    model.gpu_contexts.emplace(7, std::move(context));
    model.messages.push_back({150, 77, 9, "from nowhere"});
    model.frames[0].marks = {300, 200, 100};
    model.frames[5].spans = {{350, 50}, {10, 20}};
    model.plots[1].points = {{120, std::nan("")}, {110, 2.0}};
    const ReadBack read = Read(Export(model));
    CHECK(read.Of(pb::TrackEvent::TYPE_SLICE_BEGIN, "thread").size() == 4);
    CHECK(read.Named("GPU: ").size() == 1);
  }
  SUBCASE("a capture cut short") {
    std::ifstream file(std::string(GNOMON_DATA_DIR) + "/h200_vulkan_demo.gnomon", std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
    REQUIRE(bytes.size() > 1000);
    TraceModel model;
    (void)gnomon::server::LoadTrace(
        gnomon::server::TraceSource::FromBytes(reinterpret_cast<const uint8_t*>(bytes.data()),
                                               bytes.size() / 2, "half a capture"),
        model);
    const ReadBack read = Read(Export(model));
    CHECK(read.Of(pb::TrackEvent::TYPE_SLICE_BEGIN, "thread").size() == model.zone_count);
  }
}

TEST_CASE("perfetto: a stream that cannot be written is left failed, not written on") {
  const TraceModel model = Load("h200_vulkan_demo.gnomon");
  std::ostringstream out;
  out.setstate(std::ios::badbit);
  gnomon::server::WritePerfettoTrace(model, out);
  CHECK(!out);
  CHECK(out.str().empty());
}

TEST_CASE("several programs: each a process of its own pid, placed on the capture's clock by its exchanges") {
  // The same program twice; the second's clock runs 1,000 s ahead of the capture's, as
  // its one clock exchange says: the first (no exchanges) stays on its own clock.
  const TraceModel first = Load("golden/format4-zones.gnomon");
  TraceModel ahead = Load("golden/format4-zones.gnomon");
  constexpr uint64_t kAhead = 1'000'000'000'000;
  const uint64_t program_ns = uint64_t(ahead.clock.TickToNs(ahead.first_tick));
  REQUIRE(program_ns > kAhead);
  // offset in [t1 - t2, t4 - t3] = [-1000 s - 10 ns, -1000 s + 25 ns]: its middle, -1000 s + 7.5 ns.
  ahead.host_clock_exchanges.push_back(
      {program_ns - kAhead - 10, program_ns, program_ns + 5, program_ns - kAhead + 30});
  const std::vector<const TraceModel*> both{&first, &ahead};

  // Chrome: the second program's events come first, 1,000 s before the first's.
  std::ostringstream chrome;
  gnomon::server::WriteChromeTrace(both, chrome);
  gnomon::test::JsonValue root;
  std::string error;
  REQUIRE_MESSAGE(gnomon::test::ParseJson(chrome.str(), root, error), error);
  std::map<int64_t, double> earliest_us;  // by pid
  std::map<int64_t, std::string> names;
  for (const auto& e : root.Find("traceEvents")->array) {
    const int64_t pid = int64_t(e.Find("pid")->number);
    if (e.Find("ph")->string == "M" && e.Find("name")->string == "process_name")
      names[pid] = e.Find("args")->Find("name")->string;
    if (e.Find("ph")->string != "X" || e.Find("cat")->string != "zone") continue;
    const double ts = e.Find("ts")->number;
    earliest_us[pid] = earliest_us.contains(pid) ? std::min(earliest_us[pid], ts) : ts;
  }
  REQUIRE(earliest_us.size() == 2);
  const int64_t pid = first.program.pid, other = 0x400000;  // the same pid: the first number past pid_max
  REQUIRE(earliest_us.contains(other));
  CHECK(names[pid].starts_with("gnomon-test-program (pid "));
  int64_t first_zone_ns = INT64_MAX;
  for (const auto& thread : first.threads) {
    if (thread.zones.size() > 0)
      first_zone_ns = std::min(first_zone_ns, first.RelativeNs(thread.zones[0].begin_tick));
  }
  const double first_zone_us = double(first_zone_ns) / 1e3;
  CHECK(std::fabs(earliest_us[other] - first_zone_us) < 0.01);
  CHECK(std::fabs(earliest_us[pid] - earliest_us[other] - 1e9) < 0.01);  // 1,000 s, within 7.5 ns

  // Perfetto: two process tracks, their threads under them, the same placement.
  const std::ostringstream perfetto = [&] {
    std::ostringstream out;
    gnomon::server::WritePerfettoTrace(both, out);
    return out;
  }();
  const ReadBack read = Read(perfetto.str());
  std::map<int32_t, uint64_t> earliest_ns;  // by pid
  std::set<uint64_t> processes;
  for (const auto& [uuid, track] : read.tracks) {
    if (track.has_process()) processes.insert(uuid);
    if (!track.has_thread() || !read.slices.contains(uuid)) continue;
    const int32_t thread_pid = track.thread().pid();
    const uint64_t begin = read.slices.at(uuid).front().begin_ns;
    earliest_ns[thread_pid] =
        earliest_ns.contains(thread_pid) ? std::min(earliest_ns[thread_pid], begin) : begin;
  }
  CHECK(processes.size() == 2);
  REQUIRE(earliest_ns.size() == 2);
  CHECK(std::llabs(int64_t(earliest_ns[int32_t(pid)] - earliest_ns[int32_t(other)]) - int64_t(kAhead)) <= 8);
  CHECK(read.Of(pb::TrackEvent::TYPE_SLICE_BEGIN, "thread").size() == 2 * first.zone_count);
}

TEST_CASE("several programs: a GPU zone's bound on the timeline adds its program's host clock bound") {
  // The H200 demo twice; the second with one clock exchange whose round trip is 35 ns
  // longer than the program's handling: a host bound of 17 ns.
  const TraceModel first = Load("h200_vulkan_demo.gnomon");
  TraceModel placed = Load("h200_vulkan_demo.gnomon");
  REQUIRE(!placed.gpu_contexts.empty());
  const uint64_t program_ns = uint64_t(placed.clock.TickToNs(placed.first_tick));
  placed.host_clock_exchanges.push_back({program_ns - 10, program_ns, program_ns + 5, program_ns + 30});
  const std::vector<const TraceModel*> both{&first, &placed};
  const int64_t other = 0x400000;  // the same pid twice: the second gets the first number past pid_max

  std::ostringstream chrome;
  gnomon::server::WriteChromeTrace(both, chrome);
  gnomon::test::JsonValue root;
  std::string error;
  REQUIRE_MESSAGE(gnomon::test::ParseJson(chrome.str(), root, error), error);
  size_t with_host = 0, without = 0;
  for (const auto& e : root.Find("traceEvents")->array) {
    if (e.Find("ph")->string != "X" || e.Find("cat")->string != "gpu") continue;
    const auto* args = e.Find("args");
    if (int64_t(e.Find("pid")->number) != other) {
      without += args->Find("host_bound_ns") == nullptr;  // on its own clock: nothing to add
      continue;
    }
    REQUIRE(args->Find("host_bound_ns") != nullptr);
    CHECK(args->Find("host_bound_ns")->number >= 17);
    CHECK(args->Find("timeline_bound_ns")->number ==
          args->Find("absolute_bound_ns")->number + args->Find("host_bound_ns")->number);
    ++with_host;
  }
  CHECK(with_host > 0);
  CHECK(without == with_host);

  std::ostringstream perfetto;
  gnomon::server::WritePerfettoTrace(both, perfetto);
  const ReadBack read = Read(perfetto.str());
  size_t annotated = 0;
  for (const Event& e : read.Of(pb::TrackEvent::TYPE_SLICE_BEGIN, "other")) {
    if (!e.annotations.contains("timeline_bound_ns")) continue;
    CHECK(std::stoull(e.annotations.at("timeline_bound_ns")) ==
          std::stoull(e.annotations.at("absolute_bound_ns")) +
              std::stoull(e.annotations.at("host_bound_ns")));
    ++annotated;
  }
  CHECK(annotated == with_host);
}

TEST_CASE("several programs: 1,100 without a pid each get a number of their own") {
  std::deque<TraceModel> models(1100);
  std::vector<const TraceModel*> programs;
  for (const TraceModel& m : models) programs.push_back(&m);
  const auto timelines = gnomon::server::ProcessTimeline::Of(programs);
  std::set<uint32_t> pids;
  for (const auto& timeline : timelines) pids.insert(timeline.pid());
  CHECK(pids.size() == models.size());
}
