#include "gnomon/server/trace_cut.h"

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "files/block_walk.h"
#include "files/trace_index.h"
#include "gnomon/protocol/messages.h"
#include "gnomon/server/process_timeline.h"
#include "gnomon/server/text.h"
#include "gnomon/server/trace_loader.h"
#include "gnomon/tracefile/block_codec.h"
#include "gnomon/tracefile/trace_writer.h"

namespace gnomon::server {
namespace {

using protocol::MessageType;

uint64_t TickOf(const uint8_t* message) {
  const uint8_t offset = protocol::kCatalogue[message[0]].tick_offset;
  return offset == 0 ? 0 : protocol::LoadLe<uint64_t>(message + offset);
}

// One program's part of the cut: its messages in, what the range and threads keep out
// (to `out`, in whole messages).
class StreamCut {
 public:
  StreamCut(const ProcessTimeline& timeline, const ExportFilter& keep, tracefile::TraceWriter::Stream& out,
            CutSummary& summary)
      : timeline_(timeline), keep_(keep), out_(out), summary_(summary), all_threads_(keep.threads.empty()) {
    for (const ThreadTimeline& thread : timeline.model().threads) {
      if (!keep.KeepsThread(thread)) continue;
      kept_threads_.insert(thread.id);
      if (thread.os_thread_id != 0) kept_os_threads_.insert(thread.os_thread_id);
    }
  }

  void Begin(uint32_t location, uint64_t tick) {
    protocol::ZoneBegin m{};
    m.srcloc_id = location;
    m.tick = tick;
    uint8_t bytes[sizeof(m)];
    protocol::WriteMessage(bytes, m);
    OnZoneBegin(bytes, sizeof(bytes), tick);
  }
  void End(uint64_t tick) {
    Thread* thread = Current();
    if (thread == nullptr || thread->zones.empty()) return;  // a thread not kept, or a stray end
    Open& top = thread->zones.back();
    const int64_t at = Place(tick);
    if (top.fate == Fate::kPending && at >= keep_.begin_ns) Materialize(*thread);
    if (top.fate == Fate::kKept) {
      protocol::ZoneEnd m{};
      m.tick = tick;
      uint8_t bytes[sizeof(m)];
      protocol::WriteMessage(bytes, m);
      Write(thread->id, bytes, sizeof(bytes), tick);
    }
    thread->zones.pop_back();
    thread->last_event = Fate::kDropped;  // a call stack follows a begin or an allocation, not an end
  }

  void Message(const uint8_t* m, size_t size) {
    const protocol::MessageInfo& info = protocol::kCatalogue[m[0]];
    if (info.is_thread_bound) return ThreadMessage(m, size);
    const uint64_t tick = TickOf(m);
    switch (MessageType(m[0])) {
      case MessageType::kThreadContext:
        current_ = ReadMessage<protocol::ThreadContext>(m).thread_id;
        return;
      case MessageType::kThreadInfo:
        if (Keeps(ReadMessage<protocol::ThreadInfo>(m).thread_id)) Write(0, m, size, 0);
        return;
      case MessageType::kLibraryThread:
        if (Keeps(ReadMessage<protocol::LibraryThread>(m).thread_id)) Write(0, m, size, 0);
        return;
      case MessageType::kSample:
        if (KeepsOs(ReadMessage<protocol::Sample>(m).os_thread_id)) Timed(m, size, tick);
        return;
      case MessageType::kContextSwitch:
        if (KeepsOs(ReadMessage<protocol::ContextSwitch>(m).os_thread_id)) Timed(m, size, tick);
        return;
      case MessageType::kFrameMark: {
        const uint32_t name = ReadMessage<protocol::FrameMark>(m).name_id;
        const uint64_t index = name == 0 ? main_marks_++ : 0;
        const size_t written = Series({uint8_t(MessageType::kFrameMark), name}, m, size, tick);
        if (name == 0 && written > 0) MainMarksWritten(index + 1 - written, written);
        return;
      }
      case MessageType::kCounterResult:
        return OnCounterResult(m, size);
      case MessageType::kPlotValue: {
        const uint32_t plot = ReadMessage<protocol::PlotValue>(m).plot_id;
        Series({uint8_t(MessageType::kPlotValue), plot}, m, size, tick);
        return;
      }
      case MessageType::kFrameBegin:
        return OnFrameBegin(m, size, tick);
      case MessageType::kFrameEnd:
        return OnFrameEnd(m, size, tick);
      case MessageType::kGpuTime:
        return OnGpuTime(m, size);
      case MessageType::kEndOfStream:
        end_tick_ = tick;  // written last
        return;
      default:
        if (info.tick_offset != 0) return Timed(m, size, tick);
        Write(0, m, size, 0);  // definitions, calibrations, clock readings
    }
  }

  // A block of the stream is lost: events until the next ThreadContext belong to no
  // known thread.
  void Gap() { current_ = 0; }

  // The stream is done: zones begun before the range and never ended are kept when the
  // program ran into the range; the end of stream follows.
  void Finish() {
    bool open = false;  // a zone kept is never ended: it lasts to the program's end
    if (Place(timeline_.model().last_tick) >= keep_.begin_ns) {
      for (auto& [id, thread] : threads_) {
        Materialize(thread);
        for (const Open& zone : thread.zones) open = open || zone.fate == Fate::kKept;
      }
      for (auto& [series, held] : before_range_) {
        Write(0, held.data(), held.size(), 0);
        if (series == std::pair{uint8_t(MessageType::kFrameMark), uint32_t{0}})
          MainMarksWritten(main_marks_ - 1, 1);
      }
    }
    if (end_tick_.has_value() && (open || last_kept_tick_ != 0)) {
      protocol::EndOfStream end{};
      end.tick = open ? *end_tick_ : std::min(*end_tick_, last_kept_tick_);
      uint8_t bytes[sizeof(end)];
      protocol::WriteMessage(bytes, end);
      Write(0, bytes, sizeof(bytes), 0);
    }
    Flush();
    out_.Close();
  }

 private:
  enum class Fate : uint8_t { kPending, kKept, kDropped };
  // A zone begun and not ended. Begun before the range: pending, its begin and what
  // belongs to it (name, text, values, call stack) held until it is known to reach the
  // range (kept, written then) or not (dropped).
  struct Open {
    Fate fate = Fate::kDropped;
    std::vector<uint8_t> held;
    uint32_t context = 0, query = 0;  // a GPU zone's, to drop its GPU time with it
  };
  struct Thread {
    uint32_t id = 0;
    std::vector<Open> zones;
    std::map<uint32_t, std::vector<Open>> gpu_zones;        // by context
    size_t pending = 0;                                     // zones of both pending
    Fate last_event = Fate::kDropped;                       // what a call stack belongs to
    std::map<uint32_t, uint32_t> holds;                     // kept and not yet released, by lock
    std::map<uint32_t, std::vector<uint8_t>> waits_before;  // begun before the range, by lock
  };

  using Query = std::pair<uint32_t, uint32_t>;  // a GPU context's timestamp query
  // (by value: the messages' fields are packed, and a pair would bind to them)
  static Query QueryOf(uint32_t context, uint32_t query) { return {context, query}; }

  int64_t Place(uint64_t tick) const { return timeline_.Tick(tick); }
  bool Keeps(uint32_t thread) const { return all_threads_ || kept_threads_.contains(thread); }
  bool KeepsOs(uint32_t os_thread) const { return all_threads_ || kept_os_threads_.contains(os_thread); }
  bool InRange(uint64_t tick) const { return keep_.Contains(Place(tick)); }

  // The current thread, when it is kept.
  Thread* Current() {
    if (current_ == 0 || !Keeps(current_)) return nullptr;
    Thread& thread = threads_[current_];
    thread.id = current_;
    return &thread;
  }

  void OnZoneBegin(const uint8_t* m, size_t size, uint64_t tick) {
    Thread* thread = Current();
    if (thread == nullptr) return;
    ++summary_.zones_read;
    Open open;
    const int64_t at = Place(tick);
    if (at > keep_.end_ns) {
      open.fate = Fate::kDropped;
    } else if (at < keep_.begin_ns) {
      open.fate = Fate::kPending;
      open.held.assign(m, m + size);
      ++thread->pending;
    } else {
      Materialize(*thread);
      open.fate = Fate::kKept;
      Write(thread->id, m, size, tick);
      ++summary_.zones_kept;
    }
    thread->last_event = open.fate;
    thread->zones.push_back(std::move(open));
  }

  // The thread's pending zones reach the range: their begins, outermost first.
  void Materialize(Thread& thread) {
    if (thread.pending == 0) return;
    thread.pending = 0;
    for (Open& open : thread.zones) {
      if (open.fate != Fate::kPending) continue;
      open.fate = Fate::kKept;
      Write(thread.id, open.held.data(), open.held.size(), 0);
      std::vector<uint8_t>().swap(open.held);
      ++summary_.zones_kept;
    }
    for (auto& [context, zones] : thread.gpu_zones) {
      for (Open& open : zones) {
        if (open.fate != Fate::kPending) continue;
        open.fate = Fate::kKept;
        Write(thread.id, open.held.data(), open.held.size(), 0);
        std::vector<uint8_t>().swap(open.held);
        KeepQuery({open.context, open.query});
      }
    }
    if (thread.last_event == Fate::kPending) thread.last_event = Fate::kKept;
  }

  // What belongs to an event already seen: written, held with it, or dropped with it.
  void Attach(Thread& thread, Fate fate, Open* holder, const uint8_t* m, size_t size) {
    if (fate == Fate::kKept) {
      Write(thread.id, m, size, 0);
    } else if (fate == Fate::kPending && holder != nullptr) {
      holder->held.insert(holder->held.end(), m, m + size);
    }
  }

  void ThreadMessage(const uint8_t* m, size_t size) {
    const uint64_t tick = TickOf(m);
    const auto type = MessageType(m[0]);
    // A free is matched program-wide, as readers match it: the free of an allocation
    // kept, on whichever thread.
    if (type == MessageType::kMemFree && current_ != 0) {
      const auto free = ReadMessage<protocol::MemFree>(m);
      const uint32_t pool = free.pool_id;
      const uint64_t address = free.address;
      auto allocation = allocations_.find({pool, address});
      if (allocation == allocations_.end()) return;
      allocations_.erase(allocation);
      Write(current_, m, size, tick);
      ++summary_.events_kept;
      return;
    }
    Thread* thread = Current();
    if (thread == nullptr) {
      // A GPU zone of a thread not kept: its times are no kept zone's.
      if (type == MessageType::kGpuZoneBegin) {
        const auto begin = ReadMessage<protocol::GpuZoneBegin>(m);
        DropQuery(QueryOf(begin.context_id, begin.query_id));
      } else if (type == MessageType::kGpuZoneEnd) {
        const auto end = ReadMessage<protocol::GpuZoneEnd>(m);
        DropQuery(QueryOf(end.context_id, end.query_id));
      }
      return;
    }
    Open* top = thread->zones.empty() ? nullptr : &thread->zones.back();
    switch (type) {
      case MessageType::kZoneBegin:
        return OnZoneBegin(m, size, tick);
      case MessageType::kZoneEnd:
        return End(tick);
      case MessageType::kZoneName:
      case MessageType::kZoneText:
      case MessageType::kZoneColor:
      case MessageType::kZoneValue:
        if (top != nullptr) Attach(*thread, top->fate, top, m, size);
        return;
      case MessageType::kCallstack:
        return Attach(*thread, thread->last_event, top, m, size);
      case MessageType::kGpuZoneBegin:
        return OnGpuZoneBegin(*thread, m, size, tick);
      case MessageType::kGpuZoneEnd:
        return OnGpuZoneEnd(*thread, m, size, tick);
      case MessageType::kMemAlloc: {
        const auto alloc = ReadMessage<protocol::MemAlloc>(m);
        thread->last_event = InRange(tick) ? Fate::kKept : Fate::kDropped;
        if (thread->last_event == Fate::kKept) {
          const uint32_t pool = alloc.pool_id;
          const uint64_t address = alloc.address;
          allocations_.insert({pool, address});
          Event(*thread, m, size, tick);
        }
        return;
      }
      case MessageType::kLockWait: {
        const int64_t at = Place(tick);
        const uint32_t lock = ReadMessage<protocol::LockWait>(m).lock_id;
        if (at < keep_.begin_ns) thread->waits_before[lock].assign(m, m + size);
        if (keep_.Contains(at)) Event(*thread, m, size, tick);
        return;
      }
      case MessageType::kLockObtain: {
        const uint32_t lock = ReadMessage<protocol::LockObtain>(m).lock_id;
        auto wait = thread->waits_before.find(lock);
        if (!InRange(tick)) {
          if (wait != thread->waits_before.end()) thread->waits_before.erase(wait);
          return;
        }
        if (wait != thread->waits_before.end()) {  // a wait begun before the range ends in it
          Event(*thread, wait->second.data(), wait->second.size(), 0);
          thread->waits_before.erase(wait);
        }
        ++thread->holds[lock];
        return Event(*thread, m, size, tick);
      }
      case MessageType::kLockRelease: {
        const uint32_t lock = ReadMessage<protocol::LockRelease>(m).lock_id;
        auto hold = thread->holds.find(lock);
        if (hold == thread->holds.end()) return;
        if (--hold->second == 0) thread->holds.erase(hold);
        return Event(*thread, m, size, tick);
      }
      default:
        if (protocol::kCatalogue[m[0]].tick_offset != 0 && !InRange(tick)) return;
        Event(*thread, m, size, tick);
    }
  }

  // A thread's event that is kept: its pending zones first.
  void Event(Thread& thread, const uint8_t* m, size_t size, uint64_t tick) {
    Materialize(thread);
    Write(thread.id, m, size, tick);
    ++summary_.events_kept;
  }

  void OnGpuZoneBegin(Thread& thread, const uint8_t* m, size_t size, uint64_t tick) {
    const auto begin = ReadMessage<protocol::GpuZoneBegin>(m);
    Open open;
    open.context = begin.context_id;
    open.query = begin.query_id;
    const int64_t at = Place(tick);
    if (at > keep_.end_ns) {
      open.fate = Fate::kDropped;
      DropQuery(QueryOf(begin.context_id, begin.query_id));
    } else if (at < keep_.begin_ns) {
      open.fate = Fate::kPending;
      open.held.assign(m, m + size);
      ++thread.pending;
      dropped_queries_.erase(QueryOf(begin.context_id, begin.query_id));
      pending_queries_.insert(QueryOf(begin.context_id, begin.query_id));
    } else {
      open.fate = Fate::kKept;
      KeepQuery(QueryOf(begin.context_id, begin.query_id));
      Event(thread, m, size, tick);
    }
    const uint32_t context = open.context;
    thread.gpu_zones[context].push_back(std::move(open));
  }

  void OnGpuZoneEnd(Thread& thread, const uint8_t* m, size_t size, uint64_t tick) {
    const auto end = ReadMessage<protocol::GpuZoneEnd>(m);
    const uint32_t context = end.context_id;
    auto zones = thread.gpu_zones.find(context);
    if (zones == thread.gpu_zones.end() || zones->second.empty()) return;
    Open& top = zones->second.back();
    if (top.fate == Fate::kPending && Place(tick) >= keep_.begin_ns) Materialize(thread);
    if (top.fate == Fate::kKept) {
      KeepQuery(QueryOf(end.context_id, end.query_id));
      Event(thread, m, size, tick);
    } else {
      if (top.fate == Fate::kPending) DropQuery({top.context, top.query});
      DropQuery(QueryOf(end.context_id, end.query_id));
    }
    zones->second.pop_back();
  }

  // A GPU time is written unless its zone was left out; while its zone is pending, it
  // waits with it.
  void OnGpuTime(const uint8_t* m, size_t size) {
    const auto time = ReadMessage<protocol::GpuTime>(m);
    const Query query = QueryOf(time.context_id, time.query_id);
    if (dropped_queries_.erase(query) > 0) return;
    if (pending_queries_.contains(query)) {
      held_times_[query].assign(m, m + size);
      return;
    }
    Write(0, m, size, 0);
  }
  // A query whose zone is kept: its time, if it came already, written; a later time for
  // it never taken for a left-out use of the same query.
  void KeepQuery(const Query& query) {
    dropped_queries_.erase(query);
    pending_queries_.erase(query);
    if (auto held = held_results_.find(query); held != held_results_.end()) {
      Write(0, held->second.data(), held->second.size(), 0);  // before the time: the zone is still pending
      held_results_.erase(held);
    }
    if (auto held = held_times_.find(query); held != held_times_.end()) {
      Write(0, held->second.data(), held->second.size(), 0);
      held_times_.erase(held);
    }
  }
  // A query whose zone is left out: its time too, whether it came already or comes later.
  void DropQuery(const Query& query) {
    pending_queries_.erase(query);
    held_results_.erase(query);
    if (held_times_.erase(query) == 0) dropped_queries_.insert(query);
  }

  // A frame begun before the range is kept when it ends in or after it.
  void OnFrameBegin(const uint8_t* m, size_t size, uint64_t tick) {
    const uint32_t name = ReadMessage<protocol::FrameBegin>(m).name_id;
    const int64_t at = Place(tick);
    if (at < keep_.begin_ns) {
      frames_begun_[name].assign(m, m + size);
    } else if (at <= keep_.end_ns) {
      frames_begun_.erase(name);
      frames_open_.insert(name);
      Timed(m, size, tick);
    }
  }
  void OnFrameEnd(const uint8_t* m, size_t size, uint64_t tick) {
    const uint32_t name = ReadMessage<protocol::FrameEnd>(m).name_id;
    const int64_t at = Place(tick);
    auto begun = frames_begun_.find(name);
    if (at < keep_.begin_ns) {
      if (begun != frames_begun_.end()) frames_begun_.erase(begun);
      return;
    }
    if (begun != frames_begun_.end()) {
      Write(0, begun->second.data(), begun->second.size(), 0);
      frames_begun_.erase(begun);
      ++summary_.events_kept;
    } else if (at > keep_.end_ns && frames_open_.erase(name) == 0) {
      return;  // a frame begun after the range
    }
    frames_open_.erase(name);
    Write(0, m, size, tick);
    ++summary_.events_kept;
  }

  // A frame mark or a plot value: in the range, kept, after the last before it (the
  // frame and the value the range begins in).
  // Returns how many messages it wrote (0 to 2).
  size_t Series(std::pair<uint8_t, uint32_t> series, const uint8_t* m, size_t size, uint64_t tick) {
    const int64_t at = Place(tick);
    if (at < keep_.begin_ns) {
      before_range_[series].assign(m, m + size);
      return 0;
    }
    if (at > keep_.end_ns) return 0;
    size_t written = 1;
    if (auto held = before_range_.find(series); held != before_range_.end()) {
      Write(0, held->second.data(), held->second.size(), 0);
      before_range_.erase(held);
      ++summary_.events_kept;
      ++written;
    }
    Write(0, m, size, tick);
    ++summary_.events_kept;
    return written;
  }
  // Marks of the main frame series written, the first of them the index-th of the whole
  // trace: frame k of the trace is frame k - first of the cut.
  void MainMarksWritten(uint64_t first, size_t count) {
    if (!first_main_mark_) first_main_mark_ = first;
    main_marks_written_ += count;
  }

  // A GPU counter result: a GPU zone's goes with its zone (held while it is pending);
  // a frame's is renumbered as the cut numbers its frames, or left out with its frame.
  void OnCounterResult(const uint8_t* m, size_t size) {
    const auto result = ReadMessage<protocol::CounterResult>(m);
    if (result.target == uint8_t(protocol::CounterTarget::kGpuZone)) {
      const Query query = QueryOf(result.context_id, result.target_id);
      if (dropped_queries_.contains(query)) return;
      if (pending_queries_.contains(query)) {
        std::vector<uint8_t>& held = held_results_[query];
        held.insert(held.end(), m, m + size);
        return;
      }
    } else if (result.target == uint8_t(protocol::CounterTarget::kFrame)) {
      const uint64_t frame = result.target_id;
      if (!first_main_mark_ || frame < *first_main_mark_ || frame >= *first_main_mark_ + main_marks_written_)
        return;
      std::vector<uint8_t> moved(m, m + size);
      protocol::StoreLe<uint32_t>(moved.data() + offsetof(protocol::CounterResult, target_id),
                                  uint32_t(frame - *first_main_mark_));
      Write(0, moved.data(), moved.size(), 0);
      return;
    }
    Write(0, m, size, 0);
  }

  // A program-wide event, kept when in the range.
  void Timed(const uint8_t* m, size_t size, uint64_t tick) {
    if (!InRange(tick)) return;
    Write(0, m, size, tick);
    ++summary_.events_kept;
  }

  // Writes a message: a thread's (`thread` not 0) after the ThreadContext that makes it
  // its own. `tick` (0: none) is the latest the end of stream may take.
  void Write(uint32_t thread, const uint8_t* m, size_t size, uint64_t tick) {
    if (thread != 0 && thread != written_thread_) {
      protocol::ThreadContext context{};
      context.thread_id = thread;
      const size_t at = buffer_.size();
      buffer_.resize(at + sizeof(context));
      protocol::WriteMessage(buffer_.data() + at, context);
      written_thread_ = thread;
    }
    buffer_.insert(buffer_.end(), m, m + size);
    last_kept_tick_ = std::max(last_kept_tick_, tick);
    if (buffer_.size() >= kFlushBytes) Flush();
  }
  void Flush() {
    if (!buffer_.empty()) out_.Append(buffer_.data(), buffer_.size());
    buffer_.clear();
  }
  static constexpr size_t kFlushBytes = 1u << 20;

  const ProcessTimeline& timeline_;
  const ExportFilter& keep_;
  tracefile::TraceWriter::Stream& out_;
  CutSummary& summary_;
  std::unordered_set<uint32_t> kept_threads_;     // program thread ids
  std::unordered_set<uint32_t> kept_os_threads_;  // theirs, for samples and switches
  std::unordered_map<uint32_t, Thread> threads_;
  const bool all_threads_;
  std::set<Query> dropped_queries_;  // whose GPU time is not wanted
  std::set<Query> pending_queries_;  // of pending GPU zones
  std::map<Query, std::vector<uint8_t>> held_times_;
  std::map<Query, std::vector<uint8_t>> held_results_;     // counter results of pending GPU zones
  uint64_t main_marks_ = 0;                                // of the main frame series, read
  std::optional<uint64_t> first_main_mark_;                // the index of the first written
  uint64_t main_marks_written_ = 0;                        // their GPU times, come already
  std::map<uint32_t, std::vector<uint8_t>> frames_begun_;  // before the range, by name
  std::set<uint32_t> frames_open_;                         // begun in the range, by name
  // The last frame mark and plot value before the range, by (type, series): the frame
  // and the value the range begins in.
  std::map<std::pair<uint8_t, uint32_t>, std::vector<uint8_t>> before_range_;
  std::multiset<std::pair<uint32_t, uint64_t>> allocations_;  // kept and not yet freed: (pool, address)
  uint32_t current_ = 0;
  uint32_t written_thread_ = 0;
  uint64_t last_kept_tick_ = 0;
  std::optional<uint64_t> end_tick_;  // the program's end of stream
  std::vector<uint8_t> buffer_;
};

// The trace's extent on its timeline, for a range that holds nothing.
std::string DescribeExtent(const std::vector<ProcessTimeline>& timelines) {
  int64_t first = INT64_MAX, last = INT64_MIN;
  for (const ProcessTimeline& timeline : timelines) {
    const TraceModel& model = timeline.model();
    if (model.first_tick > model.last_tick) continue;
    first = std::min(first, timeline.Tick(model.first_tick));
    last = std::max(last, timeline.Tick(model.last_tick));
  }
  if (first > last) return "it holds no event";
  return "it spans " + FormatDuration(first) + " to " + FormatDuration(last);
}

}  // namespace

Result<CutSummary> CutTrace(const std::string& input, const std::string& output, const ExportFilter& keep,
                            tracefile::Overwrite overwrite, std::ostream& log, std::atomic<bool>* cancel) {
  if (SameFile(input, output)) return Status::Error(output + " is the input; write the cut elsewhere");
  if (Status s = tracefile::CheckOutputPath(output, overwrite); !s.ok()) return s;
  Result<TraceSource> opened = TraceSource::OpenFile(input);
  if (!opened.ok()) return opened.status();
  const TraceSource& source = opened.value();

  // First pass: the clocks, threads and extent of every program.
  log << "gnomon-cut: reading " << input << " (" << FormatBytes(source.size())
      << ") for its clocks and threads\n";
  TraceSet set;
  LoadOptions options;
  options.extent_only = true;
  options.cancel = cancel;
  Result<LoadReport> loaded = LoadTraceSet(source, set, options);
  if (!loaded.ok()) return loaded.status();
  CutSummary summary;
  summary.warning = loaded.value().warning;
  std::vector<const TraceModel*> models;
  for (const TraceProcess& process : set.processes) models.push_back(&process.model);
  const std::vector<ProcessTimeline> timelines = ProcessTimeline::Of(models);
  if (!keep.threads.empty()) {
    bool any = false;
    std::string names;
    for (const TraceProcess& process : set.processes) {
      for (const ThreadTimeline& thread : process.model.threads) {
        any = any || keep.KeepsThread(thread);
        if (names.size() < 400)
          names += (names.empty() ? "" : ", ") +
                   (thread.name.empty() ? std::string("(unnamed)") : thread.name) + " (" +
                   std::to_string(thread.os_thread_id) + ")";
      }
    }
    if (!any) return Status::Error("no thread of " + input + " is named so; its threads: " + names);
  }
  bool reaches = false;
  for (const ProcessTimeline& timeline : timelines) {
    const TraceModel& model = timeline.model();
    reaches = reaches || (model.first_tick <= model.last_tick &&
                          keep.Overlaps(timeline.Tick(model.first_tick), timeline.Tick(model.last_tick)));
  }
  if (!reaches) {
    return Status::Error("the range holds no event of " + input + ": " + DescribeExtent(timelines));
  }

  // Second pass: every block again, each program's through its cut.
  log << "gnomon-cut: cutting\n";
  tracefile::FileHeader header{};
  if (!source.ReadAt(&header, sizeof(header), 0)) return Status::Error("cannot read " + input);
  FileAnomalies anomalies;
  Notes notes;
  std::vector<IndexedBlock> blocks =
      IndexBlocks(source, source.size(), header, tracefile::kDefaultMaxExpansion, anomalies, notes);
  tracefile::TraceWriterOptions writer_options;
  writer_options.file_flags = header.flags & tracefile::kMergedTrace;
  auto writer = tracefile::TraceWriter::Create(output, writer_options);
  if (!writer.ok()) return writer.status();
  std::map<uint32_t, std::unique_ptr<StreamCut>> cuts;  // by the input's stream number
  for (size_t i = 0; i < set.processes.size(); ++i) {
    tracefile::TraceWriter::Stream& out =
        i == 0 ? writer.value()->first_stream() : writer.value()->AddStream();
    cuts.emplace(set.processes[i].stream, std::make_unique<StreamCut>(timelines[i], keep, out, summary));
  }
  summary.programs = uint32_t(cuts.size());
  FrameDecompressor decompressor;
  std::vector<uint8_t> compressed, raw;
  for (const IndexedBlock& block : blocks) {
    if (cancel != nullptr && cancel->load())
      return Status::Error("cancelled");  // the writer removes its file
    auto cut = cuts.find(block.stream);
    if (block.rejected || cut == cuts.end()) continue;  // said by the first pass
    compressed.resize(block.compressed_bytes);
    if (!source.ReadAt(compressed.data(), compressed.size(), block.data_offset())) {
      return Status::Error("cannot read " + input + ": " + std::strerror(errno));
    }
    std::string error = decompressor.Decompress(compressed.data(), compressed.size(), block.raw_bytes,
                                                header.format_version >= 4, raw);
    if (block.after_gap || !error.empty()) cut->second->Gap();
    if (!error.empty()) continue;
    if (!WalkBlock(raw.data(), block.raw_bytes, header.format_version, *cut->second, error))
      cut->second->Gap();
  }
  for (auto& [stream, cut] : cuts) cut->Finish();
  if (Status s = writer.value()->Finish(); !s.ok()) return s;
  if (Status s = writer.value()->Publish(overwrite); !s.ok()) return s;
  summary.bytes = writer.value()->file_bytes();
  return summary;
}

}  // namespace gnomon::server
