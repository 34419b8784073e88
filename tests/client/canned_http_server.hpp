#pragma once
// A loopback HTTP server that answers every request with the same scripted bytes, written in
// pieces with pauses between them, then holds the connection open for a while before closing
// it. For client tests of answers the simulated server never gives: string counts, reasoning
// deltas, keep-alive comments, a body that does not end after [DONE].
#include <atomic>
#include <string>
#include <thread>
#include <vector>

namespace specbench::testing {

class CannedHttpServer {
public:
  struct Piece {
    std::string bytes;
    int pause_ms_before = 0;
  };
  /// Serves `script` to every connection, one connection at a time; after the last piece the
  /// connection stays open `hold_open_ms` (or until the server stops) and is then closed.
  explicit CannedHttpServer(std::vector<Piece> script, int hold_open_ms = 0);
  ~CannedHttpServer();
  CannedHttpServer(const CannedHttpServer&) = delete;
  CannedHttpServer& operator=(const CannedHttpServer&) = delete;

  /// "http://127.0.0.1:PORT".
  std::string url() const;

  /// The head of a streamed answer (SSE, no length: the body ends when the connection closes).
  static std::string sse_head();
  /// One SSE event carrying `json`.
  static std::string event(const std::string& json);

private:
  void serve();
  void answer(int fd);

  std::vector<Piece> script_;
  int hold_open_ms_ = 0;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

} // namespace specbench::testing
