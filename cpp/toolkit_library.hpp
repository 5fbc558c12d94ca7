// toolkit_library.hpp - loads a CUDA toolkit library (NVRTC, nvJitLink) once,
// from an ordered list of candidate paths, into a table of entry points.
//
// Header-only (templates over the table type); no Python, no exceptions out.
#pragma once

#include <dlfcn.h>

#include <atomic>
#include <mutex>
#include <string>
#include <type_traits>
#include <vector>

namespace cuda_core::detail {

// One toolkit library, loaded at most once: its entry points, its path, or why it
// could not be loaded. `ready` is set (release) only after `table` and `path`.
template <class Table>
struct ToolkitLibrary {
    Table table;
    std::string error;
    std::string path;
    std::once_flag once;
    std::atomic<bool> ready{false};

    bool loaded() const noexcept { return ready.load(std::memory_order_acquire); }
};

// Resolves one entry point of `lib` into `slot` (null if absent); a missing
// required name is appended to *missing. Owns nothing.
template <class Slot>
void resolve_entry_point(void* lib, Slot& slot, const char* name, bool required, std::string* missing) {
    void* sym = dlsym(lib, name);
    if (sym == nullptr && required) *missing += (missing->empty() ? "" : ", ") + std::string(name);
    slot = reinterpret_cast<std::remove_reference_t<Slot>>(sym);
}

// Tries each candidate in order and keeps the first library that has every
// required entry point (`resolve(lib, &table)` fills the table and returns the
// missing names, "" if none); libraries that lack some are closed again. Runs
// once per library; a later call returns what the first found. Returns whether
// the library is loaded. On failure, `error` is `not_found` followed by each
// candidate tried and why it was refused.
template <class Table, class Resolve>
bool load_toolkit_library(ToolkitLibrary<Table>& library, const std::vector<std::string>& candidates,
                          Resolve resolve, const char* not_found, const char* out_of_memory) noexcept {
    if (library.loaded()) return true;
    std::call_once(library.once, [&]() noexcept {
        try {
            std::string tried;
            for (const std::string& path : candidates) {
                void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
                if (lib == nullptr) {
                    const char* why = dlerror();
                    tried += "\n  " + path + ": " + (why ? why : "dlopen failed");
                    continue;
                }
                Table table;
                std::string missing = resolve(lib, &table);
                if (!missing.empty()) {
                    tried += "\n  " + path + ": lacks " + missing;
                    dlclose(lib);
                    continue;
                }
                library.table = table;
                library.path = path;
                library.ready.store(true, std::memory_order_release);
                return;
            }
            library.error = not_found + (tried.empty() ? std::string(" nothing") : tried);
        } catch (...) {
            library.error = out_of_memory;
        }
    });
    return library.loaded();
}

}  // namespace cuda_core::detail
