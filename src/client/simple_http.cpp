#include "client/simple_http.hpp"

#include "core/seconds_since.hpp"

#include <curl/curl.h>

#include <chrono>
#include <mutex>

namespace specbench::detail {

void ensure_curl_initialized() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

namespace {
struct Sink {
  std::string* body;
  size_t max;
  bool overflow = false;
};
size_t on_data(char* p, size_t size, size_t n, void* user) {
  auto* s = static_cast<Sink*>(user);
  const size_t len = size * n;
  if (s->body->size() + len > s->max) {
    s->overflow = true;
    return 0;
  }
  s->body->append(p, len);
  return len;
}
// curl calls this about once a second even while nothing arrives; non-zero aborts.
int on_progress(void* cancel, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  return static_cast<const std::atomic<bool>*>(cancel)->load() ? 1 : 0;
}
} // namespace

SimpleResponse http_request(const std::string& url, const std::string& body, double timeout_s,
                            const std::string& method, const std::string& api_key, size_t max_body,
                            const std::atomic<bool>* cancel) {
  ensure_curl_initialized();
  SimpleResponse r;
  CURL* h = curl_easy_init();
  if (!h) {
    r.error = "curl_easy_init failed";
    return r;
  }
  const auto t0 = std::chrono::steady_clock::now();
  Sink sink{&r.body, max_body};
  char errbuf[CURL_ERROR_SIZE] = {0};
  curl_slist* headers = nullptr;
  curl_easy_setopt(h, CURLOPT_URL, url.c_str());
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, static_cast<long>(timeout_s * 1000));
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(timeout_s * 1000));
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &sink);
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
  curl_easy_setopt(h, CURLOPT_PROXY, "");
  if (cancel) {
    curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress);
    curl_easy_setopt(h, CURLOPT_XFERINFODATA, const_cast<std::atomic<bool>*>(cancel));
  }
  if (!body.empty() || !method.empty()) {
    headers = curl_slist_append(headers, "Content-Type: application/json");
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, body.c_str());
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, static_cast<long>(body.size()));
    if (!method.empty() && method != "POST")
      curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method.c_str());
  }
  if (!api_key.empty())
    headers = curl_slist_append(headers, ("Authorization: Bearer " + api_key).c_str());
  if (headers)
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
  const CURLcode rc = curl_easy_perform(h);
  long status = 0;
  curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
  r.status = static_cast<int>(status);
  if (rc != CURLE_OK) {
    r.error = errbuf[0] ? errbuf : curl_easy_strerror(rc);
    if (sink.overflow)
      r.error = "response larger than " + std::to_string(max_body) + " bytes";
    r.timed_out = rc == CURLE_OPERATION_TIMEDOUT;
    if (rc == CURLE_ABORTED_BY_CALLBACK)
      r.error = "cancelled";
    if (!sink.overflow)
      r.status = 0; // a broken transfer is no answer
  }
  r.seconds = detail::seconds_since(t0);
  if (headers)
    curl_slist_free_all(headers);
  curl_easy_cleanup(h);
  return r;
}

} // namespace specbench::detail
