// ipc_descriptor.hpp - the IPC buffer descriptor's wire format: the 64 export
// bytes and the versioned trailer with the two checksums an exporter writes
// after them.
//
// What travels between processes (IPCBufferDescriptor, pickled exactly as
// upstream cuda.core 1.2.2 pickles it) is (payload, size). The payload is
//   bytes [0, 64)   the driver's export data (CUmemPoolPtrExportData)
//   bytes [64, 84)  the trailer (version 1), built by ipc_descriptor_payload:
//     [64, 67)  magic "IPD"
//     [67]      trailer version (1: the two checksums below, version 1)
//     [68, 76)  ipc_export_checksum_v1(export data), little-endian
//     [76, 84)  ipc_size_checksum_v1(that checksum, size), little-endian
// ipc_descriptor_check parses and verifies it. A payload of exactly 64 bytes
// (upstream's own, or hand-built) has no trailer and is refused at import: its
// export data cannot be checked. The checksum functions
// below ARE the wire format: both processes must compute the same values, so
// they are specified here bit for bit, versioned, pinned by known-answer tests
// (cpp/tests/ipc_descriptor_test.cpp, tests/test_ipc_descriptor_wire.py), and
// share no code with anything in-process (the IPC import cache has its own
// key hash, ipc_import.cpp): changing the cache hash cannot change the wire.
// A new checksum is a new version: add *_v2, keep *_v1, switch the unversioned
// names, write a new trailer version and say which versions an importer
// accepts (today: trailer version 1 only).
//
// Why a checksum at all (workaround): the H200's driver 580 dereferences the
// offset and size fields of the export data unchecked, so a corrupted
// descriptor segfaults cuMemPoolImportPointer (measured with
// tests/scenarios/descriptor_fuzz_probe.py); the importer refuses a mismatch
// before calling the driver. Can go when the driver validates export data
// (not fixed as of 580.159). Depends on nothing but <cuda.h> (for the size).
#pragma once

#include <cuda.h>

#include <array>
#include <cstddef>
#include <cstdint>

namespace cuda_core {

// The 64 bytes of CUmemPoolPtrExportData, as a value.
using IpcExportBytes = std::array<unsigned char, sizeof(CUmemPoolPtrExportData)>;
static_assert(sizeof(CUmemPoolPtrExportData) == 64, "the wire format assumes 64 export bytes");

// The checksum version this build writes and accepts.
constexpr int kIpcDescriptorChecksumVersion = 1;

// Export checksum, version 1. All arithmetic is modulo 2^64; word i is bytes
// [8i, 8i+8) read LITTLE-ENDIAN (whatever the host's byte order):
//   h = 0x0C0DAC0DE1BC5AFE
//   for i in 0..7:  h = (h XOR word_i) * 0xFF51AFD7ED558CCD;  h = h XOR (h >> 32)
//   h = h * 0xC4CEB9FE1A85EC53
//   return h XOR (h >> 29)
std::uint64_t ipc_export_checksum_v1(const IpcExportBytes& bytes) noexcept;

// Size checksum, version 1, of (export checksum c, buffer size s), modulo 2^64:
//   h = (c XOR 0x5151E5C0DE) + s * 0x9E3779B97F4A7C15
//   h = (h XOR (h >> 31)) * 0xBF58476D1CE4E5B9
//   return h XOR (h >> 30)
// When it matches, the size is the exporter's and the import need not ask the
// driver for the mapping extent.
std::uint64_t ipc_size_checksum_v1(std::uint64_t export_checksum, std::uint64_t size) noexcept;

// The current version of each (what exporters write and importers check).
inline std::uint64_t ipc_export_checksum(const IpcExportBytes& bytes) noexcept {
    return ipc_export_checksum_v1(bytes);
}
inline std::uint64_t ipc_size_checksum(std::uint64_t export_checksum, std::uint64_t size) noexcept {
    return ipc_size_checksum_v1(export_checksum, size);
}

// ---------------------------------------------------------------- payload

// Bytes of the trailer after the 64 export bytes, and of a whole payload.
constexpr std::size_t kIpcDescriptorTrailerSize = 20;
constexpr std::size_t kIpcDescriptorPayloadSize = sizeof(CUmemPoolPtrExportData) + kIpcDescriptorTrailerSize;
// The trailer version this build writes (and the only one it accepts).
constexpr unsigned char kIpcDescriptorTrailerVersion = 1;

// A whole payload as an exporter writes it: export bytes + trailer.
using IpcDescriptorPayload = std::array<unsigned char, kIpcDescriptorPayloadSize>;

// Owns nothing; writes the payload for (export bytes, buffer size) into `out`.
void ipc_descriptor_payload(const IpcExportBytes& bytes, std::uint64_t size, IpcDescriptorPayload* out) noexcept;

// What ipc_descriptor_check found, best first.
enum class IpcDescriptorCheck : int {
    kSizeVerified = 0,    // export bytes and size are the exporter's
    kSizeUnverified = 1,  // export bytes are the exporter's; the size is not (query the mapping)
    kTooShort = 2,        // fewer than 64 bytes
    kNoTrailer = 3,       // exactly 64 bytes: no checksum to verify
    kBadTrailer = 4,      // a trailer of the wrong length or without the magic
    kBadVersion = 5,      // the magic, but a trailer version this build does not read
    kCorrupted = 6,       // the export bytes do not match the trailer's checksum
};

// Owns nothing; parses `payload` (`len` bytes, `payload` may be null when len is
// 0), copies its export bytes to `out` when it has at least 64, and verifies
// them and `size` against the trailer.
IpcDescriptorCheck ipc_descriptor_check(const unsigned char* payload, std::size_t len, std::uint64_t size,
                                        IpcExportBytes* out) noexcept;

}  // namespace cuda_core
