#pragma once
// Loading driver libraries at run time (dlopen), so that specbench starts on machines without a
// GPU driver and tests can put fake libraries in front of the real ones.
#include <string>
#include <vector>

namespace specbench::preflight {

/// A dlopen'ed library; closed on destruction.
class DynLib {
public:
  DynLib() = default;
  DynLib(const DynLib&) = delete;
  DynLib& operator=(const DynLib&) = delete;
  DynLib(DynLib&& o) noexcept { *this = std::move(o); }
  DynLib& operator=(DynLib&& o) noexcept;
  ~DynLib();

  bool loaded() const noexcept { return handle_ != nullptr; }
  /// Absolute path of the file that was loaded ("" if not loaded).
  const std::string& path() const noexcept { return path_; }
  /// The path the loader opened before resolving links (e.g. .../stubs/libcuda.so.1).
  const std::string& opened_as() const noexcept { return opened_as_; }
  /// dlerror() text of the last failed attempt.
  const std::string& error() const noexcept { return error_; }
  /// Address of `name`, nullptr when the library lacks it (a missing symbol = "not supported").
  void* symbol(const char* name) const noexcept;
  template <class F> F fn(const char* name) const noexcept {
    return reinterpret_cast<F>(symbol(name));
  }

  /// Opens the first of `names` found: `explicit_path` if set ("none" = do not load), then each
  /// name in each of `dirs`, then each name through the loader's own search.
  static DynLib open(const std::vector<std::string>& names, const std::vector<std::string>& dirs,
                     const std::string& explicit_path = {});

private:
  void* handle_ = nullptr;
  std::string path_;
  std::string opened_as_;
  std::string error_;
};

} // namespace specbench::preflight
