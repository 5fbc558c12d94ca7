// api_linker.cpp - libcuda_sim exported: the driver's JIT linker (cuLinkCreate,
// cuLinkAddData, cuLinkAddFile, cuLinkComplete, cuLinkDestroy).
//
// The simulator compiles nothing. It checks what the driver checks cheaply
// (handles, option arrays, the input's format: PTX must name .version and
// .target, a cubin must be a CUDA ELF, a fatbin must carry its magic), and it
// resolves PTX function references across inputs: a `.extern .func NAME` that
// no input defines fails cuLinkComplete with CUDA_ERROR_INVALID_SOURCE (as the
// H200, driver 580, does) and the
// driver's "Undefined reference" line in the error log. The linked image is a
// minimal CUDA ELF whose string table holds every `.entry` of the PTX inputs
// (and the bytes of every cubin/fatbin input), so cuLibraryLoadData accepts it
// and cuLibraryGetKernel finds exactly the kernels the inputs define.
// Host objects and libraries (CU_JIT_INPUT_OBJECT/LIBRARY) and NVVM IR are not
// modelled: CUDA_ERROR_NOT_SUPPORTED.
#include <cctype>
#include <cstring>
#include <fstream>
#include <iterator>
#include <set>
#include <sstream>

#include "sim_internal.hpp"

namespace cuda_sim {
namespace {

constexpr Tag TAG_LINK = static_cast<Tag>(0x1C);

struct LinkState {
    char* info_log = nullptr;
    size_t info_size = 0;
    char* error_log = nullptr;
    size_t error_size = 0;
    bool verbose = false;
    size_t inputs = 0;
    std::set<std::string> entries;
    std::set<std::string> defined;
    std::vector<std::pair<std::string, std::string>> references;  // (function, input name)
    std::string binaries;  // raw bytes of cubin/fatbin inputs
    std::string image;     // what cuLinkComplete returned; lives until cuLinkDestroy
};

struct LinkRegistry {
    std::mutex mu;
    uint64_t next_id = 1;
    std::unordered_map<uint64_t, LinkState> states;
};

LinkRegistry& L() {
    static LinkRegistry* r = new LinkRegistry;  // never destroyed: entry points may run at exit
    return *r;
}

// The live state behind `s`, or nullptr. Caller holds L().mu.
LinkState* find_state(CUlinkState s) {
    uint64_t id = handle_id(s, TAG_LINK);
    auto it = L().states.find(id);
    return (id == 0 || it == L().states.end()) ? nullptr : &it->second;
}

// Writes `text` into a caller's log buffer (truncated, always NUL-terminated).
void write_log(char* buf, size_t size, const std::string& text) {
    if (buf == nullptr || size == 0) return;
    size_t used = strnlen(buf, size);
    size_t room = size - 1 > used ? size - 1 - used : 0;
    size_t n = std::min(room, text.size());
    std::memcpy(buf + used, text.data(), n);
    buf[used + n] = '\0';
}

// The identifier that starts at `at` in `text` (PTX: letters, digits, _ $ .).
std::string identifier_at(const std::string& text, size_t at) {
    while (at < text.size() && (text[at] == ' ' || text[at] == '\t' || text[at] == '\n' || text[at] == '\r')) ++at;
    size_t end = at;
    while (end < text.size() && (std::isalnum(static_cast<unsigned char>(text[end])) || text[end] == '_' ||
                                 text[end] == '$' || text[end] == '.'))
        ++end;
    return text.substr(at, end - at);
}

// The function name of a `.func` directive starting after ".func" at `at`: skips the return-value group.
std::string function_name_at(const std::string& text, size_t at) {
    while (at < text.size() && (text[at] == ' ' || text[at] == '\t' || text[at] == '\n' || text[at] == '\r')) ++at;
    if (at < text.size() && text[at] == '(') {
        size_t close = text.find(')', at);
        if (close == std::string::npos) return "";
        at = close + 1;
    }
    return identifier_at(text, at);
}

// Records the entries, definitions and external references of one PTX input.
void scan_ptx(LinkState* st, const std::string& ptx, const std::string& input_name) {
    std::istringstream lines(ptx);
    std::string line;
    size_t offset = 0;
    while (std::getline(lines, line)) {
        size_t here = offset;
        offset += line.size() + 1;
        size_t entry = line.find(".entry");
        if (entry != std::string::npos && line.find("//") > entry) {
            std::string name = identifier_at(ptx, here + entry + 6);
            if (!name.empty()) st->entries.insert(name), st->defined.insert(name);
            continue;
        }
        size_t func = line.find(".func");
        if (func == std::string::npos || line.find("//") < func) continue;
        std::string name = function_name_at(ptx, here + func + 5);
        if (name.empty()) continue;
        if (line.find(".extern") != std::string::npos && line.find(".extern") < func)
            st->references.emplace_back(name, input_name);
        else
            st->defined.insert(name);
    }
}

// Checks and records one input; writes the driver's complaint to the error log.
CUresult add_input(LinkState* st, CUjitInputType type, const std::string& data, const std::string& name) {
    switch (type) {
        case CU_JIT_INPUT_PTX: {
            std::string text(data.c_str());  // PTX ends at its NUL
            if (text.find(".version") == std::string::npos || text.find(".target") == std::string::npos) {
                write_log(st->error_log, st->error_size, "ptxas fatal   : Unresolved extern or invalid PTX in '" +
                                                             name + "'\n");
                return CUDA_ERROR_INVALID_PTX;
            }
            scan_ptx(st, text, name);
            break;
        }
        case CU_JIT_INPUT_CUBIN:
            if (data.size() < 64 || std::memcmp(data.data(), "\x7f" "ELF", 4) != 0) return CUDA_ERROR_INVALID_IMAGE;
            st->binaries += data;
            break;
        case CU_JIT_INPUT_FATBINARY: {
            uint32_t magic = 0;
            if (data.size() >= 4) std::memcpy(&magic, data.data(), 4);
            if (magic != 0xBA55ED50u) return CUDA_ERROR_INVALID_IMAGE;
            st->binaries += data;
            break;
        }
        case CU_JIT_INPUT_OBJECT:
        case CU_JIT_INPUT_LIBRARY:
        case CU_JIT_INPUT_NVVM:
            return CUDA_ERROR_NOT_SUPPORTED;
        default:
            return CUDA_ERROR_INVALID_VALUE;
    }
    ++st->inputs;
    return CUDA_SUCCESS;
}

// Builds the linked image: a 64-byte ELF64 header (EM_CUDA), a NUL-separated
// string table of the entries plus the binary inputs, one section header.
std::string build_image(const LinkState& st) {
    std::string payload(1, '\0');
    for (const std::string& e : st.entries) payload += e + std::string(1, '\0');
    payload += st.binaries;
    while ((64 + payload.size()) % 8) payload.push_back('\0');
    uint64_t shoff = 64 + payload.size();
    std::string image(64, '\0');
    std::memcpy(&image[0], "\x7f" "ELF", 4);
    image[4] = 2;  // ELFCLASS64
    image[5] = 1;  // little endian
    image[6] = 1;  // EV_CURRENT
    uint16_t machine = 190, shentsize = 64, shnum = 1, ehsize = 64;
    std::memcpy(&image[0x12], &machine, 2);
    std::memcpy(&image[0x28], &shoff, 8);
    std::memcpy(&image[0x34], &ehsize, 2);
    std::memcpy(&image[0x3A], &shentsize, 2);
    std::memcpy(&image[0x3C], &shnum, 2);
    image += payload;
    image += std::string(64, '\0');
    return image;
}

}  // namespace
}  // namespace cuda_sim

using namespace cuda_sim;

// Owns a new link state; the log buffers named by the options are the caller's.
SIM_EXPORT CUresult CUDAAPI cuLinkCreate(unsigned int numOptions, CUjit_option* options, void** optionValues,
                                         CUlinkState* stateOut) {
    SIM_ENTER(cuLinkCreate);
    if (stateOut == nullptr) return CUDA_ERROR_INVALID_VALUE;
    if (numOptions != 0 && (options == nullptr || optionValues == nullptr)) return CUDA_ERROR_INVALID_VALUE;
    LinkState st;
    for (unsigned int i = 0; i < numOptions; ++i) {
        uintptr_t v = reinterpret_cast<uintptr_t>(optionValues[i]);
        switch (options[i]) {
            case CU_JIT_INFO_LOG_BUFFER: st.info_log = static_cast<char*>(optionValues[i]); break;
            case CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES: st.info_size = size_t(unsigned(v)); break;
            case CU_JIT_ERROR_LOG_BUFFER: st.error_log = static_cast<char*>(optionValues[i]); break;
            case CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES: st.error_size = size_t(unsigned(v)); break;
            case CU_JIT_LOG_VERBOSE: st.verbose = v != 0; break;
            case CU_JIT_OPTIMIZATION_LEVEL:
                if (unsigned(v) > 4) return CUDA_ERROR_INVALID_VALUE;
                break;
            case CU_JIT_TARGET:
                if (unsigned(v) < 30) return CUDA_ERROR_INVALID_VALUE;  // no CUjit_target below compute_30
                break;
            default:
                if (unsigned(options[i]) >= unsigned(CU_JIT_NUM_OPTIONS)) return CUDA_ERROR_INVALID_VALUE;
                break;
        }
    }
    if (st.info_log && st.info_size) st.info_log[0] = '\0';
    if (st.error_log && st.error_size) st.error_log[0] = '\0';
    std::lock_guard<std::mutex> lk(L().mu);
    uint64_t id = L().next_id++;
    L().states.emplace(id, std::move(st));
    *stateOut = reinterpret_cast<CUlinkState>(uintptr_t(make_handle(TAG_LINK, id)));
    return CUDA_SUCCESS;
}

// Copies the input; per-input JIT options are accepted and ignored.
SIM_EXPORT CUresult CUDAAPI cuLinkAddData(CUlinkState state, CUjitInputType type, void* data, size_t size,
                                          const char* name, unsigned int numOptions, CUjit_option* options,
                                          void** optionValues) {
    SIM_ENTER(cuLinkAddData);
    if (numOptions != 0 && (options == nullptr || optionValues == nullptr)) return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard<std::mutex> lk(L().mu);
    LinkState* st = find_state(state);
    if (st == nullptr) return CUDA_ERROR_INVALID_HANDLE;
    if (data == nullptr || size == 0) return CUDA_ERROR_INVALID_VALUE;
    return add_input(st, type, std::string(static_cast<const char*>(data), size), name ? name : "");
}

// Reads the file, then as cuLinkAddData with the path as the input's name.
SIM_EXPORT CUresult CUDAAPI cuLinkAddFile(CUlinkState state, CUjitInputType type, const char* path,
                                          unsigned int numOptions, CUjit_option* options, void** optionValues) {
    SIM_ENTER(cuLinkAddFile);
    if (numOptions != 0 && (options == nullptr || optionValues == nullptr)) return CUDA_ERROR_INVALID_VALUE;
    if (path == nullptr) return CUDA_ERROR_INVALID_VALUE;
    std::ifstream in(path, std::ios::binary);
    if (!in) return CUDA_ERROR_FILE_NOT_FOUND;
    std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::lock_guard<std::mutex> lk(L().mu);
    LinkState* st = find_state(state);
    if (st == nullptr) return CUDA_ERROR_INVALID_HANDLE;
    if (data.empty()) return CUDA_ERROR_INVALID_VALUE;
    return add_input(st, type, data, path);
}

// Resolves references; the image stays owned by the state until cuLinkDestroy.
SIM_EXPORT CUresult CUDAAPI cuLinkComplete(CUlinkState state, void** cubinOut, size_t* sizeOut) {
    SIM_ENTER(cuLinkComplete);
    if (cubinOut == nullptr || sizeOut == nullptr) return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard<std::mutex> lk(L().mu);
    LinkState* st = find_state(state);
    if (st == nullptr) return CUDA_ERROR_INVALID_HANDLE;
    if (st->inputs == 0) return CUDA_ERROR_INVALID_VALUE;
    for (const auto& [function, input] : st->references) {
        if (st->defined.count(function) == 0) {
            write_log(st->error_log, st->error_size,
                      "error   : Undefined reference to '" + function + "' in '" + input + "'");
            return CUDA_ERROR_INVALID_SOURCE;
        }
    }
    st->image = build_image(*st);
    if (st->verbose)
        write_log(st->info_log, st->info_size,
                  "info    : " + std::to_string(st->inputs) + " inputs linked (simulated)\n");
    *cubinOut = &st->image[0];
    *sizeOut = st->image.size();
    return CUDA_SUCCESS;
}

// Frees the state and its image.
SIM_EXPORT CUresult CUDAAPI cuLinkDestroy(CUlinkState state) {
    SIM_ENTER(cuLinkDestroy);
    std::lock_guard<std::mutex> lk(L().mu);
    uint64_t id = handle_id(state, TAG_LINK);
    if (id == 0 || L().states.erase(id) == 0) return CUDA_ERROR_INVALID_HANDLE;
    return CUDA_SUCCESS;
}
