// SPDX-License-Identifier: Apache-2.0
// Reading back what cxlpool-tiering-eval writes to its results folder, for
// the report test (in-process) and the tool test (the program).
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <initializer_list>
#include <string>

#include "support/whole_file.hpp"

namespace cxlpool::tiering::eval::test {

using ::cxlpool::test::read_file;

// Each named file in `dir` is a whole SVG document.
inline void expect_svg_files(const std::filesystem::path& dir, std::initializer_list<const char*> names) {
  for (const char* svg : names) {
    const std::string s = read_file(dir / svg);
    EXPECT_EQ(s.rfind("<svg", 0), 0u) << svg;
    EXPECT_NE(s.find("</svg>"), std::string::npos) << svg;
  }
}

}  // namespace cxlpool::tiering::eval::test
