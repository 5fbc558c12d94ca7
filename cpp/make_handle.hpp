// make_handle.hpp - how every factory builds a handle (internal to cpp/: the
// .cpp files of handles, memory and ipc_import include it; Cython does not).
//
// A box is allocated BEFORE the driver object it will own where that is
// possible, so an allocation failure never strands a driver object; a handle
// whose control block cannot be allocated runs its deleter at once. Failures
// set the thread's last error and return an empty handle (nothing throws).
#pragma once

#include <cuda.h>

#include <memory>
#include <new>

#include "driver.hpp"
#include "error.hpp"
#include "gil.hpp"

namespace cuda_core {
namespace detail {

// The loaded driver table (callers checked require_driver() or hold a handle,
// which implies the driver was loaded).
inline const DriverTable& drv() noexcept { return driver(); }

// A factory's failure exit: records `code` as the thread's last error, returns an empty handle.
template <typename Handle>
Handle fail(CUresult code) noexcept {
    set_last_error(code);
    return {};
}

// Returns CUDA_SUCCESS when the driver is usable, else records and returns the failure.
inline CUresult require_driver() noexcept {
    CUresult r = ensure_driver_loaded();
    if (r != CUDA_SUCCESS) set_last_error(r);
    return r;
}

// An empty box, owning nothing yet; nullptr on allocation failure.
template <typename Box>
std::unique_ptr<Box> new_box() noexcept {
    return std::unique_ptr<Box>(new (std::nothrow) Box{});
}

// Owns `box` (may be nullptr: OUT_OF_MEMORY): wraps it in a Handle whose
// deleter is `deleter`. If the control block cannot be allocated, the
// shared_ptr constructor runs the deleter (releasing what the box owns) and
// this returns empty with OUT_OF_MEMORY. Handle may point at a base of Box;
// the deleter still receives the Box*.
template <typename Handle, typename Box, typename Deleter>
Handle wrap_box(Box* box, Deleter deleter) noexcept {
    if (box == nullptr) return fail<Handle>(CUDA_ERROR_OUT_OF_MEMORY);
    try {
        return Handle(box, deleter);
    } catch (...) {
        return fail<Handle>(CUDA_ERROR_OUT_OF_MEMORY);
    }
}

// wrap_box for a handle of the box's own type.
template <typename Box, typename Deleter>
std::shared_ptr<const Box> make_handle(Box* box, Deleter deleter) noexcept {
    return wrap_box<std::shared_ptr<const Box>>(box, deleter);
}

template <typename Box, typename Deleter>
std::shared_ptr<const Box> make_handle(std::unique_ptr<Box> box, Deleter deleter) noexcept {
    return make_handle(box.release(), deleter);
}

// Deleter of a box that owns nothing in the driver: frees the box only.
template <typename Box>
void delete_borrowed(const Box* box) noexcept {
    delete box;
}

// The body of every deleter whose release is one driver call: detach from the
// GIL (if attached), release, free the box, then report with no lock held.
template <typename Box, typename Release>
void release_box(const Box* box, const char* what, Release release) noexcept {
    CUresult result;
    {
        GILReleaseGuard gil;
        result = release(*box);
    }
    delete box;
    if (result != CUDA_SUCCESS) report_cleanup_failure(what, result);
}

}  // namespace detail
}  // namespace cuda_core
