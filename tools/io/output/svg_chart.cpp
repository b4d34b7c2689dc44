// SPDX-License-Identifier: Apache-2.0
#include "svg_chart.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace cxlpool::io {

namespace {

constexpr double kWidth = 800, kHeight = 450;
constexpr double kLeft = 80, kRight = 170, kTop = 40, kBottom = 60;
const char* const kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf"};

// Round tick step: 1, 2 or 5 times a power of ten.
double nice_step(double span, int ticks) {
  if (span <= 0) return 1;
  const double raw = span / ticks;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  const double f = raw / mag;
  return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * mag;
}

std::string tick_label(double v) {
  const double a = std::fabs(v);
  if (a >= 1e9) return fmt::format("{:g}G", v / 1e9);
  if (a >= 1e6) return fmt::format("{:g}M", v / 1e6);
  if (a >= 1e4) return fmt::format("{:g}k", v / 1e3);
  return fmt::format("{:g}", v);
}

}  // namespace

std::string render_svg(const LineChart& chart) {
  double x_min = INFINITY, x_max = -INFINITY, y_max = 0;
  for (const auto& s : chart.series) {
    for (const auto& [x, y] : s.points) {
      if (chart.log_x && x <= 0) continue;
      x_min = std::min(x_min, x);
      x_max = std::max(x_max, x);
      y_max = std::max(y_max, y);
    }
  }
  if (!std::isfinite(x_min)) x_min = chart.log_x ? 1 : 0, x_max = x_min + 1;
  if (chart.log_x) {
    x_min = std::pow(10.0, std::floor(std::log10(x_min)));
    x_max = std::pow(10.0, std::ceil(std::log10(x_max)));
    if (x_max <= x_min) x_max = x_min * 10;
  } else if (x_max <= x_min) {
    x_max = x_min + 1;
  }
  if (y_max <= 0) y_max = 1;
  const double y_step = nice_step(y_max, 5);
  y_max = std::ceil(y_max / y_step) * y_step;

  const double plot_w = kWidth - kLeft - kRight, plot_h = kHeight - kTop - kBottom;
  auto px = [&](double x) {
    const double f = chart.log_x ? (std::log10(x) - std::log10(x_min)) / (std::log10(x_max) - std::log10(x_min))
                                 : (x - x_min) / (x_max - x_min);
    return kLeft + f * plot_w;
  };
  auto py = [&](double y) { return kTop + plot_h - y / y_max * plot_h; };

  std::string svg = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" viewBox=\"0 0 {} {}\" "
      "font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n",
      kWidth, kHeight, kWidth, kHeight);
  svg += fmt::format("<text x=\"{}\" y=\"22\" text-anchor=\"middle\" font-size=\"15\">{}</text>\n", kWidth / 2 - 40,
                     xml_escape(chart.title));
  // Grid and tick labels.
  for (double y = 0; y <= y_max + y_step / 2; y += y_step) {
    svg += fmt::format("<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#ddd\"/>\n", kLeft, py(y),
                       kLeft + plot_w, py(y));
    svg += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>\n", kLeft - 6, py(y) + 4,
                       tick_label(y));
  }
  if (chart.log_x) {
    for (double x = x_min; x <= x_max * 1.0001; x *= 10) {
      svg += fmt::format("<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#ddd\"/>\n", px(x), kTop,
                         px(x), kTop + plot_h);
      svg += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{}</text>\n", px(x),
                         kTop + plot_h + 18, tick_label(x));
    }
  } else {
    const double x_step = nice_step(x_max - x_min, 8);
    for (double x = std::ceil(x_min / x_step) * x_step; x <= x_max + x_step / 1000; x += x_step) {
      svg += fmt::format("<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#ddd\"/>\n", px(x), kTop,
                         px(x), kTop + plot_h);
      svg += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{}</text>\n", px(x),
                         kTop + plot_h + 18, tick_label(x));
    }
  }
  svg += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"black\"/>\n", kLeft, kTop,
                     plot_w, plot_h);
  svg += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n", kLeft + plot_w / 2, kHeight - 15,
                     xml_escape(chart.x_label));
  svg += fmt::format("<text x=\"18\" y=\"{}\" text-anchor=\"middle\" transform=\"rotate(-90 18 {})\">{}</text>\n",
                     kTop + plot_h / 2, kTop + plot_h / 2, xml_escape(chart.y_label));

  for (std::size_t i = 0; i < chart.series.size(); ++i) {
    const auto& s = chart.series[i];
    const char* color = kColors[i % std::size(kColors)];
    std::string pts;
    for (const auto& [x, y] : s.points) {
      if (chart.log_x && x <= 0) continue;
      pts += fmt::format("{:.1f},{:.1f} ", px(x), py(y));
    }
    if (!pts.empty())
      svg += fmt::format("<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"1.5\" points=\"{}\"/>\n", color, pts);
    const double ly = kTop + 10 + static_cast<double>(i) * 18;
    svg += fmt::format("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"{}\" stroke-width=\"3\"/>\n",
                       kLeft + plot_w + 10, ly, kLeft + plot_w + 28, ly, color);
    svg += fmt::format("<text x=\"{}\" y=\"{}\">{}</text>\n", kLeft + plot_w + 32, ly + 4, xml_escape(s.name));
  }
  svg += "</svg>\n";
  return svg;
}

}  // namespace cxlpool::io
