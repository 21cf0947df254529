// A thread's zone attributes (runtime names, texts, colours, values), by zone index.
//
// A program may attach a value or a text to every zone, so this holds hundreds of
// millions of them: 32 bytes each, in runs of increasing zone index that never move
// (ChunkedVector), no allocation per zone but for a name or a text (a string each,
// overwritten in place when set again: a zone holds one of each however often it is set).
//
// An attribute goes to a zone still open, usually the one just begun, whose index is the
// highest yet: the entry is appended to the first run. An attribute for an outer zone
// after its children had theirs (a value set at the end of a scope) goes to the first
// run whose last zone is lower, so every run stays sorted and a zone is found by a
// binary search in each run whose last zone is not lower. Those outer zones are all open
// at once when their attributes come, so there are at most as many runs as zones nest
// deep. A hostile stream could nest deeper: past kMaxRuns, entries go to a hash table.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <new>
#include <optional>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include "gnomon/server/chunked_vector.h"

namespace gnomon::server {

// One zone's attributes, as stored: a view into its table.
struct ZoneAttributes {
  const std::string& name;  // replaces the source location's name when not empty
  const std::string& text;
  uint32_t color = 0xFF000000u;
  uint64_t value = 0;
  bool has_value = false;
  friend bool operator==(const ZoneAttributes& a, const ZoneAttributes& b) {
    return a.name == b.name && a.text == b.text && a.color == b.color && a.value == b.value &&
           a.has_value == b.has_value;
  }
};

// Strings that never move, each made in place in a ChunkedVector's chunks (2 MiB ones
// faulted in ahead where a reserve is in use, chunk_memory.h): nothing allocated per
// string but a long one's characters.
class StableStrings {
 public:
  StableStrings() = default;
  StableStrings(const StableStrings&) = delete;
  StableStrings& operator=(const StableStrings&) = delete;
  ~StableStrings() {
    for (size_t i = 0; i < slots_.size(); ++i) std::destroy_at(&(*this)[i]);
  }
  size_t size() const { return slots_.size(); }
  // A new empty string; its index.
  size_t emplace_back() {
    ::new (static_cast<void*>(slots_.push_back({}).bytes)) std::string();
    return slots_.size() - 1;
  }
  std::string& operator[](size_t i) { return *std::launder(reinterpret_cast<std::string*>(slots_[i].bytes)); }
  const std::string& operator[](size_t i) const {
    return *std::launder(reinterpret_cast<const std::string*>(slots_[i].bytes));
  }
  // Bytes held: the chunks, and the characters of strings too long to be held inline.
  size_t capacity_bytes() const {
    size_t bytes = slots_.capacity_bytes();
    for (size_t i = 0; i < size(); ++i) bytes += (*this)[i].size() > 15 ? (*this)[i].capacity() : 0;
    return bytes;
  }

 private:
  struct Slot {
    alignas(std::string) unsigned char bytes[sizeof(std::string)];
  };
  ChunkedVector<Slot> slots_;  // never shrunk: a string is not moved by copying its bytes
};

class ZoneAttributeTable {
 public:
  static constexpr size_t kMaxRuns = 64;

  // An entry's fields; name and text index the table's strings (0: none).
  struct Entry {
    uint64_t zone = 0;
    uint64_t value = 0;
    uint32_t color = 0xFF000000u;
    uint32_t name = 0;
    uint32_t text = 0;
    uint32_t has_value = 0;
  };
  static_assert(sizeof(Entry) == 32);

  size_t size() const { return held_ ? held_->size : 0; }
  bool empty() const { return size() == 0; }

  // The entry of `zone`, made when it has none. `known` says whether it has one (the
  // zone's kZoneHasAttributes flag): a new one is placed without looking for it.
  Entry& Touch(uint64_t zone, bool known) {
    if (!held_) held_ = std::make_unique<Held>();
    Held& h = *held_;
    if (!h.runs.empty()) {
      Entry& last = h.runs[0].back();
      if (last.zone == zone) [[likely]]
        return last;
      if (last.zone < zone) [[likely]]
        return Add(h.runs[0], zone);
    }
    if (known) {
      if (Entry* entry = h.Find(zone)) return *entry;
    }
    // The first run whose last zone is lower: runs' last zones fall from the first run on.
    auto run = std::partition_point(h.runs.begin(), h.runs.end(),
                                    [zone](const Run& r) { return r.back().zone > zone; });
    if (run != h.runs.end()) return run->back().zone == zone ? run->back() : Add(*run, zone);
    if (h.runs.size() < kMaxRuns) {
      h.runs.emplace_back();
      return Add(h.runs.back(), zone);
    }
    auto [it, inserted] = h.overflow.try_emplace(zone);
    if (inserted) {
      it->second.zone = zone;
      ++h.size;
    }
    return it->second;
  }
  // An entry's name or text (entry.name, entry.text) to set: its string, made the first
  // time.
  std::string& String(uint32_t& id) {
    if (!held_) held_ = std::make_unique<Held>();
    if (id == 0) {
      if (!held_->strings) {
        held_->strings = std::make_unique<StableStrings>();
        held_->strings->emplace_back();  // [0]: none
      }
      id = uint32_t(held_->strings->emplace_back());
    }
    return (*held_->strings)[id];
  }

  std::optional<ZoneAttributes> find(uint64_t zone) const {
    if (!held_) return std::nullopt;
    const Entry* entry = held_->Find(zone);
    if (entry == nullptr) return std::nullopt;
    return View(*entry);
  }
  // The attributes of a zone that has some; throws std::out_of_range otherwise.
  ZoneAttributes at(uint64_t zone) const {
    if (auto found = find(zone)) return *found;
    throw std::out_of_range("zone " + std::to_string(zone) + " has no attributes");
  }

  // Bytes held, about: the runs' chunks, the hash table's entries and the strings.
  size_t capacity_bytes() const {
    if (!held_) return 0;
    size_t bytes = sizeof(Held) + held_->runs.capacity() * sizeof(Run) + held_->overflow.size() * kNode;
    for (const Run& run : held_->runs) bytes += run.capacity_bytes();
    if (held_->strings) bytes += held_->strings->capacity_bytes();
    return bytes;
  }
  // Gives back the unused end of each run's last chunk, once no more are expected.
  void ShrinkToFit() {
    if (!held_) return;
    for (Run& run : held_->runs) run.ShrinkToFit();
  }

  // The same zones with the same attributes.
  friend bool operator==(const ZoneAttributeTable& a, const ZoneAttributeTable& b) {
    if (a.size() != b.size()) return false;
    if (a.empty()) return true;
    bool same = true;
    auto compare = [&](const Entry& entry) {
      const auto other = b.find(entry.zone);
      same = same && other && *other == a.View(entry);
    };
    for (const Run& run : a.held_->runs) run.ForEach(compare);
    for (const auto& [zone, entry] : a.held_->overflow) compare(entry);
    return same;
  }

 private:
  using Run = ChunkedVector<Entry, 2>;
  static constexpr size_t kNode = sizeof(Entry) + 32;  // a hash table's entry, node and bucket, about

  // Made at the first attribute: most threads have none.
  struct Held {
    std::vector<Run> runs;  // each sorted by zone; their last zones fall from the first on
    std::unordered_map<uint64_t, Entry> overflow;  // past kMaxRuns
    size_t size = 0;
    std::unique_ptr<StableStrings> strings;  // [0] is "": none
    Entry* Find(uint64_t zone) {
      for (Run& run : runs) {
        if (run.back().zone < zone) break;  // and every later run's
        const size_t i = run.PartitionPoint([zone](const Entry& e) { return e.zone < zone; });
        if (run[i].zone == zone) return &run[i];
      }
      if (overflow.empty()) return nullptr;
      auto it = overflow.find(zone);
      return it == overflow.end() ? nullptr : &it->second;
    }
  };

  ZoneAttributes View(const Entry& e) const {
    static const std::string kNone;
    const StableStrings* strings = held_->strings.get();
    return {e.name == 0 ? kNone : (*strings)[e.name], e.text == 0 ? kNone : (*strings)[e.text], e.color,
            e.value, e.has_value != 0};
  }
  Entry& Add(Run& run, uint64_t zone) {
    ++held_->size;
    Entry entry;
    entry.zone = zone;
    return run.push_back(entry);
  }

  std::unique_ptr<Held> held_;
};

}  // namespace gnomon::server
