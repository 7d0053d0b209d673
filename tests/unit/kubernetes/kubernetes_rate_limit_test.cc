// The client-side rate limit of `kiln serve` (--kube-api-qps / --kube-api-burst, kubernetes/client.h):
// a token bucket lets `burst` requests through at once and then `qps` per second, so N requests
// take at least (N - burst) / qps seconds, from one thread or many; without a limit nothing
// waits. The last case runs it through KubeClient against a small in-process HTTP server.
#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "kubernetes/client.h"
#include "tests/unit/compiler/local_http_server.h"

namespace kiln::kube {
namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

TEST(KubernetesRateLimit, NoLimitNeverWaits) {
  TokenBucket bucket(0, 0);
  EXPECT_FALSE(bucket.limited());
  auto t0 = Clock::now();
  for (int i = 0; i < 100000; ++i) ASSERT_EQ(bucket.Acquire().count(), 0) << "request " << i;
  EXPECT_LT(SecondsSince(t0), 1.0);
}

TEST(KubernetesRateLimit, BurstGoesAtOnceThenQpsPerSecond) {
  const double qps = 200;
  const int burst = 10, n = 50;
  TokenBucket bucket(qps, burst);
  auto t0 = Clock::now();
  for (int i = 0; i < burst; ++i) EXPECT_EQ(bucket.Acquire().count(), 0) << "burst request " << i;
  for (int i = burst; i < n; ++i) bucket.Acquire();
  // (50 - 10) / 200 = 0.2 s; a millisecond of slack for the clock's rounding.
  EXPECT_GE(SecondsSince(t0), (n - burst) / qps - 0.001);
}

TEST(KubernetesRateLimit, ThreadsShareOneRate) {
  const double qps = 400;
  const int burst = 20, threads = 4, per_thread = 30;  // 120 requests
  TokenBucket bucket(qps, burst);
  auto t0 = Clock::now();
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t)
    workers.emplace_back([&] {
      for (int i = 0; i < per_thread; ++i) bucket.Acquire();
    });
  for (auto& w : workers) w.join();
  // (120 - 20) / 400 = 0.25 s, whatever the number of threads asking.
  EXPECT_GE(SecondsSince(t0), (threads * per_thread - burst) / qps - 0.001);
}

TEST(KubernetesRateLimit, ABurstLeftAtZeroIsOneSecondOfQps) {
  TokenBucket bucket(100, 0);  // burst max(1, qps) = 100
  auto t0 = Clock::now();
  for (int i = 0; i < 100; ++i) EXPECT_EQ(bucket.Acquire().count(), 0) << "request " << i;
  EXPECT_GT(bucket.Acquire().count(), 0);  // the 101st waits
  EXPECT_LT(SecondsSince(t0), 1.0);
}

TEST(KubernetesRateLimit, TheClientWaitsForTheLimitOnEveryRequest) {
  httplib::Server svr;
  std::atomic<int> served{0};
  svr.Get("/api/v1/namespaces", [&](const httplib::Request&, httplib::Response& res) {
    ++served;
    res.set_content(R"({"kind":"NamespaceList","items":[]})", "application/json");
  });
  std::thread server;
  int port = kiln::testing::ServeOnLocalPort(svr, server);
  ASSERT_GT(port, 0);
  KubeConfig config;
  config.server = "http://127.0.0.1:" + std::to_string(port);
  ClientOptions options;
  options.qps = 10;
  options.burst = 1;
  auto client = KubeClient::Create(config, options);
  ASSERT_TRUE(client) << client.error().message;
  // Four threads at once: three of the first four requests find the bucket empty, however fast
  // or slow the server answers.
  const int threads = 4, per_thread = 2;
  std::atomic<int> ok{0};
  auto t0 = Clock::now();
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t)
    workers.emplace_back([&] {
      for (int i = 0; i < per_thread; ++i) {
        auto r = (*client)->Get("/api/v1/namespaces");
        if (r && r->status == 200) ++ok;
      }
    });
  for (auto& w : workers) w.join();
  double took = SecondsSince(t0);
  int64_t throttled = (*client)->throttled().count();
  (*client).reset();  // closes its keep-alive connections, so the server stops at once
  svr.stop();
  server.join();
  EXPECT_EQ(ok.load(), threads * per_thread);
  EXPECT_EQ(served.load(), threads * per_thread);
  // (8 - 1) / 10 = 0.7 s at least, and the client counts the time it held requests back.
  EXPECT_GE(took, (threads * per_thread - 1) / 10.0 - 0.001);
  EXPECT_GT(throttled, 0);
}

}  // namespace
}  // namespace kiln::kube
