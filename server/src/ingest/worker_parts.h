// The worker's parts (worker.cpp: its connection and handshake; worker_receive.cpp: the
// main connection's loop and the merge of the connections into one stream;
// worker_lanes.cpp: the lanes) share these: the handlers that decode what a connection
// receives, and how a model is built from the merged stream.

// (The words "lane", "piece", "turn", "run" and "goodbye": worker.h.)
#pragma once

#include <array>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include "gnomon/protocol/messages.h"
#include "gnomon/server/text.h"
#include "gnomon/server/worker.h"
#include "ingest/stream_decoder.h"
#include "model/trace_builder.h"

namespace gnomon::server {
namespace ingest {

using Clock = std::chrono::steady_clock;

constexpr size_t kReceiveBufferBytes = 4u << 20;
// Bytes received while readers held the model, kept for when they let go; past this
// the receiving thread waits for them.
constexpr size_t kMaxBacklogBytes = 64u << 20;
constexpr int kPollMs = 200;
constexpr auto kHandshakeTimeout = std::chrono::seconds(3);

// The host clock exchanges of a live connection: the program's ClockReplies, kept for
// the worker to answer with its ClockSamples; and the refusal of a ClockSample the
// program itself sent (only a capture writes one).
struct ClockExchanges {
  std::vector<protocol::ClockReply> replies;
  bool writing_samples = false;  // the worker is decoding its own ClockSamples
  const char* Refuse(uint8_t type) const {
    if (writing_samples) return nullptr;
    if (type == uint8_t(protocol::MessageType::kClockSample))
      return "the program sent a ClockSample, which only a capture writes (a program that lies about its "
             "clock)";
    if (type == uint8_t(protocol::MessageType::kCaptureClock))
      return "the program sent a CaptureClock, which only a capture writes (a program that lies about the "
             "capture's clock)";
    return nullptr;
  }
};

// Counts what a capture needs for its progress line without building a model.
struct CountingHandler : ClockExchanges {
  uint64_t zones = 0;
  uint64_t dropped = 0;
  bool ended = false;
  std::string program_name;
  std::optional<uint32_t> context;  // the thread of the last ThreadContext
  // The packed field copied first: the optional would bind a reference to it.
  void OnThreadContext(const protocol::ThreadContext& m) { context = uint32_t{m.thread_id}; }
  void OnZoneBegin(const protocol::ZoneBegin&) { ++zones; }
  void OnLeafZone(uint32_t, uint64_t, uint64_t) { ++zones; }  // a begin and its end: one step
  void OnAppInfo(const protocol::AppInfo&, const protocol::AppInfoTail& t) {
    AssignUtf8(program_name, t.name);
  }
  void OnEndOfStream(const protocol::EndOfStream&) { ended = true; }
  void OnDroppedEvents(const protocol::DroppedEvents& m) {
    dropped = std::max(dropped, uint64_t{m.total_events});
  }
  void OnClockReply(const protocol::ClockReply& m) { replies.push_back(m); }
};

// A lane carries threads' events: what only the main connection says is refused there.
struct LaneHandler : CountingHandler {
  const char* Refuse(uint8_t type) const {
    switch (protocol::MessageType(type)) {
      case protocol::MessageType::kAppInfo:
      case protocol::MessageType::kClockReply:
      case protocol::MessageType::kEndOfStream:
        return "a lane carried a message only the main connection carries (AppInfo, ClockReply or "
               "EndOfStream)";
      default:
        return CountingHandler::Refuse(type);
    }
  }
};

// Pieces of a lane that wait for their turn in the merge, or take it, at most (TurnTaker):
// more were no faster (docs/benchmarks.md), and each holds its paired zones.
constexpr size_t kPiecesInFlight = 1;

// A lane of a worker that builds a model: pairs the zones ahead of the builder, on the
// lane's thread (ZoneOps), and keeps the other messages' bytes. Into a ZoneOps of its
// own while those of the pieces in flight wait for their turn (Next).
struct ModelLaneHandler : LaneHandler {
  ModelLaneHandler() {
    for (ZoneOps& o : ring) o.UseKnownCallstacks(&known);
  }
  ModelLaneHandler(const ModelLaneHandler&) = delete;  // `ops` points into it
  ModelLaneHandler& operator=(const ModelLaneHandler&) = delete;
  std::array<ZoneOps, kPiecesInFlight + 1> ring;
  KnownCallstacks known;  // shared by the ring: each learns its piece's stacks at Clear()
  size_t next = 0;
  ZoneOps* ops = &ring[0];
  void Next() { ops = &ring[++next % ring.size()]; }
  // The zones' messages, and the others' bytes, to the current piece's ops (which count
  // the zones: zones stays 0).
  void OnLeafZone(uint32_t location, uint64_t begin, uint64_t end) { ops->OnLeafZone(location, begin, end); }
  void OnZoneBegin(const protocol::ZoneBegin& m) { ops->OnZoneBegin(m); }
  void OnZoneEnd(const protocol::ZoneEnd& m) { ops->OnZoneEnd(m); }
  void OnMessageBytes(const uint8_t* p, size_t size) { ops->OnMessageBytes(p, size); }
  void OnCallstack(const protocol::Callstack& m, const protocol::CallstackTail& t) { ops->OnCallstack(m, t); }
};

// TraceBuilder with the same progress view as CountingHandler.
struct BuildingHandler : TraceBuilder, ClockExchanges {
  explicit BuildingHandler(TraceModel& m) : TraceBuilder(m), model(m) {}
  void OnClockReply(const protocol::ClockReply& m) {
    TraceBuilder::OnClockReply(m);
    replies.push_back(m);
  }
  TraceModel& model;
};

}  // namespace ingest

// A lane's runs of zones on threads nothing after them in its turn touches, stored once
// the turn is over (Worker::Emit).
struct Worker::LaterRuns {
  struct Held {
    ThreadTimeline* thread;
    std::vector<TraceBuilder::OpenZone>* open;
    ZoneOps::Run run;
  };
  std::vector<Held> runs;
};

// Building a model with lanes: the merged stream, decoded into the model as it goes to
// the writer. What comes while readers hold the model waits here, in order, for them to
// let go (up to ingest::kMaxBacklogBytes; past that the adding thread waits).
struct Worker::ModelSink {
  // The builder, and a goodbye that tidies every thread once no lane is storing.
  struct Handler : ingest::BuildingHandler {
    Handler(TraceModel& model, ModelSink& sink) : ingest::BuildingHandler(model), sink(sink) {}
    void OnEndOfStream(const protocol::EndOfStream& m) {
      sink.WaitStored(nullptr);
      ingest::BuildingHandler::OnEndOfStream(m);
    }
    ModelSink& sink;
  };
  explicit ModelSink(TraceModel& model) : handler(model, *this) {
    handler.writing_samples = true;  // the connections' handlers refused what the program may not send
  }
  // The bytes are whole messages their connection's handler decoded already.
  void Decode(const uint8_t* bytes, size_t size) {
    DecodeMessages(bytes, size, handler);
    handler.replies.clear();  // the main connection's handler answers them
  }
  void DecodeHeld() {
    if (!held.empty()) Decode(held.data(), held.size());
    held.clear();
  }
  Handler handler;  // written only while holding the model (alone, or joined in a turn)
  std::vector<uint8_t> held;
  // Threads whose runs lanes are storing now (under store_mutex), which a turn waits for
  // before it takes one (the thread gate); a stream that keeps each thread on its lane
  // never waits.
  std::mutex store_mutex;
  std::condition_variable stored;
  std::unordered_multiset<const ThreadTimeline*> storing;  // a batch may hold thousands
  void WaitStored(const ThreadTimeline* thread) {          // nullptr: every thread
    std::unique_lock lock(store_mutex);
    stored.wait(lock, [&] { return thread == nullptr ? storing.empty() : !storing.contains(thread); });
  }
};

}  // namespace gnomon::server
