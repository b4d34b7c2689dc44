// SPDX-License-Identifier: Apache-2.0
// Counter structs declared from one list that names each counter's member
// and the name it is exported under. The struct's members and the metrics
// written from it then cannot drift apart: a counter added to the list is
// exported, in the list's order, under the name the list gives it.
//
//   #define CXLPOOL_FOO_COUNTERS(X) X(hits, "hits") X(bytes_in, "in_bytes")
//   struct FooCounters {
//     CXLPOOL_FOO_COUNTERS(CXLPOOL_COUNTER_MEMBER)
//     CXLPOOL_COUNTER_VISIT(CXLPOOL_FOO_COUNTERS)
//   };
//
//   emit_counters("foo.", counters, add);  // add("foo.hits", ..), add("foo.in_bytes", ..)
//
// Written one counter a line, with backslashes, a member's comment inside
// the list must be a /* */ one: a // comment would swallow the line
// continuation.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

// One std::uint64_t member, starting at 0.
#define CXLPOOL_COUNTER_MEMBER(member, name) std::uint64_t member = 0;

// A member template visit(fn) that calls fn(name, value) for each counter
// of LIST, in LIST's order; name is the list's string literal.
#define CXLPOOL_COUNTER_VISIT(LIST) \
  template <typename Fn>            \
  void visit(Fn&& fn) const {       \
    LIST(CXLPOOL_COUNTER_VISIT_ONE) \
  }
#define CXLPOOL_COUNTER_VISIT_ONE(member, name) fn(name, member);

namespace cxlpool {

// add(prefix + name, value) for each counter of `counters`, in list order.
template <typename Counters, typename Add>
void emit_counters(std::string_view prefix, const Counters& counters, Add&& add) {
  counters.visit([&](std::string_view name, std::uint64_t value) {
    std::string full(prefix);
    full += name;
    add(std::move(full), value);
  });
}

}  // namespace cxlpool
