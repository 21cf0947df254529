// gnomon-calibration-bench: how well GPU timestamps land on the CPU timeline.
//
//   gnomon-calibration-bench FILE [--cadence SECONDS] [--tries N] [--period-ns P]
//                            [--truth-width FACTOR]
//   gnomon-calibration-bench --synthetic [--cadence SECONDS] ...
//
// FILE is a calibration stream (.csv or .csv.zst) with the columns
// kind,i,t_before_ns,device_ticks,host_ns,max_dev_ns,t_after_ns, as recorded through
// vkGetCalibratedTimestampsEXT: `paced` rows (one call per ms), `burst` rows, and
// `gpuwrite` rows (a GPU-written timestamp bracketed by CPU reads before submit and
// after the fence). --synthetic makes a stream of the same shape with known drift,
// wander and noise.
//
// Calibrations are taken at the cadence: at each step, the best of the next N tries
// (even-numbered paced rows; smallest maxDeviation, then narrowest call) is one
// calibration sample, and once more the best of the last N (as the collectors calibrate
// when a context ends). Every odd paced row is held out and mapped; those whose call
// took over --truth-width (1.5) times the stream's median are set aside (MarkTruth),
// the rest count as the truth. Every gpuwrite row must land inside its CPU bracket.
// One line per method:
//   method=NAME p50_ns=N p99_ns=N max_ns=N in_bracket_pct=X p99_low_ns=N p99_high_ns=N
// (the p99's 95 % interval), and, for gnomon, the bounds it states:
// rel_bound_coverage_pct (share of the truth that agrees with its placement within the
// root sum of squares of the relative bound and the read's own uncertainty),
// rel_bound_plain_coverage_pct (within the relative bound alone), bound_scale_needed
// (the factor on the relative bound that 99 % coverage needs), truth_reads and
// set_aside, rel_bound_p50_ns (the
// median stated relative bound), abs_bound_p50_ns (the driver's bound, before brackets);
// abs_early_p50_ns and abs_late_p50_ns (the absolute bound's two sides once every other
// gpuwrite row is a bracket), abs_bracket_pct (the share of the other gpuwrite rows
// whose absolute interval meets their own bracket: a narrowing that lied would miss
// some), correction_ns (how far the brackets move every time), and the share of those
// held-out gpuwrite rows placed inside their own bracket without the brackets
// (held_out_in_bracket_pct) and with them (bracketed_in_bracket_pct);
// with --synthetic also abs_bound_coverage_pct (the share of held-out times whose known
// truth lies within the narrowed absolute bound).
// Methods: gnomon (the server's GpuClockModel), offset (the latest calibration's offset
// only), after_call (slope from consecutive calibrations, anchored on a CPU clock read
// taken after the calibration call), piecewise (straight lines between the same
// calibrations gnomon sees, the last one's line beyond them), and floor: the server's
// model after the fact with a calibration every 10 ms, what the held-out reads' own
// error leaves to any model.
#include <zstd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "gnomon/server/gpu_clock_model.h"

namespace {

struct Row {
  enum Kind { kPaced, kBurst, kGpuWrite } kind;
  int64_t index, t_before_ns, host_ns, max_dev_ns, t_after_ns;
  uint64_t device_ticks;
  // A held-out paced row (odd index) whose read counts as the truth (see MarkTruth), and
  // that read's own uncertainty: how much longer than the stream's median its call took.
  bool truth = false;
  double own_ns = 0;
};

// Which held-out reads count as the truth. A read's own CPU bracket (t_before to
// t_after) is the time its calibration call took; a call that took more than
// kTruthWidthFactor times the stream's median was interrupted (a time slice, an
// interrupt), and its host time may lie anywhere in the extra time: its own error is
// then as large as what is measured. Such reads are set aside, by one rule for every
// stream; errors and coverage are measured on the rest.
double g_truth_width_factor = 1.5;

bool HeldOut(const Row& row) { return row.kind == Row::kPaced && row.index % 2 == 1; }

// Marks the held-out reads that count as the truth; returns how many were set aside.
size_t MarkTruth(std::vector<Row>& rows) {
  std::vector<int64_t> widths;
  for (const Row& row : rows) {
    if (row.kind == Row::kPaced) widths.push_back(row.t_after_ns - row.t_before_ns);
  }
  if (widths.empty()) return 0;
  std::nth_element(widths.begin(), widths.begin() + ptrdiff_t(widths.size() / 2), widths.end());
  const double limit = g_truth_width_factor * double(widths[widths.size() / 2]);
  size_t set_aside = 0;
  for (Row& row : rows) {
    if (!HeldOut(row)) continue;
    const double width = double(row.t_after_ns - row.t_before_ns);
    row.truth = width <= limit;
    row.own_ns = std::max(0.0, width - double(widths[widths.size() / 2]));
    set_aside += row.truth ? 0 : 1;
  }
  return set_aside;
}

[[noreturn]] void Fail(const std::string& why) {
  std::fprintf(stderr, "gnomon-calibration-bench: %s\n", why.c_str());
  std::exit(1);
}

std::string ReadText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) Fail("cannot open " + path);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (bytes.size() < 4 || static_cast<uint8_t>(bytes[0]) != 0x28 || static_cast<uint8_t>(bytes[1]) != 0xB5)
    return bytes;
  // zstd: stream-decompress (the content size need not be in the frame header).
  std::string text;
  ZSTD_DStream* stream = ZSTD_createDStream();
  ZSTD_inBuffer input{bytes.data(), bytes.size(), 0};
  std::vector<char> chunk(ZSTD_DStreamOutSize());
  while (input.pos < input.size) {
    ZSTD_outBuffer output{chunk.data(), chunk.size(), 0};
    const size_t rc = ZSTD_decompressStream(stream, &output, &input);
    if (ZSTD_isError(rc)) {
      ZSTD_freeDStream(stream);
      Fail(path + ": " + ZSTD_getErrorName(rc));
    }
    text.append(chunk.data(), output.pos);
  }
  ZSTD_freeDStream(stream);
  return text;
}

std::vector<Row> Parse(const std::string& text, const std::string& name) {
  std::vector<Row> rows;
  std::istringstream in(text);
  std::string line;
  std::getline(in, line);
  if (line.rfind("kind,i,t_before_ns,device_ticks,host_ns,max_dev_ns,t_after_ns", 0) != 0) {
    Fail(name +
         " does not start with the header kind,i,t_before_ns,device_ticks,host_ns,max_dev_ns,t_after_ns");
  }
  int line_number = 1;
  while (std::getline(in, line)) {
    ++line_number;
    if (line.empty()) continue;
    char kind[16] = {};
    long long i, tb, host, dev, ta;
    unsigned long long ticks;
    if (std::sscanf(line.c_str(), "%15[^,],%lld,%lld,%llu,%lld,%lld,%lld", kind, &i, &tb, &ticks, &host, &dev,
                    &ta) != 7) {
      Fail(name + ":" + std::to_string(line_number) + ": not a calibration row");
    }
    const std::string k = kind;
    const Row::Kind row_kind = k == "paced" ? Row::kPaced : k == "burst" ? Row::kBurst : Row::kGpuWrite;
    if (k != "paced" && k != "burst" && k != "gpuwrite")
      Fail(name + ":" + std::to_string(line_number) + ": unknown kind " + k);
    rows.push_back({row_kind, i, tb, host, dev, ta, ticks});
  }
  return rows;
}

// The synthetic stream's true host time of a paced row (its host_ns carries the noise and
// the offset every read shares).
constexpr int64_t kSyntheticBeforeNs = 3300;
constexpr double kSyntheticOffsetNs = 1000;

// 60 s like the H200 stream: drift 5 ppm, a few us of wander, 15 ns noise with a tail;
// every read's host time 1 us early (an offset the driver's bound covers and no
// calibration removes). GPU writes are bracketed like the recorded ones: 14 us or more
// from the submit to the write, 0.4 us or more from the write to the CPU seeing it.
std::vector<Row> Synthetic() {
  std::vector<Row> rows;
  std::mt19937_64 rng(11);
  std::normal_distribution<double> noise(0, 15);
  std::uniform_real_distribution<double> unit(0, 1);
  std::exponential_distribution<double> submit_latency(1 / 10000.0), seen_latency(1 / 30000.0);
  const int64_t host0 = 24'000'000'000;
  const uint64_t dev0 = 1'796'053'615'000'000'000ull;
  auto device_at = [&](double host_ns) {
    const double t = (host_ns - host0) / 1e9;
    const double wander = 3000 * std::sin(t / 7.0) + 1500 * std::sin(t / 2.3 + 1);
    return dev0 + uint64_t((host_ns - host0) * (1 + 5e-6) + wander);
  };
  for (int64_t i = 0; i < 60000; ++i) {
    const double host = double(host0) + double(i) * 1e6;
    double error = noise(rng);
    int64_t max_dev = 2800;
    if (unit(rng) < 0.02) {
      error += (unit(rng) - 0.5) * 800;
      max_dev = 3300;
    }
    rows.push_back({Row::kPaced, i, int64_t(host) - kSyntheticBeforeNs,
                    int64_t(host - kSyntheticOffsetNs + error), max_dev, int64_t(host) + 3100,
                    device_at(host)});
    if (i % 10 == 5) {
      const double gpu_host = host + 60000;
      rows.push_back({Row::kGpuWrite, i, int64_t(gpu_host - 14000 - submit_latency(rng)), 0, 0,
                      int64_t(gpu_host + 400 + seen_latency(rng)), device_at(gpu_host)});
    }
  }
  return rows;
}

struct Calibration {
  uint64_t device_ticks;
  int64_t host_ns, max_dev_ns, t_after_ns;
};

struct Summary {
  double p50, p99, max, in_bracket_pct;
  // The p99's 95 % confidence interval from the order statistics: how far it moves by
  // chance alone, given how many reads it is taken over (the noise when two figures
  // are compared).
  double p99_low, p99_high;
  size_t reads;
};

Summary Evaluate(const std::vector<Row>& rows, const std::function<double(uint64_t)>& map) {
  std::vector<double> errors;
  size_t inside = 0, gpu_writes = 0;
  for (const Row& row : rows) {
    if (row.truth) errors.push_back(std::fabs(map(row.device_ticks) - double(row.host_ns)));
    if (row.kind == Row::kGpuWrite) {
      ++gpu_writes;
      const double t = map(row.device_ticks);
      if (t >= double(row.t_before_ns) && t <= double(row.t_after_ns)) ++inside;
    }
  }
  if (errors.empty()) Fail("no held-out paced rows");
  std::sort(errors.begin(), errors.end());
  const double n = double(errors.size());
  auto at = [&](double rank) { return errors[size_t(std::clamp(rank, 0.0, n - 1))]; };
  const double spread = 1.96 * std::sqrt(n * 0.99 * 0.01);
  return {at(0.5 * n),           at(0.99 * n),
          errors.back(),         gpu_writes ? 100.0 * double(inside) / double(gpu_writes) : 100.0,
          at(0.99 * n - spread), at(0.99 * n + spread),
          errors.size()};
}

constexpr double kFloorCadenceS = 0.01;

// At each cadence step, the best of the next `tries` even paced rows (smallest
// maxDeviation, then narrowest call) is one calibration.
std::vector<Calibration> SelectCalibrations(const std::vector<const Row*>& paced, double cadence_s,
                                            int tries) {
  std::vector<Calibration> calibrations;
  const int64_t cadence_ns = int64_t(cadence_s * 1e9);
  auto better = [](const Row* r, const Row* best) {
    return !best || r->max_dev_ns < best->max_dev_ns ||
           (r->max_dev_ns == best->max_dev_ns &&
            r->t_after_ns - r->t_before_ns < best->t_after_ns - best->t_before_ns);
  };
  auto add = [&](const Row* best) {
    calibrations.push_back({best->device_ticks, best->host_ns, best->max_dev_ns, best->t_after_ns});
  };
  int64_t next = paced.front()->t_before_ns;
  for (size_t k = 0; k < paced.size(); ++k) {
    if (paced[k]->t_before_ns < next || paced[k]->index % 2 != 0) continue;
    const Row* best = nullptr;
    int taken = 0;
    for (size_t j = k; j < paced.size() && taken < tries; ++j) {
      if (paced[j]->index % 2 != 0) continue;
      ++taken;
      if (better(paced[j], best)) best = paced[j];
    }
    add(best);
    next += cadence_ns;
  }
  // Once more at the end, as the collectors calibrate when a context ends: the best of
  // the last tries.
  const Row* last = nullptr;
  int taken = 0;
  for (size_t j = paced.size(); j-- > 0 && taken < tries;) {
    if (paced[j]->index % 2 != 0) continue;
    ++taken;
    if (better(paced[j], last)) last = paced[j];
  }
  if (last->device_ticks > calibrations.back().device_ticks) add(last);
  return calibrations;
}

gnomon::server::GpuClockModel BuildModel(const std::vector<Calibration>& calibrations,
                                         gnomon::server::TickPeriod period) {
  gnomon::server::GpuClockModel model(period, 64);
  for (const Calibration& c : calibrations) {
    model.AddSample({c.device_ticks, c.host_ns, uint32_t(std::min<int64_t>(c.max_dev_ns, UINT32_MAX))});
  }
  return model;
}

// Every other gpuwrite row (the first, third, ...) is a bracket; the others are held out.
bool IsBracket(const Row& row, size_t gpu_write_number) {
  return row.kind == Row::kGpuWrite && gpu_write_number % 2 == 0;
}

void AddBrackets(const std::vector<Row>& rows, gnomon::server::GpuClockModel& model) {
  size_t number = 0;
  for (const Row& row : rows) {
    if (row.kind != Row::kGpuWrite) continue;
    if (IsBracket(row, number++)) model.AddBracket({row.device_ticks, row.t_before_ns, row.t_after_ns});
  }
}

double Median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::nth_element(values.begin(), values.begin() + ptrdiff_t(values.size() / 2), values.end());
  return values[values.size() / 2];
}

struct Bounds {
  double rel_coverage_pct, rel_plain_coverage_pct;
  // The factor the relative bound would need, applied to every time, to hold for 99 %
  // of the truth: at most 1 where it holds as stated. The cross-validation compares it
  // across streams.
  double scale_needed;
  double rel_p50, abs_p50, abs_coverage_pct;
  double early_p50, late_p50, bracket_pct, held_out_in_bracket_pct, bracketed_in_bracket_pct;
};

// How often the model's stated bounds hold on the held-out rows, and how wide they are:
// `model` without brackets, `bracketed` the same with every other gpuwrite row's.
Bounds EvaluateBounds(const std::vector<Row>& rows, const gnomon::server::GpuClockModel& model,
                      const gnomon::server::GpuClockModel& bracketed, bool synthetic) {
  std::vector<double> relative, absolute, early, late, scales;
  size_t rel_covered = 0, rel_plain = 0, abs_covered = 0, held_out_writes = 0, writes_met = 0,
         writes_inside = 0;
  size_t writes_inside_plain = 0;
  size_t gpu_write_number = 0;
  for (const Row& row : rows) {
    if (row.kind == Row::kGpuWrite && !IsBracket(row, gpu_write_number++)) {
      const auto mapped = bracketed.Map(row.device_ticks);
      ++held_out_writes;
      if (double(mapped.cpu_ns) - double(mapped.early_ns) <= double(row.t_after_ns) &&
          double(mapped.cpu_ns) + double(mapped.late_ns) >= double(row.t_before_ns)) {
        ++writes_met;
      }
      if (mapped.cpu_ns >= row.t_before_ns && mapped.cpu_ns <= row.t_after_ns) ++writes_inside;
      const int64_t plain = model.Map(row.device_ticks).cpu_ns;
      if (plain >= row.t_before_ns && plain <= row.t_after_ns) ++writes_inside_plain;
    }
    if (!row.truth) continue;
    const auto mapped = model.Map(row.device_ticks);
    // A placement and a read agree when they differ by no more than their combined
    // uncertainty (the normalised error of two measurements, E_n <= 1).
    const double error = std::fabs(double(mapped.cpu_ns) - double(row.host_ns));
    if (error <= std::hypot(double(mapped.relative_ns), row.own_ns)) ++rel_covered;
    if (error <= double(mapped.relative_ns)) ++rel_plain;
    const double beyond_read = std::sqrt(std::max(0.0, error * error - row.own_ns * row.own_ns));
    scales.push_back(beyond_read / std::max(1.0, double(mapped.relative_ns)));
    relative.push_back(mapped.relative_ns);
    absolute.push_back(mapped.absolute_ns());
    const auto narrowed = bracketed.Map(row.device_ticks);
    const double truth_minus_placed = double(row.t_before_ns + kSyntheticBeforeNs) - double(narrowed.cpu_ns);
    if (synthetic && truth_minus_placed >= -double(narrowed.early_ns) &&
        truth_minus_placed <= double(narrowed.late_ns)) {
      ++abs_covered;
    }
    early.push_back(narrowed.early_ns);
    late.push_back(narrowed.late_ns);
  }
  const double n = double(relative.size());
  std::sort(scales.begin(), scales.end());
  return {100.0 * double(rel_covered) / n,
          100.0 * double(rel_plain) / n,
          scales[std::min(scales.size() - 1, size_t(0.99 * n))],
          Median(relative),
          Median(absolute),
          synthetic ? 100.0 * double(abs_covered) / n : 0,
          Median(early),
          Median(late),
          held_out_writes ? 100.0 * double(writes_met) / double(held_out_writes) : 100.0,
          held_out_writes ? 100.0 * double(writes_inside_plain) / double(held_out_writes) : 100.0,
          held_out_writes ? 100.0 * double(writes_inside) / double(held_out_writes) : 100.0};
}

}  // namespace

int main(int argc, char** argv) {
  std::string path;
  double cadence_s = 1.0;
  int tries = 3;
  double period_ns = 1.0;
  bool synthetic = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&] {
      if (i + 1 >= argc) Fail(arg + " needs a value");
      return std::atof(argv[++i]);
    };
    if (arg == "--cadence") {
      cadence_s = value();
    } else if (arg == "--tries") {
      tries = std::max(1, int(value()));
    } else if (arg == "--truth-width") {
      g_truth_width_factor = value();
    } else if (arg == "--period-ns") {
      period_ns = value();
    } else if (arg == "--synthetic") {
      synthetic = true;
    } else if (arg == "-h" || arg == "--help") {
      std::printf(
          "Usage: gnomon-calibration-bench FILE|--synthetic [--cadence SECONDS] [--tries N] [--period-ns P]\n"
          "                                [--truth-width FACTOR]\n"
          "Maps held-out GPU timestamps of a calibration stream (.csv or .csv.zst) with Gnomon's\n"
          "clock model, three baselines and the floor; prints method=NAME p50_ns p99_ns max_ns\n"
          "in_bracket_pct p99_low_ns p99_high_ns. Held-out reads whose call took over FACTOR (1.5)\n"
          "times the stream's median are set aside, not counted as the truth.\n");
      return 0;
    } else if (path.empty() && arg[0] != '-') {
      path = arg;
    } else {
      Fail("unknown argument " + arg);
    }
  }
  if (path.empty() && !synthetic) Fail("name a calibration stream file, or pass --synthetic");
  if (!(cadence_s > 0)) Fail("--cadence must be positive");
  if (!(g_truth_width_factor >= 1)) Fail("--truth-width must be at least 1 (the median call itself)");
  std::vector<Row> rows = synthetic ? Synthetic() : Parse(ReadText(path), path);
  const size_t set_aside = MarkTruth(rows);

  std::vector<const Row*> paced;
  for (const Row& row : rows) {
    if (row.kind == Row::kPaced) paced.push_back(&row);
  }
  if (paced.size() < 4) Fail("the stream has fewer than 4 paced rows");
  const std::vector<Calibration> calibrations = SelectCalibrations(paced, cadence_s, tries);
  const gnomon::server::TickPeriod period = gnomon::server::PeriodFromFloat(period_ns);
  const gnomon::server::GpuClockModel model = BuildModel(calibrations, period);
  gnomon::server::GpuClockModel bracketed = model;
  AddBrackets(rows, bracketed);
  // The floor: the same piecewise fit after the fact, through a calibration every 10 ms
  // (100 times as many as at 1 s). What it leaves is the held-out reads' own error.
  const gnomon::server::GpuClockModel floor_model =
      BuildModel(SelectCalibrations(paced, kFloorCadenceS, tries), period);
  auto latest = [&](uint64_t ticks) {
    auto it = std::upper_bound(calibrations.begin(), calibrations.end(), ticks,
                               [](uint64_t t, const Calibration& c) { return t < c.device_ticks; });
    return size_t(it == calibrations.begin() ? 0 : (it - calibrations.begin()) - 1);
  };
  auto ticks_ns = [&](uint64_t from, uint64_t to) { return (double(int64_t(to - from))) * period.ns(); };
  struct Method {
    const char* name;
    std::function<double(uint64_t)> map;
    bool states_bounds = false;
  };
  const Method methods[] = {
      {"gnomon", [&](uint64_t t) { return double(model.Map(t).cpu_ns); }, true},
      {"offset",
       [&](uint64_t t) {
         const Calibration& c = calibrations[latest(t)];
         return double(c.host_ns) + ticks_ns(c.device_ticks, t);
       }},
      {"after_call",
       [&](uint64_t t) {
         const size_t k = latest(t);
         const Calibration& c1 = calibrations[k];
         double slope = period.ns();
         if (k > 0) {
           const Calibration& c0 = calibrations[k - 1];
           slope = double(c1.host_ns - c0.host_ns) / double(int64_t(c1.device_ticks - c0.device_ticks));
         }
         return double(c1.t_after_ns) + double(int64_t(t - c1.device_ticks)) * slope;
       }},
      {"piecewise",
       [&](uint64_t t) {
         const size_t k = latest(t);
         // Beyond the last calibration, the last span's line goes on.
         const size_t first = calibrations.size() < 2 ? 0 : std::min(k, calibrations.size() - 2);
         if (calibrations.size() < 2) {
           const Calibration& c = calibrations[k];
           return double(c.host_ns) + ticks_ns(c.device_ticks, t);
         }
         const Calibration& c0 = calibrations[first];
         const Calibration& c1 = calibrations[first + 1];
         const double f =
             double(int64_t(t - c0.device_ticks)) / double(int64_t(c1.device_ticks - c0.device_ticks));
         return double(c0.host_ns) + f * double(c1.host_ns - c0.host_ns);
       }},
      {"floor", [&](uint64_t t) { return double(floor_model.Map(t).cpu_ns); }},
  };
  std::fprintf(stderr, "%zu rows, %zu calibrations every %.3g s (best of %d tries), drift %.2f ppm\n",
               rows.size(), calibrations.size(), cadence_s, tries, model.drift_ppm());
  std::fprintf(
      stderr,
      "%zu knots (%zu set aside as outliers), %zu rejected; %zu held-out reads set aside (their calls took "
      "over %.1fx the median)\n",
      model.knots().size(), model.flags().set_aside, model.rejected_count(), set_aside, g_truth_width_factor);
  const auto offset = bracketed.offset_range();
  std::fprintf(stderr, "%zu brackets: offset within [%.0f, %.0f] ns%s\n", offset.brackets, offset.min_ns,
               offset.max_ns, offset.contradicted ? ", contradicting each other (not used)" : "");
  for (const Method& m : methods) {
    const Summary s = Evaluate(rows, m.map);
    std::printf(
        "method=%s p50_ns=%.0f p99_ns=%.0f max_ns=%.0f in_bracket_pct=%.2f p99_low_ns=%.0f p99_high_ns=%.0f",
        m.name, s.p50, s.p99, s.max, s.in_bracket_pct, s.p99_low, s.p99_high);
    if (m.states_bounds) {
      const Bounds b = EvaluateBounds(rows, model, bracketed, synthetic);
      std::printf(
          " rel_bound_coverage_pct=%.2f rel_bound_p50_ns=%.0f abs_bound_p50_ns=%.0f abs_early_p50_ns=%.0f "
          "abs_late_p50_ns=%.0f abs_bracket_pct=%.2f correction_ns=%.0f held_out_in_bracket_pct=%.2f "
          "bracketed_in_bracket_pct=%.2f",
          b.rel_coverage_pct, b.rel_p50, b.abs_p50, b.early_p50, b.late_p50, b.bracket_pct,
          bracketed.offset_range().correction_ns(), b.held_out_in_bracket_pct, b.bracketed_in_bracket_pct);
      if (synthetic) std::printf(" abs_bound_coverage_pct=%.2f", b.abs_coverage_pct);
      std::printf(" truth_reads=%zu set_aside=%zu rel_bound_plain_coverage_pct=%.2f bound_scale_needed=%.3f",
                  s.reads, set_aside, b.rel_plain_coverage_pct, b.scale_needed);
    }
    std::printf("\n");
  }
  return 0;
}
