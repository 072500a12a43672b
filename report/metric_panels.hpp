// The charts of a training run's metrics, stated once: `kgym report` draws them into
// curves.png, the browser view (web/) draws them live from the same list.
#pragma once

#include <vector>

#include "messages/kgym.pb.h"
#include "report/line_charts.hpp"

namespace kgym {

// Each panel's title and series, a series naming the IterationMetrics field it plots.
const std::vector<MetricPanel>& metric_panels();

// The panels' values over `lines` (one per iteration), for write_line_charts_png.
std::vector<plot_panel> plot_panels(const std::vector<MetricPanel>& panels, const std::vector<IterationMetrics>& lines);

}  // namespace kgym
