// socket_io.hpp - what the exporter/importer programs (bench/raw_driver.cpp,
// bench/cpp_entry.cpp, tests/scenarios/raw_pool_import_fds.cpp) send over their
// unix socketpair: whole buffers, and a message that carries one fd
// (SCM_RIGHTS). Every function exits the process (status 2, the program's name
// and what failed on stderr) when the socket fails: the peer is gone.
#pragma once

#include <errno.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

namespace socket_io {

// Says `what` failed (prefixed with the program's name) and exits with status 2.
[[noreturn]] inline void fail(const char* what) {
    std::fprintf(stderr, "%s: %s\n", program_invocation_short_name, what);
    std::fflush(stderr);
    _exit(2);
}

// Sends all `n` bytes at `p`; owns nothing.
inline void send_all(int sock, const void* p, size_t n) {
    const char* c = static_cast<const char*>(p);
    while (n) {
        ssize_t k = ::send(sock, c, n, 0);
        if (k <= 0) fail("send failed");
        c += k;
        n -= size_t(k);
    }
}

// Receives exactly `n` bytes into `p`; owns nothing.
inline void recv_all(int sock, void* p, size_t n) {
    char* c = static_cast<char*>(p);
    while (n) {
        ssize_t k = ::recv(sock, c, n, 0);
        if (k <= 0) fail("recv failed (peer gone)");
        c += k;
        n -= size_t(k);
    }
}

// Sends `len` bytes with `fd` attached (-1: none); the fd stays the caller's.
inline void send_msg(int sock, int fd, const void* data, size_t len) {
    msghdr msg{};
    iovec iov{const_cast<void*>(data), len};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    char control[CMSG_SPACE(sizeof(int))] = {};
    if (fd >= 0) {
        msg.msg_control = control;
        msg.msg_controllen = sizeof control;
        cmsghdr* cm = CMSG_FIRSTHDR(&msg);
        cm->cmsg_level = SOL_SOCKET;
        cm->cmsg_type = SCM_RIGHTS;
        cm->cmsg_len = CMSG_LEN(sizeof(int));
        std::memcpy(CMSG_DATA(cm), &fd, sizeof fd);
    }
    if (::sendmsg(sock, &msg, 0) != static_cast<ssize_t>(len)) fail("sendmsg failed");
}

// Receives `len` bytes and the fd sent with them (-1 when none); the caller owns the fd.
inline int recv_msg(int sock, void* data, size_t len) {
    msghdr msg{};
    iovec iov{data, len};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    char control[CMSG_SPACE(sizeof(int))] = {};
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    if (::recvmsg(sock, &msg, MSG_WAITALL) != static_cast<ssize_t>(len)) fail("recvmsg failed (peer gone)");
    int fd = -1;
    cmsghdr* cm = CMSG_FIRSTHDR(&msg);
    if (cm && cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS) std::memcpy(&fd, CMSG_DATA(cm), sizeof fd);
    return fd;
}

// recv_msg for a message that must carry an fd; the caller owns it.
inline int recv_fd_msg(int sock, void* data, size_t len) {
    int fd = recv_msg(sock, data, len);
    if (fd < 0) fail("no fd received");
    return fd;
}

}  // namespace socket_io
