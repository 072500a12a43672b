// Line charts as a PNG file, drawn by matplotlib (report/plot_curves.py, run by a Python that
// has it): panels of curves over iterations (or turns), each with a title and a legend.
#pragma once

#include <string>
#include <vector>

namespace kgym {

struct plot_series {
  std::string name;
  std::vector<double> values;  // one per x (iteration); NaN: a gap
};

struct plot_panel {
  std::string title;
  std::vector<plot_series> series;
};

// The Python that draws: $KGYM_PLOT_PYTHON, else /usr/bin/python3 (where Debian's
// python3-matplotlib is), else python3.
std::string plot_python();

// Writes panels in two columns to `path`; throws std::runtime_error, saying what to install,
// when the chart cannot be drawn.
void write_line_charts_png(const std::string& path, const std::vector<plot_panel>& panels,
                           const std::string& x_label = "iteration");

}  // namespace kgym
