// SPDX-License-Identifier: Apache-2.0
// A minimal line chart rendered as standalone SVG (axes, ticks, legend), so
// --plot needs no plotting tool on the machine.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "cxlpool/common/xml_escape.hpp"  // labels are escaped with it

namespace cxlpool::io {

struct ChartSeries {
  std::string name;
  std::vector<std::pair<double, double>> points;  // (x, y), x ascending
};

struct LineChart {
  std::string title;
  std::string x_label;
  std::string y_label;
  bool log_x = false;  // latency CDFs span decades
  std::vector<ChartSeries> series;
};

std::string render_svg(const LineChart& chart);

}  // namespace cxlpool::io
