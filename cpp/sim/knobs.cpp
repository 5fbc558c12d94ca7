// knobs.cpp - libcuda_sim: the entry point table, call counters, error names/texts, environment knobs.
#include "sim_internal.hpp"

namespace cuda_sim {

const char* const kFnNames[FN_COUNT] = {
#define SIM_FN_NAME(name) #name,
    CUDA_SIM_FUNCTIONS(SIM_FN_NAME)
#undef SIM_FN_NAME
};

std::atomic<unsigned long long> g_calls[FN_COUNT];

Knobs g_knobs;

std::atomic<bool> g_initialized{false};

// Undecorated names ("cuStreamDestroy"); a cuda.h version suffix is ignored.
int fn_index(const char* name) {
    if (!name) return -1;
    for (int i = 0; i < FN_COUNT; ++i)
        if (std::strcmp(kFnNames[i], name) == 0) return i;
    size_t len = std::strlen(name);
    if (len > 3 && name[len - 3] == '_' && name[len - 2] == 'v' && name[len - 1] >= '2' && name[len - 1] <= '9') {
        std::string base(name, len - 3);
        for (int i = 0; i < FN_COUNT; ++i)
            if (base == kFnNames[i]) return i;
    }
    return -1;
}

// --- error names/texts -----------------------------------------------------
const ErrEntry kErrors[] = {
#define SIM_ERR(n) {n, #n},
    CUDA_SIM_ERRORS(SIM_ERR)
#undef SIM_ERR
};

const char* handwritten_text(CUresult c) {
    switch (c) {
        case CUDA_SUCCESS: return "no error";
        case CUDA_ERROR_INVALID_VALUE: return "invalid argument";
        case CUDA_ERROR_OUT_OF_MEMORY: return "out of memory";
        case CUDA_ERROR_NOT_INITIALIZED: return "initialization error";
        case CUDA_ERROR_DEINITIALIZED: return "driver shutting down";
        case CUDA_ERROR_NO_DEVICE: return "no CUDA-capable device is detected";
        case CUDA_ERROR_INVALID_DEVICE: return "invalid device ordinal";
        case CUDA_ERROR_INVALID_CONTEXT: return "invalid device context";
        case CUDA_ERROR_ALREADY_MAPPED: return "resource already mapped";
        case CUDA_ERROR_NOT_MAPPED: return "resource not mapped";
        case CUDA_ERROR_INVALID_HANDLE: return "invalid resource handle";
        case CUDA_ERROR_NOT_FOUND: return "named symbol not found";
        case CUDA_ERROR_NOT_READY: return "device not ready";
        case CUDA_ERROR_ILLEGAL_ADDRESS: return "an illegal memory access was encountered";
        case CUDA_ERROR_NOT_SUPPORTED: return "operation not supported";
        case CUDA_ERROR_NOT_PERMITTED: return "operation not permitted";
        case CUDA_ERROR_OPERATING_SYSTEM: return "OS call failed or operation not supported on this OS";
        case CUDA_ERROR_UNKNOWN: return "unknown error";
        default: return nullptr;
    }
}

// Texts for the rest: derived from the name ("CUDA_ERROR_LAUNCH_TIMEOUT" ->
// "launch timeout"), built once.
struct ErrTexts {
    std::vector<std::string> texts;
    ErrTexts() {
        for (const ErrEntry& e : kErrors) {
            const char* h = handwritten_text(e.code);
            if (h) {
                texts.emplace_back(h);
                continue;
            }
            std::string s = e.name;
            const char* pre = "CUDA_ERROR_";
            if (s.rfind(pre, 0) == 0) s = s.substr(std::strlen(pre));
            for (char& ch : s) ch = (ch == '_') ? ' ' : char(std::tolower((unsigned char)ch));
            texts.push_back(s);
        }
    }
};
const ErrTexts& err_texts() {
    static const ErrTexts* t = new ErrTexts();
    return *t;
}
int err_index(int c) {
    for (size_t i = 0; i < sizeof(kErrors) / sizeof(kErrors[0]); ++i)
        if (int(kErrors[i].code) == c) return int(i);
    return -1;
}

const char* err_text(int i) { return err_texts().texts[size_t(i)].c_str(); }

void load_err_texts() { (void)err_texts(); }

// --- knob parsing ------------------------------------------------------------
std::string trim(const std::string& s) {
    size_t b = s.find_first_not_of(" \t\n"), e = s.find_last_not_of(" \t\n");
    return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

void warn(const std::string& msg) { std::fprintf(stderr, "libcuda_sim: %s\n", msg.c_str()); }

bool parse_ull(const std::string& s, unsigned long long* out) {
    if (s.empty()) return false;
    char* end = nullptr;
    errno = 0;
    unsigned long long v = std::strtoull(s.c_str(), &end, 0);
    if (errno || !end || *end || s[0] == '-') return false;
    *out = v;
    return true;
}

bool parse_result(const std::string& s, int* out) {
    for (const ErrEntry& e : kErrors)
        if (s == e.name) {
            *out = int(e.code);
            return true;
        }
    unsigned long long v;
    if (parse_ull(s, &v) && v > 0 && v < 100000) {
        *out = int(v);
        return true;
    }
    return false;
}

std::vector<std::pair<std::string, std::string>> split_kv(const char* env) {
    std::vector<std::pair<std::string, std::string>> out;
    if (!env) return out;
    std::string all = env;
    size_t pos = 0;
    while (pos <= all.size()) {
        size_t comma = all.find(',', pos);
        if (comma == std::string::npos) comma = all.size();
        std::string item = trim(all.substr(pos, comma - pos));
        pos = comma + 1;
        if (item.empty()) continue;
        size_t eq = item.find('=');
        if (eq == std::string::npos) {
            warn("ignoring malformed knob entry '" + item + "'");
            continue;
        }
        out.emplace_back(trim(item.substr(0, eq)), trim(item.substr(eq + 1)));
    }
    return out;
}

void parse_knobs() {
    if (const char* dc = std::getenv("CUDA_SIM_DEVICE_COUNT")) {
        unsigned long long v;
        if (parse_ull(trim(dc), &v) && v <= kMaxDevices)
            g_knobs.device_count = int(v);
        else
            warn("CUDA_SIM_DEVICE_COUNT must be 0.." + std::to_string(kMaxDevices) + "; using 1");
    }
    for (int d = 0; d < kMaxDevices; ++d) g_knobs.physical[d] = d;
    // CUDA_VISIBLE_DEVICES="2,0": visible ordinal 0 is physical device 2, and so
    // on; the physical devices are the CUDA_SIM_DEVICE_COUNT simulated ones.
    if (const char* vis = std::getenv("CUDA_VISIBLE_DEVICES")) {
        std::string list = trim(vis);
        int visible = 0;
        bool ok = true;
        std::size_t start = 0;
        while (ok && start <= list.size() && !list.empty()) {
            std::size_t comma = list.find(',', start);
            std::string item = trim(list.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
            unsigned long long v;
            if (!parse_ull(item, &v) || v >= unsigned(g_knobs.device_count) || visible >= kMaxDevices) {
                ok = false;  // like the real driver: stop at the first invalid entry
                break;
            }
            g_knobs.physical[visible++] = int(v);
            if (comma == std::string::npos) break;
            start = comma + 1;
        }
        g_knobs.device_count = visible;
    }
    if (const char* pa = std::getenv("CUDA_SIM_PEER_ACCESS")) g_knobs.peer_access = trim(pa) != "0";
    if (const char* dv = std::getenv("CUDA_SIM_DRIVER_VERSION")) {
        unsigned long long v;
        if (parse_ull(trim(dv), &v) && v >= 12040 && v <= 99990)
            g_knobs.driver_version = int(v);
        else
            warn("CUDA_SIM_DRIVER_VERSION must be 12040..99990 (e.g. 13010); using 13000");
    }
    if (const char* ps = std::getenv("CUDA_SIM_POOL_BYTES")) {
        unsigned long long v;
        if (parse_ull(trim(ps), &v) && v >= kPage && v <= kMaxPoolBytes)
            g_knobs.default_pool_bytes = size_t(v);
        else
            warn("ignoring bad CUDA_SIM_POOL_BYTES");
    }
    for (auto& kv : split_kv(std::getenv("CUDA_SIM_LATENCY_US"))) {
        int i = fn_index(kv.first.c_str());
        unsigned long long us;
        if (i < 0 || !parse_ull(kv.second, &us)) {
            warn("ignoring CUDA_SIM_LATENCY_US entry '" + kv.first + "=" + kv.second + "'");
            continue;
        }
        g_knobs.latency_us[i] = us;
    }
    for (auto& kv : split_kv(std::getenv("CUDA_SIM_FAIL"))) {
        int i = fn_index(kv.first.c_str());
        std::string code = kv.second, every = "1";
        size_t at = code.find('@');
        if (at != std::string::npos) {
            every = trim(code.substr(at + 1));
            code = trim(code.substr(0, at));
        }
        int rc = 0;
        unsigned long long n = 0;
        if (i < 0 || !parse_result(code, &rc) || !parse_ull(every, &n) || n == 0) {
            warn("ignoring CUDA_SIM_FAIL entry '" + kv.first + "=" + kv.second + "'");
            continue;
        }
        g_knobs.fail_code[i] = rc;
        g_knobs.fail_every[i] = n;
    }
}

}  // namespace cuda_sim
