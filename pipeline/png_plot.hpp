// Line charts as a PNG file, with no plotting library: panels of curves over iterations,
// each with a title, a legend and its y range, drawn with a built-in 5x7 font.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kgym {

struct plot_series {
  std::string name;
  std::vector<double> values;  // one per x (iteration)
};

struct plot_panel {
  std::string title;
  std::vector<plot_series> series;
};

// Writes panels in two columns; throws std::runtime_error when the file cannot be written.
void write_line_charts_png(const std::string& path, const std::vector<plot_panel>& panels,
                           const std::string& x_label = "iteration");

// The PNG encoding of an RGB image (rows top to bottom, 3 bytes per pixel).
std::string encode_png(int width, int height, const std::vector<uint8_t>& rgb);

}  // namespace kgym
