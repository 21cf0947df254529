#include "definition_log.h"

namespace gnomon::client {

void DefinitionLog::Hold(const uint8_t* bytes, size_t size) {
  if (holding_) new_.insert(new_.end(), bytes, bytes + size);
}

void DefinitionLog::AddDefinition(const uint8_t* bytes, size_t size) {
  definitions_.insert(definitions_.end(), bytes, bytes + size);
  kept_bytes_ += size;
  Hold(bytes, size);
}

void DefinitionLog::SetName(Named what, uint32_t id, const std::vector<uint8_t>& bytes) {
  std::vector<uint8_t>& kept = names_[Key(what, id)];
  if (kept == bytes) return;
  kept_bytes_ += bytes.size();
  kept_bytes_ -= kept.size();
  kept = bytes;
  Hold(bytes.data(), bytes.size());
}

void DefinitionLog::ForgetThread(uint32_t thread_id) {
  const auto it = names_.find(Key(Named::kThread, thread_id));
  if (it == names_.end()) return;
  kept_bytes_ -= it->second.size();
  names_.erase(it);
}

void DefinitionLog::AddClockSample(uint64_t clock, const uint8_t* bytes, size_t size) {
  ClockSamples& samples = clocks_[clock];
  std::string sample(reinterpret_cast<const char*>(bytes), size);
  kept_bytes_ += size;
  if (samples.first.size() < kFirstClockSamples) {
    samples.first.push_back(std::move(sample));
  } else {
    samples.newest.push_back(std::move(sample));
    if (samples.newest.size() > kMaxClockSamples - kFirstClockSamples) {
      kept_bytes_ -= samples.newest.front().size();
      samples.newest.pop_front();
    }
  }
  Hold(bytes, size);
}

void DefinitionLog::AppendKept(std::vector<uint8_t>& out) const {
  out.reserve(out.size() + kept_bytes_);
  out.insert(out.end(), definitions_.begin(), definitions_.end());
  for (const auto& [key, bytes] : names_) out.insert(out.end(), bytes.begin(), bytes.end());
  for (const auto& [clock, samples] : clocks_) {
    for (const std::string& sample : samples.first) out.insert(out.end(), sample.begin(), sample.end());
    for (const std::string& sample : samples.newest) out.insert(out.end(), sample.begin(), sample.end());
  }
}

void DefinitionLog::BeginServer(std::vector<uint8_t>& out) {
  AppendKept(out);
  new_.clear();
  holding_ = true;
}

void DefinitionLog::TakeNew(std::vector<uint8_t>& out) {
  out.insert(out.end(), new_.begin(), new_.end());
  new_.clear();
}

void DefinitionLog::EndServer() {
  holding_ = false;
  new_.clear();
  new_.shrink_to_fit();
}

}  // namespace gnomon::client
