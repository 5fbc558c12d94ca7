// api_tensor_maps.cpp - libcuda_sim exported: cuTensorMapEncodeTiled,
// cuTensorMapEncodeIm2col, cuTensorMapEncodeIm2colWide, cuTensorMapReplaceAddress.
//
// What is modelled: the argument rules of cuda.h's documentation (rank, address
// and stride alignment, dimension, box, element-stride and corner ranges, enum
// values, the interleave/swizzle inner-box limits), each failure being
// CUDA_ERROR_INVALID_VALUE. The 128-byte map a success writes is the
// simulator's own layout (the driver's is opaque): the global address in the
// first 8 bytes, a tag in the next 4, then the rank, the data type and the
// kind, so that cuTensorMapReplaceAddress can check it was made here and
// tests can read the address back. Nothing in the simulator executes TMA.
#include "sim_internal.hpp"

namespace {

constexpr uint32_t kTag = 0x544d4150;  // "TMAP"
enum MapKind : uint32_t { kTiled = 1, kIm2col = 2, kIm2colWide = 3 };

// Bytes per element of a data type; 0 for a value cuda.h does not define.
size_t element_size(int type) {
    switch (type) {
        case CU_TENSOR_MAP_DATA_TYPE_UINT8: return 1;
        case CU_TENSOR_MAP_DATA_TYPE_UINT16:
        case CU_TENSOR_MAP_DATA_TYPE_FLOAT16:
        case CU_TENSOR_MAP_DATA_TYPE_BFLOAT16: return 2;
        case CU_TENSOR_MAP_DATA_TYPE_UINT32:
        case CU_TENSOR_MAP_DATA_TYPE_INT32:
        case CU_TENSOR_MAP_DATA_TYPE_FLOAT32:
        case CU_TENSOR_MAP_DATA_TYPE_FLOAT32_FTZ:
        case CU_TENSOR_MAP_DATA_TYPE_TFLOAT32:
        case CU_TENSOR_MAP_DATA_TYPE_TFLOAT32_FTZ: return 4;
        case CU_TENSOR_MAP_DATA_TYPE_UINT64:
        case CU_TENSOR_MAP_DATA_TYPE_INT64:
        case CU_TENSOR_MAP_DATA_TYPE_FLOAT64: return 8;
        default: return 0;  // the packed 4/6-bit types are not modelled
    }
}

// The bytes a swizzle mode spans (0 for NONE, SIZE_MAX for a value it does not define).
size_t swizzle_span(int swizzle) {
    switch (swizzle) {
        case CU_TENSOR_MAP_SWIZZLE_NONE: return 0;
        case CU_TENSOR_MAP_SWIZZLE_32B: return 32;
        case CU_TENSOR_MAP_SWIZZLE_64B: return 64;
        case CU_TENSOR_MAP_SWIZZLE_128B:
        case CU_TENSOR_MAP_SWIZZLE_128B_ATOM_32B:
        case CU_TENSOR_MAP_SWIZZLE_128B_ATOM_32B_FLIP_8B:
        case CU_TENSOR_MAP_SWIZZLE_128B_ATOM_64B: return 128;
        default: return SIZE_MAX;
    }
}

// The rules every encoding shares: map, type, rank, address, dims, strides,
// element strides and enums. `inner_box_bytes` (0: none) is checked against
// the interleave and swizzle limits.
CUresult check_common(CUtensorMap* map, int type, cuuint32_t rank, cuuint32_t min_rank, const void* address,
                      const cuuint64_t* dims, const cuuint64_t* strides, const cuuint32_t* element_strides,
                      int interleave, int swizzle, int l2, int oob, size_t inner_box_bytes) {
    if (!map || !address || !dims || !element_strides) return CUDA_ERROR_INVALID_VALUE;
    const size_t esize = element_size(type);
    if (esize == 0) return CUDA_ERROR_INVALID_VALUE;
    if (rank < min_rank || rank > 5) return CUDA_ERROR_INVALID_VALUE;
    if (interleave < CU_TENSOR_MAP_INTERLEAVE_NONE || interleave > CU_TENSOR_MAP_INTERLEAVE_32B)
        return CUDA_ERROR_INVALID_VALUE;
    if (interleave != CU_TENSOR_MAP_INTERLEAVE_NONE && rank < 3) return CUDA_ERROR_INVALID_VALUE;
    const size_t align = interleave == CU_TENSOR_MAP_INTERLEAVE_32B ? 32 : 16;
    if (reinterpret_cast<uintptr_t>(address) % align != 0) return CUDA_ERROR_INVALID_VALUE;
    const size_t span = swizzle_span(swizzle);
    if (span == SIZE_MAX) return CUDA_ERROR_INVALID_VALUE;
    if (l2 < CU_TENSOR_MAP_L2_PROMOTION_NONE || l2 > CU_TENSOR_MAP_L2_PROMOTION_L2_256B)
        return CUDA_ERROR_INVALID_VALUE;
    if (oob != CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE && oob != CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA)
        return CUDA_ERROR_INVALID_VALUE;
    if (oob == CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA && type <= CU_TENSOR_MAP_DATA_TYPE_INT64)
        return CUDA_ERROR_INVALID_VALUE;  // NaN fill needs a floating-point type
    for (cuuint32_t i = 0; i < rank; ++i) {
        if (dims[i] == 0 || dims[i] > (cuuint64_t(1) << 32)) return CUDA_ERROR_INVALID_VALUE;
        if (element_strides[i] == 0 || element_strides[i] > 8) return CUDA_ERROR_INVALID_VALUE;
    }
    if (rank > 1 && !strides) return CUDA_ERROR_INVALID_VALUE;
    for (cuuint32_t i = 0; i + 1 < rank; ++i) {
        if (strides[i] % align != 0 || strides[i] >= (cuuint64_t(1) << 40)) return CUDA_ERROR_INVALID_VALUE;
    }
    if (inner_box_bytes != 0) {
        if (interleave == CU_TENSOR_MAP_INTERLEAVE_NONE) {
            if (inner_box_bytes % 16 != 0) return CUDA_ERROR_INVALID_VALUE;
            if (span != 0 && inner_box_bytes > span) return CUDA_ERROR_INVALID_VALUE;
        } else if (interleave == CU_TENSOR_MAP_INTERLEAVE_32B && swizzle != CU_TENSOR_MAP_SWIZZLE_32B) {
            return CUDA_ERROR_INVALID_VALUE;
        }
    }
    return CUDA_SUCCESS;
}

// Writes the simulator's map layout.
void write_map(CUtensorMap* map, const void* address, cuuint32_t rank, int type, MapKind kind) {
    unsigned char* out = reinterpret_cast<unsigned char*>(map);
    std::memset(out, 0, sizeof(CUtensorMap));
    const uint64_t a = reinterpret_cast<uintptr_t>(address);
    const uint32_t fields[4] = {kTag, rank, uint32_t(type), kind};
    std::memcpy(out, &a, 8);
    std::memcpy(out + 8, fields, sizeof fields);
}

// The im2col pixel-box corner range of a rank (cuda.h): 16, 8 and 5 bits for ranks 3, 4, 5.
bool corner_in_range(int v, cuuint32_t rank) {
    const int bits = rank == 3 ? 16 : rank == 4 ? 8 : 5;
    return v >= -(1 << (bits - 1)) && v <= (1 << (bits - 1)) - 1;
}

}  // namespace

SIM_EXPORT CUresult CUDAAPI cuTensorMapEncodeTiled(CUtensorMap* tensorMap, CUtensorMapDataType tensorDataType,
                                                   cuuint32_t tensorRank, void* globalAddress,
                                                   const cuuint64_t* globalDim, const cuuint64_t* globalStrides,
                                                   const cuuint32_t* boxDim, const cuuint32_t* elementStrides,
                                                   CUtensorMapInterleave interleave, CUtensorMapSwizzle swizzle,
                                                   CUtensorMapL2promotion l2Promotion,
                                                   CUtensorMapFloatOOBfill oobFill) {
    SIM_ENTER(cuTensorMapEncodeTiled);
    if (!boxDim || tensorRank < 1 || tensorRank > 5) return CUDA_ERROR_INVALID_VALUE;
    for (cuuint32_t i = 0; i < tensorRank; ++i)
        if (boxDim[i] == 0 || boxDim[i] > 256) return CUDA_ERROR_INVALID_VALUE;
    const int type = raw(tensorDataType);
    const size_t inner = boxDim[0] * (element_size(type) ? element_size(type) : 1);
    CUresult rc = check_common(tensorMap, type, tensorRank, 1, globalAddress, globalDim, globalStrides,
                               elementStrides, raw(interleave), raw(swizzle), raw(l2Promotion), raw(oobFill), inner);
    if (rc != CUDA_SUCCESS) return rc;
    write_map(tensorMap, globalAddress, tensorRank, type, kTiled);
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult CUDAAPI cuTensorMapEncodeIm2col(CUtensorMap* tensorMap, CUtensorMapDataType tensorDataType,
                                                    cuuint32_t tensorRank, void* globalAddress,
                                                    const cuuint64_t* globalDim, const cuuint64_t* globalStrides,
                                                    const int* pixelBoxLowerCorner, const int* pixelBoxUpperCorner,
                                                    cuuint32_t channelsPerPixel, cuuint32_t pixelsPerColumn,
                                                    const cuuint32_t* elementStrides,
                                                    CUtensorMapInterleave interleave, CUtensorMapSwizzle swizzle,
                                                    CUtensorMapL2promotion l2Promotion,
                                                    CUtensorMapFloatOOBfill oobFill) {
    SIM_ENTER(cuTensorMapEncodeIm2col);
    if (!pixelBoxLowerCorner || !pixelBoxUpperCorner || tensorRank < 3 || tensorRank > 5)
        return CUDA_ERROR_INVALID_VALUE;
    for (cuuint32_t i = 0; i + 2 < tensorRank; ++i)
        if (!corner_in_range(pixelBoxLowerCorner[i], tensorRank) || !corner_in_range(pixelBoxUpperCorner[i], tensorRank))
            return CUDA_ERROR_INVALID_VALUE;
    if (channelsPerPixel == 0 || channelsPerPixel > 256 || pixelsPerColumn == 0 || pixelsPerColumn > 1024)
        return CUDA_ERROR_INVALID_VALUE;
    const int type = raw(tensorDataType);
    const size_t inner = channelsPerPixel * (element_size(type) ? element_size(type) : 1);
    CUresult rc = check_common(tensorMap, type, tensorRank, 3, globalAddress, globalDim, globalStrides,
                               elementStrides, raw(interleave), raw(swizzle), raw(l2Promotion), raw(oobFill), inner);
    if (rc != CUDA_SUCCESS) return rc;
    write_map(tensorMap, globalAddress, tensorRank, type, kIm2col);
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult CUDAAPI cuTensorMapEncodeIm2colWide(
    CUtensorMap* tensorMap, CUtensorMapDataType tensorDataType, cuuint32_t tensorRank, void* globalAddress,
    const cuuint64_t* globalDim, const cuuint64_t* globalStrides, int pixelBoxLowerCornerWidth,
    int pixelBoxUpperCornerWidth, cuuint32_t channelsPerPixel, cuuint32_t pixelsPerColumn,
    const cuuint32_t* elementStrides, CUtensorMapInterleave interleave, CUtensorMapIm2ColWideMode mode,
    CUtensorMapSwizzle swizzle, CUtensorMapL2promotion l2Promotion, CUtensorMapFloatOOBfill oobFill) {
    SIM_ENTER(cuTensorMapEncodeIm2colWide);
    if (tensorRank < 3 || tensorRank > 5) return CUDA_ERROR_INVALID_VALUE;
    const int m = raw(mode);
    if (m != CU_TENSOR_MAP_IM2COL_WIDE_MODE_W && m != CU_TENSOR_MAP_IM2COL_WIDE_MODE_W128)
        return CUDA_ERROR_INVALID_VALUE;
    if (!corner_in_range(pixelBoxLowerCornerWidth, 3) || !corner_in_range(pixelBoxUpperCornerWidth, 3))
        return CUDA_ERROR_INVALID_VALUE;
    if (channelsPerPixel == 0 || channelsPerPixel > 256 || pixelsPerColumn == 0 || pixelsPerColumn > 1024)
        return CUDA_ERROR_INVALID_VALUE;
    // Wide mode: interleave NONE and a 64B or 128B swizzle only (cuda.h).
    if (raw(interleave) != CU_TENSOR_MAP_INTERLEAVE_NONE) return CUDA_ERROR_INVALID_VALUE;
    const int sw = raw(swizzle);
    if (sw != CU_TENSOR_MAP_SWIZZLE_64B && sw != CU_TENSOR_MAP_SWIZZLE_128B && sw != CU_TENSOR_MAP_SWIZZLE_128B_ATOM_32B)
        return CUDA_ERROR_INVALID_VALUE;
    const int type = raw(tensorDataType);
    CUresult rc = check_common(tensorMap, type, tensorRank, 3, globalAddress, globalDim, globalStrides,
                               elementStrides, raw(interleave), sw, raw(l2Promotion), raw(oobFill), 0);
    if (rc != CUDA_SUCCESS) return rc;
    write_map(tensorMap, globalAddress, tensorRank, type, kIm2colWide);
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult CUDAAPI cuTensorMapReplaceAddress(CUtensorMap* tensorMap, void* globalAddress) {
    SIM_ENTER(cuTensorMapReplaceAddress);
    if (!tensorMap || !globalAddress) return CUDA_ERROR_INVALID_VALUE;
    unsigned char* bytes = reinterpret_cast<unsigned char*>(tensorMap);
    uint32_t tag = 0;
    std::memcpy(&tag, bytes + 8, 4);
    if (tag != kTag) return CUDA_ERROR_INVALID_VALUE;  // not a map this driver encoded
    if (reinterpret_cast<uintptr_t>(globalAddress) % 16 != 0) return CUDA_ERROR_INVALID_VALUE;
    const uint64_t a = reinterpret_cast<uintptr_t>(globalAddress);
    std::memcpy(bytes, &a, 8);
    return CUDA_SUCCESS;
}
