// hook_http (hook_http.hpp): libcurl's easy interface, one handle per object.

#include "hook_http.hpp"

#include "hook_signature.hpp"

#include <curl/curl.h>

#include <algorithm>
#include <ctime>
#include <mutex>
#include <stdexcept>

namespace strix::chat {
namespace {

// curl_global_init is not guaranteed thread-safe: once per process, before the first handle.
void init_curl_once() {
    static std::once_flag once;
    std::call_once(once, [] {
        if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
            throw std::runtime_error("libcurl failed to initialize (curl_global_init)");
    });
}

struct sink {
    std::string* out;
    std::size_t max;
};

std::size_t on_data(char* data, std::size_t size, std::size_t n, void* user) {
    auto* s = static_cast<sink*>(user);
    const std::size_t len = size * n;
    if (s->out != nullptr && s->out->size() < s->max) s->out->append(data, std::min(len, s->max - s->out->size()));
    return len;  // the rest of a long answer is read and ignored
}

int on_progress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
    const auto* abort = static_cast<const std::atomic<bool>*>(user);
    return abort != nullptr && abort->load(std::memory_order_relaxed) ? 1 : 0;
}

struct header_list {
    curl_slist* list = nullptr;
    ~header_list() { curl_slist_free_all(list); }
    void add(const std::string& h) {
        curl_slist* next = curl_slist_append(list, h.c_str());
        if (next == nullptr) throw std::bad_alloc();
        list = next;
    }
};

}  // namespace

hook_http::hook_http() {
    init_curl_once();
    curl_ = curl_easy_init();
    if (curl_ == nullptr) throw std::runtime_error("libcurl could not make a handle (curl_easy_init)");
}

hook_http::~hook_http() { curl_easy_cleanup(static_cast<CURL*>(curl_)); }

hook_http::result hook_http::post(const std::string& url, std::string_view body, std::string_view secret,
                                  std::chrono::milliseconds timeout, const std::atomic<bool>* abort,
                                  std::size_t max_response) {
    CURL* c = static_cast<CURL*>(curl_);
    const std::int64_t now = static_cast<std::int64_t>(std::time(nullptr));
    header_list headers;
    headers.add("Content-Type: application/json");
    headers.add(std::string(hook_timestamp_header) + ": " + std::to_string(now));
    headers.add(std::string(hook_signature_header) + ": " + hook_signature(secret, now, body));
    headers.add("Expect:");  // no 100-continue round trip for bodies over 1 KiB

    result r;
    sink s{max_response != 0 ? &r.body : nullptr, max_response};
    char error[CURL_ERROR_SIZE] = {};
    curl_easy_setopt(c, CURLOPT_URL, url.c_str());
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);  // threads: no SIGALRM for name-lookup timeouts
    curl_easy_setopt(c, CURLOPT_POST, 1L);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body.data());
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers.list);
    curl_easy_setopt(c, CURLOPT_USERAGENT, "strix-chat-server");
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, static_cast<long>(timeout.count()));
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(timeout.count()));
    curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);  // a redirect is an answer, not 2xx: retried
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &s);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, error);
    curl_easy_setopt(c, CURLOPT_NOPROGRESS, abort != nullptr ? 0L : 1L);
    curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
    curl_easy_setopt(c, CURLOPT_XFERINFODATA, abort);
    const CURLcode rc = curl_easy_perform(c);
    // The handle keeps pointers to these locals: clear them before they go.
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, nullptr);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, nullptr);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, nullptr);
    if (rc != CURLE_OK) {
        r.error = error[0] != '\0' ? std::string(error) : std::string(curl_easy_strerror(rc));
        return r;
    }
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r.status);
    return r;
}

}  // namespace strix::chat
