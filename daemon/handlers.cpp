// SPDX-License-Identifier: Apache-2.0
// Request dispatch: each request goes to the Daemon::handle() overload of its
// type. The overloads live with their area (daemon.hpp lists them by file).
#include <cassert>
#include <variant>

#include "daemon.hpp"

namespace cxlpool::daemon {

Result<void> Daemon::require_admin(Session& session, const char* what) {
  if (session.who.admin) return {};
  return fail(EPERM, std::string(what) + " requires root or membership in an admin group (uid " +
                         std::to_string(session.who.uid) + ")");
}

Result<Daemon::Reply> Daemon::dispatch(Session& session, const proto::Message& message) {
  return std::visit(
      [&]<typename T>(const T& request) -> Result<Reply> {
        if constexpr (!proto::RequestMessage<T>) {
          return fail(EPROTO, std::string("clients may not send ") + proto::MessageTraits<T>::kName);
        } else {
          static_assert(requires { handle(session, request); },
                        "every request in message_table.hpp needs a Daemon::handle(Session&, const T&)");
          if (!session.greeted && !std::is_same_v<T, proto::Hello>) {
            return fail(EPROTO, "the first message must be Hello");
          }
          auto reply = handle(session, request);
          // Clients match replies by type as well as by request id.
          assert(!reply || reply->deferred || std::holds_alternative<proto::ReplyTo<T>>(reply->message));
          return reply;
        }
      },
      message);
}

}  // namespace cxlpool::daemon
