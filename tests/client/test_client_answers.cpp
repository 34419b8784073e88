// The client against answers the simulated server never gives, served byte for byte: counts sent
// as strings, vLLM's reasoning deltas, streams whose tokens no event carries, keep-alive comments
// from a stuck server, a body that does not end after [DONE]. Each either measures what the
// answer really held or fails the request naming why; none enters the figures as a made-up number.
#include "canned_http_server.hpp"
#include "core/seconds_since.hpp"
#include "specbench/client.hpp"

#include <gtest/gtest.h>

#include <chrono>

using namespace specbench;
using specbench::testing::CannedHttpServer;
using Piece = CannedHttpServer::Piece;

namespace {

ClientOptions options(const std::string& url, ApiKind api) {
  ClientOptions o;
  o.base_url = url;
  o.api = api;
  o.backend = api == ApiKind::generate ? Backend::sglang : Backend::openai;
  o.model = "m";
  o.stream = true;
  o.connect_timeout_s = 1;
  o.first_byte_timeout_s = 2;
  o.request_timeout_s = 5;
  return o;
}

RequestRecord one_request(const CannedHttpServer& server, ApiKind api, int max_new = 4,
                          double idle_timeout_s = 0) {
  auto o = options(server.url(), api);
  o.idle_timeout_s = idle_timeout_s;
  Client client(o);
  RequestSpec r;
  r.prompt.input_ids = {1, 2, 3};
  r.max_new_tokens = max_new;
  r.ignore_eos = true;
  auto run = client.run({r}, 1);
  EXPECT_TRUE(run.has_value());
  return run && !run->records.empty() ? run->records[0] : RequestRecord{};
}

std::string chat_chunk(const std::string& delta_key, const std::string& text) {
  return CannedHttpServer::event(R"({"choices":[{"index":0,"delta":{")" + delta_key + R"(":")" +
                                 text + R"("},"finish_reason":null}]})");
}

// A /generate stream whose events carry output_ids and no count: one event (text "a") for each
// list in `id_lists`, then, with `final_event`, one with no text that repeats the last list and
// says finish_reason "length"; then [DONE].
std::vector<Piece> output_ids_stream(const std::vector<std::vector<int>>& id_lists,
                                     bool final_event = true) {
  const auto event = [](const char* text, const std::vector<int>& ids, const char* meta_info) {
    std::string list;
    for (int id : ids)
      list += (list.empty() ? "" : ",") + std::to_string(id);
    return CannedHttpServer::event(R"({"text":")" + std::string(text) + R"(","output_ids":[)" +
                                   list + R"(],"meta_info":)" + meta_info + "}");
  };
  std::vector<Piece> script = {{CannedHttpServer::sse_head()}};
  for (const auto& ids : id_lists)
    script.push_back({event("a", ids, "{}")});
  if (final_event && !id_lists.empty())
    script.push_back({event("", id_lists.back(), R"({"finish_reason":"length"})")});
  script.push_back({CannedHttpServer::event("[DONE]")});
  return script;
}

// Cumulative output_ids lists: {100}, {100, 101}, ... up to `n` ids.
std::vector<std::vector<int>> cumulative_ids(int n) {
  std::vector<std::vector<int>> lists;
  std::vector<int> ids;
  for (int i = 0; i < n; ++i) {
    ids.push_back(100 + i);
    lists.push_back(ids);
  }
  return lists;
}

} // namespace

// SGLang counts as strings: taken as "not reported", the client would count one token per event
// (8 instead of 16 here) and report half the throughput and acceptance 1.
TEST(ClientAnswers, ACountSentAsAStringFailsTheRequest) {
  std::vector<Piece> script = {{CannedHttpServer::sse_head()}};
  for (int i = 1; i <= 2; ++i)
    script.push_back({CannedHttpServer::event(R"({"text":"ab","meta_info":{"completion_tokens":")" +
                                              std::to_string(2 * i) + R"(","spec_verify_ct":)" +
                                              std::to_string(i) + "}}")});
  script.push_back({CannedHttpServer::event("[DONE]")});
  CannedHttpServer server(script);
  const RequestRecord r = one_request(server, ApiKind::generate);
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.error, ErrorKind::malformed) << r.error_message;
  EXPECT_NE(r.error_message.find("completion_tokens = \"2\", which is not a count"),
            std::string::npos)
      << r.error_message;
}

// llama.cpp's timings.prompt_n counts the prompt tokens it processed, without a prefix from its
// cache: 1 of the 3 ids here. With no usage to say the prompt's length, that is no truncation.
TEST(ClientAnswers, LlamaCppPromptNAfterACacheHitIsNoTruncation) {
  std::vector<Piece> script = {{CannedHttpServer::sse_head()}};
  for (int i = 0; i < 2; ++i)
    script.push_back(
        {CannedHttpServer::event(R"({"choices":[{"index":0,"text":"ab","finish_reason":null}]})")});
  script.push_back(
      {CannedHttpServer::event(R"({"choices":[{"index":0,"text":"","finish_reason":"length"}],)"
                               R"("timings":{"prompt_n":1,"predicted_n":2}})")});
  script.push_back({CannedHttpServer::event("[DONE]")});
  CannedHttpServer server(script);
  const RequestRecord r = one_request(server, ApiKind::completions, 2);
  EXPECT_TRUE(r.ok) << r.error_message;
  EXPECT_EQ(r.sent_prompt_tokens, 3);
  EXPECT_EQ(r.prompt_tokens, -1); // unknown, not the cache-shortened 1
  EXPECT_EQ(r.output_tokens, 2);
}

// vLLM streams a reasoning model's thinking as delta.reasoning (reasoning_content before): those
// are tokens, and the first of them is the first token.
TEST(ClientAnswers, VllmReasoningDeltasAreTokens) {
  CannedHttpServer server(
      {{CannedHttpServer::sse_head()},
       {chat_chunk("reasoning", "hm")},
       {chat_chunk("reasoning", "so"), 20},
       {chat_chunk("content", "A"), 300},
       {chat_chunk("content", "B"), 20},
       {CannedHttpServer::event(
           R"({"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":4}})")},
       {CannedHttpServer::event("[DONE]")}});
  const RequestRecord r = one_request(server, ApiKind::chat);
  ASSERT_TRUE(r.ok) << r.error_message;
  EXPECT_EQ(r.output_tokens, 4);
  EXPECT_LT(r.ttft_s, 0.2); // the first reasoning chunk, not the first content chunk 0.3 s later
  EXPECT_EQ(r.itls_s.size(), 3u);
}

// Tokens no event carried (a server that ignores stream: true, or a stream of only a final usage)
// have no time to first token: the request fails instead of recording a TTFT of 0.
TEST(ClientAnswers, TokensThatNoEventCarriedFailTheRequest) {
  const std::string whole =
      R"({"choices":[{"index":0,"text":"abcd","finish_reason":"length"}],"usage":{"prompt_tokens":3,"completion_tokens":4}})";
  CannedHttpServer json_body(
      {{"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " +
        std::to_string(whole.size()) + "\r\nConnection: close\r\n\r\n" + whole}});
  RequestRecord r = one_request(json_body, ApiKind::completions);
  EXPECT_EQ(r.error, ErrorKind::malformed) << r.error_message;
  EXPECT_NE(r.error_message.find("answered a streaming request with one whole body"),
            std::string::npos)
      << r.error_message;

  CannedHttpServer usage_only(
      {{CannedHttpServer::sse_head()},
       {CannedHttpServer::event(
           R"({"choices":[{"index":0,"text":"","finish_reason":"length"}],"usage":{"prompt_tokens":3,"completion_tokens":4}})")},
       {CannedHttpServer::event("[DONE]")}});
  r = one_request(usage_only, ApiKind::completions);
  EXPECT_EQ(r.error, ErrorKind::malformed) << r.error_message;
  EXPECT_NE(r.error_message.find("no event of its stream carried a token"), std::string::npos)
      << r.error_message;
}

// Text streamed and a final count of 0 is a lie about the count, not a full context.
TEST(ClientAnswers, TextWithAFinalCountOfZeroIsMalformed) {
  CannedHttpServer server(
      {{CannedHttpServer::sse_head()},
       {CannedHttpServer::event(
           R"({"choices":[{"index":0,"text":"hello world","finish_reason":null}]})")},
       {CannedHttpServer::event(R"({"choices":[{"index":0,"text":"","finish_reason":"length"}]})")},
       {CannedHttpServer::event(
           R"({"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":0}})")},
       {CannedHttpServer::event("[DONE]")}});
  const RequestRecord r = one_request(server, ApiKind::completions);
  EXPECT_EQ(r.error, ErrorKind::malformed) << r.error_message;
  EXPECT_FALSE(r.context_overflow);
  EXPECT_NE(r.error_message.find("streamed 1 tokens but reported 0 output tokens"),
            std::string::npos)
      << r.error_message;
}

// After [DONE] the answer is complete: a body that does not end (the server holds the
// connection) neither stretches the request's latency nor loses it to the request timeout.
TEST(ClientAnswers, TheAnswerEndsAtDoneWhateverTheConnectionDoesAfter) {
  std::vector<Piece> script = {{CannedHttpServer::sse_head()}};
  for (int i = 1; i <= 4; ++i)
    script.push_back({CannedHttpServer::event(R"({"text":"a","meta_info":{"completion_tokens":)" +
                                              std::to_string(i) + "}}"),
                      10});
  script.push_back({CannedHttpServer::event("[DONE]")});
  script.push_back({": keep-alive\n\n", 200}); // and then nothing, for 8 s
  CannedHttpServer server(script, 8000);
  const auto t0 = std::chrono::steady_clock::now();
  const RequestRecord r = one_request(server, ApiKind::generate);
  const double waited = detail::seconds_since(t0);
  ASSERT_TRUE(r.ok) << r.error_message;
  EXPECT_EQ(r.output_tokens, 4);
  EXPECT_LT(r.e2e_s, 0.15); // timed at [DONE], about 40 ms after the start
  EXPECT_LT(waited, 3.0);   // ended a second after [DONE], not at the 5 s request timeout
}

// A stuck server that sends only keep-alive comments is idle: the idle timeout ends the request
// instead of the whole-request timeout (which is 10 minutes in a sweep).
TEST(ClientAnswers, KeepAliveCommentsDoNotHideAStall) {
  std::vector<Piece> script = {
      {CannedHttpServer::sse_head()},
      {CannedHttpServer::event(R"({"text":"a","meta_info":{"completion_tokens":1}})")}};
  for (int i = 0; i < 40; ++i)
    script.push_back({": ping\n\n", 100});
  CannedHttpServer server(script, 5000);
  const auto t0 = std::chrono::steady_clock::now();
  const RequestRecord r = one_request(server, ApiKind::generate, 4, 0.5);
  const double waited = detail::seconds_since(t0);
  EXPECT_EQ(r.error, ErrorKind::timeout_total) << r.error_message;
  EXPECT_NE(r.error_message.find("mid-response"), std::string::npos) << r.error_message;
  EXPECT_LT(waited, 2.0); // the idle timeout (0.5 s), not the 5 s request timeout
}

// What the SSE format allows beyond what servers usually send: a byte-order mark, fields the
// format says to ignore, a "data" line with no colon; and a trailer after a chunked body, which
// does not make the stream something else.
TEST(ClientAnswers, SseThatFollowsTheSpecInLessCommonWaysIsRead) {
  const auto chunk = [](const std::string& bytes) {
    char size[16];
    std::snprintf(size, sizeof size, "%zx\r\n", bytes.size());
    return size + bytes + "\r\n";
  };
  std::string body = "\xEF\xBB\xBF: opened\n\nfoo: bar\n";
  for (int i = 1; i <= 3; ++i)
    body += "data: {\"text\":\"a\",\"meta_info\":{\"completion_tokens\":" + std::to_string(i) +
            "}}\ndata\n\n";
  body += CannedHttpServer::event("[DONE]");
  CannedHttpServer server({{"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                            "Transfer-Encoding: chunked\r\n\r\n"},
                           {chunk(body)},
                           {"0\r\nContent-Type: application/json\r\n\r\n"}});
  const RequestRecord r = one_request(server, ApiKind::generate, 3);
  ASSERT_TRUE(r.ok) << r.error_message;
  EXPECT_EQ(r.output_tokens, 3);
}

// A body that is not text (gzip, a coloured log) shows as plain text in the failure: nothing in
// it acts on the terminal that prints it.
TEST(ClientAnswers, AFailureNeverCarriesControlBytes) {
  CannedHttpServer server(
      {{CannedHttpServer::sse_head()},
       {std::string("\x1f\x8b\x08\x00\x1b[2J\x1b]0;title\x07 binary\0 body\n", 32)}});
  const RequestRecord r = one_request(server, ApiKind::generate);
  EXPECT_EQ(r.error, ErrorKind::malformed) << r.error_message;
  EXPECT_NE(r.error_message.find("not an SSE line"), std::string::npos) << r.error_message;
  for (const std::string* text : {&r.error_message, &r.body_excerpt})
    for (char ch : *text)
      EXPECT_FALSE(static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f) << int(ch);
}

TEST(ClientAnswers, AnEmptyBodySaysSo) {
  CannedHttpServer server({{"HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n"}});
  const RequestRecord r = one_request(server, ApiKind::generate);
  EXPECT_EQ(r.error, ErrorKind::malformed) << r.error_message;
  EXPECT_EQ(r.error_message, "the server answered HTTP 204 with an empty body");
}

// SSE lines may end with "\r" alone, and a "\r\n" may be split across two reads.
TEST(ClientAnswers, LinesEndingInCarriageReturnsAreRead) {
  const auto event = [](int n, const char* end) {
    return "data: {\"text\":\"a\",\"meta_info\":{\"completion_tokens\":" + std::to_string(n) +
           "}}" + end + end;
  };
  CannedHttpServer cr_only(
      {{CannedHttpServer::sse_head()}, {event(1, "\r")}, {event(2, "\r")}, {"data: [DONE]\r\r"}});
  RequestRecord r = one_request(cr_only, ApiKind::generate, 2);
  ASSERT_TRUE(r.ok) << r.error_message;
  EXPECT_EQ(r.output_tokens, 2);
  EXPECT_EQ(r.itls_s.size(), 1u);

  CannedHttpServer split({{CannedHttpServer::sse_head()},
                          {"data: {\"text\":\"a\",\"meta_info\":{\"completion_tokens\":1}}\r"},
                          {"\n\r", 20},
                          {"\n" + event(2, "\r\n"), 20},
                          {"data: [DONE]\r\n\r\n"}});
  r = one_request(split, ApiKind::generate, 2);
  ASSERT_TRUE(r.ok) << r.error_message;
  EXPECT_EQ(r.output_tokens, 2);
  EXPECT_EQ(r.itls_s.size(), 1u);
}

// An error object's own code that is no HTTP status (a gateway's 40001) stays in the message:
// as the record's HTTP status it made the result file unreadable.
TEST(ClientAnswers, AnErrorCodeThatIsNoHttpStatusStaysInTheMessage) {
  CannedHttpServer server(
      {{CannedHttpServer::sse_head()},
       {CannedHttpServer::event(R"({"error":{"message":"quota exceeded","code":40001}})")}});
  const RequestRecord r = one_request(server, ApiKind::completions);
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.http_status, 200);
  EXPECT_NE(r.error_message.find("quota exceeded"), std::string::npos) << r.error_message;
}

// With an idle timeout shorter than the second the client waits after [DONE], a server that
// holds the connection still has its complete answer kept.
TEST(ClientAnswers, AShortIdleTimeoutDoesNotFailAnAnswerThatEnded) {
  CannedHttpServer server(
      {{CannedHttpServer::sse_head()},
       {CannedHttpServer::event(R"({"text":"a","meta_info":{"completion_tokens":1}})")},
       {CannedHttpServer::event(R"({"text":"b","meta_info":{"completion_tokens":2}})")},
       {CannedHttpServer::event("[DONE]")}},
      5000);
  const RequestRecord r = one_request(server, ApiKind::generate, 2, 0.3);
  EXPECT_TRUE(r.ok) << r.error_message;
  EXPECT_EQ(r.output_tokens, 2);
}

// A finish_reason whose "type" is not a string threw inside libcurl's write callback: the
// process aborted, the cell had no record and every later cell was lost, on resume too.
TEST(ClientAnswers, AFinishReasonOfTheWrongTypeFailsOnlyItsRequest) {
  for (const std::string reason : {R"({"type":5})", R"({"type":null})", "7", "[]"}) {
    CannedHttpServer server(
        {{CannedHttpServer::sse_head()},
         {CannedHttpServer::event(R"({"text":"a","meta_info":{"completion_tokens":1}})")},
         {CannedHttpServer::event(R"({"text":"b","meta_info":{"completion_tokens":2,)"
                                  R"("finish_reason":)" +
                                  reason + "}}")},
         {CannedHttpServer::event("[DONE]")}});
    const RequestRecord r = one_request(server, ApiKind::generate, 2);
    EXPECT_EQ(r.error, ErrorKind::malformed) << reason << ": " << r.error_message;
    EXPECT_NE(r.error_message.find("meta_info.finish_reason = " + reason), std::string::npos)
        << r.error_message;
  }
}

// Events that carry text but no count are a token each; a cumulative completion_tokens that
// arrives only in the last event counts the tokens not counted yet, not all of them again (7
// text events and a final count of 8 were 15 tokens, "more than the server reported").
TEST(ClientAnswers, ACountOnlyInTheLastEventCountsWhatWasNotCountedYet) {
  std::vector<Piece> script = {{CannedHttpServer::sse_head()}};
  for (int i = 0; i < 7; ++i)
    script.push_back({CannedHttpServer::event(R"({"text":"a","meta_info":{}})")});
  script.push_back({CannedHttpServer::event(
      R"({"text":"b","meta_info":{"completion_tokens":8,"finish_reason":{"type":"length"}}})")});
  script.push_back({CannedHttpServer::event("[DONE]")});
  CannedHttpServer server(script);
  const RequestRecord r = one_request(server, ApiKind::generate, 8);
  ASSERT_TRUE(r.ok) << r.error_message;
  EXPECT_EQ(r.output_tokens, 8);
  int streamed = 0;
  for (int k : r.chunk_tokens)
    streamed += k;
  EXPECT_EQ(streamed, 8);
  EXPECT_EQ(r.chunk_tokens.size(), 8u);
}

// output_ids holding only the newest ids, with no completion_tokens, were read as cumulative:
// eight tokens counted as one, an ok request at an eighth of its throughput.
TEST(ClientAnswers, IncrementalOutputIdsWithoutACountFailTheRequest) {
  std::vector<std::vector<int>> incremental;
  for (int i = 0; i < 8; ++i)
    incremental.push_back({100 + i});
  CannedHttpServer server(output_ids_stream(incremental, false));
  const RequestRecord r = one_request(server, ApiKind::generate, 8);
  EXPECT_EQ(r.error, ErrorKind::malformed) << r.error_message;
  EXPECT_NE(r.error_message.find("output_ids did not grow (1 ids after 1)"), std::string::npos)
      << r.error_message;

  // Cumulative ids, the final event repeating them all, count as they should.
  CannedHttpServer honest(output_ids_stream(cumulative_ids(4)));
  const RequestRecord ok = one_request(honest, ApiKind::generate, 4);
  ASSERT_TRUE(ok.ok) << ok.error_message;
  EXPECT_EQ(ok.output_tokens, 4);
}

namespace {
std::string http_chunk(const std::string& data) {
  char size[16];
  std::snprintf(size, sizeof size, "%zx\r\n", data.size());
  return size + data + "\r\n";
}
} // namespace

// [DONE] arrived, then the server closed its chunked body without the final chunk: the answer
// is whole and is kept (it was lost as "transfer closed with outstanding read data remaining").
// A Content-Length the body never reached stays a transport error: that is a framing lie.
TEST(ClientAnswers, AnAnswerThatEndedAtDoneSurvivesAnUncleanClose) {
  std::vector<Piece> script = {{"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                                "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n"}};
  for (int i = 1; i <= 3; ++i)
    script.push_back({http_chunk(CannedHttpServer::event(
        R"({"text":"a","meta_info":{"completion_tokens":)" + std::to_string(i) + "}}"))});
  script.push_back({http_chunk(CannedHttpServer::event("[DONE]"))}); // no "0\r\n\r\n" after it
  CannedHttpServer server(script);
  const RequestRecord r = one_request(server, ApiKind::generate, 3);
  ASSERT_TRUE(r.ok) << to_string(r.error) << ": " << r.error_message;
  EXPECT_EQ(r.output_tokens, 3);

  const std::string body =
      CannedHttpServer::event(R"({"text":"a","meta_info":{"completion_tokens":1}})") +
      CannedHttpServer::event("[DONE]");
  CannedHttpServer short_body(
      {{"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: " +
        std::to_string(body.size() + 100) + "\r\nConnection: close\r\n\r\n" + body}});
  const RequestRecord cut = one_request(short_body, ApiKind::generate, 1);
  EXPECT_EQ(cut.error, ErrorKind::transport) << cut.error_message;
}

// Answers no count can be read from say why, in words that name the fix.
TEST(ClientAnswers, CompressedRedirectedOrMislabelledAnswersNameTheCause) {
  CannedHttpServer gzip({{"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                          "Content-Encoding: gzip\r\nConnection: close\r\n\r\n\x1f\x8b\x08"}});
  RequestRecord r = one_request(gzip, ApiKind::generate);
  EXPECT_EQ(r.error, ErrorKind::malformed);
  EXPECT_NE(r.error_message.find("compressed (Content-Encoding: gzip)"), std::string::npos)
      << r.error_message;

  CannedHttpServer moved({{"HTTP/1.1 301 Moved Permanently\r\nLocation: http://10.0.0.9:30000/"
                           "generate\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"}});
  r = one_request(moved, ApiKind::generate);
  EXPECT_EQ(r.error, ErrorKind::http_status);
  EXPECT_NE(r.error_message.find("a redirect to http://10.0.0.9:30000/generate, which specbench "
                                 "does not follow"),
            std::string::npos)
      << r.error_message;

  const std::string sse = CannedHttpServer::event(R"({"text":"a","meta_info":{}})");
  CannedHttpServer unlabelled({{"HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(sse.size()) +
                                "\r\nConnection: close\r\n\r\n" + sse}});
  r = one_request(unlabelled, ApiKind::generate);
  EXPECT_EQ(r.error, ErrorKind::malformed);
  EXPECT_NE(r.error_message.find("Content-Type is not text/event-stream"), std::string::npos)
      << r.error_message;
}

// A line of NUL bytes read "not an SSE line: " and nothing; an event with invalid UTF-8 or a
// number past any double just "not valid JSON". Both now say what the bytes were.
TEST(ClientAnswers, UnreadableEventsSayWhatTheBytesWere) {
  CannedHttpServer nul({{CannedHttpServer::sse_head() + std::string(5, '\0') + "\n\n"}});
  RequestRecord r = one_request(nul, ApiKind::generate);
  EXPECT_EQ(r.error, ErrorKind::malformed);
  EXPECT_NE(r.error_message.find("not an SSE line: 5 bytes of control characters (first: 0x00)"),
            std::string::npos)
      << r.error_message;

  CannedHttpServer bad_utf8(
      {{CannedHttpServer::sse_head() +
        CannedHttpServer::event("{\"text\":\"\xff\",\"meta_info\":{\"completion_tokens\":1}}")}});
  r = one_request(bad_utf8, ApiKind::generate);
  EXPECT_EQ(r.error, ErrorKind::malformed);
  EXPECT_NE(r.error_message.find("UTF-8"), std::string::npos) << r.error_message;

  CannedHttpServer huge(
      {{CannedHttpServer::sse_head() +
        CannedHttpServer::event(R"({"meta_info":{"completion_tokens":1e400}})")}});
  r = one_request(huge, ApiKind::generate);
  EXPECT_EQ(r.error, ErrorKind::malformed);
  EXPECT_NE(r.error_message.find("1e400"), std::string::npos) << r.error_message;
  EXPECT_NE(r.error_message.find("number overflow"), std::string::npos) << r.error_message;
}

// /generate's final event (with its finish_reason) carries every count. A stream held open after
// it without [DONE] lost the whole answer to the request timeout; two seconds on, the final
// event now ends the answer, and the request is timed there.
TEST(ClientAnswers, AGenerateStreamHeldOpenAfterItsFinalEventKeepsTheAnswer) {
  std::vector<Piece> script = {{CannedHttpServer::sse_head()}};
  for (int i = 1; i <= 3; ++i)
    script.push_back({CannedHttpServer::event(
                          R"({"text":"a","meta_info":{"completion_tokens":)" + std::to_string(i) +
                          (i == 3 ? R"(,"finish_reason":{"type":"length"}}})" : "}}")),
                      10});
  CannedHttpServer server(script, 8000); // then silence, no [DONE], for 8 s
  const auto t0 = std::chrono::steady_clock::now();
  const RequestRecord r = one_request(server, ApiKind::generate, 3);
  const double waited = detail::seconds_since(t0);
  ASSERT_TRUE(r.ok) << to_string(r.error) << ": " << r.error_message;
  EXPECT_EQ(r.output_tokens, 3);
  EXPECT_LT(r.e2e_s, 0.5); // at the final event, not when the connection was dropped
  EXPECT_LT(waited, 4.5);  // not the 5 s request timeout
}

// Cumulative output_ids without a count, one event repeated mid-stream: no new token, and no sign
// of incremental ids (the first fix failed this stream as "did not grow").
TEST(ClientAnswers, ARepeatedCumulativeIdsEventAddsNoTokenAndIsNoError) {
  auto lists = cumulative_ids(4);
  const std::vector<int> again = lists[1];
  lists.insert(lists.begin() + 2, again); // {100, 101} twice in a row
  CannedHttpServer server(output_ids_stream(lists));
  const RequestRecord r = one_request(server, ApiKind::generate, 4);
  ASSERT_TRUE(r.ok) << r.error_message;
  EXPECT_EQ(r.output_tokens, 4);
}
