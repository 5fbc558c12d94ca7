// texture_test.cpp - ownership and errors of the array, mipmapped array,
// texture and surface object handles and the 3D copy (cpp/texture.*), against
// a small recording driver table: what backs an object is destroyed only
// after the object, whatever order the handles are dropped in.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "driver.hpp"
#include "test_driver.hpp"
#include "error.hpp"
#include "texture.hpp"

using namespace cuda_core;

namespace {

// What the recording driver saw, in order ("create array", "destroy tex", ...).
struct Seen {
    std::vector<std::string> log;
    std::vector<std::string> reported;
    CUresult create_result = CUDA_SUCCESS;
    CUresult destroy_result = CUDA_SUCCESS;
    CUcontext current = nullptr;  // single-threaded
    CUcontext context_at_call = nullptr;
    CUDA_RESOURCE_DESC resource{};
    CUstream copy_stream = nullptr;
} seen;

CUarray const kArray = reinterpret_cast<CUarray>(0xA100);
CUarray const kLevel = reinterpret_cast<CUarray>(0xA200);
CUmipmappedArray const kMipmap = reinterpret_cast<CUmipmappedArray>(0xB100);
CUtexObject const kTexture = 0xC100;
CUsurfObject const kSurface = 0xD100;

DriverTable recording_table() {
    DriverTable t{};
    t.cuArray3DCreate_ = [](CUarray* out, const CUDA_ARRAY3D_DESCRIPTOR*) -> CUresult {
        seen.context_at_call = seen.current;
        if (seen.create_result != CUDA_SUCCESS) return seen.create_result;
        seen.log.emplace_back("create array");
        *out = kArray;
        return CUDA_SUCCESS;
    };
    t.cuArrayDestroy_ = [](CUarray a) -> CUresult {
        EXPECT_EQ(a, kArray) << "only owned arrays are destroyed";
        seen.log.emplace_back("destroy array");
        return seen.destroy_result;
    };
    t.cuMipmappedArrayCreate_ = [](CUmipmappedArray* out, const CUDA_ARRAY3D_DESCRIPTOR*, unsigned) -> CUresult {
        seen.log.emplace_back("create mipmap");
        *out = kMipmap;
        return CUDA_SUCCESS;
    };
    t.cuMipmappedArrayGetLevel_ = [](CUarray* out, CUmipmappedArray m, unsigned level) -> CUresult {
        EXPECT_EQ(m, kMipmap);
        if (level > 2) return CUDA_ERROR_INVALID_VALUE;
        *out = kLevel;
        return CUDA_SUCCESS;
    };
    t.cuMipmappedArrayDestroy_ = [](CUmipmappedArray) -> CUresult {
        seen.log.emplace_back("destroy mipmap");
        return CUDA_SUCCESS;
    };
    t.cuTexObjectCreate_ = [](CUtexObject* out, const CUDA_RESOURCE_DESC* res, const CUDA_TEXTURE_DESC*,
                              const CUDA_RESOURCE_VIEW_DESC*) -> CUresult {
        seen.context_at_call = seen.current;
        seen.resource = *res;
        if (seen.create_result != CUDA_SUCCESS) return seen.create_result;
        seen.log.emplace_back("create tex");
        *out = kTexture;
        return CUDA_SUCCESS;
    };
    t.cuTexObjectDestroy_ = [](CUtexObject) -> CUresult {
        seen.log.emplace_back("destroy tex");
        return CUDA_SUCCESS;
    };
    t.cuSurfObjectCreate_ = [](CUsurfObject* out, const CUDA_RESOURCE_DESC* res) -> CUresult {
        seen.resource = *res;
        seen.log.emplace_back("create surf");
        *out = kSurface;
        return CUDA_SUCCESS;
    };
    t.cuSurfObjectDestroy_ = [](CUsurfObject) -> CUresult {
        seen.log.emplace_back("destroy surf");
        return CUDA_SUCCESS;
    };
    t.cuMemcpy3DAsync_ = [](const CUDA_MEMCPY3D*, CUstream s) -> CUresult {
        seen.context_at_call = seen.current;
        seen.copy_stream = s;
        return CUDA_SUCCESS;
    };
    t.cuCtxGetCurrent_ = [](CUcontext* c) -> CUresult {
        *c = seen.current;
        return CUDA_SUCCESS;
    };
    t.cuCtxPushCurrent_ = [](CUcontext c) -> CUresult {
        seen.current = c;
        return CUDA_SUCCESS;
    };
    t.cuCtxPopCurrent_ = [](CUcontext* c) -> CUresult {
        if (c) *c = seen.current;
        seen.current = nullptr;
        return CUDA_SUCCESS;
    };
    return t;
}

void record_report(const char* what, CUresult) noexcept { seen.reported.emplace_back(what); }

using Log = std::vector<std::string>;

class Texture : public ::testing::Test {
protected:
    DriverTable table = recording_table();
    ContextHandle ctx = std::make_shared<const ContextBox>(ContextBox{reinterpret_cast<CUcontext>(0x77), 0, 0});
    CUDA_ARRAY3D_DESCRIPTOR desc{};
    void SetUp() override {
        seen = Seen{};
        test_driver::install(table);
        install_cleanup_reporter(&record_report);
        take_last_error();
    }
    void TearDown() override {
        install_cleanup_reporter(nullptr);
        test_driver::uninstall();
    }
};

TEST_F(Texture, ArrayIsCreatedInItsContextAndDestroyedOnce) {
    OpaqueArrayHandle a = create_array_handle(ctx, desc);
    ASSERT_TRUE(a);
    EXPECT_EQ(a->array, kArray);
    EXPECT_EQ(seen.context_at_call, ctx->context);  // pushed for the call
    EXPECT_EQ(seen.current, nullptr);               // and popped
    EXPECT_EQ(a->context, ctx);
    OpaqueArrayHandle copy = a;
    a.reset();
    EXPECT_EQ(seen.log, (Log{"create array"}));
    copy.reset();
    EXPECT_EQ(seen.log, (Log{"create array", "destroy array"}));
    EXPECT_TRUE(seen.reported.empty());
}

TEST_F(Texture, FailedCreationOwnsNothing) {
    seen.create_result = CUDA_ERROR_INVALID_VALUE;
    EXPECT_FALSE(create_array_handle(ctx, desc));
    EXPECT_EQ(take_last_error(), CUDA_ERROR_INVALID_VALUE);
    EXPECT_FALSE(create_array_handle(ContextHandle{}, desc));
    EXPECT_EQ(take_last_error(), CUDA_ERROR_INVALID_CONTEXT);
    seen.create_result = CUDA_SUCCESS;
    OpaqueArrayHandle a = create_array_handle(ctx, desc);
    seen.create_result = CUDA_ERROR_NOT_SUPPORTED;
    CUDA_RESOURCE_DESC res{};
    res.resType = CU_RESOURCE_TYPE_ARRAY;
    EXPECT_FALSE(create_tex_object_handle(ctx, res, CUDA_TEXTURE_DESC{}, TextureBacking{a, {}, {}}));
    EXPECT_EQ(take_last_error(), CUDA_ERROR_NOT_SUPPORTED);
    EXPECT_EQ(seen.log, (Log{"create array"}));      // the array is still the caller's
    a.reset();
    EXPECT_EQ(seen.log, (Log{"create array", "destroy array"}));
}

TEST_F(Texture, TextureOwnsItsArrayAndIsDestroyedFirst) {
    OpaqueArrayHandle a = create_array_handle(ctx, desc);
    CUDA_RESOURCE_DESC res{};
    res.resType = CU_RESOURCE_TYPE_ARRAY;  // the factory fills the handle from the backing
    TexObjectHandle tex = create_tex_object_handle(ctx, res, CUDA_TEXTURE_DESC{}, TextureBacking{a, {}, {}});
    ASSERT_TRUE(tex);
    EXPECT_EQ(seen.resource.res.array.hArray, kArray);
    EXPECT_EQ(seen.context_at_call, ctx->context);
    a.reset();
    EXPECT_EQ(seen.log, (Log{"create array", "create tex"}));
    tex.reset();
    EXPECT_EQ(seen.log, (Log{"create array", "create tex", "destroy tex", "destroy array"}));
}

TEST_F(Texture, TextureWithoutItsBackingIsRefused) {
    CUDA_RESOURCE_DESC res{};
    res.resType = CU_RESOURCE_TYPE_ARRAY;
    EXPECT_FALSE(create_tex_object_handle(ctx, res, CUDA_TEXTURE_DESC{}, TextureBacking{}));
    EXPECT_EQ(take_last_error(), CUDA_ERROR_INVALID_HANDLE);
    res.resType = CU_RESOURCE_TYPE_MIPMAPPED_ARRAY;
    EXPECT_FALSE(create_tex_object_handle(ctx, res, CUDA_TEXTURE_DESC{}, TextureBacking{}));
    EXPECT_EQ(take_last_error(), CUDA_ERROR_INVALID_HANDLE);
    res.resType = CUresourcetype(0x55);
    EXPECT_FALSE(create_tex_object_handle(ctx, res, CUDA_TEXTURE_DESC{}, TextureBacking{}));
    EXPECT_EQ(take_last_error(), CUDA_ERROR_INVALID_VALUE);
    EXPECT_TRUE(seen.log.empty());
}

TEST_F(Texture, LevelOwnsItsMipmapAndIsNeverDestroyedItself) {
    MipmappedArrayHandle mip = create_mipmapped_array_handle(ctx, desc, 3);
    ASSERT_TRUE(mip);
    OpaqueArrayHandle level = mipmapped_array_level(mip, 1);
    ASSERT_TRUE(level);
    EXPECT_EQ(level->array, kLevel);
    EXPECT_FALSE(level->owned);
    EXPECT_FALSE(mipmapped_array_level(mip, 3));
    EXPECT_EQ(take_last_error(), CUDA_ERROR_INVALID_VALUE);
    CUDA_RESOURCE_DESC res{};
    res.resType = CU_RESOURCE_TYPE_MIPMAPPED_ARRAY;
    TexObjectHandle tex = create_tex_object_handle(ctx, res, CUDA_TEXTURE_DESC{}, TextureBacking{{}, mip, {}});
    EXPECT_EQ(seen.resource.res.mipmap.hMipmappedArray, kMipmap);
    mip.reset();
    tex.reset();
    EXPECT_EQ(seen.log, (Log{"create mipmap", "create tex", "destroy tex"}));
    level.reset();  // the last owner: the mipmap goes, the level with it (no cuArrayDestroy)
    EXPECT_EQ(seen.log, (Log{"create mipmap", "create tex", "destroy tex", "destroy mipmap"}));
}

TEST_F(Texture, SurfaceOwnsItsArray) {
    OpaqueArrayHandle a = create_array_handle(ctx, desc);
    SurfObjectHandle s = create_surf_object_handle(ctx, a);
    ASSERT_TRUE(s);
    EXPECT_EQ(seen.resource.resType, CU_RESOURCE_TYPE_ARRAY);
    EXPECT_EQ(seen.resource.res.array.hArray, kArray);
    a.reset();
    s.reset();
    EXPECT_EQ(seen.log, (Log{"create array", "create surf", "destroy surf", "destroy array"}));
    EXPECT_FALSE(create_surf_object_handle(ctx, OpaqueArrayHandle{}));
    EXPECT_EQ(take_last_error(), CUDA_ERROR_INVALID_HANDLE);
}

TEST_F(Texture, BorrowedArraysAreDestroyedOnlyWhenOwned) {
    borrow_array_handle(kLevel, ctx, false).reset();
    EXPECT_TRUE(seen.log.empty());
    borrow_array_handle(kArray, ctx, true).reset();
    EXPECT_EQ(seen.log, (Log{"destroy array"}));
    EXPECT_FALSE(borrow_array_handle(nullptr, ctx, true));
    EXPECT_EQ(take_last_error(), CUDA_ERROR_INVALID_HANDLE);
}

TEST_F(Texture, DestroyFailureIsReportedNotThrown) {
    seen.destroy_result = CUDA_ERROR_INVALID_HANDLE;
    create_array_handle(ctx, desc).reset();
    ASSERT_EQ(seen.reported.size(), 1u);
    EXPECT_EQ(seen.reported[0], "cuArrayDestroy");
}

TEST_F(Texture, CopyRunsInTheStreamsContextOrTheArrays) {
    auto other = std::make_shared<const ContextBox>(ContextBox{reinterpret_cast<CUcontext>(0x99), 1, 1});
    auto stream = std::make_shared<const StreamBox>(StreamBox{reinterpret_cast<CUstream>(0x88), other, false});
    CUDA_MEMCPY3D params{};
    EXPECT_EQ(array_copy_3d(params, stream, ctx), CUDA_SUCCESS);
    EXPECT_EQ(seen.context_at_call, other->context);
    EXPECT_EQ(seen.copy_stream, stream->stream);
    auto foreign = std::make_shared<const StreamBox>(StreamBox{reinterpret_cast<CUstream>(0x89), ContextHandle{}, false});
    EXPECT_EQ(array_copy_3d(params, foreign, ctx), CUDA_SUCCESS);
    EXPECT_EQ(seen.context_at_call, ctx->context);
    EXPECT_EQ(seen.current, nullptr);
    EXPECT_EQ(array_copy_3d(params, StreamHandle{}, ctx), CUDA_ERROR_INVALID_HANDLE);
}

}  // namespace
