// model_gil.cpp - see model_gil.hpp.
#include "model_gil.hpp"

#include <cstdint>

#include "gil.hpp"

namespace model_gil {
namespace {

std::mutex the_gil;
thread_local bool is_attached = false;
std::atomic<bool> finalized{false};
std::atomic<long> detaches{0};

void lock_gil() {
    the_gil.lock();
    is_attached = true;
}
void unlock_gil() {
    is_attached = false;
    the_gil.unlock();
}

// GilOps::detach_thread: only an attached thread detaches.
bool detach_thread(void** token) noexcept {
    if (!is_attached) return false;
    *token = nullptr;
    detaches.fetch_add(1);
    unlock_gil();
    return true;
}

void reattach_thread(void*) noexcept { lock_gil(); }

// GilOps::attach_thread: like PyGILState_Ensure (nested when already attached).
bool attach_thread(void** token) noexcept {
    if (finalized.load()) return false;
    if (is_attached) {
        *token = reinterpret_cast<void*>(std::uintptr_t{0});  // already attached: nothing to undo
        return true;
    }
    lock_gil();
    *token = reinterpret_cast<void*>(std::uintptr_t{1});
    return true;
}

void detach_attached_thread(void* token) noexcept {
    if (reinterpret_cast<std::uintptr_t>(token) == 1) unlock_gil();
}

const cuda_core::GilOps model_ops = {&detach_thread, &reattach_thread, &attach_thread, &detach_attached_thread};

}  // namespace

void install() { cuda_core::install_gil_ops(&model_ops); }
void uninstall() { cuda_core::install_gil_ops(nullptr); }
std::mutex& gil_mutex() { return the_gil; }
bool attached() { return is_attached; }
void set_finalized(bool f) { finalized.store(f); }
long detach_count() { return detaches.load(); }

Attach::Attach() { lock_gil(); }
Attach::~Attach() {
    if (is_attached) unlock_gil();
}

AllowThreads::AllowThreads() : was_attached_(is_attached) {
    if (was_attached_) unlock_gil();
}
AllowThreads::~AllowThreads() {
    if (was_attached_) lock_gil();
}

}  // namespace model_gil
