#pragma once
// One synchronous HTTP request with libcurl's easy interface, for probes and scrapes (readiness,
// /metrics, /server_info, /flush_cache). Internal to the library; the measuring client uses the
// multi interface instead (client.cpp).

#include <atomic>
#include <cstddef>
#include <string>

namespace specbench::detail {

struct SimpleResponse {
  int status = 0;    // 0 = no HTTP answer
  std::string body;  // capped at max_body
  std::string error; // curl's error text when status == 0 (or the transfer broke)
  bool timed_out = false;
  double seconds = 0;
};

// GET when body is empty and method is empty, else `method` (default POST) with a JSON body.
// `cancel`, when set, ends the transfer within about a second of turning true.
SimpleResponse http_request(const std::string& url, const std::string& body = {},
                            double timeout_s = 10, const std::string& method = {},
                            const std::string& api_key = {}, size_t max_body = 16u << 20,
                            const std::atomic<bool>* cancel = nullptr);

// curl_global_init exactly once (thread-safe).
void ensure_curl_initialized();

} // namespace specbench::detail
