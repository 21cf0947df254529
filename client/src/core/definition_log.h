// What the program has defined, kept for every server that connects, and what is new
// since the connected one took it.
//
// A server that connects late must still learn every name its events refer to: source
// locations, strings, threads and their names, GPU contexts, counter sets, modules, and
// the clock samples (CPU and GPU calibrations) that place the events on a timeline. The
// log keeps those, bounded by what the program defines, never by how often:
//  - a definition is kept once (callers dedupe: a string registered again, a lock of a
//    name whose earlier lock is gone, add nothing);
//  - a thread's name, or a GPU context's, is kept once, its latest (renaming it to its
//    name adds nothing); a thread's is forgotten once it has exited and its events are
//    gone;
//  - each clock (the CPU's, each GPU context's) keeps its first kFirstClockSamples
//    samples and its newest, kMaxClockSamples in all: a late server maps events older
//    than the newest between the first and them, never by extrapolation.
// While a server is connected, each addition is also held for it until TakeNew().
//
// Not thread-safe: the registry calls it under its lock.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <vector>

namespace gnomon::client {

class DefinitionLog {
 public:
  static constexpr size_t kMaxClockSamples = 4096;  // per clock: over an hour of the CPU's
  static constexpr size_t kFirstClockSamples = 16;

  // A definition, kept for good.
  void AddDefinition(const uint8_t* bytes, size_t size);
  // What names a thread (its ThreadInfo) or a GPU context (GpuContextName): the latest
  // of each is kept.
  enum class Named : uint8_t { kThread, kGpuContext };
  // `bytes` name `what` number `id`, replacing what did; nothing when it is the same.
  void SetName(Named what, uint32_t id, const std::vector<uint8_t>& bytes);
  // The thread exited and its events are gone: no later server needs its name.
  void ForgetThread(uint32_t thread_id);
  // A clock sample of clock `clock` (0: the CPU's; a GPU context's: its id + 1).
  void AddClockSample(uint64_t clock, const uint8_t* bytes, size_t size);

  // Everything kept, for a server (or a file) that starts now: definitions first, then
  // names, then each clock's samples in order.
  void AppendKept(std::vector<uint8_t>& out) const;
  // AppendKept(), and from now on each addition is also held for TakeNew().
  void BeginServer(std::vector<uint8_t>& out);
  // The additions held since BeginServer() or the last TakeNew(), appended to `out`.
  void TakeNew(std::vector<uint8_t>& out);
  // The server left: nothing more is held.
  void EndServer();

  // The bytes kept (what a late server is sent), and held for the connected one.
  size_t kept_bytes() const { return kept_bytes_; }
  size_t held_bytes() const { return new_.size(); }

 private:
  void Hold(const uint8_t* bytes, size_t size);

  std::vector<uint8_t> definitions_;
  static uint64_t Key(Named what, uint32_t id) { return uint64_t(what) << 32 | id; }

  std::map<uint64_t, std::vector<uint8_t>> names_;  // by Key()
  struct ClockSamples {
    std::vector<std::string> first;  // the first kFirstClockSamples
    std::deque<std::string> newest;  // then the newest, kMaxClockSamples in all
  };
  std::map<uint64_t, ClockSamples> clocks_;
  size_t kept_bytes_ = 0;
  bool holding_ = false;
  std::vector<uint8_t> new_;
};

}  // namespace gnomon::client
