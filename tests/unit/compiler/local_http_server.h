// Serving a cpp-httplib server on 127.0.0.1 for the tests of policies that call out over HTTP.
#pragma once

#include <gtest/gtest.h>
#include <httplib.h>

#include <chrono>
#include <thread>

namespace kiln::testing {

// Binds `server` to a free port of 127.0.0.1, listens on `thread` and waits (up to a second) until
// it runs. Returns the port; a server that could not bind or start is a test failure.
inline int ServeOnLocalPort(httplib::Server& server, std::thread& thread) {
  int port = server.bind_to_any_port("127.0.0.1");
  EXPECT_GT(port, 0);
  if (port <= 0) return port;
  thread = std::thread([&server] { server.listen_after_bind(); });
  for (int i = 0; i < 200 && !server.is_running(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_TRUE(server.is_running());
  return port;
}

}  // namespace kiln::testing
