// py_graph_attachment.cpp - graph attachments owned by CUDA user objects; their
// releases drained on the main Python thread (see py_graph_attachment.hpp).
#include <Python.h>

#include <pthread.h>

#include <atomic>
#include <new>

#include "driver.hpp"
#include "error.hpp"
#include "py_gil.hpp"
#include "py_graph_attachment.hpp"

namespace cuda_core {
namespace {

// One queued release: the reference to drop, allocated when the attachment is made
// so that the driver's destructor callback allocates nothing.
struct DeferredRelease {
    PyObject* object;
    DeferredRelease* next = nullptr;
};

// The process-lifetime queue: many producers (driver threads), one consumer
// (the pending call on the main Python thread). Never destroyed, so a driver
// thread still running at process exit finds it intact.
class ReleaseQueue {
public:
    // Any thread: pushes `item` and asks for a drain.
    void push(DeferredRelease* item) noexcept {
        DeferredRelease* head = head_.load(std::memory_order_relaxed);
        do {
            item->next = head;
        } while (!head_.compare_exchange_weak(head, item, std::memory_order_release, std::memory_order_relaxed));
        schedule();
    }

    // Any thread: at most one pending call is outstanding; a full CPython queue
    // leaves the items for the next push or retry.
    void schedule() noexcept {
        if (!accepting_.load(std::memory_order_acquire) || head_.load(std::memory_order_acquire) == nullptr) return;
        if (!interpreter_usable()) {
            stop();
            return;
        }
        bool expected = false;
        if (!scheduled_.compare_exchange_strong(expected, true, std::memory_order_acq_rel)) return;
        if (Py_AddPendingCall(&ReleaseQueue::pending_call, this) != 0)
            scheduled_.store(false, std::memory_order_release);
    }

    void stop() noexcept { accepting_.store(false, std::memory_order_release); }

    // In a forked child: the parent's outstanding pending call may not exist
    // there, so the next push or retry asks again (a second drain finds nothing).
    void forget_schedule_after_fork() noexcept { scheduled_.store(false, std::memory_order_release); }

private:
    // CPython's pending call (main thread, GIL held): drops every queued reference.
    static int pending_call(void* self) noexcept {
        static_cast<ReleaseQueue*>(self)->drain();
        return 0;
    }

    void drain() noexcept {
        if (!accepting_.load(std::memory_order_acquire) || !interpreter_usable()) {
            stop();
            scheduled_.store(false, std::memory_order_release);
            return;  // shutting down: left queued, never released
        }
        // A reference dropped here may run a finalizer that queues more: drained too.
        while (DeferredRelease* list = head_.exchange(nullptr, std::memory_order_acquire)) {
            while (list != nullptr) {
                DeferredRelease* next = list->next;
                Py_DECREF(list->object);
                delete list;
                list = next;
            }
        }
        scheduled_.store(false, std::memory_order_release);
        schedule();  // pushed between the last exchange and the store above
    }

    std::atomic<DeferredRelease*> head_{nullptr};
    std::atomic<bool> scheduled_{false};  // a pending call is outstanding or running
    std::atomic<bool> accepting_{true};   // false once the interpreter shuts down
};

ReleaseQueue& release_queue() noexcept {
    static ReleaseQueue* queue = [] {
        auto* q = new ReleaseQueue();  // never freed (see ReleaseQueue)
        pthread_atfork(nullptr, nullptr, [] { release_queue().forget_schedule_after_fork(); });
        return q;
    }();
    return *queue;
}

// The user object's destructor (CUhostFn), on a driver thread: queues the release only.
void queue_release(void* item) noexcept { release_queue().push(static_cast<DeferredRelease*>(item)); }

}  // namespace

CUuserObject graph_attach_python_object(CUgraph graph, void* object) noexcept {
    auto* item = new (std::nothrow) DeferredRelease{static_cast<PyObject*>(object)};
    if (item == nullptr) {
        set_last_error(CUDA_ERROR_OUT_OF_MEMORY);
        return nullptr;
    }
    retry_deferred_releases();
    CUuserObject user_object = nullptr;
    CUresult rc = driver().cuUserObjectCreate_(&user_object, item, &queue_release, 1, CU_USER_OBJECT_NO_DESTRUCTOR_SYNC);
    if (rc != CUDA_SUCCESS) {
        delete item;
        set_last_error(rc);
        return nullptr;
    }
    Py_INCREF(item->object);  // owned by the user object from here on
    rc = driver().cuGraphRetainUserObject_(graph, user_object, 1, CU_GRAPH_USER_OBJECT_MOVE);
    if (rc != CUDA_SUCCESS) {
        driver().cuUserObjectRelease_(user_object, 1);  // its destructor queues the release
        set_last_error(rc);
        return nullptr;
    }
    return user_object;
}

CUresult graph_detach_user_object(CUgraph graph, CUuserObject user_object) noexcept {
    return driver().cuGraphReleaseUserObject_(graph, user_object, 1);
}

void retry_deferred_releases() noexcept { release_queue().schedule(); }

void stop_deferred_releases() noexcept { release_queue().stop(); }

}  // namespace cuda_core
