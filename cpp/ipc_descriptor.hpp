// ipc_descriptor.hpp - the IPC buffer descriptor's wire format: the 64 export
// bytes and the two checksums an exporter writes beside them.
//
// What travels between processes (IPCBufferDescriptor, pickled) is
// (export bytes, size, export checksum, size checksum). The checksum functions
// below ARE the wire format: both processes must compute the same values, so
// they are specified here bit for bit, versioned, pinned by known-answer tests
// (cpp/tests/ipc_descriptor_test.cpp, tests/test_ipc_descriptor_wire.py), and
// share no code with anything in-process (the IPC import cache has its own
// key hash, ipc_import.cpp): changing the cache hash cannot change the wire.
// A new checksum is a new version: add *_v2, keep *_v1, switch the unversioned
// names, and say which versions an importer accepts.
//
// Why a checksum at all (workaround): the H200's driver 580 dereferences the
// offset and size fields of the export data unchecked, so a corrupted
// descriptor segfaults cuMemPoolImportPointer (seen 2026-12-02 with
// tests/scenarios/descriptor_fuzz_probe.py); the importer refuses a mismatch
// before calling the driver. Can go when the driver validates export data
// (not fixed as of 580.159). Depends on nothing but <cuda.h> (for the size).
#pragma once

#include <cuda.h>

#include <array>
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

}  // namespace cuda_core
