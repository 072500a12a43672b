#include "report/metric_panels.hpp"

#include <stdexcept>

namespace kgym {

namespace {

MetricPanel panel(const std::string& title, const std::vector<std::pair<std::string, std::string>>& series) {
  MetricPanel p;
  p.set_title(title);
  for (const auto& [label, field] : series) {
    auto* s = p.add_series();
    s->set_label(label);
    s->set_field(field);
  }
  return p;
}

}  // namespace

const std::vector<MetricPanel>& metric_panels() {
  static const std::vector<MetricPanel> panels = {
      panel("mean reward per turn", {{"reward", "mean_reward"}}),
      panel("Fast@p (share of episodes)",
            {{"fast@1 last", "fast1_last"}, {"fast@1.2 last", "fast1_2_last"}, {"fast@1.2 best", "fast1_2_best"}}),
      panel("cheating and laziness (share of turns)",
            {{"hacked", "hack_rate"}, {"cheat", "cheat_share"}, {"lazy", "lazy_share"}}),
      panel("correctness and coverage", {{"correct", "correct_rate"}, {"coverage", "mean_coverage"}}),
      panel("learner filters (share of turns removed)", {{"mrs", "mrs_rejected_rate"}, {"prs", "prs_rejected_rate"}}),
      panel("throughput", {{"episodes/s", "episodes_per_s"}}),
  };
  return panels;
}

std::vector<plot_panel> plot_panels(const std::vector<MetricPanel>& panels, const std::vector<IterationMetrics>& lines) {
  const auto* descriptor = IterationMetrics::descriptor();
  const auto* reflection = IterationMetrics::GetReflection();
  std::vector<plot_panel> out;
  for (const auto& p : panels) {
    plot_panel drawn{p.title(), {}};
    for (const auto& s : p.series()) {
      const auto* field = descriptor->FindFieldByName(s.field());
      if (!field || field->is_repeated() || field->cpp_type() != google::protobuf::FieldDescriptor::CPPTYPE_DOUBLE)
        throw std::invalid_argument("metric panel '" + p.title() + "': " + s.field() +
                                    " is no scalar double field of IterationMetrics");
      plot_series series{s.label(), {}};
      for (const auto& m : lines)
        series.values.push_back(reflection->GetDouble(m, field));
      drawn.series.push_back(std::move(series));
    }
    out.push_back(std::move(drawn));
  }
  return out;
}

}  // namespace kgym
