#include "gnomon/viewer/frame_times.h"

#include <algorithm>
#include <cmath>

namespace gnomon::viewer {

FrameTimes ComputeFrameTimes(const server::TraceModel& model, uint32_t name_id, size_t bins) {
  FrameTimes out;
  auto it = model.frames.find(name_id);
  if (it == model.frames.end()) return out;
  const server::FrameSeries& series = it->second;
  out.frame_ns.reserve(series.frame_count());
  for (size_t k = 0; k < series.frame_count(); ++k) {
    const auto [begin, end] = series.Frame(k);
    out.frame_ns.push_back(std::max<int64_t>(0, model.DurationNs(begin, end)));
  }
  if (out.frame_ns.empty()) return out;
  out.sorted_ns = out.frame_ns;
  std::sort(out.sorted_ns.begin(), out.sorted_ns.end());
  auto at = [&](double q) {  // nearest rank, as the report has it
    const size_t rank = size_t(std::ceil(q * double(out.sorted_ns.size())));
    return out.sorted_ns[std::clamp<size_t>(rank, 1, out.sorted_ns.size()) - 1];
  };
  out.p50_ns = at(0.50);
  out.p90_ns = at(0.90);
  out.p99_ns = at(0.99);
  out.min_ns = out.sorted_ns.front();
  out.max_ns = out.sorted_ns.back();
  long double sum = 0;
  for (int64_t ns : out.frame_ns) sum += ns;
  out.mean_ns = double(sum / out.frame_ns.size());
  out.histogram.assign(std::max<size_t>(bins, 1), 0);
  for (int64_t ns : out.frame_ns) {
    const size_t bin =
        std::min(out.histogram.size() - 1, size_t(out.Fraction(ns) * double(out.histogram.size())));
    out.tallest = std::max(out.tallest, ++out.histogram[bin]);
  }
  return out;
}

FrameTarget FrameTarget::Fps(double fps) {
  return FrameTarget{int64_t(std::llround(1e9 / std::clamp(fps, kMinFps, kMaxFps)))};
}

FrameGrade FrameTarget::Grade(int64_t frame_ns) const {
  if (frame_ns <= ns) return FrameGrade::kOnTime;
  if (frame_ns <= 2 * ns) return FrameGrade::kLate;
  return FrameGrade::kMissed;
}

uint32_t FrameTarget::Color(int64_t frame_ns) const {
  switch (Grade(frame_ns)) {
    case FrameGrade::kOnTime:
      return 0xFF50B060u;  // green
    case FrameGrade::kLate:
      return 0xFF30C0D8u;  // yellow
    case FrameGrade::kMissed:
      break;
  }
  return 0xFF4040D8u;  // red
}

}  // namespace gnomon::viewer
