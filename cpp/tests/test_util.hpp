// test_util.hpp - small helpers shared by the GoogleTest suites.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>

namespace test_util {

// Under ThreadSanitizer everything runs ~5-15x slower: scale loop counts down.
#if defined(__SANITIZE_THREAD__)
constexpr int kSlowdown = 4;
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
constexpr int kSlowdown = 4;
#else
constexpr int kSlowdown = 1;
#endif
#else
constexpr int kSlowdown = 1;
#endif

inline int scaled(int n) { return n / kSlowdown > 0 ? n / kSlowdown : 1; }

// Aborts the process with `what` unless disarmed (destroyed) within `seconds`:
// a deadlock becomes a bounded, named failure instead of a hung CI job.
class Watchdog {
public:
    Watchdog(double seconds, std::string what) : what_(std::move(what)) {
        thread_ = std::thread([this, seconds] {
            std::unique_lock<std::mutex> g(m_);
            if (!cv_.wait_for(g, std::chrono::duration<double>(seconds), [this] { return done_; })) {
                std::fprintf(stderr, "WATCHDOG: %s did not finish within %.0f s: deadlock\n", what_.c_str(), seconds);
                std::fflush(stderr);
                std::abort();
            }
        });
    }
    ~Watchdog() {
        {
            std::lock_guard<std::mutex> g(m_);
            done_ = true;
        }
        cv_.notify_all();
        thread_.join();
    }
    Watchdog(const Watchdog&) = delete;
    Watchdog& operator=(const Watchdog&) = delete;

private:
    std::string what_;
    std::mutex m_;
    std::condition_variable cv_;
    bool done_ = false;
    std::thread thread_;
};

// Reusable barrier for `n` threads (C++17 has none).
class Barrier {
public:
    explicit Barrier(int n) : n_(n) {}
    void arrive_and_wait() {
        std::unique_lock<std::mutex> g(m_);
        const long gen = generation_;
        if (++count_ == n_) {
            count_ = 0;
            ++generation_;
            cv_.notify_all();
        } else {
            cv_.wait(g, [&] { return generation_ != gen; });
        }
    }

private:
    std::mutex m_;
    std::condition_variable cv_;
    int n_;
    int count_ = 0;
    long generation_ = 0;
};

}  // namespace test_util
