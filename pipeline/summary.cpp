#include "pipeline/summary.hpp"

#include <cstdio>

#include "messages/enum_names.hpp"

namespace kgym {

std::string summary_line(const ExecResult& r) {
  int passed = 0;
  for (const auto& t : r.trials())
    passed += t.correct() ? 1 : 0;
  char head[256];
  std::snprintf(head, sizeof head, "%-24s %-15s", r.candidate_id().c_str(), Verdict_Name(r.verdict()).c_str());
  std::string line = head;
  char detail[256];
  if (r.verdict() == OK) {
    std::snprintf(detail, sizeof detail, "speedup %.3fx", r.speedup());
    line += detail;
    if (r.speedup_rse() > 0) {  // how far to trust it: a noisy timing stops at its cap, imprecise
      std::snprintf(detail, sizeof detail, " +-%.1f%%", 100 * r.speedup_rse());
      line += detail;
    }
    std::snprintf(detail, sizeof detail, " (ref %.3f ms, cand %.3f ms, n=%d)", r.reference_time().median_ms(),
                  r.candidate_time().median_ms(), r.candidate_time().n());
    line += detail;
    if (r.has_profile()) {
      std::snprintf(detail, sizeof detail, " coverage %.2f", r.profile().coverage());
      line += detail;
    }
    if (r.profile().modeled_speedup() > 0) {
      std::snprintf(detail, sizeof detail, " modeled GPU speedup %.2fx", r.profile().modeled_speedup());
      line += detail;
    }
    // Placements moved and a side in two modes: its time is its fast mode's batches only.
    const int ref_batches = r.reference_batches_ms_size(), cand_batches = r.candidate_batches_ms_size();
    if (r.reference_batches_timed() < ref_batches || r.candidate_batches_timed() < cand_batches) {
      std::snprintf(detail, sizeof detail, " fast mode: ref %d of %d batches, cand %d of %d",
                    r.reference_batches_timed(), ref_batches, r.candidate_batches_timed(), cand_batches);
      line += detail;
    }
  } else {
    line += r.message();
  }
  std::snprintf(detail, sizeof detail, "  [%d/%d trials, %.1f s", passed, r.trials_size(), r.wall_s());
  line += detail;
  if (r.peak_device_memory_mb() > 0) {  // the GPU's memory in use at the evaluation's peak, every process's
    std::snprintf(detail, sizeof detail, ", GPU memory %.1f GiB", r.peak_device_memory_mb() / 1024);
    line += detail;
  }
  line += "]";
  for (const auto& e : r.evidence())
    line += "\n" + std::string(41, ' ') + "evidence: " + lower_name(e.kind()) + ": " + e.detail() + " (" + e.source() + ")";
  return line;
}

}  // namespace kgym
