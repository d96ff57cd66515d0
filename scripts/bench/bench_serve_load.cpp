// A closed-loop HTTP load generator for nn-serve (scripts/bench_serve.sh): C clients, each a
// thread with one keep-alive connection (cpp-httplib), send POST /recommend requests one after
// another, each the item history of a user read from a requests file (one JSON body a line),
// until R requests in all or S seconds have passed. With --rate Q the load is open: the clients
// together start Q requests a second on a fixed schedule, and a request's latency counts from
// its scheduled start (a late client does not hide the wait). Prints one JSON line: clients,
// requests, errors, seconds, requests per second, p50/p90/p99/max latency in ms.
//   Usage: nn-bench-serve-load --port P --bodies requests.jsonl [--clients C] [--requests R]
//          [--seconds S] [--rate Q] [--path /recommend]
#include <httplib.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

using Clock = std::chrono::steady_clock;

int main(int argc, char** argv) {
  CLI::App app{"closed-loop HTTP load on nn-serve's POST /recommend"};
  std::string host = "127.0.0.1", bodies_file, path = "/recommend";
  int port = 0, clients = 1;
  long requests = 2000;
  double seconds = 10, rate = 0;
  app.add_option("--host", host, "server address (default 127.0.0.1)");
  app.add_option("--port", port, "server port")->required();
  app.add_option("--bodies", bodies_file, "request bodies, one JSON object a line")->required();
  app.add_option("--clients", clients, "concurrent clients (default 1)")
      ->check(CLI::Range(1, 4096));
  app.add_option("--requests", requests, "requests in all (default 2000)");
  app.add_option("--seconds", seconds, "stop after this long whatever the count (default 10)");
  app.add_option("--path", path, "endpoint (default /recommend)");
  app.add_option("--rate", rate, "open loop: requests started per second, all clients together");
  CLI11_PARSE(app, argc, argv);

  std::vector<std::string> bodies;
  std::ifstream in(bodies_file);
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) bodies.push_back(line);
  if (bodies.empty()) {
    std::fprintf(stderr, "nn-bench-serve-load: error: no request bodies in %s\n",
                 bodies_file.c_str());
    return 1;
  }
  std::atomic<long> next{0};
  std::atomic<long> errors{0};
  std::vector<std::vector<double>> latencies(static_cast<size_t>(clients));
  const Clock::time_point start = Clock::now();
  const Clock::time_point stop =
      start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  std::vector<std::thread> threads;
  for (int c = 0; c < clients; ++c)
    threads.emplace_back([&, c] {
      httplib::Client client(host, port);
      client.set_keep_alive(true);
      client.set_tcp_nodelay(true);
      client.set_read_timeout(30, 0);
      std::vector<double>& mine = latencies[size_t(c)];
      for (;;) {
        const long i = next.fetch_add(1);
        if (i >= requests || Clock::now() >= stop) break;
        const std::string& body = bodies[size_t(i) % bodies.size()];
        Clock::time_point t0 = Clock::now();
        if (rate > 0) {  // request i starts i / rate seconds after the start
          t0 = start + std::chrono::duration_cast<Clock::duration>(
                           std::chrono::duration<double>(double(i) / rate));
          std::this_thread::sleep_until(t0);
        }
        auto res = client.Post(path, body, "application/json");
        const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
        if (!res || res->status != 200) {
          errors.fetch_add(1);
          continue;
        }
        mine.push_back(ms);
      }
    });
  for (auto& t : threads) t.join();
  const double secs = std::chrono::duration<double>(Clock::now() - start).count();
  std::vector<double> all;
  for (const auto& l : latencies) all.insert(all.end(), l.begin(), l.end());
  std::sort(all.begin(), all.end());
  auto pct = [&](double p) {
    if (all.empty()) return 0.0;
    return all[std::min(all.size() - 1, size_t(p / 100.0 * double(all.size())))];
  };
  std::printf(
      "{\"clients\": %d, \"rate\": %.0f, \"requests\": %zu, \"errors\": %ld, \"seconds\": %.3f, "
      "\"rps\": %.1f, \"p50_ms\": %.3f, \"p90_ms\": %.3f, \"p99_ms\": %.3f, \"max_ms\": %.3f}\n",
      clients, rate, all.size(), errors.load(), secs, double(all.size()) / secs, pct(50), pct(90),
      pct(99), all.empty() ? 0.0 : all.back());
  return errors.load() == 0 ? 0 : 1;
}
