// The Perfetto export's packets (perfetto_export.cpp): framed and written in deflated
// batches (PacketWriter), grouped in sequences that intern their names (Sequence), and
// slices kept nested and in time order on a track (SliceTrack).
#pragma once

#include <zlib.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <ostream>
#include <string>
#include <unordered_map>
#include <vector>

#include "perfetto_trace.pb.h"

namespace gnomon::server::perfetto_packets {

namespace pb = perfetto::protos;

inline constexpr uint8_t kPacketTag = (1 << 3) | 2;  // Trace.packet: field 1, length-delimited
inline constexpr size_t kFlushBytes = 256 << 10;

inline uint64_t Timestamp(int64_t ns) { return ns < 0 ? 0 : uint64_t(ns); }

inline void AppendVarint(std::vector<uint8_t>& out, uint64_t value) {
  for (;; value >>= 7) {
    if (value < 0x80) {
      out.push_back(uint8_t(value));
      return;
    }
    out.push_back(uint8_t(value | 0x80));
  }
}

// Frames each packet as one Trace.packet field, and writes them in batches of about
// 256 KiB, each deflated (zlib) into one TracePacket.compressed_packets, as Perfetto's
// own tracing service does when asked to compress: a zone's begin and end packets take
// tens of bytes, their deflated form a few. A stream that failed is written no more
// (the caller sees its state).
class PacketWriter {
 public:
  explicit PacketWriter(std::ostream& out) : out_(out), buffer_(kFlushBytes) {}
  PacketWriter(const PacketWriter&) = delete;
  PacketWriter& operator=(const PacketWriter&) = delete;
  ~PacketWriter() { Flush(); }

  void Write(const pb::TracePacket& packet) {
    const size_t size = packet.ByteSizeLong();
    const size_t most = 1 + 10 + size;  // tag, varint length, packet
    if (used_ + most > buffer_.size()) Flush();
    if (most > buffer_.size()) buffer_.resize(most);  // one packet larger than the buffer (a long name)
    uint8_t* at = buffer_.data() + used_;
    *at++ = kPacketTag;
    for (uint64_t rest = size;; rest >>= 7) {
      if (rest < 0x80) {
        *at++ = uint8_t(rest);
        break;
      }
      *at++ = uint8_t(rest | 0x80);
    }
    at = packet.SerializeWithCachedSizesToArray(at);
    used_ = size_t(at - buffer_.data());
  }
  void Flush() {
    if (used_ == 0) return;
    if (!out_) {  // the batch goes nowhere; the buffer is free again
      used_ = 0;
      return;
    }
    uLongf deflated = compressBound(uLong(used_));
    deflated_.resize(deflated);
    if (compress2(deflated_.data(), &deflated, buffer_.data(), uLong(used_), kDeflateLevel) != Z_OK) {
      out_.setstate(std::ios::failbit);  // out of memory: say so, as a failed write does
      used_ = 0;
      return;
    }
    // Trace.packet { compressed_packets (field 50, length-delimited) = deflated }
    frame_.clear();
    std::vector<uint8_t> field;
    AppendVarint(field, (50 << 3) | 2);
    AppendVarint(field, deflated);
    frame_.push_back(kPacketTag);
    AppendVarint(frame_, field.size() + deflated);
    frame_.insert(frame_.end(), field.begin(), field.end());
    out_.write(reinterpret_cast<const char*>(frame_.data()), std::streamsize(frame_.size()));
    out_.write(reinterpret_cast<const char*>(deflated_.data()), std::streamsize(deflated));
    used_ = 0;
  }

 private:
  // Fast deflate: most of the gain, a fraction of the time of the default level.
  static constexpr int kDeflateLevel = 1;
  std::ostream& out_;
  std::vector<uint8_t> buffer_;
  size_t used_ = 0;
  std::vector<uint8_t> deflated_;
  std::vector<uint8_t> frame_;
};

// One packet sequence: its id, its default track (0: none), and the names it interned.
// Its first packet clears the incremental state and sets the default; every later one
// needs that state. All sequences share one packet, refilled for each: a caller fills
// what Event() or Descriptor() returns, then calls Send().
class Sequence {
 public:
  Sequence(PacketWriter& writer, pb::TracePacket& packet, uint32_t id, uint64_t default_track)
      : writer_(writer), packet_(packet), id_(id), default_track_(default_track) {}
  Sequence(const Sequence&) = delete;
  Sequence& operator=(const Sequence&) = delete;

  pb::TrackEvent& Event(int64_t ns, pb::TrackEvent::Type type) {
    Prepare();
    packet_.set_timestamp(Timestamp(ns));
    pb::TrackEvent& event = *packet_.mutable_track_event();
    event.Clear();
    event.set_type(type);
    return event;
  }
  pb::TrackDescriptor& Descriptor() {
    Prepare();
    pb::TrackDescriptor& descriptor = *packet_.mutable_track_descriptor();
    descriptor.Clear();
    return descriptor;
  }
  void Send() { writer_.Write(packet_); }

  // Interning ids, for the packet being filled: a value new to the sequence goes into
  // that packet's InternedData.
  uint64_t LocationName(const TraceModel& model, uint32_t location) {
    uint64_t& iid = Slot(location_names_, model, location);
    if (iid == 0) iid = NewName(model.Location(location).name);
    return iid;
  }
  uint64_t Name(const std::string& name) {
    auto [it, added] = names_.try_emplace(name, 0);
    if (added) it->second = NewName(name);
    return it->second;
  }
  uint64_t SourceLocation(const TraceModel& model, uint32_t location) {
    uint64_t& iid = Slot(locations_, model, location);
    if (iid == 0) {
      iid = ++locations_interned_;
      const ::gnomon::server::SourceLocation& where = model.Location(location);
      pb::SourceLocation& entry = *packet_.mutable_interned_data()->add_source_locations();
      entry.set_iid(iid);
      entry.set_file_name(where.file);
      entry.set_function_name(where.function);
      entry.set_line_number(where.line);
    }
    return iid;
  }
  uint64_t AnnotationName(const std::string& name) {
    auto [it, added] = annotation_names_.try_emplace(name, annotation_names_.size() + 1);
    if (added) {
      pb::DebugAnnotationName& entry = *packet_.mutable_interned_data()->add_debug_annotation_names();
      entry.set_iid(it->second);
      entry.set_name(name);
    }
    return it->second;
  }

 private:
  void Prepare() {
    if (!started_) {
      started_ = true;
      packet_.Clear();
      packet_.set_trusted_packet_sequence_id(id_);
      packet_.set_sequence_flags(pb::TracePacket::SEQ_INCREMENTAL_STATE_CLEARED);
      if (default_track_ != 0)
        packet_.mutable_trace_packet_defaults()->mutable_track_event_defaults()->set_track_uuid(
            default_track_);
      Send();
    }
    // Cleared in place: the shared packet keeps its parts for the next.
    packet_.clear_timestamp();
    packet_.clear_interned_data();
    packet_.clear_trace_packet_defaults();
    packet_.set_trusted_packet_sequence_id(id_);
    packet_.set_sequence_flags(pb::TracePacket::SEQ_NEEDS_INCREMENTAL_STATE);
  }
  static uint64_t& Slot(std::vector<uint64_t>& iids, const TraceModel& model, uint32_t location) {
    if (iids.empty()) iids.resize(model.source_locations.size() + 1);
    return iids[std::min<size_t>(location, iids.size() - 1)];  // past the end: "<unknown>"'s slot
  }
  uint64_t NewName(const std::string& name) {
    const uint64_t iid = ++names_interned_;
    pb::EventName& entry = *packet_.mutable_interned_data()->add_event_names();
    entry.set_iid(iid);
    entry.set_name(name);
    return iid;
  }

  PacketWriter& writer_;
  pb::TracePacket& packet_;
  const uint32_t id_;
  const uint64_t default_track_;
  bool started_ = false;
  uint64_t names_interned_ = 0;
  uint64_t locations_interned_ = 0;
  std::vector<uint64_t> location_names_;  // by location index; 0: not yet
  std::vector<uint64_t> locations_;       // the same, for SourceLocation
  std::unordered_map<std::string, uint64_t> names_;
  std::unordered_map<std::string, uint64_t> annotation_names_;
};

// The slices open on one track, innermost last. Events go out in time order and nested,
// even where damaged data has a child outlive its parent or a slice begin before the
// previous one ended: times are clamped to keep them so. Instants from elsewhere join in
// order through `before`, called ahead of each begin and end with its time: it writes
// (with Instant) those that come earlier, inside whatever slice is open then.
class SliceTrack {
 public:
  // track 0: the sequence's default track.
  SliceTrack(Sequence& sequence, uint64_t track, std::function<void(int64_t)> before = nullptr)
      : sequence_(sequence), track_(track), before_(std::move(before)) {}

  bool empty() const { return open_.empty(); }
  // Ends the open slices at `depth` or deeper (zones, which know their depth).
  void CloseToDepth(uint32_t depth) {
    while (!open_.empty() && open_.back().depth >= depth) CloseInnermost();
  }
  // Ends the open slices that end by `ns` (slices placed by their times).
  void CloseEndedBy(int64_t ns) {
    while (!open_.empty() && open_.back().end_ns <= ns) CloseInnermost();
  }
  void CloseAll() {
    while (!open_.empty()) CloseInnermost();
  }
  // A slice's begin event, to fill and Send(); its end goes out when it is closed.
  pb::TrackEvent& Open(int64_t begin_ns, int64_t end_ns, uint32_t depth = 0) {
    begin_ns = std::max(begin_ns, last_ns_);
    if (!open_.empty()) begin_ns = std::min(begin_ns, open_.back().end_ns);
    if (before_) before_(begin_ns);
    end_ns = std::clamp(end_ns, begin_ns, open_.empty() ? std::max(end_ns, begin_ns) : open_.back().end_ns);
    open_.push_back({end_ns, depth});
    return Emit(begin_ns, pb::TrackEvent::TYPE_SLICE_BEGIN);
  }
  // An instant event, to fill and Send().
  pb::TrackEvent& Instant(int64_t ns) {
    ns = std::max(ns, last_ns_);
    if (!open_.empty()) ns = std::min(ns, open_.back().end_ns);
    return Emit(ns, pb::TrackEvent::TYPE_INSTANT);
  }

 private:
  struct OpenSlice {
    int64_t end_ns;
    uint32_t depth;
  };
  void CloseInnermost() {
    const int64_t end_ns = open_.back().end_ns;
    if (before_) before_(end_ns);
    open_.pop_back();
    Emit(end_ns, pb::TrackEvent::TYPE_SLICE_END);
    sequence_.Send();
  }
  pb::TrackEvent& Emit(int64_t ns, pb::TrackEvent::Type type) {
    last_ns_ = std::max(ns, last_ns_);
    pb::TrackEvent& event = sequence_.Event(last_ns_, type);
    if (track_ != 0) event.set_track_uuid(track_);
    return event;
  }

  Sequence& sequence_;
  const uint64_t track_;
  const std::function<void(int64_t)> before_;
  std::vector<OpenSlice> open_;
  int64_t last_ns_ = std::numeric_limits<int64_t>::min();
};

}  // namespace gnomon::server::perfetto_packets
