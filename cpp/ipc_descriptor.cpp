// ipc_descriptor.cpp - the descriptor checksums, exactly as ipc_descriptor.hpp
// specifies them. Do not share code with the cache key hash (ipc_import.cpp).
#include "ipc_descriptor.hpp"

#include <cstddef>
#include <cstring>

namespace cuda_core {

namespace {

// Word `i` of the export bytes, little-endian on every host (one load on a
// little-endian host: the hot import path checks every descriptor).
std::uint64_t export_word_le(const IpcExportBytes& bytes, std::size_t i) noexcept {
    std::uint64_t word;
    std::memcpy(&word, bytes.data() + 8 * i, sizeof word);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    word = __builtin_bswap64(word);
#endif
    return word;
}

void store_le(unsigned char* out, std::uint64_t v) noexcept {
    for (int k = 0; k < 8; ++k) out[k] = static_cast<unsigned char>(v >> (8 * k));
}

std::uint64_t load_le(const unsigned char* in) noexcept {
    std::uint64_t v = 0;
    for (int k = 0; k < 8; ++k) v |= static_cast<std::uint64_t>(in[k]) << (8 * k);
    return v;
}

constexpr unsigned char kTrailerMagic[3] = {'I', 'P', 'D'};
constexpr std::size_t kExportSize = sizeof(CUmemPoolPtrExportData);

}  // namespace

// Owns nothing; a pure function of the 64 bytes (version 1).
std::uint64_t ipc_export_checksum_v1(const IpcExportBytes& bytes) noexcept {
    std::uint64_t h = 0x0C0DAC0DE1BC5AFEull;
    for (std::size_t i = 0; i < bytes.size() / 8; ++i) {
        h = (h ^ export_word_le(bytes, i)) * 0xFF51AFD7ED558CCDull;
        h ^= h >> 32;
    }
    h *= 0xC4CEB9FE1A85EC53ull;
    return h ^ (h >> 29);
}

// Owns nothing; a pure function of (checksum, size) (version 1).
std::uint64_t ipc_size_checksum_v1(std::uint64_t export_checksum, std::uint64_t size) noexcept {
    std::uint64_t h = (export_checksum ^ 0x5151E5C0DEull) + size * 0x9E3779B97F4A7C15ull;
    h = (h ^ (h >> 31)) * 0xBF58476D1CE4E5B9ull;
    return h ^ (h >> 30);
}

// Owns nothing; writes export bytes + trailer (version 1) into `out`.
void ipc_descriptor_payload(const IpcExportBytes& bytes, std::uint64_t size, IpcDescriptorPayload* out) noexcept {
    unsigned char* p = out->data();
    std::memcpy(p, bytes.data(), kExportSize);
    std::memcpy(p + kExportSize, kTrailerMagic, sizeof kTrailerMagic);
    p[kExportSize + 3] = kIpcDescriptorTrailerVersion;
    const std::uint64_t c = ipc_export_checksum_v1(bytes);
    store_le(p + kExportSize + 4, c);
    store_le(p + kExportSize + 12, ipc_size_checksum_v1(c, size));
}

// Owns nothing; reads `len` bytes of `payload`, writes the export bytes to `out`.
IpcDescriptorCheck ipc_descriptor_check(const unsigned char* payload, std::size_t len, std::uint64_t size,
                                        IpcExportBytes* out) noexcept {
    if (len < kExportSize) return IpcDescriptorCheck::kTooShort;
    std::memcpy(out->data(), payload, kExportSize);
    if (len == kExportSize) return IpcDescriptorCheck::kNoTrailer;
    const unsigned char* t = payload + kExportSize;
    if (len - kExportSize < 4 || std::memcmp(t, kTrailerMagic, sizeof kTrailerMagic) != 0) {
        return IpcDescriptorCheck::kBadTrailer;
    }
    if (t[3] != kIpcDescriptorTrailerVersion) return IpcDescriptorCheck::kBadVersion;
    if (len != kIpcDescriptorPayloadSize) return IpcDescriptorCheck::kBadTrailer;
    const std::uint64_t c = ipc_export_checksum_v1(*out);
    if (load_le(t + 4) != c) return IpcDescriptorCheck::kCorrupted;
    return load_le(t + 12) == ipc_size_checksum_v1(c, size) ? IpcDescriptorCheck::kSizeVerified
                                                           : IpcDescriptorCheck::kSizeUnverified;
}

}  // namespace cuda_core
