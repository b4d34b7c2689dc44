// SPDX-License-Identifier: Apache-2.0
// Column-aligned text tables for cxlpoolctl's human output.
#pragma once

#include <string>
#include <vector>

namespace cxlpool::ctl {

class Table {
 public:
  explicit Table(std::vector<std::string> header) : header_(std::move(header)) {}
  void add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  std::string render() const;

 private:
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace cxlpool::ctl
