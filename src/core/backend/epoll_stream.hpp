#pragma once
// The epoll backend's streams and acceptors (epoll_stream.cpp), made by epoll_poller.cpp.

#include "core/backend/poller.hpp"

#include <memory>

namespace strix::detail {

std::unique_ptr<stream_io> make_epoll_stream(poller& p, int fd, reactor_object& owner, stream_user& user);
std::unique_ptr<acceptor_io> make_epoll_acceptor(poller& p, int fd, reactor_object& owner, accept_user& user);

}  // namespace strix::detail
