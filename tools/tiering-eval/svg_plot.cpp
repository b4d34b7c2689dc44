// SPDX-License-Identifier: Apache-2.0
#include "svg_plot.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string_view>

namespace cxlpool::tiering::eval {

namespace {

constexpr double kWidth = 760, kHeight = 400;
constexpr double kLeft = 60, kRight = 170, kTop = 40, kBottom = 50;
constexpr const char* kPalette[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                    "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
constexpr std::size_t kColors = sizeof(kPalette) / sizeof(kPalette[0]);

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", v);
  return buf;
}

std::string tick(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

void text(std::string& out, double x, double y, const std::string& s, std::string_view anchor = "start",
          int size = 12, std::string_view extra = "") {
  out += "<text x=\"" + num(x) + "\" y=\"" + num(y) + "\" font-size=\"" + std::to_string(size) +
         "\" text-anchor=\"" + std::string(anchor) + "\"" + std::string(extra) + ">" + xml_escape(s) + "</text>\n";
}

void line(std::string& out, double x1, double y1, double x2, double y2, std::string_view style) {
  out += "<line x1=\"" + num(x1) + "\" y1=\"" + num(y1) + "\" x2=\"" + num(x2) + "\" y2=\"" + num(y2) + "\" " +
         std::string(style) + "/>\n";
}

std::string header(const std::string& title) {
  std::string out = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + num(kWidth) + "\" height=\"" +
                    num(kHeight) + "\" viewBox=\"0 0 " + num(kWidth) + " " + num(kHeight) +
                    "\" font-family=\"sans-serif\">\n";
  out += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  text(out, kWidth / 2, 22, title, "middle", 15);
  return out;
}

// Y axis with 5 gridlines from 0 to y_max.
void y_axis(std::string& out, double y_max, const std::string& label) {
  const double plot_h = kHeight - kTop - kBottom;
  for (int i = 0; i <= 4; ++i) {
    const double v = y_max * i / 4;
    const double y = kTop + plot_h - plot_h * i / 4;
    line(out, kLeft, y, kWidth - kRight, y, "stroke=\"#dddddd\"");
    text(out, kLeft - 6, y + 4, tick(v), "end", 11);
  }
  line(out, kLeft, kTop, kLeft, kTop + plot_h, "stroke=\"black\"");
  line(out, kLeft, kTop + plot_h, kWidth - kRight, kTop + plot_h, "stroke=\"black\"");
  text(out, 16, kTop + plot_h / 2, label, "middle", 12,
       " transform=\"rotate(-90 16 " + num(kTop + plot_h / 2) + ")\"");
}

void legend(std::string& out, const std::vector<std::string>& labels) {
  double y = kTop + 8;
  for (std::size_t i = 0; i < labels.size(); ++i, y += 18) {
    out += "<rect x=\"" + num(kWidth - kRight + 14) + "\" y=\"" + num(y - 9) + "\" width=\"12\" height=\"12\" fill=\"" +
           kPalette[i % kColors] + "\"/>\n";
    text(out, kWidth - kRight + 32, y + 1, labels[i], "start", 11);
  }
}

}  // namespace

std::string render_svg(const LineChart& chart) {
  std::string out = header(chart.title);
  const double plot_w = kWidth - kLeft - kRight, plot_h = kHeight - kTop - kBottom;
  const double y_max = chart.y_max > 0 ? chart.y_max : 1.0;
  double x_max = 0;
  for (const auto& s : chart.series)
    for (double x : s.x) x_max = std::max(x_max, x);
  if (x_max <= 0) x_max = 1;
  y_axis(out, y_max, chart.y_label);
  for (int i = 0; i <= 5; ++i) {
    const double v = x_max * i / 5;
    const double x = kLeft + plot_w * i / 5;
    line(out, x, kTop + plot_h, x, kTop + plot_h + 4, "stroke=\"black\"");
    text(out, x, kTop + plot_h + 17, tick(std::round(v * 100) / 100), "middle", 11);
  }
  text(out, kLeft + plot_w / 2, kHeight - 10, chart.x_label, "middle", 12);

  std::vector<std::string> labels;
  for (std::size_t si = 0; si < chart.series.size(); ++si) {
    const LineSeries& s = chart.series[si];
    labels.push_back(s.label);
    std::string points;
    auto flush = [&] {
      if (!points.empty())
        out += std::string("<polyline fill=\"none\" stroke-width=\"1.6\" stroke=\"") + kPalette[si % kColors] +
               "\" points=\"" + points + "\"/>\n";
      points.clear();
    };
    for (std::size_t i = 0; i < s.x.size() && i < s.y.size(); ++i) {
      if (s.y[i] < 0) {
        flush();
        continue;
      }
      const double x = kLeft + plot_w * s.x[i] / x_max;
      const double y = kTop + plot_h - plot_h * std::min(s.y[i], y_max) / y_max;
      points += num(x) + "," + num(y) + " ";
    }
    flush();
  }
  legend(out, labels);
  out += "</svg>\n";
  return out;
}

std::string render_svg(const BarChart& chart) {
  std::string out = header(chart.title);
  const double plot_w = kWidth - kLeft - kRight, plot_h = kHeight - kTop - kBottom;
  const double y_max = chart.y_max > 0 ? chart.y_max : 1.0;
  y_axis(out, y_max, chart.y_label);
  const std::size_t ng = std::max<std::size_t>(chart.groups.size(), 1);
  const std::size_t nb = std::max<std::size_t>(chart.bar_labels.size(), 1);
  const double group_w = plot_w / static_cast<double>(ng);
  const double bar_w = group_w * 0.8 / static_cast<double>(nb);
  for (std::size_t g = 0; g < chart.groups.size(); ++g) {
    const BarGroup& group = chart.groups[g];
    const double gx = kLeft + group_w * static_cast<double>(g) + group_w * 0.1;
    for (std::size_t b = 0; b < group.values.size() && b < nb; ++b) {
      const double v = group.values[b];
      if (v < 0) continue;
      const double h = plot_h * std::min(v, y_max) / y_max;
      out += "<rect x=\"" + num(gx + bar_w * static_cast<double>(b)) + "\" y=\"" + num(kTop + plot_h - h) +
             "\" width=\"" + num(bar_w * 0.92) + "\" height=\"" + num(h) + "\" fill=\"" + kPalette[b % kColors] +
             "\"><title>" + xml_escape(group.label + " " + chart.bar_labels[b] + ": " + num(v)) + "</title></rect>\n";
    }
    text(out, kLeft + group_w * (static_cast<double>(g) + 0.5), kTop + plot_h + 17, group.label, "middle", 11);
  }
  if (chart.reference >= 0 && chart.reference <= y_max) {
    const double y = kTop + plot_h - plot_h * chart.reference / y_max;
    line(out, kLeft, y, kWidth - kRight, y, "stroke=\"black\" stroke-dasharray=\"5,4\"");
    text(out, kWidth - kRight - 4, y - 4, "target " + tick(chart.reference), "end", 11);
  }
  legend(out, chart.bar_labels);
  out += "</svg>\n";
  return out;
}

}  // namespace cxlpool::tiering::eval
