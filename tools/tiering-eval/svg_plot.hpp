// SPDX-License-Identifier: Apache-2.0
// Minimal SVG charts written by hand: a line chart (series over time) and a
// grouped bar chart. Enough for the evaluation's two plots, no dependency.
#pragma once

#include <string>
#include <vector>

#include "cxlpool/common/xml_escape.hpp"  // labels are escaped with it

namespace cxlpool::tiering::eval {

struct LineSeries {
  std::string label;
  std::vector<double> x;
  std::vector<double> y;  // points with y < 0 are gaps (no data)
};

struct LineChart {
  std::string title;
  std::string x_label;
  std::string y_label;
  double y_max = 1.0;
  std::vector<LineSeries> series;
};

struct BarGroup {
  std::string label;            // e.g. the trace
  std::vector<double> values;   // one per bar label; negative = no bar (n/a)
};

struct BarChart {
  std::string title;
  std::string y_label;
  std::vector<std::string> bar_labels;  // e.g. the policies
  std::vector<BarGroup> groups;
  double y_max = 1.0;
  double reference = -1;  // a dashed horizontal line (a target) when >= 0
};

std::string render_svg(const LineChart& chart);
std::string render_svg(const BarChart& chart);

}  // namespace cxlpool::tiering::eval
