// The results directory: atomic writes, loading, moving stale results aside.
#include "specbench/results.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <fstream>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>

namespace specbench {

namespace fs = std::filesystem;

namespace {

Status errno_status(const std::string& what, const fs::path& path, int err) {
  return Status(StatusCode::io_error, what + " " + path.string() + ": " + std::strerror(err),
                "check that the results directory is writable and the disk is not full",
                "write_file_atomic");
}

// Temp files are "<name>.tmp.<pid>" in the target's directory: same filesystem, so rename is
// atomic; a killed writer leaves one behind, which ResultStore::open removes. Only that exact
// shape, for the kinds of file specbench writes, is one: a workload named "chat.tmp.v2" or a
// user's "paper.tmp.v3.tex" in a --results folder is not ours to delete.
bool is_temp_name(const std::string& name) {
  const size_t at = name.rfind(".tmp.");
  if (at == std::string::npos || at + 5 == name.size() || name.size() - at > 5 + 9 ||
      name.find_first_not_of("0123456789", at + 5) != std::string::npos)
    return false;
  const std::string base = name.substr(0, at);
  for (const char* ext : {".json", ".md", ".csv", ".svg"})
    if (base.size() > std::strlen(ext) &&
        base.compare(base.size() - std::strlen(ext), std::string::npos, ext) == 0)
      return true;
  return false;
}

std::optional<std::string> read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in)
    return std::nullopt;
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string compact_utc_stamp() {
  const auto now = std::chrono::system_clock::now();
  const std::time_t t = std::chrono::system_clock::to_time_t(now);
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%dT%H%M%SZ", &tm);
  return buf;
}

} // namespace

Status write_file_atomic(const fs::path& path, const std::string& text) {
  const fs::path dir = path.parent_path().empty() ? fs::path(".") : path.parent_path();
  const fs::path tmp = dir / (path.filename().string() + ".tmp." + std::to_string(::getpid()));
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    return errno_status("cannot create", tmp, errno);
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      const int err = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      return errno_status("cannot write", tmp, err);
    }
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0) {
    const int err = errno;
    ::close(fd);
    ::unlink(tmp.c_str());
    return errno_status("cannot fsync", tmp, err);
  }
  ::close(fd);
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    return errno_status("cannot rename into place", path, err);
  }
  // Make the rename itself durable.
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
  return Status::ok();
}

std::string utc_now_iso8601() {
  const auto now = std::chrono::system_clock::now();
  const std::time_t t = std::chrono::system_clock::to_time_t(now);
  const auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  char buf[40];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  char out[48];
  std::snprintf(out, sizeof out, "%s.%03dZ", buf, static_cast<int>(ms));
  return out;
}

std::string stale_batch_name(const fs::path& results_dir, const std::string& why) {
  // The counter goes before `why`: a batch is found by its "-<why>" ending (index_kept_attempts),
  // and a second batch of the same second must be found too.
  const std::string stamp = compact_utc_stamp();
  std::string name = stamp + "-" + why;
  std::error_code ec;
  for (int i = 2; fs::exists(results_dir / "stale" / name, ec); ++i)
    name = stamp + "-" + std::to_string(i) + "-" + why;
  return name;
}

Expected<ResultStore> ResultStore::open(const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir / "cells", ec);
  if (ec)
    return Status(StatusCode::io_error,
                  "cannot create results directory " + (dir / "cells").string() + ": " +
                      ec.message(),
                  "choose a writable --results directory", "ResultStore::open");
  fs::create_directories(dir / "logs", ec);
  for (const auto& sub : {dir, dir / "cells", dir / "report"}) {
    for (auto it = fs::directory_iterator(sub, ec); !ec && it != fs::directory_iterator();
         it.increment(ec)) {
      const std::string name = it->path().filename().string();
      if (!it->is_regular_file() || !is_temp_name(name))
        continue;
      // The run opens the directory under its lock, so no other run writes the top folder or
      // cells/. report/ is written by `specbench report` too, which takes no lock: there a temp
      // file whose writer (the pid in its name) still runs is mid-write, not left by a kill.
      if (sub == dir / "report") {
        const pid_t writer = static_cast<pid_t>(std::stol(name.substr(name.rfind('.') + 1)));
        if (writer > 0 && writer != ::getpid() && (::kill(writer, 0) == 0 || errno == EPERM))
          continue;
      }
      fs::remove(it->path(), ec);
    }
  }
  return ResultStore(dir);
}

Expected<ResultStore> ResultStore::open_to_read(const fs::path& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    return Status(StatusCode::not_found,
                  fs::exists(dir, ec) ? dir.string() + " is a file, not a results directory"
                                      : "no results directory " + dir.string(),
                  "pass the directory given to `specbench run --results`",
                  "ResultStore::open_to_read");
  return ResultStore(dir);
}

fs::path ResultStore::cell_path(const std::string& cell_id) const {
  return dir_ / "cells" / (cell_id + ".json");
}
fs::path ResultStore::log_path(const std::string& cell_id) const {
  return dir_ / "logs" / (cell_id + ".log");
}
fs::path ResultStore::manifest_path() const {
  return dir_ / "manifest.json";
}

Expected<CellResult> ResultStore::load(const std::string& cell_id) const {
  const auto path = cell_path(cell_id);
  std::error_code ec;
  if (!fs::exists(path, ec))
    return Status(StatusCode::not_found, "no result for cell " + cell_id, "", path.string());
  const auto text = read_text(path);
  if (!text)
    return Status(StatusCode::io_error, "cannot read " + path.string(), "", "ResultStore::load");
  auto r = cell_result_from_json(*text);
  if (!r)
    return Status(r.status().code(), r.status().message(), r.status().remedy(), path.string());
  return r;
}

std::vector<std::string> ResultStore::stored_ids() const {
  std::vector<std::string> ids;
  std::error_code ec;
  for (auto it = fs::directory_iterator(dir_ / "cells", ec); !ec && it != fs::directory_iterator();
       it.increment(ec)) {
    const auto name = it->path().filename().string();
    if (!it->is_regular_file() || is_temp_name(name) || it->path().extension() != ".json")
      continue;
    ids.push_back(it->path().stem().string());
  }
  std::sort(ids.begin(), ids.end());
  return ids;
}

std::vector<CellResult> ResultStore::load_all(std::vector<std::string>* problems) const {
  std::vector<CellResult> out;
  for (const auto& id : stored_ids()) {
    auto r = load(id);
    if (!r) {
      if (problems)
        problems->push_back(r.status().to_string());
    } else if (r->cell_id != id) {
      // A copy or a backup (cells/X.old.json), or a renamed file: taken in, it would stand for
      // its cell beside the real result, or instead of it.
      if (problems)
        problems->push_back((dir_ / "cells" / (id + ".json")).string() +
                            " holds the result of cell " + r->cell_id + ", not of " + id +
                            "; left out (a copy or a renamed file: move it out of cells/)");
    } else if (const Status consistent = check_cell_result(*r); !consistent) {
      // Numbers its own requests do not give: edited or damaged after the run.
      if (problems)
        problems->push_back((dir_ / "cells" / (id + ".json")).string() + ": " +
                            consistent.message() + "; left out (" + consistent.remedy() + ")");
    } else {
      out.push_back(std::move(*r));
    }
  }
  return out;
}

Status ResultStore::commit(const CellResult& result) const {
  if (result.cell_id.empty() || result.cell_id.find('/') != std::string::npos)
    return Status(StatusCode::invalid_argument, "bad cell id '" + result.cell_id + "'", "",
                  "ResultStore::commit");
  return write_file_atomic(cell_path(result.cell_id), to_json(result));
}

Expected<fs::path> ResultStore::move_aside(const std::string& cell_id,
                                           const std::string& batch) const {
  const fs::path target_dir = dir_ / "stale" / batch;
  std::error_code ec;
  fs::create_directories(target_dir / "cells", ec);
  if (ec)
    return Status(StatusCode::io_error,
                  "cannot create " + target_dir.string() + ": " + ec.message(), "",
                  "ResultStore::move_aside");
  const fs::path target = target_dir / "cells" / (cell_id + ".json");
  fs::rename(cell_path(cell_id), target, ec);
  if (ec)
    return Status(StatusCode::io_error,
                  "cannot move " + cell_path(cell_id).string() + " aside: " + ec.message(), "",
                  "ResultStore::move_aside");
  // The result is what must not be mixed with fresh ones; a log left behind is only a log.
  if (fs::exists(log_path(cell_id), ec))
    (void)move_log_aside(cell_id, batch);
  return target;
}

Expected<fs::path> ResultStore::move_log_aside(const std::string& cell_id,
                                               const std::string& batch) const {
  const fs::path target_dir = dir_ / "stale" / batch / "logs";
  std::error_code ec;
  fs::create_directories(target_dir, ec);
  if (ec)
    return Status(StatusCode::io_error,
                  "cannot create " + target_dir.string() + ": " + ec.message(), "",
                  "ResultStore::move_log_aside");
  const fs::path target = target_dir / (cell_id + ".log");
  fs::rename(log_path(cell_id), target, ec);
  if (ec)
    return Status(StatusCode::io_error,
                  "cannot move " + log_path(cell_id).string() + " aside: " + ec.message(), "",
                  "ResultStore::move_log_aside");
  return target;
}

ResultStore::KeptAttempts ResultStore::index_kept_attempts(const std::string& why) const {
  KeptAttempts index;
  std::error_code ec;
  const std::string suffix = "-" + why;
  for (auto it = fs::directory_iterator(dir_ / "stale", ec); !ec && it != fs::directory_iterator();
       it.increment(ec)) {
    const std::string batch = it->path().filename().string();
    if (batch.size() <= suffix.size() || !batch.ends_with(suffix))
      continue;
    std::error_code cec;
    for (auto f = fs::directory_iterator(it->path() / "cells", cec);
         !cec && f != fs::directory_iterator(); f.increment(cec)) {
      const std::string name = f->path().filename().string();
      if (name.size() > 5 && name.ends_with(".json"))
        index.files_[name.substr(0, name.size() - 5)].push_back(f->path());
    }
  }
  return index;
}

std::optional<ResultStore::KeptAttempt>
ResultStore::KeptAttempts::latest(const std::string& cell_id,
                                  const std::string& config_hash) const {
  const auto files = files_.find(cell_id);
  if (files == files_.end())
    return std::nullopt;
  std::optional<KeptAttempt> best;
  for (const fs::path& p : files->second) {
    std::error_code ec;
    if (!fs::is_regular_file(p, ec))
      continue;
    const auto text = read_text(p);
    auto r = text ? cell_result_from_json(*text) : Expected<CellResult>(Status());
    if (!text || !r || r->config_hash != config_hash)
      continue;
    if (!best || r->attempt > best->result.attempt)
      best = KeptAttempt{std::move(*r), p};
  }
  return best;
}

std::optional<ResultStore::KeptAttempt>
ResultStore::latest_kept_attempt(const std::string& cell_id, const std::string& config_hash,
                                 const std::string& why) const {
  return index_kept_attempts(why).latest(cell_id, config_hash);
}

Expected<Manifest> ResultStore::load_manifest() const {
  std::error_code ec;
  if (!fs::exists(manifest_path(), ec))
    return Status(StatusCode::not_found, "no manifest in " + dir_.string(), "",
                  "ResultStore::load_manifest");
  const auto text = read_text(manifest_path());
  if (!text)
    return Status(StatusCode::io_error, "cannot read " + manifest_path().string(), "",
                  "ResultStore::load_manifest");
  return manifest_from_json(*text);
}

Status ResultStore::write_manifest(const Manifest& manifest) const {
  return write_file_atomic(manifest_path(), to_json(manifest));
}

} // namespace specbench
