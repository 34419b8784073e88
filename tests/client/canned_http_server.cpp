#include "canned_http_server.hpp"

#include <arpa/inet.h>
#include <chrono>
#include <netinet/in.h>
#include <poll.h>
#include <stdexcept>
#include <sys/socket.h>
#include <unistd.h>

namespace specbench::testing {
namespace {

bool wait_readable(int fd, int ms) {
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, ms) > 0;
}

} // namespace

CannedHttpServer::CannedHttpServer(std::vector<Piece> script, int hold_open_ms)
    : script_(std::move(script)), hold_open_ms_(hold_open_ms) {
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (listen_fd_ < 0 || ::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), len) != 0 ||
      ::listen(listen_fd_, 16) != 0 ||
      ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0)
    throw std::runtime_error("CannedHttpServer: cannot listen on loopback");
  port_ = ntohs(addr.sin_port);
  thread_ = std::thread([this] { serve(); });
}

CannedHttpServer::~CannedHttpServer() {
  stop_ = true;
  thread_.join();
  ::close(listen_fd_);
}

std::string CannedHttpServer::url() const {
  return "http://127.0.0.1:" + std::to_string(port_);
}

std::string CannedHttpServer::sse_head() {
  return "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n";
}

std::string CannedHttpServer::event(const std::string& json) {
  return "data: " + json + "\n\n";
}

void CannedHttpServer::serve() {
  while (!stop_) {
    if (!wait_readable(listen_fd_, 20))
      continue;
    const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0)
      continue;
    answer(fd);
    ::close(fd);
  }
}

void CannedHttpServer::answer(int fd) {
  // The request: headers, then Content-Length bytes of body (read and dropped).
  std::string in;
  char buf[4096];
  size_t body_end = std::string::npos;
  while (!stop_ && body_end == std::string::npos) {
    if (!wait_readable(fd, 20))
      continue;
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0)
      return;
    in.append(buf, static_cast<size_t>(n));
    const size_t head_end = in.find("\r\n\r\n");
    if (head_end == std::string::npos)
      continue;
    size_t length = 0;
    for (const char* key : {"Content-Length: ", "content-length: "})
      if (const size_t at = in.find(key); at != std::string::npos && at < head_end)
        length = std::stoul(in.substr(at + std::char_traits<char>::length(key)));
    if (in.size() >= head_end + 4 + length)
      body_end = head_end + 4 + length;
  }
  for (const auto& piece : script_) {
    const auto until =
        std::chrono::steady_clock::now() + std::chrono::milliseconds(piece.pause_ms_before);
    while (!stop_ && std::chrono::steady_clock::now() < until)
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    if (stop_ || ::send(fd, piece.bytes.data(), piece.bytes.size(), MSG_NOSIGNAL) < 0)
      return;
  }
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(hold_open_ms_);
  while (!stop_ && std::chrono::steady_clock::now() < until) {
    if (wait_readable(fd, 10) && ::recv(fd, buf, sizeof buf, MSG_DONTWAIT) == 0)
      return; // the client closed its end
  }
}

} // namespace specbench::testing
