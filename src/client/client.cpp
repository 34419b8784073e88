// The measuring client: libcurl multi, one thread, N concurrent streams. Every request ends as
// exactly one RequestRecord, whatever the server does (timeouts, resets, broken JSON or SSE).
#include "specbench/client.hpp"

#include "specbench/detail/display_text.hpp"
#include "specbench/detail/utf8.hpp"
#include "specbench/detail/verify_step_bounds.hpp"

#include "client/simple_http.hpp"
#include "core/ascii_lower.hpp"

#include <curl/curl.h>
#include <nlohmann/json.hpp>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <mutex>
#include <optional>

namespace specbench {
namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

double secs(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// The first n bytes of a server's text, on one line, as UTF-8 (the cut may split a character, and
// a server may send bytes that are not text; results are JSON, which cannot hold them).
// Plain text too: escape sequences and other control bytes (a gzip body, a coloured log) would
// act on the terminal that prints the failure.
std::string excerpt(std::string_view s, size_t n) {
  return detail::display_line(s.substr(0, n));
}

// excerpt(), or what the bytes were when none of them is text (a line of NUL bytes showed as
// "not an SSE line: " and nothing).
std::string excerpt_or_kind(std::string_view s, size_t n) {
  std::string e = excerpt(s, n);
  if (e.find_first_not_of(' ') != std::string::npos || s.empty())
    return e;
  char first[8];
  std::snprintf(first, sizeof first, "%02x", static_cast<unsigned char>(s[0]));
  return std::to_string(s.size()) + " bytes of control characters (first: 0x" + first + ")";
}

// Why `text` is not JSON, in nlohmann's words (invalid UTF-8 at a byte, a number out of range),
// made plain text: those words may quote the offending bytes.
std::string json_error_of(const std::string& text) {
  try {
    const json parsed = json::parse(text); // nlohmann's warn_unused_result ignores a (void) cast
    (void)parsed;
  } catch (const json::exception& e) {
    const std::string what = e.what();
    const size_t at = what.find("] ");
    return excerpt(at == std::string::npos ? what : what.substr(at + 2), 160);
  }
  return "valid JSON";
}

// FNV-1a over a list of token ids: tells a repeated output_ids list from a new one.
uint64_t hash_of_ids(const json& ids) {
  uint64_t h = 1469598103934665603ull;
  for (const json& x : ids) {
    const uint64_t v = x.is_number_integer() ? static_cast<uint64_t>(x.get<int64_t>())
                                             : std::hash<std::string>{}(x.dump());
    h = (h ^ v) * 1099511628211ull;
  }
  return h;
}

bool starts_with(std::string_view s, std::string_view p) {
  return s.substr(0, p.size()) == p;
}

// A count the server reports (tokens, steps, drafts): a whole number in [0, 2^31). Anything else
// is garbage or a lie, and converting a huge double to an integer is undefined behaviour; `bad`
// (when given) gets what was wrong, so that the request fails as malformed, and the count is
// unknown.
std::optional<int64_t> as_count(const json& v, const char* what, std::string* bad) {
  if (v.is_number_unsigned()) {
    if (v.get<uint64_t>() <= static_cast<uint64_t>(INT32_MAX))
      return static_cast<int64_t>(v.get<uint64_t>());
  } else if (v.is_number_integer()) {
    const int64_t x = v.get<int64_t>();
    if (x >= 0 && x <= INT32_MAX)
      return x;
    if (x == -1)
      return std::nullopt; // the "not known" several servers send (llama.cpp's timings default)
  } else if (v.is_number_float()) {
    const double x = v.get<double>();
    if (x >= 0 && x <= INT32_MAX && x == std::floor(x))
      return static_cast<int64_t>(x);
  }
  if (bad && bad->empty())
    *bad = std::string("the server reported ") + what + " = " + v.dump() +
           ", which is not a count (a whole number from 0 to 2^31 - 1)";
  return std::nullopt;
}
// The count under `key`; absent or null means not reported. Anything else that is not a count
// (a string "16", an object) is garbage: ignored, the count would silently fall back to counting
// chunks, so it goes to `bad` like a negative number does.
std::optional<int64_t> get_count(const json& o, const char* key, std::string* bad) {
  auto it = o.find(key);
  if (it == o.end() || it->is_null())
    return std::nullopt;
  return as_count(*it, key, bad);
}
std::optional<double> get_num(const json& o, const char* key) {
  auto it = o.find(key);
  if (it == o.end() || !it->is_number())
    return std::nullopt;
  return it->get<double>();
}
template <class... K>
std::optional<int64_t> first_count(const json& o, std::string* bad, K... keys) {
  std::optional<int64_t> v;
  ((v = v ? v : get_count(o, keys, bad)), ...);
  return v;
}

// Reads SGLang meta_info: token counts and the speculative fields under any of their names.
// `bad`: the first count that is not one (see get_count). Returns this object's
// completion_tokens, which a stream event needs again to count its new tokens.
std::optional<int64_t> absorb_meta_info(const json& m, RequestRecord& r, std::string* bad) {
  if (auto v = get_count(m, "prompt_tokens", bad))
    r.prompt_tokens = static_cast<int>(*v);
  const std::optional<int64_t> completion = get_count(m, "completion_tokens", bad);
  if (completion)
    r.output_tokens = static_cast<int>(*completion);
  if (auto fr = m.find("finish_reason"); fr != m.end() && !fr->is_null()) {
    // SGLang: {"type": "length", ...}; others: "length". Anything else is not a reason, and
    // reading it as one threw inside libcurl's callback, which aborted the whole sweep.
    const auto type = fr->is_object() ? fr->find("type") : fr->end();
    if (fr->is_string())
      r.finish_reason = fr->get<std::string>();
    else if (fr->is_object() && type != fr->end() && type->is_string())
      r.finish_reason = type->get<std::string>();
    else if (bad && bad->empty())
      *bad = "the server reported meta_info.finish_reason = " + excerpt(fr->dump(), 120) +
             ", which is neither a string nor an object with a string \"type\"";
  }
  auto& s = r.spec;
  if (auto v = get_count(m, "spec_verify_ct", bad))
    s.verify_steps = v;
  if (auto v = get_num(m, "spec_accept_length"))
    s.accept_length = v;
  if (auto v = get_num(m, "spec_accept_rate"))
    s.accept_rate = v;
  if (auto v = first_count(m, bad, "spec_num_correct_drafts", "spec_accepted_drafts",
                           "spec_accept_token_num"))
    s.correct_drafts = v;
  if (auto v = first_count(m, bad, "spec_num_proposed_drafts", "spec_proposed_drafts",
                           "spec_draft_token_num"))
    s.proposed_drafts = v;
  for (const char* key : {"spec_correct_drafts_histogram", "spec_accept_histogram"}) {
    auto it = m.find(key);
    if (it != m.end() && it->is_array()) {
      s.accept_histogram.clear();
      for (const auto& x : *it)
        if (x.is_number())
          if (auto v = as_count(x, key, bad))
            s.accept_histogram.push_back(*v);
      break;
    }
  }
  return completion;
}

// OpenAI usage + llama.cpp timings.
void absorb_openai_extras(const json& j, RequestRecord& r, std::string* bad) {
  if (auto u = j.find("usage"); u != j.end() && u->is_object()) {
    if (auto v = get_count(*u, "prompt_tokens", bad))
      r.prompt_tokens = static_cast<int>(*v);
    if (auto v = get_count(*u, "completion_tokens", bad))
      r.output_tokens = static_cast<int>(*v);
  }
  if (auto t = j.find("timings"); t != j.end() && t->is_object()) {
    if (auto v = get_count(*t, "draft_n", bad))
      r.spec.draft_n = v;
    if (auto v = first_count(*t, bad, "draft_n_accepted", "draft_accepted_n"))
      r.spec.draft_n_accepted = v;
    // prompt_n counts the tokens processed, without a cached prefix: the prompt's length only
    // when nothing else says it, and never held against the ids sent.
    if (r.prompt_tokens < 0 && r.sent_prompt_tokens == 0)
      if (auto v = get_count(*t, "prompt_n", bad))
        r.prompt_tokens = static_cast<int>(*v);
    if (r.output_tokens < 0)
      if (auto v = get_count(*t, "predicted_n", bad))
        r.output_tokens = static_cast<int>(*v);
  }
}

// Why the speculative figures of a finished request cannot all be true, or "" when they can.
// These lies would pass as acceptance: a verify step yields at least one token (the bonus), and
// no server accepts more drafts than it proposed.
// `max_per_step`: ClientOptions::max_tokens_per_step (0 = unknown).
std::string spec_contradiction(const RequestRecord& r, int max_per_step) {
  const ServerSpecFigures& s = r.spec;
  if (s.verify_steps && r.output_tokens >= 0 &&
      detail::fewer_tokens_than_steps(r.output_tokens, *s.verify_steps))
    return "the server reported " + std::to_string(*s.verify_steps) +
           " verify steps (spec_verify_ct) for " + std::to_string(r.output_tokens) +
           " output tokens, but every verify step yields at least one token";
  if (max_per_step > 0 && s.verify_steps && *s.verify_steps > 0 &&
      detail::more_tokens_than_steps_commit(r.output_tokens, *s.verify_steps, max_per_step))
    return "the server reported " + std::to_string(r.output_tokens) + " output tokens in " +
           std::to_string(*s.verify_steps) + " verify steps (spec_verify_ct), more than the " +
           std::to_string(max_per_step) + " per step this cell's method can commit" +
           (max_per_step == 1 ? " (is the autoregressive cell's server speculating?)" : "");
  if (s.correct_drafts && s.proposed_drafts && *s.correct_drafts > *s.proposed_drafts)
    return "the server reported " + std::to_string(*s.correct_drafts) + " accepted drafts of " +
           std::to_string(*s.proposed_drafts) + " proposed (spec_num_correct_drafts)";
  if (s.draft_n_accepted && s.draft_n && *s.draft_n_accepted > *s.draft_n)
    return "the server reported " + std::to_string(*s.draft_n_accepted) + " accepted drafts of " +
           std::to_string(*s.draft_n) + " proposed (timings.draft_n_accepted)";
  return {};
}

// The server's message when a finish_reason says it aborted the request: SGLang's
// {"type": "abort", "message": ...} or the plain "abort" of OpenAI-style answers.
std::optional<std::string> abort_message(const json& finish_reason) {
  if (finish_reason.is_string() && finish_reason.get_ref<const std::string&>() == "abort")
    return std::string("(no message)");
  if (!finish_reason.is_object())
    return std::nullopt;
  const auto type = finish_reason.find("type");
  if (type == finish_reason.end() || !type->is_string() ||
      type->get_ref<const std::string&>() != "abort")
    return std::nullopt;
  auto m = finish_reason.find("message");
  return m != finish_reason.end() && m->is_string() ? m->get<std::string>()
                                                    : std::string("(no message)");
}

std::string error_message_of(const std::string& body) {
  json j = json::parse(body, nullptr, false);
  if (j.is_object()) {
    if (auto e = j.find("error"); e != j.end()) {
      if (e->is_string())
        return e->get<std::string>();
      if (e->is_object() && e->contains("message") && (*e)["message"].is_string())
        return (*e)["message"].get<std::string>();
    }
    for (const char* k : {"message", "detail"})
      if (j.contains(k) && j[k].is_string())
        return j[k].get<std::string>();
  }
  return excerpt(body, 200);
}

} // namespace

const char* to_string(ErrorKind kind) noexcept {
  switch (kind) {
  case ErrorKind::none:
    return "none";
  case ErrorKind::connect:
    return "connect";
  case ErrorKind::timeout_connect:
    return "timeout_connect";
  case ErrorKind::timeout_first_byte:
    return "timeout_first_byte";
  case ErrorKind::timeout_total:
    return "timeout_total";
  case ErrorKind::http_status:
    return "http_status";
  case ErrorKind::context_overflow:
    return "context_overflow";
  case ErrorKind::malformed:
    return "malformed";
  case ErrorKind::body_too_large:
    return "body_too_large";
  case ErrorKind::transport:
    return "transport";
  case ErrorKind::incomplete:
    return "incomplete";
  case ErrorKind::aborted:
    return "aborted";
  case ErrorKind::server_abort:
    return "server_abort";
  }
  return "?";
}

double RequestRecord::acceptance_length() const noexcept {
  if (!spec.verify_steps || *spec.verify_steps <= 0 || output_tokens < 0)
    return -1;
  return static_cast<double>(output_tokens) / static_cast<double>(*spec.verify_steps);
}

AcceptanceSummary summarize_acceptance(const std::vector<RequestRecord>& records) {
  AcceptanceSummary s;
  double sum_ratio = 0;
  for (const auto& r : records) {
    if (!r.ok || r.output_tokens < 0 || r.verify_steps() <= 0)
      continue;
    ++s.requests;
    s.output_tokens += r.output_tokens;
    s.verify_steps += r.verify_steps();
    sum_ratio += r.acceptance_length();
  }
  if (s.verify_steps > 0) {
    s.acceptance_length = static_cast<double>(s.output_tokens) / s.verify_steps;
    s.acceptance_length_unbiased =
        static_cast<double>(s.output_tokens - s.requests) / s.verify_steps;
    s.mean_per_request = sum_ratio / s.requests;
  }
  return s;
}

bool is_context_overflow_message(int http_status, const std::string& body) {
  if (http_status != 400 && http_status != 413 && http_status != 422 && http_status != 0)
    return false;
  const std::string b = detail::ascii_lower(body);
  static const char* needles[] = {
      "longer than the model's context length",     // SGLang: input alone too long
      "exceeds the model's maximum context length", // SGLang: input + max_new_tokens
      "maximum context length",                     // vLLM / OpenAI
      "exceeds the available context size",         // llama.cpp
      "exceed_context_size_error",                  // llama.cpp error type
      "context_length_exceeded",                    // OpenAI code
      "exceeds max_model_len",                      // vLLM wording in some versions
  };
  for (const char* n : needles)
    if (b.find(n) != std::string::npos)
      return true;
  return false;
}

// ---------------------------------------------------------------------------------------------
namespace {

// State of one request in flight.
struct Transfer {
  const ClientOptions* opt = nullptr;
  std::atomic<uint64_t>* bytes_counter = nullptr;
  int64_t* live_tokens = nullptr;
  CURL* easy = nullptr;
  curl_slist* headers = nullptr;
  std::string request_body;
  int max_new_tokens = -1; // what was asked for: no server may report more
  bool ignore_eos = false; // asked for exactly max_new_tokens: none at all is a failure
  RequestRecord rec;
  Clock::time_point t_start, t_last_token, t_last_byte;
  bool active = false;
  bool got_first_byte = false;
  bool is_sse = false;
  std::string line;       // partial SSE line
  std::string event_data; // data lines of the current SSE event
  std::string body;       // non-SSE body, or an error body
  int64_t last_completion = 0; // the highest cumulative count seen (completion_tokens or ids)
  int64_t counted = 0;         // tokens attributed to events so far (/generate)
  bool guessed = false;        // some event without a count was taken as one token
  std::optional<uint64_t> last_ids; // hash of the last output_ids that grew (no count given)
  bool saw_done = false, saw_finish = false;
  bool first_line = true;   // the stream's first line, which may start with a byte-order mark
  bool after_cr = false;    // the last read ended with '\r': a '\n' first in the next one goes
  Clock::time_point t_done; // when [DONE] arrived: the answer is complete there
  Clock::time_point t_finish;             // when /generate's final event (a finish_reason) arrived
  std::string content_encoding, location; // of the response, for the error messages
  bool declared_length = false;           // the response gave a Content-Length
  ErrorKind fail = ErrorKind::none;
  std::string fail_msg;
  char errbuf[CURL_ERROR_SIZE] = {0};

  void set_fail(ErrorKind k, std::string msg) {
    if (fail != ErrorKind::none)
      return;
    fail = k;
    fail_msg = std::move(msg);
  }

  void on_tokens(int k, Clock::time_point now) {
    if (k <= 0)
      return;
    if (rec.ttft_s < 0)
      rec.ttft_s = secs(t_start, now);
    else
      rec.itls_s.push_back(secs(t_last_token, now));
    rec.chunk_tokens.push_back(k);
    t_last_token = now;
    if (live_tokens)
      *live_tokens += k;
  }

  // A server's own message ends the request: as a context overflow when its words say so (with
  // `code`, or 400 when it gave none), else as `kind`. `what` introduces the message.
  void fail_with_server_message(int code, const std::string& msg, ErrorKind kind,
                                const std::string& what) {
    rec.context_overflow = is_context_overflow_message(code ? code : 400, msg);
    set_fail(rec.context_overflow ? ErrorKind::context_overflow : kind,
             what + ": " + excerpt(msg, 300));
  }

  // An "error" object inside a 200 stream or body (SGLang reports aborts this way).
  bool absorb_error_object(const json& j) {
    auto e = j.find("error");
    if (e == j.end() || e->is_null())
      return false;
    std::string msg = e->is_string() ? e->get<std::string>()
                      : e->is_object() && e->contains("message") && (*e)["message"].is_string()
                          ? (*e)["message"].get<std::string>()
                          : e->dump();
    int code = 0;
    if (e->is_object())
      if (auto c = get_count(*e, "code", nullptr))
        code = static_cast<int>(*c);
    if (code >= 100 && code <= 599) // an HTTP status; other codes (40001) stay in the message
      rec.http_status = code;
    fail_with_server_message(code, msg, ErrorKind::http_status, "server error in response");
    rec.body_excerpt = excerpt(j.dump(), opt->body_excerpt_bytes);
    return true;
  }

  // A finish_reason that says the server aborted the request fails it (false); a 200 answer
  // whose tokens stop early would otherwise count as a short, successful one.
  bool absorb_abort(const json& finish_reason) {
    const std::optional<std::string> msg = abort_message(finish_reason);
    if (!msg)
      return true;
    int code = 0;
    if (finish_reason.is_object())
      if (auto c = get_count(finish_reason, "status_code", nullptr))
        code = static_cast<int>(*c);
    fail_with_server_message(code, *msg, ErrorKind::server_abort,
                             "the server aborted the request (finish_reason abort" +
                                 (code ? ", status " + std::to_string(code) : std::string()) + ")");
    return false;
  }

  // One JSON object: a stream event (stream = true) or a whole body.
  bool absorb(const json& j, Clock::time_point now, bool stream) {
    if (!j.is_object()) {
      set_fail(ErrorKind::malformed, "expected a JSON object");
      return false;
    }
    if (absorb_error_object(j))
      return false;
    int new_tokens = 0;
    if (opt->api == ApiKind::generate) {
      auto m = j.find("meta_info");
      if (m == j.end() || !m->is_object()) {
        set_fail(ErrorKind::malformed, "no meta_info object in /generate answer");
        return false;
      }
      std::string bad;
      const std::optional<int64_t> completion = absorb_meta_info(*m, rec, &bad);
      if (!bad.empty()) {
        set_fail(ErrorKind::malformed, bad);
        return false;
      }
      if (auto fr = m->find("finish_reason"); fr != m->end())
        if (!absorb_abort(*fr))
          return false;
      const auto ids = j.find("output_ids");
      const int64_t id_count =
          ids != j.end() && ids->is_array() ? static_cast<int64_t>(ids->size()) : -1;
      const int64_t count = completion ? *completion : id_count;
      if (count >= 0 && count < last_completion) {
        // Cumulative counts never shrink. A final event that undercounts would pass as a short
        // answer; incremental output_ids without completion_tokens cannot be counted at all.
        set_fail(
            ErrorKind::malformed,
            std::string(completion ? "meta_info.completion_tokens" : "the length of output_ids") +
                " went down from " + std::to_string(last_completion) + " to " +
                std::to_string(count) + " within one stream; the count must be cumulative");
        return false;
      }
      if (completion && id_count > *completion) {
        // output_ids (cumulative, or the newest ids only) can never outnumber the tokens.
        set_fail(ErrorKind::malformed, "output_ids holds " + std::to_string(id_count) +
                                           " ids but meta_info.completion_tokens says " +
                                           std::to_string(*completion));
        return false;
      }
      const auto fr = m->find("finish_reason");
      const bool final_event = fr != m->end() && !fr->is_null();
      // The same list again (an event repeated mid-stream) adds no token and is no sign of
      // incremental ids; it is told apart by a hash of the ids, computed only when the list
      // did not grow.
      const bool repeated = !completion && id_count > 0 && id_count == last_completion &&
                            last_ids.has_value() && *last_ids == hash_of_ids(*ids);
      if (!completion && id_count > 0 && id_count <= last_completion && !final_event && !repeated) {
        // Cumulative ids grow with every event that carries a token; a list that does not grow
        // is the newest ids only, which without completion_tokens cannot be counted (taken as
        // cumulative, 8 tokens counted as 1).
        set_fail(ErrorKind::malformed,
                 "output_ids did not grow (" + std::to_string(id_count) + " ids after " +
                     std::to_string(last_completion) +
                     "): they look like the newest ids only, and without "
                     "meta_info.completion_tokens the tokens cannot be counted");
        return false;
      }
      if (!completion && id_count > 0 && id_count > last_completion) {
        last_ids = hash_of_ids(*ids); // the list grew: kept for an event that repeats it
      }
      if (count >= 0) {
        // The count is cumulative; events before it without one were counted a token each.
        new_tokens = static_cast<int>(std::max<int64_t>(0, count - counted));
        last_completion = std::max(last_completion, count);
      } else if (auto tx = j.find("text"); tx != j.end() && tx->is_string() && !tx->empty()) {
        new_tokens = 1; // no count at all: one chunk = one token (documented)
        guessed = true;
      }
      counted += new_tokens;
      if (!rec.finish_reason.empty() && !saw_finish) {
        saw_finish = true;
        t_finish = now;
      }
    } else {
      auto ch = j.find("choices");
      if (ch == j.end() || !ch->is_array()) {
        set_fail(ErrorKind::malformed, "no choices array in OpenAI answer");
        return false;
      }
      if (!ch->empty()) {
        const json& c = (*ch)[0];
        if (!c.is_object()) {
          set_fail(ErrorKind::malformed, "choices[0] is not an object");
          return false;
        }
        const json* content = nullptr;
        if (opt->api == ApiKind::completions) {
          if (auto t = c.find("text"); t != c.end())
            content = &*t;
        } else {
          const char* where = stream ? "delta" : "message";
          if (auto d = c.find(where); d != c.end() && d->is_object()) {
            if (auto t = d->find("content"); t != d->end() && t->is_string() && !t->empty())
              content = &*t;
            else if (auto rc = d->find("reasoning_content"); rc != d->end() && rc->is_string())
              content = &*rc;
            else if (auto rs = d->find("reasoning"); rs != d->end() && rs->is_string())
              content = &*rs; // vLLM's name for it since late 2025 (reasoning_content before)
          }
        }
        if (content && content->is_string() && !content->get_ref<const std::string&>().empty())
          new_tokens = 1; // OpenAI streams do not say how many tokens a chunk holds
        if (auto fr = c.find("finish_reason"); fr != c.end() && fr->is_string()) {
          rec.finish_reason = fr->get<std::string>();
          saw_finish = true;
          if (!absorb_abort(*fr))
            return false;
        }
      }
      std::string bad;
      absorb_openai_extras(j, rec, &bad);
      if (!bad.empty()) {
        set_fail(ErrorKind::malformed, bad);
        return false;
      }
    }
    if (stream)
      on_tokens(new_tokens, now);
    return true;
  }

  bool dispatch(Clock::time_point now) {
    std::string data;
    data.swap(event_data);
    if (data == "[DONE]") {
      if (!saw_done)
        t_done = now;
      saw_done = true;
      return true;
    }
    if (saw_done)
      return true; // tolerate trailing noise after [DONE]
    json j = json::parse(data, nullptr, false);
    if (j.is_discarded()) {
      set_fail(ErrorKind::malformed, "SSE event is not valid JSON (" + json_error_of(data) +
                                         "): " + excerpt_or_kind(data, 120));
      rec.body_excerpt = excerpt(data, opt->body_excerpt_bytes);
      return false;
    }
    return absorb(j, now, true);
  }

  bool feed_line(std::string_view l, Clock::time_point now) {
    if (!l.empty() && l.back() == '\r')
      l.remove_suffix(1);
    if (first_line) { // a byte-order mark may open the stream (the SSE spec drops it)
      first_line = false;
      if (l.substr(0, 3) == "\xEF\xBB\xBF")
        l.remove_prefix(3);
    }
    if (l.empty())
      return event_data.empty() ? true : dispatch(now);
    if (l[0] == ':')
      return true; // comment / keep-alive
    if (l.substr(0, 5) == "data:") {
      // Progress is data, not bytes: a server that only sends keep-alive comments while stuck
      // must still hit the idle timeout and the runner's stall watchdog.
      t_last_byte = now;
      bytes_counter->fetch_add(l.size() + 1, std::memory_order_relaxed);
      l.remove_prefix(5);
      if (!l.empty() && l[0] == ' ')
        l.remove_prefix(1);
      if (!event_data.empty())
        event_data += '\n';
      event_data.append(l);
      return true;
    }
    if (l == "data") { // a field with no colon has an empty value
      if (!event_data.empty())
        event_data += '\n';
      return true;
    }
    // Other fields (event:, id:, retry:, or a name the SSE spec says to ignore) carry nothing
    // measured; a line that is no field at all (binary, bare JSON) is not SSE.
    const size_t colon = l.find(':');
    const std::string_view name = l.substr(0, colon);
    if (!name.empty() && name.size() <= 64 && std::all_of(name.begin(), name.end(), [](char ch) {
          return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_' || ch == '-';
        }))
      return true;
    set_fail(ErrorKind::malformed, "not an SSE line: " + excerpt_or_kind(l, 120));
    rec.body_excerpt = excerpt(l, opt->body_excerpt_bytes);
    return false;
  }

  // Lines end with "\r\n", "\n" or a lone "\r" (the SSE format allows all three).
  bool feed_sse(std::string_view data, Clock::time_point now) {
    if (after_cr && !data.empty() && data[0] == '\n')
      data.remove_prefix(1); // the "\n" of a "\r\n" split across two reads
    after_cr = false;
    while (!data.empty()) {
      const size_t nl = data.find_first_of("\r\n");
      if (nl == std::string_view::npos) {
        line.append(data);
        if (line.size() > (4u << 20)) {
          set_fail(ErrorKind::malformed, "SSE line longer than 4 MiB");
          return false;
        }
        return true;
      }
      bool ok;
      if (line.empty())
        ok = feed_line(data.substr(0, nl), now);
      else {
        line.append(data.substr(0, nl));
        ok = feed_line(line, now);
        line.clear();
      }
      if (!ok)
        return false;
      const bool cr = data[nl] == '\r';
      data.remove_prefix(nl + 1);
      if (cr && !data.empty() && data[0] == '\n')
        data.remove_prefix(1);
      else if (cr && data.empty())
        after_cr = true;
    }
    return true;
  }

  void parse_whole_body(Clock::time_point now) {
    if (body.find_first_not_of(" \t\r\n") == std::string::npos) {
      long status = 0;
      curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &status);
      set_fail(ErrorKind::malformed,
               "the server answered HTTP " + std::to_string(status) + " with an empty body");
      return;
    }
    json j = json::parse(body, nullptr, false);
    if (j.is_discarded()) {
      const size_t first = body.find_first_not_of(" \t\r\n");
      const bool sse_body = body.compare(first, 5, "data:") == 0;
      set_fail(ErrorKind::malformed,
               sse_body ? "the body is a stream of SSE events, but its Content-Type is not "
                          "text/event-stream (a proxy that rewrites it, or a server that does not "
                          "set it): " +
                              excerpt(body, 120)
                        : "response body is not valid JSON: " + excerpt(body, 120));
      rec.body_excerpt = excerpt(body, opt->body_excerpt_bytes);
      return;
    }
    if (!absorb(j, now, false))
      return;
    if (opt->api == ApiKind::generate && rec.output_tokens < 0)
      if (auto ids = j.find("output_ids"); ids != j.end() && ids->is_array())
        rec.output_tokens = static_cast<int>(ids->size());
  }
};

size_t on_header(char* p, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const size_t len = size * n;
  t->got_first_byte = true;
  t->t_last_byte = Clock::now();
  std::string_view h(p, len);
  if (t->rec.bytes > 0)
    return len; // a trailer after a chunked body: it describes nothing the body already was
  if (starts_with(h, "HTTP/")) {
    t->is_sse = false; // a new response (e.g. after a redirect or 100): reset
    t->content_encoding.clear();
    t->location.clear();
    t->declared_length = false;
    return len;
  }
  const std::string l =
      detail::ascii_lower(std::string(h.substr(0, std::min<size_t>(h.size(), 2048))));
  const auto value = [&](size_t name_len) {
    std::string v = std::string(h.substr(name_len, std::min<size_t>(h.size(), 2048) - name_len));
    while (!v.empty() && std::isspace(static_cast<unsigned char>(v.back())))
      v.pop_back();
    return excerpt(v.substr(std::min(v.find_first_not_of(" \t"), v.size())), 200);
  };
  if (starts_with(l, "content-type:"))
    t->is_sse = l.find("text/event-stream") != std::string::npos;
  else if (starts_with(l, "content-encoding:"))
    t->content_encoding = value(17);
  else if (starts_with(l, "location:"))
    t->location = value(9);
  else if (starts_with(l, "content-length:"))
    t->declared_length = true;
  return len;
}

size_t on_data(char* p, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const size_t len = size * n;
  const auto now = Clock::now();
  t->got_first_byte = true;
  t->rec.bytes += static_cast<int64_t>(len);
  if (static_cast<size_t>(t->rec.bytes) > t->opt->max_body_bytes) {
    t->set_fail(ErrorKind::body_too_large,
                "response larger than " + std::to_string(t->opt->max_body_bytes) + " bytes");
    return 0;
  }
  long status = 0;
  curl_easy_getinfo(t->easy, CURLINFO_RESPONSE_CODE, &status);
  if (status >= 200 && status < 300 && !t->content_encoding.empty() &&
      detail::ascii_lower(t->content_encoding) != "identity") {
    // Nothing asked for compression; a body in it is bytes no count or event can be read from.
    t->set_fail(ErrorKind::malformed,
                "the answer is compressed (Content-Encoding: " + t->content_encoding +
                    "), which specbench neither asks for nor decodes: turn compression off at "
                    "the server or the proxy in front of it");
    return 0;
  }
  if (status < 200 || status >= 300 || !t->is_sse) {
    t->t_last_byte = now; // not a stream: every byte is progress
    t->bytes_counter->fetch_add(len, std::memory_order_relaxed);
    if (status >= 200 && status < 300)
      t->body.append(p, len);
    else if (t->body.size() < 64 * 1024)
      t->body.append(p, std::min(len, 64 * 1024 - t->body.size()));
    return len;
  }
  // An exception must not cross libcurl's C frames (std::terminate: the whole sweep lost, as a
  // finish_reason of the wrong type once did); whatever throws fails this request.
  try {
    return t->feed_sse(std::string_view(p, len), now) ? len : 0;
  } catch (const std::exception& e) {
    t->set_fail(ErrorKind::malformed, "the answer could not be read (" + excerpt(e.what(), 300) +
                                          "): report this specbench bug with the server's answer");
    return 0;
  }
}

} // namespace

struct Client::Impl {
  explicit Impl(ClientOptions o) : opt(std::move(o)) {
    detail::ensure_curl_initialized();
    multi = curl_multi_init();
    while (!opt.base_url.empty() && opt.base_url.back() == '/')
      opt.base_url.pop_back();
  }
  ~Impl() {
    for (CURL* e : pool)
      curl_easy_cleanup(e);
    if (multi)
      curl_multi_cleanup(multi);
  }

  ClientOptions opt;
  CURLM* multi = nullptr;
  std::vector<CURL*> pool;
  std::atomic<bool> abort_flag{false};
  std::mutex abort_mu;
  std::string abort_reason;
  std::atomic<uint64_t> bytes{0};
  std::atomic<int> in_flight{0};
  double progress_interval_s = 0.2;

  std::string url_path() const {
    switch (opt.api) {
    case ApiKind::generate:
      return "/generate";
    case ApiKind::completions:
      return "/v1/completions";
    case ApiKind::chat:
      return "/v1/chat/completions";
    }
    return "/generate";
  }

  std::string build_body(const RequestSpec& r) const {
    json j;
    const Prompt& p = r.prompt;
    if (opt.api == ApiKind::generate) {
      json sp = {{"max_new_tokens", r.max_new_tokens},
                 {"temperature", r.temperature},
                 {"ignore_eos", r.ignore_eos}};
      // Older SGLang versions reject unknown sampling keys: send the seed only when sampling.
      if (r.temperature > 0)
        sp["sampling_seed"] = r.seed;
      j = {{"sampling_params", sp}, {"stream", opt.stream}};
      if (!p.input_ids.empty())
        j["input_ids"] = p.input_ids;
      else
        j["text"] = p.text;
    } else {
      j = {{"model", opt.model},
           {"max_tokens", r.max_new_tokens},
           {"temperature", r.temperature},
           {"stream", opt.stream}};
      if (r.ignore_eos)
        j["ignore_eos"] = true; // vLLM / SGLang extension; others ignore it
      if (r.temperature > 0)
        j["seed"] = r.seed;
      if (opt.stream)
        j["stream_options"] = {{"include_usage", true}};
      if (opt.api == ApiKind::completions) {
        if (!p.input_ids.empty())
          j["prompt"] = p.input_ids;
        else
          j["prompt"] = p.text;
      } else {
        json msgs = json::array();
        if (!p.messages.empty())
          for (const auto& m : p.messages)
            msgs.push_back({{"role", m.role}, {"content", m.content}});
        else if (!p.text.empty() || p.input_ids.empty())
          msgs.push_back({{"role", "user"}, {"content", p.text}});
        else { // chat cannot take token ids: write them as numbers (usage says the real count)
          std::string text;
          for (int32_t id : p.input_ids)
            text += (text.empty() ? "" : " ") + std::to_string(id);
          msgs.push_back({{"role", "user"}, {"content", text}});
        }
        j["messages"] = msgs;
      }
    }
    return j.dump();
  }

  void start_transfer(Transfer& t, const RequestSpec& r, Clock::time_point run_start,
                      int64_t* live_tokens) {
    CURL* e;
    if (!pool.empty()) {
      e = pool.back();
      pool.pop_back();
      curl_easy_reset(e);
    } else {
      e = curl_easy_init();
    }
    t.opt = &opt;
    t.bytes_counter = &bytes;
    t.live_tokens = live_tokens;
    t.easy = e;
    t.request_body = build_body(r);
    t.max_new_tokens = r.max_new_tokens;
    t.ignore_eos = r.ignore_eos;
    t.headers = curl_slist_append(nullptr, "Content-Type: application/json");
    t.headers = curl_slist_append(t.headers, "Expect:"); // no 100-continue round trip
    if (opt.stream)
      t.headers = curl_slist_append(t.headers, "Accept: text/event-stream");
    if (!opt.api_key.empty())
      t.headers = curl_slist_append(t.headers, ("Authorization: Bearer " + opt.api_key).c_str());
    const std::string url = opt.base_url + url_path();
    curl_easy_setopt(e, CURLOPT_URL, url.c_str());
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_PROXY, "");
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, t.headers);
    curl_easy_setopt(e, CURLOPT_POSTFIELDS, t.request_body.c_str());
    curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE, static_cast<long>(t.request_body.size()));
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, &on_data);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, &t);
    curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, &on_header);
    curl_easy_setopt(e, CURLOPT_HEADERDATA, &t);
    curl_easy_setopt(e, CURLOPT_PRIVATE, &t);
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, t.errbuf);
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS,
                     std::max(1L, static_cast<long>(opt.connect_timeout_s * 1000)));
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS,
                     std::max(1L, static_cast<long>(opt.request_timeout_s * 1000)));
    curl_easy_setopt(e, CURLOPT_TCP_NODELAY, 1L);
    t.t_start = Clock::now();
    t.t_last_byte = t.t_start;
    t.rec.start_s = secs(run_start, t.t_start);
    t.rec.sent_prompt_tokens =
        opt.api == ApiKind::chat ? 0 : static_cast<int>(r.prompt.input_ids.size());
    t.active = true;
    curl_multi_add_handle(multi, e);
    in_flight.fetch_add(1, std::memory_order_relaxed);
  }

  // Ends a transfer: classifies the outcome, fills the record, recycles the handle.
  // `forced` is set when we ended it ourselves (timeouts we watch, abort).
  void finish_transfer(Transfer& t, CURLcode rc, bool forced) {
    const auto t_end = Clock::now();
    long status = 0;
    curl_easy_getinfo(t.easy, CURLINFO_RESPONSE_CODE, &status);
    double connect_time = 0;
    curl_easy_getinfo(t.easy, CURLINFO_CONNECT_TIME, &connect_time);
    RequestRecord& r = t.rec;
    if (r.http_status == 0)
      r.http_status = static_cast<int>(status);
    // After [DONE] the answer is whole: a connection the server then resets or closes without
    // ending its chunked body costs nothing measured (the audit's done-then-RST lost answers).
    // A Content-Length the body did not reach is a framing lie, though, and stays an error.
    const bool complete_answer =
        t.is_sse && t.saw_done && !t.declared_length && rc != CURLE_OPERATION_TIMEDOUT;
    if (t.fail == ErrorKind::none && !forced) {
      if (rc != CURLE_OK && !complete_answer) {
        const std::string what = t.errbuf[0] ? std::string(t.errbuf) : curl_easy_strerror(rc);
        ErrorKind k = ErrorKind::transport;
        if (rc == CURLE_COULDNT_CONNECT || rc == CURLE_COULDNT_RESOLVE_HOST)
          k = ErrorKind::connect;
        else if (rc == CURLE_OPERATION_TIMEDOUT)
          k = connect_time <= 0 && !t.got_first_byte ? ErrorKind::timeout_connect
              : !t.got_first_byte                    ? ErrorKind::timeout_first_byte
                                                     : ErrorKind::timeout_total;
        t.set_fail(k, what);
        if (!t.body.empty())
          r.body_excerpt = excerpt(t.body, opt.body_excerpt_bytes);
      } else if (status < 200 || status >= 300) {
        r.body_excerpt = excerpt(t.body, opt.body_excerpt_bytes);
        r.context_overflow = is_context_overflow_message(static_cast<int>(status), t.body);
        std::string msg = "HTTP " + std::to_string(status) + ": " + error_message_of(t.body);
        if (status >= 300 && status < 400)
          msg += " (a redirect" + (t.location.empty() ? std::string() : " to " + t.location) +
                 ", which specbench does not follow: point server.host and server.port, or "
                 "the launch template, at the server itself)";
        t.set_fail(r.context_overflow ? ErrorKind::context_overflow : ErrorKind::http_status, msg);
      } else {
        try { // as in on_data: reading an answer fails the request, never the sweep
          if (t.is_sse) {
            if (!t.line.empty()) { // a last line without its newline
              const std::string last = std::move(t.line);
              t.line.clear();
              t.feed_line(last, t_end);
            }
            if (t.fail == ErrorKind::none && !t.event_data.empty())
              t.dispatch(t_end);
            if (t.fail == ErrorKind::none && !t.saw_done && !t.saw_finish)
              t.set_fail(ErrorKind::incomplete, "stream ended without a final event or [DONE]");
          } else {
            t.parse_whole_body(t_end);
          }
        } catch (const std::exception& e) {
          t.set_fail(ErrorKind::malformed,
                     "the answer could not be read (" + excerpt(e.what(), 300) +
                         "): report this specbench bug with the server's answer");
        }
      }
    }
    r.error = t.fail;
    r.error_message = t.fail_msg;
    // The answer is complete at [DONE]: what the server does with the connection after it
    // (keep-alive comments, a late final chunk) is not the request's latency.
    if (r.error == ErrorKind::none)
      r.e2e_s = secs(t.t_start, t.saw_done ? t.t_done : t_end);
    int streamed = 0; // tokens the stream itself showed (OpenAI: one per chunk with text)
    for (int k : r.chunk_tokens)
      streamed += k;
    if (r.output_tokens < 0 && !r.chunk_tokens.empty())
      r.output_tokens = streamed;
    // One chunk of slack: llama.cpp's final event can release text its parser held back (or
    // split reasoning from content) without a new token.
    if (r.error == ErrorKind::none && r.output_tokens >= 0 && streamed > r.output_tokens + 1 &&
        !t.guessed) {
      // A final count below what was streamed would pass as a shorter, faster answer. (Not
      // when events without a count were taken as a token each: then the guess is what is off.)
      r.error = ErrorKind::malformed;
      r.error_message = "the server streamed " + std::to_string(streamed) +
                        " tokens but reported " + std::to_string(r.output_tokens) +
                        " output tokens in its final count";
    }
    if (r.error == ErrorKind::none && r.output_tokens == 0 && streamed > 0) {
      // Text streamed, and a final count of none: the count is the lie (not a full context).
      r.error = ErrorKind::malformed;
      r.error_message = "the server streamed " + std::to_string(streamed) +
                        " tokens but reported 0 output tokens in its final count";
    }
    if (r.error == ErrorKind::none && opt.stream && r.output_tokens > 0 && streamed == 0) {
      // Tokens with no chunk that carried one: no time to first token or gap between tokens
      // was measured, and a 0 would enter the cell's latency figures as if it had been.
      r.error = ErrorKind::malformed;
      r.error_message =
          "the server reported " + std::to_string(r.output_tokens) + " output tokens, but " +
          (t.is_sse ? std::string("no event of its stream carried a token (text, or a rising "
                                  "completion_tokens)")
                    : std::string("it answered a streaming request with one whole body")) +
          ", so time to first token and inter-token latency cannot be measured";
    }
    if (r.error == ErrorKind::none && t.max_new_tokens >= 0 && r.output_tokens > t.max_new_tokens) {
      // A lie that would otherwise pass as throughput.
      r.error = ErrorKind::malformed;
      r.error_message = "the server reported " + std::to_string(r.output_tokens) +
                        " output tokens for a request of at most " +
                        std::to_string(t.max_new_tokens) + " (max_new_tokens)";
    }
    // (A stream with no count and no chunk has no token; a whole body without a count may.)
    if (r.error == ErrorKind::none && t.ignore_eos && t.max_new_tokens > 0 &&
        (r.output_tokens == 0 || (r.output_tokens < 0 && opt.stream))) {
      // With ignore_eos no server may stop before its first token; counting this as done would
      // add a request of zero tokens (and no time to first token) to the cell's figures. With
      // finish_reason "length" it is the context: SGLang clips max_new_tokens to what is left of
      // its context or KV pool, down to 0, and answers so.
      const bool length = r.finish_reason == "length";
      r.error = length ? ErrorKind::context_overflow : ErrorKind::malformed;
      r.context_overflow = length;
      r.error_message =
          "the server finished the request with no output token" +
          (r.finish_reason.empty() ? std::string() : " (finish_reason " + r.finish_reason + ")") +
          ", though ignore_eos asked for " + std::to_string(t.max_new_tokens) +
          (length ? ": the prompt leaves no room in the server's context (SGLang shortens "
                    "max_new_tokens to what fits, down to 0)"
                  : "");
    }
    if (r.error == ErrorKind::none && r.sent_prompt_tokens > 0 && r.prompt_tokens >= 0 &&
        r.prompt_tokens != r.sent_prompt_tokens) {
      // Token ids go in as they are (no BOS, no template): another count means the server
      // truncated or re-tokenized the prompt, and the request measured a prompt not asked for.
      r.error = ErrorKind::malformed;
      r.error_message =
          "the server counted " + std::to_string(r.prompt_tokens) + " prompt tokens for the " +
          std::to_string(r.sent_prompt_tokens) + " token ids sent" +
          (r.prompt_tokens < r.sent_prompt_tokens ? " (it truncated the prompt?)" : "") +
          ", so this request did not measure the prompt asked for";
    }
    if (r.error == ErrorKind::none)
      if (std::string why = spec_contradiction(r, opt.max_tokens_per_step); !why.empty()) {
        r.error = ErrorKind::malformed;
        r.error_message = std::move(why);
      }
    r.ok = r.error == ErrorKind::none;
    curl_multi_remove_handle(multi, t.easy);
    curl_slist_free_all(t.headers);
    t.headers = nullptr;
    pool.push_back(t.easy);
    t.easy = nullptr;
    t.active = false;
    t.request_body.clear();
    t.request_body.shrink_to_fit();
    t.body.clear();
    t.body.shrink_to_fit();
    in_flight.fetch_sub(1, std::memory_order_relaxed);
  }

  std::string current_abort_reason() {
    std::lock_guard lk(abort_mu);
    return abort_reason;
  }

  Expected<RunResult> run(const std::vector<RequestSpec>& requests, int concurrency,
                          const ProgressCallback& progress, int run_number) {
    if (!multi)
      return Status(StatusCode::internal, "curl_multi_init failed");
    if (opt.base_url.rfind("http://", 0) != 0 && opt.base_url.rfind("https://", 0) != 0)
      return Status(StatusCode::invalid_argument,
                    "base_url must start with http:// or https://: '" + opt.base_url + "'");
    concurrency = std::max(1, concurrency);
    raise_fd_limit(static_cast<rlim_t>(concurrency) * 2 + 64);
    curl_multi_setopt(multi, CURLMOPT_MAXCONNECTS, static_cast<long>(concurrency + 8));
    RunResult result;
    result.run = run_number;
    result.concurrency = concurrency;
    const size_t n = requests.size();
    std::vector<Transfer> transfers(n);
    for (size_t i = 0; i < n; ++i) {
      transfers[i].rec.index = static_cast<int>(i);
      transfers[i].rec.run = run_number;
    }
    int64_t live_tokens = 0;
    ClientProgress prog;
    prog.run = run_number;
    prog.total = static_cast<int>(n);
    const auto run_start = Clock::now();
    auto last_progress = run_start;
    size_t next = 0;
    int active = 0;
    std::vector<Transfer*> active_list;
    active_list.reserve(static_cast<size_t>(concurrency));
    auto report = [&](bool force) {
      if (!progress)
        return;
      const auto now = Clock::now();
      if (!force && secs(last_progress, now) < progress_interval_s)
        return;
      last_progress = now;
      prog.in_flight = active;
      prog.output_tokens = live_tokens;
      prog.elapsed_s = secs(run_start, now);
      progress(prog);
    };
    auto complete = [&](Transfer& t) {
      ++prog.done;
      if (!t.rec.ok)
        ++prog.failed;
      --active;
    };
    while (next < n || active > 0) {
      if (abort_flag.load()) {
        const std::string why = current_abort_reason(); // the kind already says "aborted"
        for (Transfer* t : active_list)
          if (t->active) {
            t->set_fail(ErrorKind::aborted, why);
            finish_transfer(*t, CURLE_OK, true);
            complete(*t);
          }
        active_list.clear();
        for (; next < n; ++next) {
          Transfer& t = transfers[next];
          t.rec.error = ErrorKind::aborted;
          t.rec.error_message = why + " (not sent)";
          t.rec.start_s = -1;
          ++prog.done;
          ++prog.failed;
        }
        result.aborted = current_abort_reason();
        break;
      }
      while (next < n && active < concurrency) {
        start_transfer(transfers[next], requests[next], run_start, &live_tokens);
        active_list.push_back(&transfers[next]);
        ++next;
        ++active;
      }
      int running = 0;
      curl_multi_perform(multi, &running);
      int msgs = 0;
      bool any_done = false;
      while (CURLMsg* m = curl_multi_info_read(multi, &msgs)) {
        if (m->msg != CURLMSG_DONE)
          continue;
        Transfer* t = nullptr;
        curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, reinterpret_cast<char**>(&t));
        const CURLcode rc = m->data.result;
        finish_transfer(*t, rc, false);
        complete(*t);
        any_done = true;
      }
      // Timeouts curl does not watch: first byte and idle gaps.
      const auto now = Clock::now();
      for (Transfer* t : active_list) {
        if (!t->active)
          continue;
        if (!t->saw_done && t->saw_finish && opt.api == ApiKind::generate && t->is_sse &&
            t->fail == ErrorKind::none && secs(t->t_finish, now) > 2.0) {
          // /generate's final event carries every count; a server (or proxy) that then holds
          // the stream without [DONE] lost the whole answer to the request timeout. Two seconds
          // on, the final event counts as the end (and the time) of the answer.
          t->saw_done = true;
          t->t_done = t->t_finish;
        }
        if (t->saw_done && t->fail == ErrorKind::none && secs(t->t_done, now) > 1.0) {
          // [DONE] came a second ago and the body still has not ended: the answer is complete,
          // so it is kept (timed at [DONE]) and the connection is dropped.
          finish_transfer(*t, CURLE_OK, false);
          complete(*t);
          any_done = true;
          continue;
        }
        if (!t->got_first_byte && secs(t->t_start, now) > opt.first_byte_timeout_s) {
          t->set_fail(ErrorKind::timeout_first_byte,
                      "no response byte within " + std::to_string(opt.first_byte_timeout_s) + " s");
        } else if (opt.idle_timeout_s > 0 && t->got_first_byte && !t->saw_done &&
                   secs(t->t_last_byte, now) > opt.idle_timeout_s) {
          t->set_fail(ErrorKind::timeout_total,
                      "no data for " + std::to_string(opt.idle_timeout_s) +
                          " s mid-response (keep-alive comments do not count)");
        } else {
          continue;
        }
        finish_transfer(*t, CURLE_OK, true);
        complete(*t);
        any_done = true;
      }
      if (any_done)
        std::erase_if(active_list, [](Transfer* t) { return !t->active; });
      report(false);
      if (any_done && next < n)
        continue; // refill at once
      if (active > 0) {
        int numfds = 0;
        curl_multi_poll(multi, nullptr, 0, 20, &numfds);
      }
    }
    result.wall_s = secs(run_start, Clock::now());
    result.records.reserve(n);
    for (auto& t : transfers) {
      if (t.rec.ok)
        ++result.ok_count;
      else
        ++result.failed_count;
      result.records.push_back(std::move(t.rec));
    }
    prog.in_flight = 0;
    prog.output_tokens = live_tokens;
    prog.elapsed_s = result.wall_s;
    if (progress)
      progress(prog);
    return result;
  }

  static void raise_fd_limit(rlim_t want) {
    rlimit rl{};
    if (::getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur >= want)
      return;
    rl.rlim_cur = std::min(rl.rlim_max, std::max(want, rl.rlim_cur));
    ::setrlimit(RLIMIT_NOFILE, &rl);
  }
};

Client::Client(ClientOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}
Client::~Client() = default;

Expected<RunResult> Client::run(const std::vector<RequestSpec>& requests, int concurrency,
                                const ProgressCallback& progress, int run_number) {
  return impl_->run(requests, concurrency, progress, run_number);
}

Expected<WorkloadResult> Client::run_workload(const Workload& workload,
                                              const std::vector<Prompt>& prompts,
                                              const ProgressCallback& progress,
                                              const RunHooks& hooks) {
  if (prompts.empty())
    return Status(StatusCode::invalid_argument, "no prompts for workload '" + workload.name + "'",
                  "check the dataset or prompt_tokens");
  WorkloadResult out;
  if (workload.warmup > 0) {
    auto w = run(make_requests(workload, prompts, workload.warmup, 0), workload.concurrency,
                 progress, -1);
    if (!w)
      return w.status();
    out.warmup = std::move(*w);
    if (!out.warmup.aborted.empty()) {
      out.aborted = out.warmup.aborted;
      return out;
    }
  }
  for (int r = 0; r < workload.runs; ++r) {
    const int offset = workload.warmup + r * workload.requests;
    auto requests = make_requests(workload, prompts, workload.requests, offset);
    if (hooks.before_run)
      hooks.before_run(r);
    auto res = run(requests, workload.concurrency, progress, r);
    if (!res)
      return res.status();
    out.runs.push_back(std::move(*res));
    if (hooks.after_run)
      hooks.after_run(out.runs.back());
    if (!out.runs.back().aborted.empty()) {
      out.aborted = out.runs.back().aborted;
      break;
    }
  }
  return out;
}

RequestRecord Client::send(const RequestSpec& request) {
  auto r = run({request}, 1);
  if (!r || r->records.empty()) {
    RequestRecord rec;
    rec.error = ErrorKind::transport;
    rec.error_message = r ? "no record" : r.status().to_string();
    return rec;
  }
  return std::move(r->records.front());
}

void Client::abort(const std::string& reason) {
  {
    std::lock_guard lk(impl_->abort_mu);
    if (!impl_->abort_flag.load())
      impl_->abort_reason = reason;
  }
  impl_->abort_flag.store(true);
  if (impl_->multi)
    curl_multi_wakeup(impl_->multi);
}

bool Client::aborted() const noexcept {
  return impl_->abort_flag.load();
}

void Client::reset_abort() {
  std::lock_guard lk(impl_->abort_mu);
  impl_->abort_flag.store(false);
  impl_->abort_reason.clear();
}

uint64_t Client::bytes_received() const noexcept {
  return impl_->bytes.load();
}
int Client::in_flight() const noexcept {
  return impl_->in_flight.load();
}
void Client::set_progress_interval(double seconds) {
  impl_->progress_interval_s = seconds;
}
const ClientOptions& Client::options() const noexcept {
  return impl_->opt;
}

} // namespace specbench
