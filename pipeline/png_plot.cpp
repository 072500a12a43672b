#include "pipeline/png_plot.hpp"

#include <zlib.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <stdexcept>

namespace kgym {

namespace {

// 5x7 glyphs, one byte per row, bit 4 = leftmost column. Lowercase is drawn as uppercase.
const std::map<char, std::array<uint8_t, 7>>& font() {
  static const std::map<char, std::array<uint8_t, 7>> glyphs = {
      {'0', {0x0E, 0x11, 0x13, 0x15, 0x19, 0x11, 0x0E}}, {'1', {0x04, 0x0C, 0x04, 0x04, 0x04, 0x04, 0x0E}},
      {'2', {0x0E, 0x11, 0x01, 0x02, 0x04, 0x08, 0x1F}}, {'3', {0x1F, 0x02, 0x04, 0x02, 0x01, 0x11, 0x0E}},
      {'4', {0x02, 0x06, 0x0A, 0x12, 0x1F, 0x02, 0x02}}, {'5', {0x1F, 0x10, 0x1E, 0x01, 0x01, 0x11, 0x0E}},
      {'6', {0x06, 0x08, 0x10, 0x1E, 0x11, 0x11, 0x0E}}, {'7', {0x1F, 0x01, 0x02, 0x04, 0x08, 0x08, 0x08}},
      {'8', {0x0E, 0x11, 0x11, 0x0E, 0x11, 0x11, 0x0E}}, {'9', {0x0E, 0x11, 0x11, 0x0F, 0x01, 0x02, 0x0C}},
      {'A', {0x0E, 0x11, 0x11, 0x1F, 0x11, 0x11, 0x11}}, {'B', {0x1E, 0x11, 0x11, 0x1E, 0x11, 0x11, 0x1E}},
      {'C', {0x0E, 0x11, 0x10, 0x10, 0x10, 0x11, 0x0E}}, {'D', {0x1C, 0x12, 0x11, 0x11, 0x11, 0x12, 0x1C}},
      {'E', {0x1F, 0x10, 0x10, 0x1E, 0x10, 0x10, 0x1F}}, {'F', {0x1F, 0x10, 0x10, 0x1E, 0x10, 0x10, 0x10}},
      {'G', {0x0E, 0x11, 0x10, 0x17, 0x11, 0x11, 0x0F}}, {'H', {0x11, 0x11, 0x11, 0x1F, 0x11, 0x11, 0x11}},
      {'I', {0x0E, 0x04, 0x04, 0x04, 0x04, 0x04, 0x0E}}, {'J', {0x07, 0x02, 0x02, 0x02, 0x02, 0x12, 0x0C}},
      {'K', {0x11, 0x12, 0x14, 0x18, 0x14, 0x12, 0x11}}, {'L', {0x10, 0x10, 0x10, 0x10, 0x10, 0x10, 0x1F}},
      {'M', {0x11, 0x1B, 0x15, 0x15, 0x11, 0x11, 0x11}}, {'N', {0x11, 0x11, 0x19, 0x15, 0x13, 0x11, 0x11}},
      {'O', {0x0E, 0x11, 0x11, 0x11, 0x11, 0x11, 0x0E}}, {'P', {0x1E, 0x11, 0x11, 0x1E, 0x10, 0x10, 0x10}},
      {'Q', {0x0E, 0x11, 0x11, 0x11, 0x15, 0x12, 0x0D}}, {'R', {0x1E, 0x11, 0x11, 0x1E, 0x14, 0x12, 0x11}},
      {'S', {0x0F, 0x10, 0x10, 0x0E, 0x01, 0x01, 0x1E}}, {'T', {0x1F, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04}},
      {'U', {0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x0E}}, {'V', {0x11, 0x11, 0x11, 0x11, 0x11, 0x0A, 0x04}},
      {'W', {0x11, 0x11, 0x11, 0x15, 0x15, 0x15, 0x0A}}, {'X', {0x11, 0x11, 0x0A, 0x04, 0x0A, 0x11, 0x11}},
      {'Y', {0x11, 0x11, 0x11, 0x0A, 0x04, 0x04, 0x04}}, {'Z', {0x1F, 0x01, 0x02, 0x04, 0x08, 0x10, 0x1F}},
      {'.', {0, 0, 0, 0, 0, 0x0C, 0x0C}},                {'-', {0, 0, 0, 0x1F, 0, 0, 0}},
      {'@', {0x0E, 0x11, 0x01, 0x0D, 0x15, 0x15, 0x0E}}, {'/', {0, 0x01, 0x02, 0x04, 0x08, 0x10, 0}},
      {':', {0, 0x0C, 0x0C, 0, 0x0C, 0x0C, 0}},          {'%', {0x18, 0x19, 0x02, 0x04, 0x08, 0x13, 0x03}},
      {'(', {0x02, 0x04, 0x08, 0x08, 0x08, 0x04, 0x02}}, {')', {0x08, 0x04, 0x02, 0x02, 0x02, 0x04, 0x08}},
      {'_', {0, 0, 0, 0, 0, 0, 0x1F}},                   {'=', {0, 0, 0x1F, 0, 0x1F, 0, 0}},
      {'+', {0, 0x04, 0x04, 0x1F, 0x04, 0x04, 0}},
  };
  return glyphs;
}

struct rgb {
  uint8_t r, g, b;
};

const rgb palette[] = {{31, 119, 180}, {214, 39, 40}, {44, 160, 44}, {255, 127, 14}, {148, 103, 189}, {140, 86, 75}};

class canvas {
 public:
  canvas(int w, int h) : w_(w), h_(h), pixels_(static_cast<size_t>(w) * h * 3, 255) {}
  void set(int x, int y, rgb c) {
    if (x < 0 || y < 0 || x >= w_ || y >= h_)
      return;
    size_t i = (static_cast<size_t>(y) * w_ + x) * 3;
    pixels_[i] = c.r;
    pixels_[i + 1] = c.g;
    pixels_[i + 2] = c.b;
  }
  void line(int x0, int y0, int x1, int y1, rgb c, int thickness = 1) {
    int dx = std::abs(x1 - x0), dy = -std::abs(y1 - y0), sx = x0 < x1 ? 1 : -1, sy = y0 < y1 ? 1 : -1;
    int err = dx + dy;
    while (true) {
      for (int t = 0; t < thickness; ++t) {
        set(x0, y0 + t, c);
        set(x0 + t, y0, c);
      }
      if (x0 == x1 && y0 == y1)
        break;
      int e2 = 2 * err;
      if (e2 >= dy) {
        err += dy;
        x0 += sx;
      }
      if (e2 <= dx) {
        err += dx;
        y0 += sy;
      }
    }
  }
  void text(int x, int y, const std::string& s, rgb c) {
    for (char ch : s) {
      auto glyph = font().find(static_cast<char>(std::toupper(static_cast<unsigned char>(ch))));
      if (glyph != font().end())
        for (int row = 0; row < 7; ++row)
          for (int col = 0; col < 5; ++col)
            if (glyph->second[row] & (0x10 >> col))
              set(x + col, y + row, c);
      x += 6;
    }
  }
  const std::vector<uint8_t>& pixels() const { return pixels_; }

 private:
  int w_, h_;
  std::vector<uint8_t> pixels_;
};

std::string format_tick(double v) {
  char text[32];
  std::snprintf(text, sizeof text, std::fabs(v) >= 100 ? "%.0f" : "%.2f", v);
  return text;
}

void draw_panel(canvas& c, int x0, int y0, int w, int h, const plot_panel& panel, const std::string& x_label) {
  const rgb ink{40, 40, 40}, grid{225, 225, 225};
  int left = x0 + 52, right = x0 + w - 12, top = y0 + 34, bottom = y0 + h - 26;
  c.text(x0 + 10, y0 + 8, panel.title, ink);
  double lo = 0, hi = 0;
  size_t n = 0;
  for (const auto& s : panel.series)
    for (double v : s.values) {
      lo = std::min(lo, v);
      hi = std::max(hi, v);
      n = std::max(n, s.values.size());
    }
  if (hi - lo < 1e-9)
    hi = lo + 1;
  for (int k = 0; k <= 4; ++k) {
    int y = bottom - (bottom - top) * k / 4;
    c.line(left, y, right, y, grid);
    c.text(x0 + 4, y - 3, format_tick(lo + (hi - lo) * k / 4), ink);
  }
  c.line(left, top, left, bottom, ink);
  c.line(left, bottom, right, bottom, ink);
  c.text(left, bottom + 8, "1", ink);
  std::string last = std::to_string(n);
  c.text(right - 6 * static_cast<int>(last.size()), bottom + 8, last, ink);
  c.text((left + right) / 2 - 3 * static_cast<int>(x_label.size()), bottom + 8, x_label, ink);
  auto px = [&](size_t i) { return n <= 1 ? left : left + static_cast<int>((right - left) * i / (n - 1)); };
  auto py = [&](double v) { return bottom - static_cast<int>(std::lround((bottom - top) * (v - lo) / (hi - lo))); };
  int legend_x = x0 + 10;
  for (size_t k = 0; k < panel.series.size(); ++k) {
    const auto& s = panel.series[k];
    rgb color = palette[k % (sizeof palette / sizeof palette[0])];
    for (size_t i = 1; i < s.values.size(); ++i)
      c.line(px(i - 1), py(s.values[i - 1]), px(i), py(s.values[i]), color, 2);
    if (s.values.size() == 1)
      c.line(px(0) - 2, py(s.values[0]), px(0) + 2, py(s.values[0]), color, 2);
    c.line(legend_x, y0 + 24, legend_x + 12, y0 + 24, color, 2);
    c.text(legend_x + 16, y0 + 21, s.name, ink);
    legend_x += 16 + 6 * static_cast<int>(s.name.size()) + 14;
  }
}

void chunk(std::string& out, const char* type, const std::string& data) {
  auto be32 = [&](uint32_t v) {
    for (int shift = 24; shift >= 0; shift -= 8)
      out.push_back(static_cast<char>((v >> shift) & 0xFF));
  };
  be32(static_cast<uint32_t>(data.size()));
  std::string body = std::string(type, 4) + data;
  out += body;
  be32(static_cast<uint32_t>(crc32(0, reinterpret_cast<const Bytef*>(body.data()), body.size())));
}

}  // namespace

std::string encode_png(int width, int height, const std::vector<uint8_t>& pixels) {
  std::string raw;
  raw.reserve(static_cast<size_t>(height) * (width * 3 + 1));
  for (int y = 0; y < height; ++y) {
    raw.push_back(0);  // filter: none
    raw.append(reinterpret_cast<const char*>(&pixels[static_cast<size_t>(y) * width * 3]), width * 3);
  }
  uLongf size = compressBound(raw.size());
  std::string compressed(size, '\0');
  if (compress2(reinterpret_cast<Bytef*>(&compressed[0]), &size, reinterpret_cast<const Bytef*>(raw.data()),
                raw.size(), 9) != Z_OK)
    throw std::runtime_error("zlib could not compress the image");
  compressed.resize(size);
  std::string header;
  for (uint32_t v : {static_cast<uint32_t>(width), static_cast<uint32_t>(height)})
    for (int shift = 24; shift >= 0; shift -= 8)
      header.push_back(static_cast<char>((v >> shift) & 0xFF));
  header += std::string("\x08\x02\x00\x00\x00", 5);  // 8-bit RGB, no interlace
  std::string png("\x89PNG\r\n\x1a\n", 8);
  chunk(png, "IHDR", header);
  chunk(png, "IDAT", compressed);
  chunk(png, "IEND", "");
  return png;
}

void write_line_charts_png(const std::string& path, const std::vector<plot_panel>& panels,
                           const std::string& x_label) {
  const int panel_w = 520, panel_h = 260, columns = 2;
  int rows = static_cast<int>((panels.size() + columns - 1) / columns);
  canvas c(panel_w * columns, std::max(1, rows) * panel_h);
  for (size_t i = 0; i < panels.size(); ++i)
    draw_panel(c, static_cast<int>(i % columns) * panel_w, static_cast<int>(i / columns) * panel_h, panel_w, panel_h,
               panels[i], x_label);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << encode_png(panel_w * columns, std::max(1, rows) * panel_h, c.pixels());
  if (!out)
    throw std::runtime_error("cannot write " + path);
}

}  // namespace kgym
