#include "gpu/profiler/request_windows.hpp"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <utility>

#include "messages/evidence.hpp"

namespace kgym {

namespace {

struct window {
  uint64_t open_ns, close_ns;
  bool delivery;  // a delivery's window (copies only), else a batch's
  int index;      // among the windows of its kind
  int copies = 0;
  int64_t bytes = 0;
};

// A copy's kind and size, as the evidence names it ("", for a kernel).
std::string copy_detail(const KernelActivity& k) {
  if (k.bytes() == 0 && k.copy_kind() == COPY_KIND_UNSPECIFIED)
    return "";
  const char* kind = k.copy_kind() == COPY_DEVICE_TO_DEVICE ? "device to device, "
                     : k.copy_kind() == COPY_HOST_TO_DEVICE ? "host to device, "
                     : k.copy_kind() == COPY_DEVICE_TO_HOST ? "device to host, "
                     : k.copy_kind() == COPY_OTHER          ? "other memories, "
                                                            : "";
  return std::string(kind) + std::to_string(k.bytes()) + " bytes, ";
}

std::string describe(const KernelActivity& k, const std::vector<window>& windows) {
  // The last window that opened before it: where the work sits in the timing.
  auto after = std::upper_bound(windows.begin(), windows.end(), k.start_ns(),
                                [](uint64_t t, const window& w) { return t < w.open_ns; });
  char text[400];
  const std::string copy = copy_detail(k);
  if (after == windows.begin()) {
    std::snprintf(text, sizeof text, "'%.120s' (%s%.3f ms) began before the first batch", k.name().c_str(), copy.c_str(),
                  (k.end_ns() - k.start_ns()) / 1e6);
  } else {
    const window& w = *(after - 1);
    std::snprintf(text, sizeof text, "'%.120s' (%s%.3f ms) ran from %.3f to %.3f ms after %s %d opened (it closed at %.3f ms)",
                  k.name().c_str(), copy.c_str(), (k.end_ns() - k.start_ns()) / 1e6,
                  (static_cast<double>(k.start_ns()) - w.open_ns) / 1e6,
                  (static_cast<double>(k.end_ns()) - w.open_ns) / 1e6, w.delivery ? "delivery" : "batch", w.index,
                  (w.close_ns - w.open_ns) / 1e6);
  }
  return text;
}

// A delivery's record that it may make: a device-to-device copy within its count and bytes
// (counted into `w`).
bool delivers(const KernelActivity& k, window& w, const delivery_limits& limits) {
  if (k.name() != "[memcpy]" || k.copy_kind() != COPY_DEVICE_TO_DEVICE)
    return false;
  if (w.index >= static_cast<int>(limits.judge_ms.size()))
    return false;  // a delivery the judge never asked for (phase calls of the candidate's own) may copy nothing
  w.bytes += static_cast<int64_t>(k.bytes());
  return ++w.copies <= limits.copies && w.bytes <= limits.bytes;
}

}  // namespace

request_windows check_request_windows(const checked_trace& trace, const std::vector<double>& judge_batch_ms,
                                      const delivery_limits& deliveries) {
  request_windows found;
  std::vector<window> windows;
  uint64_t section_end = std::numeric_limits<uint64_t>::max();
  const auto& calls = trace.phase_calls;
  const auto opens = delivery_openings(calls);
  for (size_t i = 0; i < calls.size() && i < trace.phase_at_ns.size(); ++i) {
    const bool batch = calls[i].kind() == TRACE_BATCH, delivery = opens[i];
    if (batch || delivery) {
      uint64_t close = i + 1 < trace.phase_at_ns.size() ? trace.phase_at_ns[i + 1] : section_end;
      windows.push_back({trace.phase_at_ns[i], close, delivery, delivery ? found.deliveries++ : found.windows++});
    } else if (!windows.empty() && calls[i].kind() != TRACE_IDLE && section_end == std::numeric_limits<uint64_t>::max()) {
      section_end = trace.phase_at_ns[i];  // a delivery call out of place ends the section: work after it is outside
    }
  }
  found.unasked_deliveries = std::max(found.deliveries - static_cast<int>(deliveries.judge_ms.size()), 0);
  if (windows.empty())
    return found;
  const uint64_t slack = static_cast<uint64_t>(window_slack_ms * 1e6);
  for (const auto& w : windows) {
    const auto& judge_ms = w.delivery ? deliveries.judge_ms : judge_batch_ms;
    if (w.index >= static_cast<int>(judge_ms.size()))
      continue;
    double window_ms = (w.close_ns - w.open_ns) / 1e6;
    if (w.close_ns < w.open_ns || window_ms > judge_ms[w.index] + window_slack_ms) {
      if (found.longer++ == 0) {
        char text[200];
        std::snprintf(text, sizeof text, "%s %d: its window in the trace lasted %.3f ms, the judge's request %.3f ms",
                      w.delivery ? "delivery" : "batch", w.index, window_ms, judge_ms[w.index]);
        found.first_longer = text;
      }
    }
  }
  const uint64_t section_start = windows.front().open_ns;
  for (const auto& k : trace.kernels) {
    if (k.end_ns() <= section_start || k.start_ns() >= section_end)
      continue;
    auto after = std::upper_bound(windows.begin(), windows.end(), k.start_ns() + slack,
                                  [](uint64_t t, const window& w) { return t < w.open_ns; });
    bool inside = after != windows.begin() &&
                  (k.end_ns() <= (after - 1)->close_ns || k.end_ns() - (after - 1)->close_ns <= slack);
    if (inside && (after - 1)->delivery)  // a delivery moves its outputs, device to device, nothing more
      inside = delivers(k, *(after - 1), deliveries);
    if (inside)
      continue;
    if (found.outside++ == 0)
      found.first_outside = describe(k, windows);
    found.outside_ms += k.end_ns() > k.start_ns() ? (k.end_ns() - k.start_ns()) / 1e6 : 0.0;
  }
  return found;
}

void apply_request_windows(const request_windows& found, bool no_hacking_check, ExecResult* result) {
  if (result->verdict() != OK)
    return;
  auto hack = [&](EvidenceKind kind, const std::string& detail, const std::string& message) {
    add_evidence(result, kind, detail, "cupti");
    if (!no_hacking_check && result->verdict() != HACKED)
      mark_hacked(result, PHASE_TIMING, message);
  };
  if (found.outside > 0) {
    char text[200];
    std::snprintf(text, sizeof text, "%d kernels or copies (%.3f ms of GPU time) outside the candidate's %d batch windows%s; ",
                  found.outside, found.outside_ms, found.windows,
                  found.deliveries ? " and what its deliveries may copy" : "");
    hack(GPU_WORK_BETWEEN_REQUESTS, text + found.first_outside,
         "the candidate's process ran GPU work between its timed requests (while the reference was timed, or "
         "left running past its answers)");
  }
  if (found.unasked_deliveries > 0)
    hack(PHASE_SEQUENCE,
         std::to_string(found.deliveries) + " delivery windows in the trace, " +
             std::to_string(found.deliveries - found.unasked_deliveries) + " asked for by the judge",
         "the profiler's phases were set by someone other than the harness");
  if (found.longer > 0)
    hack(BATCH_WINDOW_LONGER_THAN_REQUEST,
         std::to_string(found.longer) + " of " + std::to_string(found.windows) + " batch windows" +
             (found.deliveries ? " and " + std::to_string(found.deliveries) + " deliveries" : "") + "; " +
             found.first_longer,
         "the candidate's trace shows batch windows longer than the judge's requests (its phase calls were moved)");
}

}  // namespace kgym
