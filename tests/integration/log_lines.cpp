// SPDX-License-Identifier: Apache-2.0
#include "log_lines.hpp"

#include <regex>
#include <sstream>

namespace cxlpool::integration {

std::string line_repeating_its_logger(const std::string& log) {
  // The daemon prints "<time> <level> <logger>: <message>" (or "<N><logger>:
  // <message>" for journald); a message that starts with the same name again
  // shows it twice in a row.
  static const std::regex repeated(R"(\b([a-z_]+): \1: )");
  std::istringstream lines(log);
  for (std::string line; std::getline(lines, line);) {
    if (std::regex_search(line, repeated)) return line;
  }
  return "";
}

}  // namespace cxlpool::integration
