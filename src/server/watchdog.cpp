// Watchdog: a thread that notices a server dying, logging a fatal line, hanging (/health stops
// answering 200) or stalling (the client's progress counter stops) while a cell is measured.
#include "specbench/server.hpp"

#include "client/simple_http.hpp"
#include "core/seconds_since.hpp"

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

namespace specbench {

const char* to_string(WatchdogTrip trip) noexcept {
  switch (trip) {
  case WatchdogTrip::none:
    return "none";
  case WatchdogTrip::process_exited:
    return "process_exited";
  case WatchdogTrip::fatal_log:
    return "fatal_log";
  case WatchdogTrip::health_hang:
    return "health_hang";
  case WatchdogTrip::stalled:
    return "stalled";
  }
  return "?";
}

struct Watchdog::Impl {
  ServerProcess* server = nullptr;
  WatchdogOptions opt;
  std::function<void(const WatchdogEvent&)> on_trip;
  mutable std::mutex mu;
  std::condition_variable cv;
  bool stop_flag = false;
  std::optional<WatchdogEvent> event;
  std::thread thread;

  void loop() {
    using Clock = std::chrono::steady_clock;
    const auto t0 = Clock::now();
    auto last_health_ok = t0;
    auto last_progress_change = t0;
    uint64_t last_progress = opt.progress ? opt.progress() : 0;
    const std::string health_url = server->base_url() + opt.health_path;
    for (;;) {
      {
        std::unique_lock lk(mu);
        cv.wait_for(lk, std::chrono::duration<double>(opt.interval_s), [&] { return stop_flag; });
        if (stop_flag)
          return;
      }
      WatchdogEvent ev;
      if (!server->alive()) {
        ev.trip = WatchdogTrip::process_exited;
        ev.exit = server->exit_info();
        ev.fatal = server->scan_log(opt.fatal_patterns);
        ev.reason = "the server " + (ev.exit ? ev.exit->to_string() : std::string("ended")) +
                    " while being measured";
        if (ev.fatal)
          ev.reason += "; log: \"" + ev.fatal->line + "\"";
      } else if (auto m = server->scan_log(opt.fatal_patterns)) {
        ev.trip = WatchdogTrip::fatal_log;
        ev.fatal = m;
        ev.reason =
            "fatal line in the server log: \"" + m->line + "\" (" + m->pattern.diagnosis + ")";
      } else {
        if (opt.hang_timeout_s > 0) {
          auto h = detail::http_request(health_url, {}, opt.health_probe_timeout_s);
          if (h.status == 200)
            last_health_ok = Clock::now();
          else if (const double quiet_s = detail::seconds_since(last_health_ok);
                   quiet_s > opt.hang_timeout_s) {
            ev.trip = WatchdogTrip::health_hang;
            ev.reason = opt.health_path + " has not answered 200 for " +
                        std::to_string(static_cast<int>(quiet_s)) +
                        " s (last: " + (h.status ? "HTTP " + std::to_string(h.status) : h.error) +
                        ")";
          }
        }
        if (ev.trip == WatchdogTrip::none && opt.progress && opt.stall_timeout_s > 0) {
          const uint64_t p = opt.progress();
          const bool busy = opt.busy ? opt.busy() : true;
          if (p != last_progress || !busy) {
            last_progress = p;
            last_progress_change = Clock::now();
          } else if (detail::seconds_since(last_progress_change) > opt.stall_timeout_s) {
            ev.trip = WatchdogTrip::stalled;
            ev.reason = "no progress for " + std::to_string(static_cast<int>(opt.stall_timeout_s)) +
                        " s while requests are in flight";
          }
        }
      }
      if (ev.trip == WatchdogTrip::none)
        continue;
      ev.after_s = detail::seconds_since(t0);
      ev.log_tail = server->log_tail(40);
      {
        std::lock_guard lk(mu);
        event = ev;
      }
      if (on_trip)
        on_trip(ev);
      return;
    }
  }
};

Watchdog::Watchdog(ServerProcess& server, WatchdogOptions options,
                   std::function<void(const WatchdogEvent&)> on_trip)
    : impl_(std::make_unique<Impl>()) {
  impl_->server = &server;
  impl_->opt = std::move(options);
  impl_->on_trip = std::move(on_trip);
  impl_->thread = std::thread([this] { impl_->loop(); });
}

Watchdog::~Watchdog() {
  stop();
}

std::optional<WatchdogEvent> Watchdog::tripped() const {
  std::lock_guard lk(impl_->mu);
  return impl_->event;
}

void Watchdog::stop() {
  {
    std::lock_guard lk(impl_->mu);
    impl_->stop_flag = true;
  }
  impl_->cv.notify_all();
  if (impl_->thread.joinable())
    impl_->thread.join();
}

} // namespace specbench
