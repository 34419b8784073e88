#include "sim/mini_http.hpp"

#include "core/ascii_lower.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

namespace specbench::sim {
namespace {

constexpr size_t kMaxHeaderBytes = 64 * 1024;
constexpr size_t kMaxBodyBytes = 256u << 20;

std::string trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t'))
    s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return std::string(s);
}

} // namespace

const char* reason_phrase(int status) {
  switch (status) {
  case 200:
    return "OK";
  case 400:
    return "Bad Request";
  case 404:
    return "Not Found";
  case 405:
    return "Method Not Allowed";
  case 413:
    return "Payload Too Large";
  case 500:
    return "Internal Server Error";
  case 503:
    return "Service Unavailable";
  default:
    return "Status";
  }
}

bool HttpConnection::write_all(std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      return false;
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

bool HttpConnection::send(int status, std::string_view content_type, std::string_view body,
                          const std::string& extra_headers, bool keep_alive) {
  std::string head = "HTTP/1.1 " + std::to_string(status) + " " + reason_phrase(status) + "\r\n";
  head += "Content-Type: " + std::string(content_type) + "\r\n";
  head += "Content-Length: " + std::to_string(body.size()) + "\r\n";
  head += keep_alive ? "Connection: keep-alive\r\n" : "Connection: close\r\n";
  head += extra_headers;
  head += "\r\n";
  head.append(body);
  return write_all(head);
}

bool HttpConnection::begin_chunked(int status, std::string_view content_type,
                                   const std::string& extra_headers) {
  std::string head = "HTTP/1.1 " + std::to_string(status) + " " + reason_phrase(status) + "\r\n";
  head += "Content-Type: " + std::string(content_type) + "\r\n";
  head += "Transfer-Encoding: chunked\r\nCache-Control: no-cache\r\n";
  head += extra_headers;
  head += "\r\n";
  return write_all(head);
}

bool HttpConnection::write_chunk(std::string_view data) {
  if (data.empty())
    return true;
  char size[32];
  const int n = std::snprintf(size, sizeof size, "%zx\r\n", data.size());
  std::string out(size, static_cast<size_t>(n));
  out.append(data);
  out += "\r\n";
  return write_all(out);
}

bool HttpConnection::end_chunked() {
  return write_all("0\r\n\r\n");
}

MiniHttpServer::~MiniHttpServer() {
  stop();
}

Status MiniHttpServer::listen(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* res = nullptr;
  const std::string port_s = std::to_string(port);
  if (int rc = ::getaddrinfo(host.c_str(), port_s.c_str(), &hints, &res); rc != 0)
    return Status(StatusCode::invalid_argument,
                  "cannot resolve host '" + host + "': " + ::gai_strerror(rc));
  int fd = -1;
  int err = 0;
  for (addrinfo* a = res; a; a = a->ai_next) {
    fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) {
      err = errno;
      continue;
    }
    int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(fd, a->ai_addr, a->ai_addrlen) == 0 && ::listen(fd, 4096) == 0)
      break;
    err = errno;
    ::close(fd);
    fd = -1;
  }
  ::freeaddrinfo(res);
  if (fd < 0) {
    const std::string what = err == EADDRINUSE ? "address already in use" : std::strerror(err);
    return Status(StatusCode::io_error,
                  "[Errno " + std::to_string(err) +
                      "] error while attempting to bind on address ('" + host + "', " + port_s +
                      "): " + what,
                  "choose another port or stop the process that holds it", "bind");
  }
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len);
  port_ = ss.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port)
                                   : ntohs(reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
  listen_fd_ = fd;
  if (::pipe2(wake_pipe_, O_CLOEXEC) != 0)
    return Status(StatusCode::io_error, std::string("pipe: ") + std::strerror(errno));
  return Status::ok();
}

void MiniHttpServer::serve(Handler handler) {
  handler_ = std::move(handler);
  {
    std::lock_guard lk(mu_);
    accept_running_ = true;
    ++active_threads_;
  }
  std::thread([this] { accept_loop(); }).detach();
}

bool MiniHttpServer::sleep_ms(double ms) {
  std::unique_lock lk(mu_);
  cv_.wait_for(lk, std::chrono::microseconds(static_cast<int64_t>(ms * 1000)),
               [&] { return stopping_.load(); });
  return !stopping_.load();
}

void MiniHttpServer::accept_loop() {
  for (;;) {
    pollfd p[2] = {{listen_fd_, POLLIN, 0}, {wake_pipe_[0], POLLIN, 0}};
    const int rc = ::poll(p, 2, -1);
    if (stopping_.load())
      break;
    if (rc < 0) {
      if (errno == EINTR)
        continue;
      break;
    }
    if (p[1].revents)
      break;
    if (!(p[0].revents & POLLIN)) {
      if (p[0].revents & (POLLERR | POLLHUP | POLLNVAL))
        break;
      continue;
    }
    const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINVAL || errno == EBADF)
        break; // listening socket shut down (cut_all)
      if (errno == EMFILE || errno == ENFILE)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      continue;
    }
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    {
      std::lock_guard lk(mu_);
      if (stopping_.load()) {
        ::close(fd);
        break;
      }
      conns_.insert(fd);
      ++active_threads_;
    }
    try {
      std::thread([this, fd] { connection_loop(fd); }).detach();
    } catch (...) { // out of threads: drop the connection
      std::lock_guard lk(mu_);
      conns_.erase(fd);
      --active_threads_;
      ::close(fd);
    }
  }
  std::lock_guard lk(mu_);
  accept_running_ = false;
  --active_threads_;
  cv_.notify_all();
}

void MiniHttpServer::connection_loop(int fd) {
  HttpConnection conn(fd);
  std::string buf;
  char tmp[16384];
  // Appends what the peer sent next to buf; false when it closed or the socket failed.
  auto recv_more = [&] {
    for (;;) {
      const ssize_t n = ::recv(fd, tmp, sizeof tmp, 0);
      if (n > 0) {
        buf.append(tmp, static_cast<size_t>(n));
        return true;
      }
      if (n < 0 && errno == EINTR)
        continue;
      return false;
    }
  };
  bool keep = true;
  while (keep && !stopping_.load()) {
    // Read the header block.
    size_t header_end;
    while ((header_end = buf.find("\r\n\r\n")) == std::string::npos) {
      if (buf.size() > kMaxHeaderBytes) {
        conn.send(413, "text/plain", "headers too large", {}, false);
        keep = false;
        break;
      }
      if (!recv_more()) {
        keep = false;
        break;
      }
    }
    if (!keep)
      break;
    HttpRequest req;
    std::string_view head(buf.data(), header_end);
    const size_t line_end = head.find("\r\n");
    std::string_view line = head.substr(0, line_end);
    const size_t s1 = line.find(' '), s2 = line.rfind(' ');
    if (s1 == std::string_view::npos || s2 == s1) {
      conn.send(400, "text/plain", "bad request line", {}, false);
      break;
    }
    req.method = std::string(line.substr(0, s1));
    std::string target(line.substr(s1 + 1, s2 - s1 - 1));
    if (auto q = target.find('?'); q != std::string::npos) {
      req.query = target.substr(q + 1);
      target.resize(q);
    }
    req.path = target;
    const bool http10 = line.substr(s2 + 1) == "HTTP/1.0";
    size_t pos = line_end == std::string_view::npos ? head.size() : line_end + 2;
    while (pos < head.size()) {
      size_t e = head.find("\r\n", pos);
      if (e == std::string_view::npos)
        e = head.size();
      std::string_view h = head.substr(pos, e - pos);
      if (auto c = h.find(':'); c != std::string_view::npos)
        req.headers[detail::ascii_lower(std::string(h.substr(0, c)))] = trim(h.substr(c + 1));
      pos = e + 2;
    }
    buf.erase(0, header_end + 4);
    size_t content_length = 0;
    if (auto it = req.headers.find("content-length"); it != req.headers.end()) {
      // Digits only (RFC 9110). std::stoull took "-1" as 2^64 - 1, "12abc" as 12 and "+5".
      const std::string& v = it->second;
      if (v.empty() || v.find_first_not_of("0123456789") != std::string::npos) {
        conn.send(400, "text/plain", "bad Content-Length: " + v.substr(0, 40), {}, false);
        break;
      }
      content_length = v.size() > 18 ? kMaxBodyBytes + 1 : std::stoull(v);
    }
    if (content_length > kMaxBodyBytes) {
      conn.send(413, "text/plain", "body too large", {}, false);
      break;
    }
    while (buf.size() < content_length) {
      if (!recv_more()) {
        keep = false;
        break;
      }
    }
    if (!keep)
      break;
    req.body = buf.substr(0, content_length);
    buf.erase(0, content_length);
    auto conn_hdr = req.headers.find("connection");
    req.keep_alive =
        conn_hdr == req.headers.end() ? !http10 : detail::ascii_lower(conn_hdr->second) != "close";
    keep = handler_(req, conn) && req.keep_alive;
  }
  std::lock_guard lk(mu_);
  if (conns_.erase(fd))
    ::close(fd);
  --active_threads_;
  cv_.notify_all();
}

void MiniHttpServer::cut_all() {
  std::lock_guard lk(mu_);
  for (int fd : conns_) {
    // RST instead of FIN: what a client sees when the server process dies abruptly.
    linger lg{1, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
    ::shutdown(fd, SHUT_RDWR);
  }
  if (listen_fd_ >= 0)
    ::shutdown(listen_fd_, SHUT_RDWR);
}

void MiniHttpServer::stop() {
  {
    std::lock_guard lk(mu_);
    if (stopping_.exchange(true) && listen_fd_ < 0)
      return;
    for (int fd : conns_)
      ::shutdown(fd, SHUT_RDWR);
    cv_.notify_all();
  }
  if (wake_pipe_[1] >= 0) {
    const char c = 'x';
    [[maybe_unused]] ssize_t w = ::write(wake_pipe_[1], &c, 1);
  }
  {
    std::unique_lock lk(mu_);
    cv_.wait(lk, [&] {
      for (int fd : conns_)
        ::shutdown(fd, SHUT_RDWR);
      return active_threads_ == 0;
    });
  }
  if (listen_fd_ >= 0)
    ::close(listen_fd_);
  listen_fd_ = -1;
  for (int& p : wake_pipe_)
    if (p >= 0) {
      ::close(p);
      p = -1;
    }
}

} // namespace specbench::sim
