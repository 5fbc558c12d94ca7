// api_checkpoint.cpp - libcuda_sim exported: process checkpointing.
// Process checkpointing (cuCheckpointProcess*): the state machine of the
// calling process only. The simulator cannot see another process's CUDA
// state, so any other pid is refused as the driver refuses a process that
// holds no CUDA checkpoint state (CUDA_ERROR_INVALID_VALUE). A transition
// from the wrong state is CUDA_ERROR_ILLEGAL_STATE, as the driver's.
#include "sim_internal.hpp"

#include <unistd.h>

#include <cstddef>
#include <cstring>
#include <mutex>

namespace cuda_sim {
namespace {

std::mutex g_checkpoint_mu;
pid_t g_checkpoint_owner = 0;  // the pid the state belongs to (a forked child starts over)
CUprocessState g_checkpoint_state = CU_PROCESS_STATE_RUNNING;

// The state of `pid` if it is this process (creating it after a fork), else nullptr.
CUprocessState* own_state(int pid) {
    const pid_t self = getpid();
    if (pid != self) return nullptr;
    if (g_checkpoint_owner != self) {
        g_checkpoint_owner = self;
        g_checkpoint_state = CU_PROCESS_STATE_RUNNING;
    }
    return &g_checkpoint_state;
}

// True when every byte of `p[0..n)` is zero (the reserved fields of the argument structs).
bool all_zero(const void* p, size_t n) {
    const unsigned char* b = static_cast<const unsigned char*>(p);
    for (size_t i = 0; i < n; ++i)
        if (b[i] != 0) return false;
    return true;
}

// True when `uuid` is the UUID of one of the simulated physical devices.
bool is_device_uuid(const CUuuid& uuid) {
    for (int d = 0; d < g_knobs.device_count; ++d) {
        CUuuid u;
        if (cuDeviceGetUuid(&u, d) == CUDA_SUCCESS && std::memcmp(u.bytes, uuid.bytes, 16) == 0) return true;
    }
    return false;
}

// Moves this process from `from` to `to`; the CUresult of the transition.
CUresult transition(int pid, CUprocessState from, CUprocessState to) {
    std::lock_guard<std::mutex> lock(g_checkpoint_mu);
    CUprocessState* state = own_state(pid);
    if (!state) return CUDA_ERROR_INVALID_VALUE;
    if (*state != from) return CUDA_ERROR_ILLEGAL_STATE;
    *state = to;
    return CUDA_SUCCESS;
}

}  // namespace
}  // namespace cuda_sim

using namespace cuda_sim;

SIM_EXPORT CUresult CUDAAPI cuCheckpointProcessGetState(int pid, CUprocessState* state) {
    SIM_ENTER(cuCheckpointProcessGetState);
    if (!state) return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard<std::mutex> lock(g_checkpoint_mu);
    CUprocessState* own = own_state(pid);
    if (!own) return CUDA_ERROR_INVALID_VALUE;
    *state = *own;
    return CUDA_SUCCESS;
}

// The restore thread of this process is its main thread (tid == pid on Linux).
SIM_EXPORT CUresult CUDAAPI cuCheckpointProcessGetRestoreThreadId(int pid, int* tid) {
    SIM_ENTER(cuCheckpointProcessGetRestoreThreadId);
    if (!tid) return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard<std::mutex> lock(g_checkpoint_mu);
    if (!own_state(pid)) return CUDA_ERROR_INVALID_VALUE;
    *tid = pid;
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult CUDAAPI cuCheckpointProcessLock(int pid, CUcheckpointLockArgs* args) {
    SIM_ENTER(cuCheckpointProcessLock);
    if (args && (args->reserved0 != 0 || !all_zero(args->reserved1, sizeof args->reserved1)))
        return CUDA_ERROR_INVALID_VALUE;
    return transition(pid, CU_PROCESS_STATE_RUNNING, CU_PROCESS_STATE_LOCKED);
}

SIM_EXPORT CUresult CUDAAPI cuCheckpointProcessCheckpoint(int pid, CUcheckpointCheckpointArgs* args) {
    SIM_ENTER(cuCheckpointProcessCheckpoint);
    // Every field is reserved or custom storage (not modelled) in every cuda.h: all must be zero.
    if (args && !all_zero(args, sizeof *args)) return CUDA_ERROR_INVALID_VALUE;
    return transition(pid, CU_PROCESS_STATE_LOCKED, CU_PROCESS_STATE_CHECKPOINTED);
}

// A GPU remapping must name simulated devices on both sides.
SIM_EXPORT CUresult CUDAAPI cuCheckpointProcessRestore(int pid, CUcheckpointRestoreArgs* args) {
    SIM_ENTER(cuCheckpointProcessRestore);
    if (args) {
        // After the GPU pairs: reserved fields (and custom storage, not modelled), all zero.
        const size_t tail = offsetof(CUcheckpointRestoreArgs, gpuPairsCount) + sizeof args->gpuPairsCount;
        if (!all_zero(reinterpret_cast<const char*>(args) + tail, sizeof *args - tail)) return CUDA_ERROR_INVALID_VALUE;
        if (args->gpuPairsCount > 0 && args->gpuPairs == nullptr) return CUDA_ERROR_INVALID_VALUE;
        for (unsigned int i = 0; i < args->gpuPairsCount; ++i)
            if (!is_device_uuid(args->gpuPairs[i].oldUuid) || !is_device_uuid(args->gpuPairs[i].newUuid))
                return CUDA_ERROR_INVALID_VALUE;
    }
    return transition(pid, CU_PROCESS_STATE_CHECKPOINTED, CU_PROCESS_STATE_LOCKED);
}

SIM_EXPORT CUresult CUDAAPI cuCheckpointProcessUnlock(int pid, CUcheckpointUnlockArgs* args) {
    SIM_ENTER(cuCheckpointProcessUnlock);
    if (args && !all_zero(args->reserved, sizeof args->reserved)) return CUDA_ERROR_INVALID_VALUE;
    return transition(pid, CU_PROCESS_STATE_LOCKED, CU_PROCESS_STATE_RUNNING);
}
