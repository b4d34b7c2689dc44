// SPDX-License-Identifier: Apache-2.0
#include "process_env.hpp"

#include <unistd.h>

#include <algorithm>
#include <string_view>

namespace cxlpool::integration {
namespace {

std::string_view name_of(std::string_view entry) { return entry.substr(0, entry.find('=')); }

}  // namespace

ProcessEnv::ProcessEnv() {
  for (char** e = environ; *e != nullptr; ++e) entries_.emplace_back(*e);
}

void ProcessEnv::unset(std::string_view name) {
  std::erase_if(entries_, [&](const std::string& e) { return name_of(e) == name; });
}

void ProcessEnv::unset(std::initializer_list<const char*> names) {
  for (const char* name : names) unset(std::string_view(name));
}

void ProcessEnv::set(const std::string& entry) {
  unset(name_of(entry));
  entries_.push_back(entry);
}

char* ProcessEnv::add_slot(const std::string& entry) {
  set(entry);
  return entries_.back().data();
}

std::vector<char*> ProcessEnv::envp() {
  std::vector<char*> out;
  for (auto& e : entries_) out.push_back(e.data());
  out.push_back(nullptr);
  return out;
}

std::vector<char*> to_argv(std::vector<std::string>& args) {
  std::vector<char*> out;
  for (auto& a : args) out.push_back(a.data());
  out.push_back(nullptr);
  return out;
}

}  // namespace cxlpool::integration
