// SPDX-License-Identifier: Apache-2.0
// Environment and argument vectors for execve, built before fork so that the
// child does nothing but exec.
#pragma once

#include <deque>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

namespace cxlpool::integration {

class ProcessEnv {
 public:
  // Starts from this process's environment.
  ProcessEnv();

  void unset(std::string_view name);
  void unset(std::initializer_list<const char*> names);
  // "NAME=value"; replaces an entry of the same name.
  void set(const std::string& entry);
  // Adds `entry` and returns a pointer to its storage, which stays valid
  // while this object lives: the child may fill it in after fork.
  char* add_slot(const std::string& entry);
  // NULL-terminated, pointing into this object.
  std::vector<char*> envp();

 private:
  std::deque<std::string> entries_;
};

// NULL-terminated, pointing into `args`.
std::vector<char*> to_argv(std::vector<std::string>& args);

}  // namespace cxlpool::integration
