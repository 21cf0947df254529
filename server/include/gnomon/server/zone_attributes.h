// A thread's zone attributes (runtime names, texts, colours, values), by zone index.
//
// A program may attach a value or a text to every zone, so this holds hundreds of
// millions of them: 16 bytes an attribute, its zone and one word (the value, the colour,
// or the index of a string), each kind in a table of its own, in runs of increasing zone
// index that never move (ChunkedVector), no allocation per zone but for a name or a text
// (a string each, overwritten in place when set again: a zone holds one of each however
// often it is set).
//
// An attribute goes to a zone still open, usually the one just begun, whose index is the
// highest yet: the entry is appended to its kind's first run. An attribute for an outer
// zone after its children had theirs (a value set at the end of a scope) goes to the
// first run whose last zone is lower, so every run stays sorted and a zone is found by a
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
#include <type_traits>
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

// One kind of attribute of a thread's zones: a word for each zone that has one, in sorted
// runs (see above).
class ZoneAttributeRuns {
 public:
  static constexpr size_t kMaxRuns = 64;
  struct Entry {
    uint64_t zone = 0;
    uint64_t word = 0;
  };
  static_assert(sizeof(Entry) == 16);

  size_t size() const { return size_; }
  // The entry of `zone`, made (its word 0) when it has none. `known` says whether it may
  // have one: a zone that has none is placed without looking for it.
  Entry& Touch(uint64_t zone, bool known) {
    if (!runs_.empty()) {
      Entry& last = runs_[0].back();
      if (last.zone == zone) [[likely]]
        return last;
      if (last.zone < zone) [[likely]]
        return Add(runs_[0], zone);
    }
    if (known) {
      if (Entry* entry = Find(zone)) return *entry;
    }
    // The first run whose last zone is lower: runs' last zones fall from the first run on.
    auto run = std::partition_point(runs_.begin(), runs_.end(),
                                    [zone](const Run& r) { return r.back().zone > zone; });
    if (run != runs_.end()) return run->back().zone == zone ? run->back() : Add(*run, zone);
    if (runs_.size() < kMaxRuns) {
      runs_.emplace_back();
      return Add(runs_.back(), zone);
    }
    auto [it, inserted] = overflow_.try_emplace(zone);
    if (inserted) {
      it->second.zone = zone;
      ++size_;
    }
    return it->second;
  }
  Entry* Find(uint64_t zone) { return FindIn(*this, zone); }
  const Entry* Find(uint64_t zone) const { return FindIn(*this, zone); }
  template <typename F>
  void ForEach(F&& f) const {
    for (const Run& run : runs_) run.ForEach(f);
    for (const auto& [zone, entry] : overflow_) f(entry);
  }
  // Bytes held, about: the runs' chunks and the hash table's entries.
  size_t capacity_bytes() const {
    size_t bytes = runs_.capacity() * sizeof(Run) + overflow_.size() * kNode;
    for (const Run& run : runs_) bytes += run.capacity_bytes();
    return bytes;
  }
  // Gives back the unused end of each run's last chunk, once no more are expected.
  void ShrinkToFit() {
    for (Run& run : runs_) run.ShrinkToFit();
  }

 private:
  using Run = ChunkedVector<Entry, 2>;
  static constexpr size_t kNode = sizeof(Entry) + 32;  // a hash table's entry, node and bucket, about
  // Find, for a table and for a const one.
  template <typename Self, typename Found = std::conditional_t<std::is_const_v<Self>, const Entry, Entry>>
  static Found* FindIn(Self& self, uint64_t zone) {
    for (auto& run : self.runs_) {
      if (run.back().zone < zone) break;  // and every later run's
      const size_t i = run.PartitionPoint([zone](const Entry& e) { return e.zone < zone; });
      if (run[i].zone == zone) return &run[i];
    }
    if (self.overflow_.empty()) return nullptr;
    auto it = self.overflow_.find(zone);
    return it == self.overflow_.end() ? nullptr : &it->second;
  }
  Entry& Add(Run& run, uint64_t zone) {
    ++size_;
    return run.push_back({zone, 0});
  }
  std::vector<Run> runs_;  // each sorted by zone; their last zones fall from the first on
  std::unordered_map<uint64_t, Entry> overflow_;  // past kMaxRuns
  size_t size_ = 0;
};

class ZoneAttributeTable {
 public:
  // The kinds, each a table of its own: a name's and a text's word is the index of its
  // string (String), a colour's 0x00RRGGBB, a value's the value.
  enum Kind : uint8_t { kName, kText, kColor, kValue };
  static constexpr size_t kKinds = 4;
  static constexpr size_t kMaxRuns = ZoneAttributeRuns::kMaxRuns;

  // Zones with attributes.
  size_t size() const { return held_ ? held_->zones : 0; }
  bool empty() const { return size() == 0; }

  // The word of `zone`'s attribute of this kind, made (0) when it has none. `known` says
  // whether the zone has any attribute (its kZoneHasAttributes flag): a zone with none is
  // placed without looking for it.
  uint64_t& Touch(Kind kind, uint64_t zone, bool known) {
    if (!held_) held_ = std::make_unique<Held>();
    held_->zones += !known;
    return held_->kinds[kind].Touch(zone, known).word;
  }
  // A name's or a text's string (the word Touch gave) to set: made the first time.
  std::string& String(uint64_t& word) {
    if (!held_) held_ = std::make_unique<Held>();
    if (word == 0) {
      if (!held_->strings) {
        held_->strings = std::make_unique<StableStrings>();
        held_->strings->emplace_back();  // [0]: none
      }
      word = held_->strings->emplace_back();
    }
    return (*held_->strings)[size_t(word)];
  }

  std::optional<ZoneAttributes> find(uint64_t zone) const {
    if (!held_) return std::nullopt;
    const ZoneAttributeRuns::Entry* entries[kKinds];
    bool any = false;
    for (size_t k = 0; k < kKinds; ++k) {
      entries[k] = held_->kinds[k].Find(zone);
      any = any || entries[k] != nullptr;
    }
    if (!any) return std::nullopt;
    return ZoneAttributes{String(entries[kName]), String(entries[kText]),
                          entries[kColor] ? uint32_t(entries[kColor]->word) : 0xFF000000u,
                          entries[kValue] ? entries[kValue]->word : 0, entries[kValue] != nullptr};
  }
  // The attributes of a zone that has some; throws std::out_of_range otherwise.
  ZoneAttributes at(uint64_t zone) const {
    if (auto found = find(zone)) return *found;
    throw std::out_of_range("zone " + std::to_string(zone) + " has no attributes");
  }
  // A zone's name set at run time, or "" (one lookup: what drawing a zone needs).
  const std::string& Name(uint64_t zone) const {
    return held_ ? String(held_->kinds[kName].Find(zone)) : String(nullptr);
  }

  // Bytes held, about: the kinds' runs and hash tables, and the strings.
  size_t capacity_bytes() const {
    if (!held_) return 0;
    size_t bytes = sizeof(Held);
    for (const ZoneAttributeRuns& kind : held_->kinds) bytes += kind.capacity_bytes();
    if (held_->strings) bytes += held_->strings->capacity_bytes();
    return bytes;
  }
  // Gives back the unused end of each run's last chunk, once no more are expected.
  void ShrinkToFit() {
    if (!held_) return;
    for (ZoneAttributeRuns& kind : held_->kinds) kind.ShrinkToFit();
  }

  // The same zones with the same attributes.
  friend bool operator==(const ZoneAttributeTable& a, const ZoneAttributeTable& b) {
    if (a.size() != b.size()) return false;
    if (a.empty()) return true;
    for (size_t k = 0; k < kKinds; ++k) {
      const ZoneAttributeRuns& mine = a.held_->kinds[k];
      const ZoneAttributeRuns& theirs = b.held_->kinds[k];
      if (mine.size() != theirs.size()) return false;
      const bool strings = k == kName || k == kText;
      bool same = true;
      mine.ForEach([&](const ZoneAttributeRuns::Entry& entry) {
        const ZoneAttributeRuns::Entry* other = same ? theirs.Find(entry.zone) : nullptr;
        same =
            other != nullptr && (strings ? a.String(&entry) == b.String(other) : entry.word == other->word);
      });
      if (!same) return false;
    }
    return true;
  }

 private:
  // Made at the first attribute: most threads have none.
  struct Held {
    ZoneAttributeRuns kinds[kKinds];
    size_t zones = 0;
    std::unique_ptr<StableStrings> strings;  // [0] is "": none
  };

  // The string of a name's or text's entry; "" for none.
  const std::string& String(const ZoneAttributeRuns::Entry* entry) const {
    static const std::string kNone;
    if (entry == nullptr || entry->word == 0) return kNone;
    return (*held_->strings)[size_t(entry->word)];
  }

  std::unique_ptr<Held> held_;
};

}  // namespace gnomon::server
