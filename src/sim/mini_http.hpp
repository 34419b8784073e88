#pragma once
// A deliberately small HTTP/1.1 server for the simulated inference server: POSIX sockets, a thread
// per connection, keep-alive, Content-Length request bodies, chunked responses for streaming.
// Internal to src/sim; not a general web server (no TLS, no pipelining, no chunked uploads).

#include "specbench/status.hpp"

#include <atomic>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <string_view>

namespace specbench::sim {

struct HttpRequest {
  std::string method;
  std::string path; // without the query string
  std::string query;
  std::map<std::string, std::string> headers; // lower-case names
  std::string body;
  bool keep_alive = true;
};

// One accepted connection. Writes never raise SIGPIPE; a failed write returns false.
class HttpConnection {
public:
  explicit HttpConnection(int fd) : fd_(fd) {}
  int fd() const { return fd_; }
  bool write_all(std::string_view data);
  // A complete response with Content-Length.
  bool send(int status, std::string_view content_type, std::string_view body,
            const std::string& extra_headers = {}, bool keep_alive = true);
  // Streaming: headers with Transfer-Encoding: chunked, then chunks, then the terminator.
  bool begin_chunked(int status, std::string_view content_type,
                     const std::string& extra_headers = {});
  bool write_chunk(std::string_view data);
  bool end_chunked();

private:
  int fd_;
};

const char* reason_phrase(int status);

class MiniHttpServer {
public:
  // Returns false when the connection must be closed after this request.
  using Handler = std::function<bool(const HttpRequest&, HttpConnection&)>;

  ~MiniHttpServer();
  // Binds and listens; the error message contains "address already in use" for EADDRINUSE.
  Status listen(const std::string& host, int port);
  int port() const { return port_; }
  // Starts the accept thread.
  void serve(Handler handler);
  // Stops accepting, shuts every connection down and waits for their threads.
  void stop();
  // Cuts every connection and the listening socket at once, like a dying process (no join).
  void cut_all();
  // Shared stop flag connection handlers may wait on (e.g. a hang fault).
  bool stopping() const { return stopping_.load(); }
  // Sleeps up to `ms`, waking early on stop(); returns false when stopping.
  bool sleep_ms(double ms);

private:
  void accept_loop();
  void connection_loop(int fd);

  int listen_fd_ = -1;
  int wake_pipe_[2] = {-1, -1};
  int port_ = 0;
  Handler handler_;
  std::atomic<bool> stopping_{false};
  std::mutex mu_;
  std::condition_variable cv_;
  std::set<int> conns_;
  int active_threads_ = 0;
  bool accept_running_ = false;
};

} // namespace specbench::sim
