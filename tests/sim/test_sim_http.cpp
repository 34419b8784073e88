// The simulated server's HTTP layer refuses a malformed Content-Length instead of reading it as
// the number it starts with.
#include "sim/mini_http.hpp"

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <string>

using specbench::sim::HttpConnection;
using specbench::sim::HttpRequest;
using specbench::sim::MiniHttpServer;

namespace {

// Sends `request` to 127.0.0.1:port and returns everything the server wrote before it closed the
// connection (or 5 s passed).
std::string round_trip(int port, const std::string& request) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  EXPECT_GE(fd, 0);
  timeval tv{5, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  EXPECT_EQ(::send(fd, request.data(), request.size(), MSG_NOSIGNAL),
            static_cast<ssize_t>(request.size()));
  ::shutdown(fd, SHUT_WR);
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = ::recv(fd, buf, sizeof buf, 0)) > 0;)
    out.append(buf, static_cast<size_t>(n));
  ::close(fd);
  return out;
}

// A server whose handler answers with the length of the body it was given.
struct BodyLengthServer {
  MiniHttpServer server;
  BodyLengthServer() {
    EXPECT_TRUE(server.listen("127.0.0.1", 0).ok());
    server.serve([](const HttpRequest& req, HttpConnection& conn) {
      conn.send(200, "text/plain", "body " + std::to_string(req.body.size()), {}, false);
      return false;
    });
  }
  ~BodyLengthServer() { server.stop(); }
};

std::string post(int port, const std::string& length, const std::string& body) {
  return round_trip(port, "POST /generate HTTP/1.1\r\nHost: x\r\nContent-Length: " + length +
                              "\r\n\r\n" + body);
}

} // namespace

TEST(SimHttp, AWellFormedContentLengthReadsTheBody) {
  BodyLengthServer s;
  const std::string r = post(s.server.port(), "5", "hello");
  EXPECT_EQ(r.rfind("HTTP/1.1 200", 0), 0u) << r;
  EXPECT_NE(r.find("body 5"), std::string::npos) << r;
}

TEST(SimHttp, AContentLengthThatIsNotDigitsIsABadRequest) {
  BodyLengthServer s;
  // stoull read "-1" as 2^64 - 1 (413, body too large), "3abc" as 3 and "+3" as 3 (200).
  for (const char* length : {"-1", "3abc", "+3", "0x3", "3 3", "", "three"}) {
    const std::string r = post(s.server.port(), length, "abc");
    EXPECT_EQ(r.rfind("HTTP/1.1 400", 0), 0u) << "Content-Length: " << length << "\n" << r;
    EXPECT_NE(r.find("bad Content-Length"), std::string::npos) << r;
  }
}

TEST(SimHttp, AContentLengthTooLargeForAnyBodyIsRefusedUnread) {
  BodyLengthServer s;
  for (const char* length : {"999999999999", "99999999999999999999999999"}) {
    const std::string r = post(s.server.port(), length, "abc");
    EXPECT_EQ(r.rfind("HTTP/1.1 413", 0), 0u) << "Content-Length: " << length << "\n" << r;
  }
}
