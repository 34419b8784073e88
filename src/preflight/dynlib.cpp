#include "preflight/dynlib.hpp"

#include <dlfcn.h>
#include <filesystem>
#include <link.h>

namespace specbench::preflight {

DynLib& DynLib::operator=(DynLib&& o) noexcept {
  if (this != &o) {
    if (handle_)
      ::dlclose(handle_);
    handle_ = o.handle_;
    path_ = std::move(o.path_);
    opened_as_ = std::move(o.opened_as_);
    error_ = std::move(o.error_);
    o.handle_ = nullptr;
  }
  return *this;
}

DynLib::~DynLib() {
  if (handle_)
    ::dlclose(handle_);
}

void* DynLib::symbol(const char* name) const noexcept {
  return handle_ ? ::dlsym(handle_, name) : nullptr;
}

namespace {
std::string opened_path(void* handle) {
  struct link_map* map = nullptr;
  if (::dlinfo(handle, RTLD_DI_LINKMAP, &map) != 0 || map == nullptr || map->l_name == nullptr)
    return {};
  return map->l_name;
}
} // namespace

DynLib DynLib::open(const std::vector<std::string>& names, const std::vector<std::string>& dirs,
                    const std::string& explicit_path) {
  DynLib lib;
  auto attempt = [&lib](const std::string& what) {
    ::dlerror();
    void* h = ::dlopen(what.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (h == nullptr) {
      const char* e = ::dlerror();
      if (lib.error_.empty() || what.find('/') == std::string::npos)
        lib.error_ = e ? e : ("cannot load " + what);
      return false;
    }
    lib.handle_ = h;
    lib.opened_as_ = opened_path(h);
    if (lib.opened_as_.empty())
      lib.opened_as_ = what;
    std::error_code ec;
    const auto canonical = std::filesystem::canonical(lib.opened_as_, ec);
    lib.path_ = ec ? lib.opened_as_ : canonical.string();
    lib.error_.clear();
    return true;
  };
  if (explicit_path == "none") {
    lib.error_ = "loading disabled by the plan";
    return lib;
  }
  if (!explicit_path.empty()) {
    attempt(explicit_path);
    return lib;
  }
  for (const auto& dir : dirs)
    for (const auto& name : names) {
      const std::string candidate = dir + "/" + name;
      std::error_code ec; // a directory we may not read is skipped, not an exception
      if (std::filesystem::exists(candidate, ec) && attempt(candidate))
        return lib;
    }
  for (const auto& name : names)
    if (attempt(name))
      return lib;
  return lib;
}

} // namespace specbench::preflight
