internal import CCurl
import Glibc
import KeychainSystem

/// One HTTP request to the OpenBao server.
struct HTTPRequest {
    var method: String
    var url: String
    var headers: [String] = []
    var body: [UInt8]?
}

/// What the server answered: the status, the body, and the `X-Vault-Index` header when it sent one.
struct HTTPResponse {
    var status: Int
    var body: [UInt8]
    var index: String?
}

/// Why a request got no HTTP answer at all.
enum HTTPFailure: Error {
    /// libcurl (libcurl.so.4) is not installed.
    case noLibrary
    /// Refused, no such host, no route: nothing is listening there.
    case cannotConnect(String)
    /// The TLS handshake or the certificate check failed.
    case tls(String)
    /// The connection broke after the request was sent (a server killed mid-request).
    case connectionLost(String)
    /// No answer within the time limit.
    case timedOut
    case other(String)
}

/// TLS settings of the connection: `BAO_CACERT` and `BAO_CAPATH`, as the bao CLI reads them.
struct TLSSettings: Sendable, Equatable {
    var caFile: String?
    var caPath: String?
}

/// libcurl's functions, loaded once per process on the first request (see the CCurl shim).
private let curlLibrary: CurlLibrary? = CurlLibrary()

// @unchecked: libcurl's function pointers, written once by the global's initializer and only read.
private struct CurlLibrary: @unchecked Sendable {
    var api = keychain_curl_api()
    init?() {
        guard keychain_curl_load(&api) == 0 else { return nil }
    }
}

/// libcurl easy handles, kept for the store's lifetime so that successive requests reuse their
/// connection (and TLS session). A request takes a handle no other request is using, or a new
/// one: a request never waits behind another thread's (serve's watcher polling a server that
/// stalls must not hold up a client's write for its whole time limit).
final class HTTPClient: Sendable {
    // @unchecked: an easy handle is used by one request at a time, taken from and given back to
    // `idle` under its lock.
    private struct Handle: @unchecked Sendable { var pointer: UnsafeMutableRawPointer }
    /// The handles no request is using now.
    private let idle = Locked<[Handle]>([])
    let tls: TLSSettings
    /// Never through a proxy: set for loopback addresses, which a proxy cannot reach.
    let bypassProxy: Bool

    init(tls: TLSSettings, bypassProxy: Bool) {
        self.tls = tls
        self.bypassProxy = bypassProxy
    }

    deinit {
        idle.withLock { handles in
            if let library = curlLibrary { for handle in handles { library.api.easy_cleanup(handle.pointer) } }
        }
    }

    /// Performs `request`, giving up after `timeout` seconds.
    func perform(_ request: HTTPRequest, timeout: Double) throws(HTTPFailure) -> HTTPResponse {
        guard let library = curlLibrary else { throw .noLibrary }
        guard let handle = idle.withLock({ $0.popLast() }) ?? library.api.easy_init().map(Handle.init) else {
            throw .other("libcurl could not start a transfer")
        }
        defer { idle.withLock { $0.append(handle) } }
        return try Self.perform(
            request, on: handle.pointer, library: library, timeout: timeout, tls: tls, bypassProxy: bypassProxy)
    }

    private static func perform(
        _ request: HTTPRequest, on pointer: UnsafeMutableRawPointer, library: CurlLibrary, timeout: Double,
        tls: TLSSettings, bypassProxy: Bool
    ) throws(HTTPFailure) -> HTTPResponse {
        var headers: UnsafeMutablePointer<curl_slist>?
        for header in request.headers { headers = library.api.slist_append(headers, header) }
        defer { library.api.slist_free_all(headers) }
        var response = keychain_curl_response()
        defer {
            keychain_curl_buffer_free(&response.body)
            keychain_curl_buffer_free(&response.index)
        }
        let body = request.body ?? []
        body.withUnsafeBufferPointer { bytes in
            request.method.withCString { method in
                request.url.withCString { url in
                    withOptionalCString(tls.caFile) { caFile in
                        withOptionalCString(tls.caPath) { caPath in
                            var curlRequest = keychain_curl_request(
                                method: method, url: url, headers: headers,
                                body: bytes.baseAddress.map {
                                    UnsafeRawPointer($0).assumingMemoryBound(to: CChar.self)
                                },
                                body_count: bytes.count, timeout_ms: max(1, Int(timeout * 1000)),
                                ca_file: caFile, ca_path: caPath, no_proxy: bypassProxy ? 1 : 0)
                            var api = library.api
                            keychain_curl_perform(&api, pointer, &curlRequest, &response)
                        }
                    }
                }
            }
        }
        guard response.code == CURLE_OK else {
            let message = withUnsafeBytes(of: response.error) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            switch response.code {
            case CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_CONNECT, CURLE_COULDNT_RESOLVE_PROXY:
                throw .cannotConnect(message)
            case CURLE_OPERATION_TIMEDOUT: throw .timedOut
            case CURLE_SSL_CONNECT_ERROR, CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CACERT_BADFILE,
                CURLE_SSL_CERTPROBLEM, CURLE_SSL_CIPHER, CURLE_SSL_ISSUER_ERROR, CURLE_SSL_CRL_BADFILE:
                throw .tls(message)
            case CURLE_GOT_NOTHING, CURLE_RECV_ERROR, CURLE_SEND_ERROR, CURLE_PARTIAL_FILE:
                throw .connectionLost(message)
            default: throw .other(message)
            }
        }
        return HTTPResponse(
            status: response.status,
            body: response.body.count == 0
                ? [] : Array(UnsafeRawBufferPointer(start: response.body.bytes, count: response.body.count)),
            index: response.index.count == 0
                ? nil
                : String(
                    decoding: UnsafeRawBufferPointer(start: response.index.bytes, count: response.index.count),
                    as: UTF8.self))
    }
}

private func withOptionalCString<R>(_ text: String?, _ body: (UnsafePointer<CChar>?) -> R) -> R {
    guard let text else { return body(nil) }
    return text.withCString { body($0) }
}
