// Model layer: the model directory, config.json (architecture, context length, attention heads
// against tp), the tokenizer, the weights (safetensors shards checked against their own headers
// as the safetensors library checks them, and against the index; PyTorch .bin files for
// presence and size), and whether the weights fit in the free memory of the TP group. A model
// kept in /dev/shm that a reboot emptied, or that a copy left incomplete, gets its own diagnosis.
// The drafter of the speculative cells, when the plan names one, gets the same folder, config and
// weight checks, and must fit beside the target.
#include "preflight/layers.hpp"
#include "preflight/model_files.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <sys/statvfs.h>
#include <tuple>
#include <unistd.h>
#include <vector>

namespace specbench::preflight {
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using nlohmann::json;

namespace {

// More than any config.json or index a real model has (a 1T-parameter model's index is a few
// MB): a bigger one is damage, and is not read into memory.
constexpr std::uintmax_t kJsonFileCap = std::uintmax_t{64} << 20;

std::string gib(double bytes) {
  char b[32];
  std::snprintf(b, sizeof b, "%.2f GiB", bytes / (1024.0 * 1024.0 * 1024.0));
  return b;
}

// Filesystem type of the mount holding `p`, from /proc/mounts (longest matching mount point).
std::string fs_type(Run& run, const std::string& p) {
  std::ifstream in(run.path("/proc/mounts"));
  std::string dev, mnt, type, best_type;
  size_t best = 0;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    if (!(ls >> dev >> mnt >> type))
      continue;
    if (p.rfind(mnt, 0) == 0 && mnt.size() >= best &&
        (p.size() == mnt.size() || mnt == "/" || p[mnt.size()] == '/')) {
      best = mnt.size();
      best_type = type;
    }
  }
  return best_type;
}

double uptime_s(Run& run) {
  std::ifstream in(run.path("/proc/uptime"));
  double up = -1;
  in >> up;
  return in ? up : -1;
}

// `p` (absolute) with each symbolic link on the way replaced by where it points, relative
// targets from the link's folder, dangling links too (what they point at may be gone); at most
// 40 links, as the kernel allows.
fs::path follow_links(const fs::path& p) {
  std::deque<fs::path> rest(p.begin(), p.end());
  fs::path done = "/";
  int hops = 0;
  while (!rest.empty()) {
    const fs::path part = rest.front();
    rest.pop_front();
    if (part.empty() || part == "/" || part == ".")
      continue;
    if (part == "..") {
      done = done.parent_path();
      continue;
    }
    const fs::path next = done / part;
    std::error_code ec;
    if (hops < 40 && fs::is_symlink(fs::symlink_status(next, ec))) {
      const fs::path target = fs::read_symlink(next, ec);
      if (!ec) {
        ++hops;
        if (target.is_absolute())
          done = "/";
        rest.insert(rest.begin(), target.begin(), target.end());
        continue;
      }
    }
    done = next;
  }
  return done;
}

std::string since(double s) {
  if (s < 0)
    return "an unknown time";
  if (s < 3600)
    return std::to_string(static_cast<int>(s / 60)) + " min";
  if (s < 172800)
    return std::to_string(static_cast<int>(s / 3600)) + " h";
  return std::to_string(static_cast<int>(s / 86400)) + " days";
}

// The first `max` bytes of `s`, not cutting a UTF-8 character in two (a report is JSON).
std::string cut(const std::string& s, size_t max = 80) {
  if (s.size() <= max)
    return s;
  while (max > 0 && (static_cast<unsigned char>(s[max]) & 0xC0) == 0x80)
    --max;
  return s.substr(0, max) + "...";
}

// Bits per element of a safetensors dtype; 0 for a name the format does not have.
unsigned dtype_bits(const std::string& d) {
  static const std::pair<const char*, unsigned> known[] = {
      {"BOOL", 8},    {"U8", 8},   {"I8", 8},      {"F8_E5M2", 8}, {"F8_E4M3", 8},
      {"F8_E8M0", 8}, {"F4", 4},   {"F6_E2M3", 6}, {"F6_E3M2", 6}, {"I16", 16},
      {"U16", 16},    {"F16", 16}, {"BF16", 16},   {"I32", 32},    {"U32", 32},
      {"F32", 32},    {"F64", 64}, {"I64", 64},    {"U64", 64}};
  for (const auto& [name, bits] : known)
    if (d == name)
      return bits;
  return 0;
}

// The safetensors library refuses larger headers.
constexpr uint64_t kMaxHeaderBytes = 100'000'000;

// What stops a weight file from being read, or "". A pipe or device is refused unopened (its
// "size" is not one); `size` is set only once known, since file_size answers (uintmax_t)-1 on
// failure, which was once added to bytes_on_disk.
std::string readable_weight_file(const fs::path& p, uintmax_t& size) {
  if (std::string why = file_problem(p, "weight file"); !why.empty())
    return why;
  std::error_code ec;
  const uintmax_t known = fs::file_size(p, ec);
  if (ec)
    return open_failure(ec);
  size = known; // on disk whether or not it may be read
  if (::access(p.c_str(), R_OK) != 0)
    return open_failure(std::error_code(errno, std::generic_category()));
  return {};
}

// Checks one .safetensors file as the safetensors library does before a server can load it: an
// 8-byte little-endian header length (at most 100,000,000), a JSON object header starting with
// '{', every entry a tensor {dtype, shape, data_offsets} (or "__metadata__", strings only), the
// tensors' byte ranges covering the data contiguously from 0, each range exactly
// product(shape) x dtype size, and the file ending where the last tensor ends. Returns "" when
// all holds. `names` receives the tensors' names.
std::string check_safetensors(const fs::path& p, uintmax_t& size_out,
                              std::set<std::string>& names) {
  uintmax_t size = 0;
  const std::string unreadable = readable_weight_file(p, size);
  size_out = size;
  if (!unreadable.empty())
    return unreadable;
  // Read through RegularFile: a shard swapped for a FIFO since readable_weight_file looked is
  // refused, not waited on.
  RegularFile in(p);
  if (!in.why().empty())
    return in.why();
  const auto read_at = [&](uint64_t offset, char* to, size_t len) {
    return in.read_at(offset, to, len) == len;
  };
  unsigned char len_bytes[8] = {};
  if (size < 8 || !read_at(0, reinterpret_cast<char*>(len_bytes), 8))
    return "shorter than 8 bytes";
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i)
    n = (n << 8) | len_bytes[i];
  if (n == 0 || n > size - 8)
    return "corrupt header length (" + std::to_string(n) + " bytes, in a file of " +
           std::to_string(size) + ")";
  if (n > kMaxHeaderBytes)
    return "corrupt header length (" + std::to_string(n) +
           " bytes, more than the 100000000 the safetensors library accepts)";
  // One byte first: a damaged length over anything but a header would otherwise have us read
  // up to 100 MB of it per shard before finding out.
  std::string header(static_cast<size_t>(n), '\0');
  if (!read_at(8, header.data(), 1))
    return "header cut short";
  if (header[0] != '{')
    return "header does not start with '{' (not a safetensors file, or damaged)";
  if (!read_at(9, header.data() + 1, static_cast<size_t>(n - 1)))
    return "header cut short";
  const json h = json::parse(header, nullptr, false);
  if (h.is_discarded() || !h.is_object())
    return "header is not JSON";
  struct Tensor {
    uint64_t begin, end;
    uint64_t bits; // product(shape) x bits per element, UINT64_MAX when larger
    std::string name, dtype, shape;
  };
  std::vector<Tensor> tensors;
  uint64_t end = 0;
  for (auto& [k, v] : h.items()) {
    const std::string name = "tensor \"" + cut(k) + "\"";
    if (k == "__metadata__") {
      if (!v.is_object())
        return "corrupt header: __metadata__ is " + cut(v.dump(), 40) +
               ", not an object of strings";
      for (auto& [mk, mv] : v.items())
        if (!mv.is_string())
          return "corrupt header: __metadata__ \"" + cut(mk) + "\" is " + cut(mv.dump(), 40) +
                 ", not a string (the safetensors library accepts strings only)";
      continue;
    }
    if (!v.is_object())
      return "corrupt header: " + name + " is " + cut(v.dump(), 40) +
             ", not an object with dtype, shape and data_offsets";
    if (!v.contains("data_offsets"))
      return "corrupt header: " + name + " has no data_offsets";
    // A damaged header can hold anything here; reading it as numbers regardless threw (a string)
    // or was undefined (a huge float).
    const auto& off = v["data_offsets"];
    if (!off.is_array() || off.size() != 2 || !off[0].is_number_unsigned() ||
        !off[1].is_number_unsigned() || off[0].get<uint64_t>() > off[1].get<uint64_t>())
      return "corrupt header: " + name + " has data_offsets " + cut(off.dump()) +
             ", not two whole numbers [begin, end]";
    const json dtype = v.value("dtype", json());
    const unsigned bits = dtype.is_string() ? dtype_bits(dtype.get<std::string>()) : 0;
    if (bits == 0)
      return "corrupt header: " + name + " has dtype " + cut(dtype.dump(), 40) +
             ", which is not a safetensors dtype (BF16, F16, F32, I64, F8_E4M3, ...)";
    const json shape = v.value("shape", json());
    if (!shape.is_array() || !std::all_of(shape.begin(), shape.end(),
                                          [](const json& d) { return d.is_number_unsigned(); }))
      return "corrupt header: " + name + " has shape " + cut(shape.dump(), 40) +
             ", not a list of whole numbers";
    // Saturates at UINT64_MAX bits (2^61 bytes, far above any file), so it cannot wrap.
    uint64_t total = bits;
    for (const json& d : shape) {
      const uint64_t dim = d.get<uint64_t>();
      if (dim == 0) {
        total = 0;
        break;
      }
      if (__builtin_mul_overflow(total, dim, &total))
        total = UINT64_MAX;
    }
    names.insert(k);
    tensors.push_back({off[0].get<uint64_t>(), off[1].get<uint64_t>(), total, cut(k),
                       dtype.get<std::string>(), shape.dump()});
    end = std::max<uint64_t>(end, off[1].get<uint64_t>());
  }
  const uint64_t data = size - 8 - n;
  if (end > data)
    return "size " + std::to_string(size) + " bytes, its header says the data end at byte " +
           std::to_string(end) + " past the header (truncated or incomplete download)";
  // The library sorts the tensors by offsets and requires each to start where the previous
  // ended, from 0: a gap or an overlap is a header it refuses.
  std::sort(tensors.begin(), tensors.end(), [](const Tensor& a, const Tensor& b) {
    return std::tie(a.begin, a.end) < std::tie(b.begin, b.end);
  });
  uint64_t at = 0;
  const Tensor* prev = nullptr;
  for (const Tensor& t : tensors) {
    if (t.begin < at)
      return "corrupt header: tensors \"" + prev->name + "\" and \"" + t.name +
             "\" overlap (data bytes " + std::to_string(t.begin) + " to " + std::to_string(at) +
             ")";
    if (t.begin > at)
      return "corrupt header: data bytes " + std::to_string(at) + " to " + std::to_string(t.begin) +
             " belong to no tensor (a gap before tensor \"" + t.name + "\")";
    at = t.end;
    prev = &t;
  }
  const uint64_t expected = 8 + n + end;
  if (expected != size)
    return "size " + std::to_string(size) + " bytes, its header says " + std::to_string(expected) +
           " (truncated or incomplete download)";
  for (const Tensor& t : tensors)
    if (t.bits == UINT64_MAX || t.bits % 8 != 0 || t.bits / 8 != t.end - t.begin)
      return "corrupt header: tensor \"" + t.name + "\" is " + t.dtype + " " + cut(t.shape, 40) +
             ", which does not fill its data_offsets' " + std::to_string(t.end - t.begin) +
             " bytes";
  return {};
}

// Checks one PyTorch .bin weight file (a pickle, not parsed here): a regular, readable, non-empty
// file. Returns "" when so.
std::string check_pickle(const fs::path& p, uintmax_t& size_out) {
  uintmax_t size = 0;
  const std::string unreadable = readable_weight_file(p, size);
  size_out = size;
  if (!unreadable.empty())
    return unreadable;
  if (size == 0)
    return "empty (0 bytes)";
  return {};
}

// One folder the model layer checks: the target model (--model) or the drafter that the
// speculative cells load (--draft-model), each with its own check ids and words. The drafter
// shares the target's tokenizer, so it has no tokenizer check.
struct Folder {
  std::string path;
  std::string ids;  // check-id prefix: "model." or "model.draft_"
  std::string noun; // "model" or "drafter"
  std::string flag; // "--model" or "--draft-model"
  std::string key;  // the sweep's key: "model.path" or "model.draft_path"
  bool tokenizer = true;
};

struct FolderVerdict {
  bool weights_ok = false;
  uintmax_t weight_bytes = 0;
  std::string blocked; // why the weights could not be counted ("blocked by model.dir"), or ""
};

void skipped(Run& run, const std::string& id, const std::string& why) {
  auto c = make_check(id, PreflightLayer::model);
  c.status = CheckStatus::skipped;
  c.summary = why;
  run.report.checks.push_back(std::move(c));
}

FolderVerdict check_folder(Run& run, const Folder& m) {
  const std::string& path = m.path;
  const std::string& noun = m.noun;
  const auto id = [&](const char* name) { return m.ids + name; };
  std::error_code ec;
  // The model lives in /dev/shm when its path, or where its symbolic link points (relative
  // links resolved from the link's folder), is inside /dev/shm: not /dev/shm2 or /dev/shmx.
  const auto inside_shm = [](const fs::path& p) {
    const fs::path normal = p.lexically_normal();
    auto it = normal.begin();
    for (const char* part : {"/", "dev", "shm"})
      if (it == normal.end() || *it++ != part)
        return false;
    return true;
  };
  // Where the path leads with every link on the way followed, dangling ones included: a linked
  // parent folder (/home/u/models -> /dev/shm/models) or a chain of links into /dev/shm that
  // a reboot emptied is still a model that lived in /dev/shm.
  const fs::path resolved = follow_links(fs::absolute(path, ec));
  const bool in_shm = inside_shm(resolved);
  const auto shm_diagnosis = [&](CheckResult& c) {
    const std::string type = fs_type(run, resolved.string());
    const double up = uptime_s(run);
    c.facts.emplace_back("filesystem", type.empty() ? "unknown" : type);
    c.facts.emplace_back("host_uptime", since(up));
    c.diagnosis = "the " + noun + " lived in /dev/shm, which is memory (" +
                  (type.empty() ? std::string("tmpfs") : type) +
                  ") and is emptied at every boot; the machine booted " + since(up) +
                  " ago, so the " + noun + " was most likely lost in that reboot";
    c.remedy = "download the " + noun +
               " again (or copy it from persistent storage) before the run; "
               "keep a copy on disk and stage it to /dev/shm in a boot-time step";
  };
  // The folder is there but some weights are not: a reboot empties all of /dev/shm, so this is
  // a copy that stopped short, often because the tmpfs filled up.
  const auto partial_shm_diagnosis = [&](CheckResult& c) {
    struct statvfs vfs {};
    std::string room;
    if (::statvfs(path.c_str(), &vfs) == 0) {
      const double free_b = static_cast<double>(vfs.f_bavail) * static_cast<double>(vfs.f_frsize);
      const double size_b = static_cast<double>(vfs.f_blocks) * static_cast<double>(vfs.f_frsize);
      c.facts.emplace_back("filesystem_free", gib(free_b));
      c.facts.emplace_back("filesystem_size", gib(size_b));
      room = free_b < std::max(1024.0 * 1024.0 * 1024.0, size_b * 0.02)
                 ? "; /dev/shm is full (" + gib(free_b) + " free of " + gib(size_b) +
                       "), which stops a copy short"
                 : "; /dev/shm has " + gib(free_b) + " free of " + gib(size_b) +
                       " now (a copy stops short when it fills up)";
    }
    c.diagnosis = "the copy of the " + noun +
                  " in /dev/shm is incomplete or was interrupted (a reboot would have emptied all "
                  "of /dev/shm, but other files of the " +
                  noun + " are there)" + room;
    c.remedy = "make room in /dev/shm if it is full (df -h /dev/shm; a tmpfs holds at most its "
               "size= mount option), then copy the " +
               noun + " into it again";
  };
  bool dir_ok = false;
  bool unreadable = false; // a permission problem, which "download it again" would not fix
  const auto unreadable_diagnosis = [&](CheckResult& c) {
    c.diagnosis = "specbench runs as uid " + std::to_string(::getuid()) +
                  ", which may not read the " + noun + "'s files";
    c.remedy = "make them readable (chmod -R a+rX " + path +
               ") or run specbench as the user that owns them";
  };
  { // directory
    const auto t0 = Clock::now();
    auto c = make_check(id("dir"), PreflightLayer::model);
    c.facts.emplace_back("path", path);
    const auto link = fs::symlink_status(path, ec);
    const bool is_link = !ec && fs::is_symlink(link);
    std::string target;
    if (is_link)
      target = fs::read_symlink(path, ec).string();
    if (is_link)
      c.facts.emplace_back("symlink_to", target);
    const auto st = fs::status(path, ec);
    const bool denied = ec == std::errc::permission_denied;
    if (denied || (fs::is_directory(st) && ::access(path.c_str(), R_OK | X_OK) != 0)) {
      c.status = CheckStatus::fail;
      unreadable = true;
      c.summary = noun + " directory " + path + " cannot be read: permission denied";
      unreadable_diagnosis(c);
      // A folder above the model that may not be entered: chmod -R on the model cannot reach
      // the model's files then, so name that folder.
      fs::path abs = fs::absolute(path, ec).lexically_normal();
      if (abs.filename().empty())
        abs = abs.parent_path();
      fs::path prefix;
      for (const fs::path& part : abs.parent_path()) {
        prefix /= part;
        if (::access(prefix.c_str(), X_OK) != 0) {
          c.summary = noun + " directory " + path + " cannot be reached: " + prefix.string() +
                      " may not be entered (permission denied)";
          c.facts.emplace_back("blocked_at", prefix.string());
          c.diagnosis = "specbench runs as uid " + std::to_string(::getuid()) +
                        ", which may not pass through " + prefix.string();
          c.remedy = "let it through (chmod a+x " + prefix.string() +
                     " lets others pass without listing it), run specbench as a user that may, "
                     "or move the " +
                     noun + " to a folder it can reach";
          break;
        }
      }
    } else if (fs::exists(st) && !fs::is_directory(st)) {
      const char* type_words = detail::file_type_words(st.type());
      const std::string what = type_words ? type_words : "not a folder";
      c.status = CheckStatus::fail;
      c.summary = path + " is " + what + ", not a " + noun + " directory";
      c.diagnosis = m.flag + " (or the sweep's " + m.key + ") names " + what;
      c.remedy = "give the directory that holds config.json and the .safetensors files";
    } else if (ec == std::errc::too_many_symbolic_link_levels) {
      c.status = CheckStatus::fail;
      c.summary = path + " is a loop of symbolic links";
      c.diagnosis = "the " + noun + " path's links point at each other";
      c.remedy = "point the link at the real " + noun + " directory";
    } else if (ec && ec != std::errc::no_such_file_or_directory &&
               ec != std::errc::not_a_directory) {
      // Not "does not exist": the system refuses the path itself (a name too long, say).
      c.status = CheckStatus::fail;
      c.summary = noun + " path " + cut(path) + " cannot be looked at: " + ec.message();
      c.diagnosis = "the system refuses the path itself, whatever is on disk";
      c.remedy = "check " + m.flag + " (or the sweep's " + m.key + ")";
    } else if (!fs::is_directory(st)) {
      c.status = CheckStatus::fail;
      c.summary = noun + " directory " + path + " does not exist" +
                  (is_link ? " (a symbolic link to " + target + ", which is gone)" : "");
      if (in_shm)
        shm_diagnosis(c);
      else if (is_hub_model_id(path)) {
        c.diagnosis = "\"" + path +
                      "\" is not a folder here; it looks like a Hugging Face hub id, which the "
                      "server downloads itself, and the model layer checks local folders only";
        c.remedy = "give the local folder the server loads (" + m.flag + " /path/to/" + noun +
                   "), or leave " + m.flag + " out to skip these checks";
      } else {
        c.diagnosis = "the path is wrong or the " + noun + " was never downloaded here";
        c.remedy = "download the " + noun +
                   " (e.g. huggingface-cli download ORG/NAME --local-dir " + path + ") or fix " +
                   m.flag;
      }
    } else if (fs::is_empty(path, ec)) {
      c.status = CheckStatus::fail;
      c.summary = noun + " directory " + path + " is empty";
      if (in_shm)
        shm_diagnosis(c);
      else {
        c.diagnosis = "the download did not happen or was removed";
        c.remedy = "download the " + noun + " again";
      }
    } else {
      dir_ok = true;
      c.summary = noun + " directory present";
    }
    add_check(run, std::move(c), t0);
  }
  if (!dir_ok) {
    for (const char* name : {"config", "tokenizer", "weights"})
      if (m.tokenizer || std::strcmp(name, "tokenizer") != 0)
        skipped(run, id(name), "blocked by " + id("dir"));
    return {false, 0, "blocked by " + id("dir")};
  }
  { // config.json
    const auto t0 = Clock::now();
    auto c = make_check(id("config"), PreflightLayer::model);
    const fs::path cfg_path = fs::path(path) / "config.json";
    std::string text;
    const std::string why = read_regular_file(cfg_path, kJsonFileCap, text);
    const json cfg = why.empty() ? json::parse(text, nullptr, false) : json();
    if (why.rfind("cannot be read", 0) == 0) {
      c.status = CheckStatus::fail;
      c.summary = file_sentence("config.json", why);
      unreadable_diagnosis(c);
    } else if (!why.empty() || cfg.is_discarded() || !cfg.is_object()) {
      c.status = CheckStatus::fail;
      c.summary = why.empty() ? "config.json is not valid JSON" : file_sentence("config.json", why);
      // A folder, a pipe or a link loop in its place is not a download that stopped short.
      const bool replaced = !why.empty() && why != "missing" && why.rfind("a dangling", 0) != 0;
      c.diagnosis = replaced ? "something other than the " + noun +
                                   "'s configuration file is where config.json should be"
                             : "the " + noun + " download is incomplete";
      c.remedy = std::string(replaced ? "remove what is at " + cfg_path.string() + ", then " : "") +
                 "download the " + noun +
                 " again (config.json comes with every Hugging Face model)";
    } else {
      std::string arch = "unknown";
      if (cfg.contains("architectures") && cfg["architectures"].is_array() &&
          !cfg["architectures"].empty() && cfg["architectures"][0].is_string())
        arch = cfg["architectures"][0].get<std::string>();
      long long ctx = 0;
      bool ctx_found = false;
      for (const json* j : {&cfg, cfg.contains("text_config") ? &cfg["text_config"] : nullptr})
        if (j && j->is_object() && j->contains("max_position_embeddings") &&
            (*j)["max_position_embeddings"].is_number_integer() && !ctx_found) {
          ctx = (*j)["max_position_embeddings"].get<long long>();
          ctx_found = true;
        }
      c.facts.emplace_back("architecture", arch);
      c.facts.emplace_back("context_length", ctx_found ? std::to_string(ctx) : "unknown");
      if (cfg.contains("model_type") && cfg["model_type"].is_string())
        c.facts.emplace_back("model_type", cfg["model_type"].get<std::string>());
      // Tensor parallelism splits the attention heads evenly over the GPUs: SGLang and vLLM
      // refuse a tp that does not divide them. (Fewer KV heads than tp is fine: they are
      // replicated.) text_config holds the language model's of a multimodal model.
      long long heads = 0;
      for (const json* j : {cfg.contains("text_config") ? &cfg["text_config"] : nullptr, &cfg})
        if (j && j->is_object() && j->contains("num_attention_heads") &&
            (*j)["num_attention_heads"].is_number_integer() && heads == 0)
          heads = (*j)["num_attention_heads"].get<long long>();
      if (heads > 0)
        c.facts.emplace_back("num_attention_heads", std::to_string(heads));
      const int tp = run.plan.tp;
      if (ctx_found && ctx <= 0) {
        // Was passed as "context -5 tokens": no server runs a model with no context.
        c.status = CheckStatus::fail;
        c.summary = "config.json's max_position_embeddings is " + std::to_string(ctx) +
                    ", not a positive number of tokens";
        c.diagnosis = "config.json is damaged or was edited wrongly";
        c.remedy = "download the " + noun +
                   "'s config.json again, or set max_position_embeddings to its context length";
      } else if (heads > 0 && tp > 1 && heads % tp != 0) {
        c.status = CheckStatus::fail;
        c.summary = "num_attention_heads " + std::to_string(heads) + " is not divisible by tp " +
                    std::to_string(tp);
        c.diagnosis = "tensor parallelism splits the attention heads evenly over the GPUs; "
                      "SGLang and vLLM refuse a tp that does not divide them";
        std::string fits;
        for (int t : {1, 2, 4, 8})
          if (heads % t == 0)
            fits += (fits.empty() ? "" : ", ") + std::to_string(t);
        c.remedy = "use a tp that divides " + std::to_string(heads) + " (" + fits + ")";
      } else if (arch == "unknown" || !ctx_found) {
        // Each missing piece with its own consequence: a missing architectures used to be
        // explained as a missing context length.
        c.status = CheckStatus::warn;
        std::vector<std::string> lacks, why, fix;
        if (arch == "unknown") {
          const json* a = cfg.contains("architectures") ? &cfg["architectures"] : nullptr;
          lacks.push_back(!a               ? "has no architectures"
                          : a->is_string() ? "has architectures as a string, not a list"
                                           : "has an architectures that names no model class");
          why.push_back("servers (SGLang, vLLM) choose the model's implementation from "
                        "architectures[0] and will likely refuse the model without it");
          fix.push_back(
              "set architectures to a list naming the model class, e.g. [\"" +
              std::string(a && a->is_string() ? cut(a->get<std::string>()) : "Qwen3ForCausalLM") +
              "\"] (or download config.json again)");
        }
        if (!ctx_found) {
          lacks.push_back("has no max_position_embeddings (a whole number)");
          why.push_back("the context-length check of the sweep cannot use the model's limit");
          fix.push_back("set the context length explicitly in the sweep");
        }
        const auto join = [](const std::vector<std::string>& v, const char* sep) {
          std::string out;
          for (const auto& x : v)
            out += (out.empty() ? "" : sep) + x;
          return out;
        };
        c.summary = "config.json " + join(lacks, " and ");
        c.diagnosis = join(why, "; ");
        c.remedy = join(fix, "; ");
      } else {
        c.summary = arch + ", context " + std::to_string(ctx) + " tokens";
      }
    }
    add_check(run, std::move(c), t0);
  }
  if (m.tokenizer) { // the server loads it from the model folder unless told otherwise
    const auto t0 = Clock::now();
    auto c = make_check("model.tokenizer", PreflightLayer::model);
    std::string found;
    for (const char* name :
         {"tokenizer.json", "tokenizer.model", "tokenizer_config.json", "vocab.json"})
      if (file_problem(fs::path(path) / name) != "missing")
        found += (found.empty() ? "" : ", ") + std::string(name);
    std::string text;
    // tokenizer.json files are tens of MB at most.
    const std::string why =
        read_regular_file(fs::path(path) / "tokenizer.json", std::uintmax_t{1} << 30, text);
    if (found.empty()) {
      c.status = CheckStatus::warn;
      c.summary = "no tokenizer files (tokenizer.json, tokenizer.model, tokenizer_config.json "
                  "or vocab.json)";
      c.diagnosis = "the server loads the tokenizer from the model folder unless given another, "
                    "and fails to start without one";
      c.remedy = "download the model's tokenizer files with it, or give the server a tokenizer "
                 "(SGLang --tokenizer-path, vLLM --tokenizer)";
    } else if (why != "missing" && (!why.empty() || !json::accept(text))) {
      c.status = CheckStatus::fail;
      c.summary =
          why.empty() ? "tokenizer.json is not valid JSON" : file_sentence("tokenizer.json", why);
      if (why.rfind("cannot be read", 0) == 0)
        unreadable_diagnosis(c);
      else {
        c.diagnosis = "the model download is incomplete or tokenizer.json was damaged";
        c.remedy = "download the model's tokenizer.json again";
      }
    } else {
      c.summary = found;
    }
    add_check(run, std::move(c), t0);
  }
  uintmax_t weight_bytes = 0;
  bool weights_ok = false;
  { // safetensors
    const auto t0 = Clock::now();
    auto c = make_check(id("weights"), PreflightLayer::model);
    std::vector<std::string> shards;
    // The index's promise: shard -> the tensors it holds; and entries that name no file.
    std::map<std::string, std::vector<std::string>> listed;
    std::vector<std::string> nameless;
    uintmax_t declared = 0;
    // PyTorch .bin weights are pickles, which are not parsed here: only their presence, sizes
    // and index are checked.
    bool pickles = false;
    std::string found_as; // how the weight files were found, for the summary
    // Reads an index (model.safetensors.index.json or pytorch_model.bin.index.json) into
    // shards, listed, nameless and declared. False when there is none.
    const auto read_index = [&](const std::string& index_name) {
      std::string text;
      const std::string why = read_regular_file(fs::path(path) / index_name, kJsonFileCap, text);
      if (why == "missing")
        return false;
      if (!why.empty()) {
        // A dangling link (the Hugging Face cache's blob is gone), a folder, a pipe, no
        // permission.
        c.status = CheckStatus::fail;
        c.summary = file_sentence(index_name, why);
        unreadable = why.rfind("cannot be read", 0) == 0;
        return true;
      }
      const json j = json::parse(text, nullptr, false);
      const json* total = j.is_object() && j.contains("metadata") && j["metadata"].is_object() &&
                                  j["metadata"].contains("total_size")
                              ? &j["metadata"]["total_size"]
                              : nullptr;
      if (j.is_discarded() || !j.is_object() || !j.contains("weight_map") ||
          !j["weight_map"].is_object()) {
        c.status = CheckStatus::fail;
        c.summary = index_name + " is not JSON or has no weight_map";
      } else if (total && !total->is_number_unsigned()) {
        c.status = CheckStatus::fail;
        c.summary = index_name + "'s metadata.total_size is " + cut(total->dump(), 40) +
                    ", not a byte count";
      } else {
        for (auto& [tensor, file] : j["weight_map"].items())
          if (file.is_string())
            listed[file.get<std::string>()].push_back(tensor);
          else
            nameless.push_back("\"" + cut(tensor) + "\": " + cut(file.dump(), 40));
        for (const auto& [file, tensors] : listed)
          shards.push_back(file);
        if (shards.empty()) {
          c.status = CheckStatus::fail;
          c.summary = index_name + " lists no weight files (empty weight_map)";
        }
        if (total)
          declared = total->get<uintmax_t>();
      }
      return true;
    };
    const auto present = [&](const std::string& name) {
      const fs::path p = fs::path(path) / name;
      return fs::exists(p, ec) || fs::is_symlink(fs::symlink_status(p, ec));
    };
    // Every *.safetensors of the folder: what servers load when there is no index (a lone
    // model-00001-of-00001.safetensors, say).
    std::vector<std::string> loose;
    for (const auto& e : fs::directory_iterator(path, ec))
      if (e.path().extension() == ".safetensors")
        loose.push_back(e.path().filename().string());
    std::sort(loose.begin(), loose.end());
    if (read_index("model.safetensors.index.json")) {
    } else if (present("model.safetensors")) {
      shards = {"model.safetensors"};
    } else if (!loose.empty()) {
      shards = loose;
      found_as = " (no index: every .safetensors file of the folder, as servers load them)";
    } else if (read_index("pytorch_model.bin.index.json")) {
      pickles = true;
    } else if (present("pytorch_model.bin")) {
      shards = {"pytorch_model.bin"};
      pickles = true;
    } else {
      c.status = CheckStatus::fail;
      c.summary = "no weights: no model.safetensors, model.safetensors.index.json, other "
                  ".safetensors files, pytorch_model.bin or pytorch_model.bin.index.json";
    }
    if (pickles)
      found_as = " (PyTorch .bin: presence and sizes checked, the pickles not read)";
    std::string problems;
    int bad = 0;
    // Tensors the index places in a shard whose header does not have them: loaders fail on them
    // at load time.
    std::string absent;
    size_t absent_count = 0;
    for (const auto& s : shards) {
      uintmax_t size = 0;
      std::set<std::string> names;
      // A server loads the shards from the model folder; a name that leaves it (absolute, or
      // through "..") is not there for the server, and is not read here.
      const fs::path name(s);
      const bool outside =
          name.empty() || name.is_absolute() ||
          std::any_of(name.begin(), name.end(), [](const fs::path& part) { return part == ".."; });
      const std::string why = outside
                                  ? "outside the model folder (the index must name files inside it)"
                              : pickles ? check_pickle(fs::path(path) / s, size)
                                        : check_safetensors(fs::path(path) / s, size, names);
      weight_bytes += size;
      if (!why.empty()) {
        unreadable |= why.rfind("cannot be read", 0) == 0;
        if (bad++ < 4)
          problems += (problems.empty() ? "" : "; ") + s + ": " + why;
      } else if (const auto it = listed.find(s); !pickles && it != listed.end()) {
        for (const auto& tensor : it->second)
          if (!names.count(tensor) && absent_count++ < 3)
            absent += (absent.empty() ? "" : ", ") + ("\"" + cut(tensor) + "\" (in " + s + ")");
      }
    }
    c.facts.emplace_back("shards", std::to_string(shards.size()));
    c.facts.emplace_back("bytes_on_disk", std::to_string(weight_bytes));
    if (declared)
      c.facts.emplace_back("index_total_size", std::to_string(declared));
    if (c.status != CheckStatus::fail) {
      if (bad > 0) {
        c.status = CheckStatus::fail;
        c.summary = std::to_string(bad) + " of " + std::to_string(shards.size()) +
                    " weight shard(s) missing or damaged: " + problems;
      } else if (!nameless.empty()) {
        c.status = CheckStatus::fail;
        c.summary = "model.safetensors.index.json's weight_map gives " +
                    std::to_string(nameless.size()) +
                    " tensor(s) no file name (a string is needed), e.g. " + nameless.front();
      } else if (absent_count > 0) {
        c.status = CheckStatus::fail;
        c.summary =
            std::to_string(absent_count) +
            " tensor(s) of model.safetensors.index.json are not in the shard it names: " + absent +
            (absent_count > 3 ? ", ..." : "") +
            " (the index and the shards come from different downloads or revisions)";
      } else if (declared && weight_bytes < declared) {
        c.status = CheckStatus::fail;
        c.summary = "shards hold " + gib(static_cast<double>(weight_bytes)) +
                    " but the index declares " + gib(static_cast<double>(declared));
      } else {
        weights_ok = true;
        c.summary =
            std::to_string(shards.size()) + " shard(s), " + gib(static_cast<double>(weight_bytes)) +
            (pickles ? ", present and not empty" : ", headers and sizes consistent") + found_as;
      }
    }
    if (c.status == CheckStatus::fail) {
      if (unreadable)
        unreadable_diagnosis(c);
      else if (in_shm)
        partial_shm_diagnosis(c);
      else {
        c.diagnosis = "the download is incomplete or was interrupted";
        c.remedy =
            "download the " + noun + " again (huggingface-cli download resumes partial files)";
      }
    }
    add_check(run, std::move(c), t0);
  }
  return {weights_ok, weight_bytes, weights_ok ? "" : "blocked by " + id("weights")};
}

// Free memory of the planned GPUs together, when every one of them answered.
std::optional<unsigned long long> free_in_tp_group(const Run& run) {
  unsigned long long free_total = 0;
  size_t known = 0;
  for (int ord : run.report.planned_gpus)
    for (const auto& g : run.report.gpus)
      if (g.cuda_ordinal == ord && g.memory_free_bytes) {
        free_total += g.memory_free_bytes;
        ++known;
      }
  if (known == 0 || known < run.report.planned_gpus.size())
    return std::nullopt;
  return free_total;
}

// Whether `bytes` of weights, with the plan's headroom, fit in the TP group's free memory
// (`free_total`, from free_in_tp_group; nothing when unknown). `what` names the weights
// ("weights", "target and drafter weights"); `too_big` is the diagnosis when they do not fit,
// `smaller` what to quantise; a non-empty `blocked` skips the check, saying why.
void check_fit(Run& run, const std::optional<unsigned long long>& free_total, const std::string& id,
               const std::string& what, uintmax_t bytes, const std::string& blocked,
               const std::string& too_big, const std::string& smaller = "a quantised model") {
  const auto t0 = Clock::now();
  auto c = make_check(id, PreflightLayer::model);
  if (!blocked.empty()) {
    c.status = CheckStatus::skipped;
    c.summary = blocked;
  } else if (!free_total) {
    c.status = CheckStatus::skipped;
    c.summary = "free GPU memory unknown (GPU layers did not answer)";
  } else {
    const double need = static_cast<double>(bytes) * run.plan.model_memory_headroom;
    const double room = static_cast<double>(*free_total);
    c.facts.emplace_back("weights", gib(static_cast<double>(bytes)));
    c.facts.emplace_back("free_in_tp_group", gib(room));
    c.facts.emplace_back("headroom", std::to_string(run.plan.model_memory_headroom));
    if (need > room) {
      c.status = CheckStatus::fail;
      c.summary =
          what + " need " + gib(need) + " with headroom, the TP group has " + gib(room) + " free";
      c.diagnosis = too_big;
      c.remedy =
          "use a larger --tp, free the GPUs (see the processes under driver.gpuN), or " + smaller;
    } else {
      c.summary = what + " " + gib(static_cast<double>(bytes)) + " fit in " + gib(room) +
                  " free across the TP group";
    }
  }
  add_check(run, std::move(c), t0);
}

} // namespace

void run_model_layer(Run& run) {
  const PreflightPlan& plan = run.plan;
  // A target that is a hub id (no model path) is not checked here; a local drafter still is.
  FolderVerdict target{false, 0, "the model is not checked here (a hub id, or no --model)"};
  // The GPU layers ran before this one: the TP group's free memory is the same for both fits.
  const auto free_total = free_in_tp_group(run);
  if (!plan.model_path.empty()) {
    target = check_folder(run, {plan.model_path, "model.", "model", "--model", "model.path", true});
    check_fit(run, free_total, "model.memory_fit", "weights", target.weight_bytes, target.blocked,
              "the model does not fit in the free memory of the planned GPUs");
  }
  if (plan.draft_model_path.empty())
    return;
  // The speculative cells load the drafter beside the target, on the same GPUs. When the
  // target's weights cannot be counted, the drafter alone is a lower bound that can still fail.
  const FolderVerdict draft = check_folder(run, {plan.draft_model_path, "model.draft_", "drafter",
                                                 "--draft-model", "model.draft_path", false});
  const bool both = target.blocked.empty();
  check_fit(run, free_total, "model.draft_memory_fit",
            both ? "target and drafter weights"
                 : "drafter weights alone (the model's are not counted: " + target.blocked + ")",
            (both ? target.weight_bytes : 0) + draft.weight_bytes, draft.blocked,
            both ? "the target and its drafter together do not fit in the free memory of the "
                   "planned GPUs (the speculative cells load both)"
                 : "the drafter alone does not fit in the free memory of the planned GPUs, before "
                   "the target is loaded beside it",
            "a quantised drafter or model");
}

} // namespace specbench::preflight

namespace specbench {

bool is_hub_model_id(const std::string& path) {
  if (path.empty() || path[0] == '/' || path[0] == '.' || path[0] == '~')
    return false;
  std::error_code ec;
  namespace fs = std::filesystem;
  // Something is here, a dangling link too: a local path. (ec is set for "not found" as well;
  // another error, such as a name too long, is a local path the model layer reports.)
  const auto t = fs::symlink_status(path, ec).type();
  if (t != fs::file_type::not_found &&
      (t != fs::file_type::none || ec != std::errc::no_such_file_or_directory))
    return false;
  const auto slashes = std::count(path.begin(), path.end(), '/');
  return slashes == 0 || (slashes == 1 && path.back() != '/');
}

} // namespace specbench
