// serve_metrics: what `kgym serve` counts for GET /metrics, and its Prometheus text format.
// Pure: the serve loop records each answer; rendering takes the status of the moment.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>

#include "messages/kgym.pb.h"

namespace kgym {

class serve_metrics {
 public:
  // Upper bounds of the evaluation-seconds histogram's buckets (+Inf follows).
  static constexpr std::array<double, 10> bucket_bounds{0.5, 1, 2, 5, 10, 30, 60, 120, 300, 600};

  // One evaluation answered (not a duplicate, not a refusal).
  void evaluated(const ExecResult& result);
  // The exposition text (version 0.0.4): counters by verdict, the histogram of evaluation wall
  // seconds, and the gauges of `status`.
  std::string prometheus_text(const ServeStatus& status) const;

 private:
  std::map<Verdict, uint64_t> by_verdict_;
  std::array<uint64_t, bucket_bounds.size()> buckets_{};  // counts per bucket, not cumulative
  uint64_t count_ = 0;
  double sum_s_ = 0;
};

}  // namespace kgym
