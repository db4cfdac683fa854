#ifndef KEYCHAIN_CLI_CURL_SHIM_H
#define KEYCHAIN_CLI_CURL_SHIM_H

// libcurl for the OpenBao backend, loaded with dlopen on first use rather than linked: linking it
// would load its 30 dependent libraries into every process, the Secret Service `get` included.
// Swift cannot call curl_easy_setopt (variadic), so one C function here does a whole request.
#include <curl/curl.h>
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

typedef struct {
    CURL *(*easy_init)(void);
    CURLcode (*easy_setopt)(CURL *, CURLoption, ...);
    CURLcode (*easy_perform)(CURL *);
    CURLcode (*easy_getinfo)(CURL *, CURLINFO, ...);
    void (*easy_cleanup)(CURL *);
    void (*easy_reset)(CURL *);
    const char *(*easy_strerror)(CURLcode);
    struct curl_slist *(*slist_append)(struct curl_slist *, const char *);
    void (*slist_free_all)(struct curl_slist *);
    CURLcode (*global_init)(long);
} keychain_curl_api;

// Fills `api` from libcurl.so.4; 0 on success, -1 when the library or a symbol is missing.
static inline int keychain_curl_load(keychain_curl_api *api) {
    void *library = dlopen("libcurl.so.4", RTLD_NOW | RTLD_LOCAL);
    if (library == NULL) return -1;
#define KEYCHAIN_CURL_SYMBOL(field, name) \
    if ((*(void **)&api->field = dlsym(library, name)) == NULL) return -1;
    KEYCHAIN_CURL_SYMBOL(easy_init, "curl_easy_init")
    KEYCHAIN_CURL_SYMBOL(easy_setopt, "curl_easy_setopt")
    KEYCHAIN_CURL_SYMBOL(easy_perform, "curl_easy_perform")
    KEYCHAIN_CURL_SYMBOL(easy_getinfo, "curl_easy_getinfo")
    KEYCHAIN_CURL_SYMBOL(easy_cleanup, "curl_easy_cleanup")
    KEYCHAIN_CURL_SYMBOL(easy_reset, "curl_easy_reset")
    KEYCHAIN_CURL_SYMBOL(easy_strerror, "curl_easy_strerror")
    KEYCHAIN_CURL_SYMBOL(slist_append, "curl_slist_append")
    KEYCHAIN_CURL_SYMBOL(slist_free_all, "curl_slist_free_all")
    KEYCHAIN_CURL_SYMBOL(global_init, "curl_global_init")
#undef KEYCHAIN_CURL_SYMBOL
    return api->global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK ? 0 : -1;
}

// A growing buffer; wiped before it is freed, since response bodies carry secrets.
typedef struct {
    char *bytes;
    size_t count;
    size_t capacity;
} keychain_curl_buffer;

static inline void keychain_curl_buffer_free(keychain_curl_buffer *buffer) {
    if (buffer->bytes != NULL) {
        explicit_bzero(buffer->bytes, buffer->capacity);
        free(buffer->bytes);
    }
    buffer->bytes = NULL;
    buffer->count = buffer->capacity = 0;
}

static inline size_t keychain_curl_append(char *data, size_t size, size_t count, void *context) {
    keychain_curl_buffer *buffer = context;
    size_t length = size * count;
    if (buffer->count + length + 1 > buffer->capacity) {
        size_t capacity = (buffer->count + length + 1) * 2;
        char *bytes = malloc(capacity);
        if (bytes == NULL) return 0;
        if (buffer->bytes != NULL) memcpy(bytes, buffer->bytes, buffer->count);
        size_t count = buffer->count;
        keychain_curl_buffer_free(buffer);
        buffer->bytes = bytes;
        buffer->count = count;
        buffer->capacity = capacity;
    }
    memcpy(buffer->bytes + buffer->count, data, length);
    buffer->count += length;
    buffer->bytes[buffer->count] = 0;
    return length;
}

// Keeps the value of the X-Vault-Index response header.
static inline size_t keychain_curl_header(char *data, size_t size, size_t count, void *context) {
    keychain_curl_buffer *index = context;
    size_t length = size * count;
    static const char name[] = "x-vault-index:";
    if (length > sizeof name - 1 && strncasecmp(data, name, sizeof name - 1) == 0) {
        size_t start = sizeof name - 1;
        while (start < length && (data[start] == ' ' || data[start] == '\t')) start++;
        size_t end = length;
        while (end > start && (data[end - 1] == '\r' || data[end - 1] == '\n' || data[end - 1] == ' ')) end--;
        index->count = 0;
        if (keychain_curl_append(data + start, 1, end - start, index) != end - start) return 0;
    }
    return length;
}

typedef struct {
    const char *method;
    const char *url;
    struct curl_slist *headers;
    const char *body;
    size_t body_count;
    long timeout_ms;
    const char *ca_file;  // BAO_CACERT, or NULL
    const char *ca_path;  // BAO_CAPATH, or NULL
    int no_proxy;         // 1: never through a proxy (loopback addresses)
} keychain_curl_request;

typedef struct {
    CURLcode code;
    long status;
    keychain_curl_buffer body;
    keychain_curl_buffer index;
    char error[CURL_ERROR_SIZE];
} keychain_curl_response;

// One request on `handle` (from api->easy_init), which keeps its connection open for the next
// request to the same server; the caller frees both buffers of `response`.
static inline void keychain_curl_perform(
    const keychain_curl_api *api, CURL *handle, const keychain_curl_request *request,
    keychain_curl_response *response) {
    memset(response, 0, sizeof *response);
    api->easy_reset(handle);
    api->easy_setopt(handle, CURLOPT_ERRORBUFFER, response->error);
    api->easy_setopt(handle, CURLOPT_URL, request->url);
    api->easy_setopt(handle, CURLOPT_CUSTOMREQUEST, request->method);
    api->easy_setopt(handle, CURLOPT_HTTPHEADER, request->headers);
    if (request->body != NULL) {
        api->easy_setopt(handle, CURLOPT_POSTFIELDS, request->body);
        api->easy_setopt(handle, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)request->body_count);
    } else if (strcmp(request->method, "GET") != 0) {
        api->easy_setopt(handle, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)0);
        api->easy_setopt(handle, CURLOPT_POSTFIELDS, "");
    }
    api->easy_setopt(handle, CURLOPT_NOSIGNAL, 1L);
    api->easy_setopt(handle, CURLOPT_TIMEOUT_MS, request->timeout_ms);
    api->easy_setopt(handle, CURLOPT_CONNECTTIMEOUT_MS, request->timeout_ms);
    api->easy_setopt(handle, CURLOPT_PROTOCOLS_STR, "http,https");
    // No redirects: a standby's 307 points at the active node, which may be the one that died;
    // the caller retries the standby, which forwards to the new active node once elected.
    if (request->ca_file != NULL) api->easy_setopt(handle, CURLOPT_CAINFO, request->ca_file);
    if (request->ca_path != NULL) api->easy_setopt(handle, CURLOPT_CAPATH, request->ca_path);
    if (request->no_proxy) api->easy_setopt(handle, CURLOPT_NOPROXY, "*");
    api->easy_setopt(handle, CURLOPT_WRITEFUNCTION, keychain_curl_append);
    api->easy_setopt(handle, CURLOPT_WRITEDATA, &response->body);
    api->easy_setopt(handle, CURLOPT_HEADERFUNCTION, keychain_curl_header);
    api->easy_setopt(handle, CURLOPT_HEADERDATA, &response->index);
    response->code = api->easy_perform(handle);
    if (response->code == CURLE_OK) api->easy_getinfo(handle, CURLINFO_RESPONSE_CODE, &response->status);
    if (response->error[0] == 0) strncpy(response->error, api->easy_strerror(response->code), CURL_ERROR_SIZE - 1);
}

#endif
