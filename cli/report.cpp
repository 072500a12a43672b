// kgym report: a run's metrics as a table, and its curves as a PNG.
#include <cstdio>
#include <filesystem>
#include <iostream>

#include "cli/command_line.hpp"
#include "cli/commands.hpp"
#include "report/metric_panels.hpp"
#include "pipeline/run_dir.hpp"

namespace kgym::cli {

namespace {

command_line report_command_line() {
  command_line c("report", "DIR [--png FILE]",
                 "Prints the per-iteration metrics of the run in DIR (its metrics.jsonl) as a table and\n"
                 "writes its curves to DIR/curves.png (or FILE): mean reward; Fast@1 and Fast@1.2 of the\n"
                 "last turn and best of history; hacked, cheating and lazy shares; coverage and correctness;\n"
                 "MRS/PRS rejection rates; throughput.\n");
  c.positional("DIR", "the run directory (kgym train --run-dir)", true)
      .text("png", "FILE", "where to draw the curves (default DIR/curves.png)");
  return c;
}

}  // namespace

int run_report(const std::vector<std::string>& argv) {
  auto parsed = report_command_line().parse(argv);
  if (!parsed)
    return 0;  // --help
  const args& a = *parsed;
  std::string dir = a.positional().front();
  auto lines = run_dir::read_metrics(dir);
  if (lines.empty())
    throw std::invalid_argument("no metrics in " + run_dir::metrics_path(dir) +
                                " yet: a run writes a line when its first iteration is trained");
  std::printf("%5s %7s %7s %7s %8s %8s %6s %6s %6s %6s %5s %5s %7s\n", "iter", "reward", "correct", "fast@1",
              "fast@1.2", "best1.2", "hacked", "cheat", "lazy", "cover", "mrs", "prs", "ep/s");
  for (const auto& m : lines)
    std::printf("%5lld %7.3f %7.2f %7.2f %8.2f %8.2f %6.2f %6.2f %6.2f %6.2f %5.2f %5.2f %7.2f\n",
                static_cast<long long>(m.iteration() + 1), m.mean_reward(), m.correct_rate(), m.fast1_last(),
                m.fast1_2_last(), m.fast1_2_best(), m.hack_rate(), m.cheat_share(), m.lazy_share(),
                m.mean_coverage(), m.mrs_rejected_rate(), m.prs_rejected_rate(), m.episodes_per_s());
  std::string png = a.get("png", (std::filesystem::path(dir) / "curves.png").string());
  write_line_charts_png(png, plot_panels(metric_panels(), lines));
  std::cout << "curves: " << png << "\n";
  return 0;
}

}  // namespace kgym::cli
