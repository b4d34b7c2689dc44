// SPDX-License-Identifier: Apache-2.0
// Text put inside SVG or HTML elements and attribute values: the tools that
// write plots (cxlpool-io, cxlpool-tiering-eval) escape labels with it.
#pragma once

#include <string>
#include <string_view>

namespace cxlpool {

// Escapes &, <, > and ".
inline std::string xml_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

}  // namespace cxlpool
