// SPDX-License-Identifier: Apache-2.0
#include "environment.hpp"

#include <stdlib.h>

namespace cxlpool::test {

std::string env_value(const char* name) {
  const char* value = ::getenv(name);
  return value != nullptr ? value : "";
}

ScopedEnv::ScopedEnv(std::string name) : name_(std::move(name)) {
  if (const char* value = ::getenv(name_.c_str())) saved_ = value;
}

ScopedEnv::ScopedEnv(std::string name, const std::string& value) : ScopedEnv(std::move(name)) { set(value); }

ScopedEnv::~ScopedEnv() {
  if (saved_) {
    set(*saved_);
  } else {
    unset();
  }
}

void ScopedEnv::set(const std::string& value) const { ::setenv(name_.c_str(), value.c_str(), 1); }

void ScopedEnv::unset() const { ::unsetenv(name_.c_str()); }

}  // namespace cxlpool::test
