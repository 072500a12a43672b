#include "service/serve_metrics.hpp"

#include <sstream>

namespace kgym {

void serve_metrics::evaluated(const ExecResult& result) {
  ++by_verdict_[result.verdict()];
  ++count_;
  sum_s_ += result.wall_s();
  for (size_t i = 0; i < bucket_bounds.size(); ++i)
    if (result.wall_s() <= bucket_bounds[i]) {
      ++buckets_[i];
      break;
    }
}

namespace {

void gauge(std::ostringstream& out, const char* name, const char* help, double value) {
  out << "# HELP " << name << ' ' << help << "\n# TYPE " << name << " gauge\n" << name << ' ' << value << '\n';
}

}  // namespace

std::string serve_metrics::prometheus_text(const ServeStatus& status) const {
  std::ostringstream out;
  out << "# HELP kgym_evaluations_total Evaluations answered, by verdict.\n"
         "# TYPE kgym_evaluations_total counter\n";
  for (int v = Verdict_MIN; v <= Verdict_MAX; ++v) {
    if (!Verdict_IsValid(v) || v == VERDICT_UNSPECIFIED)
      continue;
    auto found = by_verdict_.find(static_cast<Verdict>(v));
    out << "kgym_evaluations_total{verdict=\"" << Verdict_Name(static_cast<Verdict>(v)) << "\"} "
        << (found == by_verdict_.end() ? 0 : found->second) << '\n';
  }
  out << "# HELP kgym_requests_refused_total Requests refused (bad frame, unknown task, wrong secret, ...).\n"
         "# TYPE kgym_requests_refused_total counter\n"
      << "kgym_requests_refused_total " << status.refused() << '\n';
  out << "# HELP kgym_evaluation_seconds Wall time of each evaluation.\n"
         "# TYPE kgym_evaluation_seconds histogram\n";
  uint64_t cumulative = 0;
  for (size_t i = 0; i < bucket_bounds.size(); ++i) {
    cumulative += buckets_[i];
    out << "kgym_evaluation_seconds_bucket{le=\"" << bucket_bounds[i] << "\"} " << cumulative << '\n';
  }
  out << "kgym_evaluation_seconds_bucket{le=\"+Inf\"} " << count_ << '\n'
      << "kgym_evaluation_seconds_sum " << sum_s_ << '\n'
      << "kgym_evaluation_seconds_count " << count_ << '\n';
  gauge(out, "kgym_queue_depth", "Requests waiting for a free executor.", status.scheduler().queued());
  gauge(out, "kgym_requests_in_flight", "Requests accepted and not yet answered.",
        static_cast<double>(status.requests_in_flight()));
  gauge(out, "kgym_executors", "Executors joined (local and on workers).", status.scheduler().executors_size());
  gauge(out, "kgym_answers_kept", "Answers held in memory for retries and GETs.",
        static_cast<double>(status.answers_kept()));
  gauge(out, "kgym_answers_awaiting_redelivery", "Answers whose ZeroMQ client was not connected.",
        static_cast<double>(status.awaiting_redelivery()));
  out << "# HELP kgym_journal_answers_committed_total Answers committed to the journal (--state-dir) before "
         "they were sent, by the thread that committed them.\n"
         "# TYPE kgym_journal_answers_committed_total counter\n"
      << "kgym_journal_answers_committed_total{thread=\"api\"} " << status.answers_committed_at_once() << '\n'
      << "kgym_journal_answers_committed_total{thread=\"writer\"} " << status.answers_committed_by_writer() << '\n';
  return out.str();
}

}  // namespace kgym
