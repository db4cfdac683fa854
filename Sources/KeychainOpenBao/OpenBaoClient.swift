import FoundationEssentials
import Glibc
import KeychainStore
import KeychainSystem

/// Requests to the OpenBao HTTP API: the token, the namespace, the time limit, retries while a
/// cluster elects a leader, and read-your-writes on standbys. Maps every failure to ``KeychainError``.
final class OpenBaoClient: Sendable {
    let configuration: OpenBaoConfiguration
    /// Seconds any one operation may take, retries included (`--timeout`).
    let timeout: Double
    private let http: HTTPClient
    private struct State {
        /// The token an AppRole login returned (memory only).
        var loginToken: String?
        /// The `X-Vault-Index` of this client's last write: later reads send it, so that a
        /// standby forwards them to the active node until it has replicated that write.
        var index: String?
    }
    private let state = Locked(State())

    init(configuration: OpenBaoConfiguration, timeout: Double) {
        self.configuration = configuration
        self.timeout = timeout
        http = HTTPClient(
            tls: TLSSettings(caFile: configuration.caFile, caPath: configuration.caPath),
            bypassProxy: configuration.isLoopback)
    }

    /// The server's answer to `method` on `/v1/path`, retried within the time limit while the
    /// cluster has no active node. Returns 2xx, 400, 404 and other client errors to the caller.
    /// - Throws: ``KeychainError`` for 403 (denied), 503 sealed, an unreachable server, a timeout.
    /// - Parameter raw: return every HTTP answer as it is, with no retry (the doctor's health check).
    /// - Parameter namespaced: send `X-Vault-Namespace`; `sys/health` refuses it (400 "operation
    ///   unavailable in namespaces").
    func send(
        _ method: String, _ path: String, json body: (some Encodable)? = nil as Int?, authenticated: Bool = true,
        deadline: Double? = nil, raw: Bool = false, namespaced: Bool = true
    ) throws(KeychainError) -> HTTPResponse {
        let contentType = method == "PATCH" ? "application/merge-patch+json" : "application/json"
        var request = HTTPRequest(method: method, url: configuration.address + "/v1/" + path)
        request.headers = ["Accept: application/json", "Expect:"]
        if let body {
            request.headers.append("Content-Type: \(contentType)")
            do {
                request.body = Array(try JSONEncoder().encode(body))
            } catch {
                throw .backendFailure(detail: "cannot encode the request to \(path): \(error)")
            }
        }
        if namespaced, let namespace = configuration.namespace {
            request.headers.append("X-Vault-Namespace: \(namespace)")
        }
        if authenticated { request.headers.append("X-Vault-Token: \(try token())") }
        if let index = state.withLock({ $0.index }) {
            request.headers += ["X-Vault-Index: \(index)", "X-Vault-Inconsistent: forward-active-node"]
        }
        let deadline = deadline ?? monotonicSeconds() + timeout
        var delay = 0.05
        var lastProblem = "no answer"
        while true {
            let remaining = deadline - monotonicSeconds()
            guard remaining > 0 else {
                throw .serverTimedOut(address: configuration.shownAddress, seconds: timeout, detail: lastProblem)
            }
            let response: HTTPResponse
            do {
                response = try http.perform(request, timeout: remaining)
            } catch {
                switch error {
                case .connectionLost(let message):
                    lastProblem = "the connection broke: \(message)"
                    sleep(seconds: min(delay, max(0, deadline - monotonicSeconds())))
                    delay = min(delay * 2, 0.5)
                    continue
                default: throw mapped(error)
                }
            }
            if let index = response.index, method != "GET" && method != "LIST" {
                state.withLock { $0.index = index }
            }
            if raw { return response }
            switch response.status {
            case 403:
                throw .serverDenied(detail: denied(method, path, response))
            case 503 where Self.errors(of: response).contains(where: { $0.lowercased().contains("sealed") }):
                throw .serverUnavailable(
                    detail: "OpenBao at \(configuration.shownAddress) is sealed: unseal it (bao operator unseal) "
                        + "and try again")
            case _ where Self.isTransient(response):
                lastProblem = "HTTP \(response.status)" + Self.errorSuffix(response)
                sleep(seconds: min(delay, max(0, deadline - monotonicSeconds())))
                delay = min(delay * 2, 0.5)
            default:
                return response
            }
        }
    }

    /// Answers that a moment's wait cures: 307 from a standby that cannot forward, 412 a standby
    /// behind our last write, 429 a busy standby, 500 "active cluster node not found" during an
    /// election, and 400 "Waiting for the primary to upgrade from non-versioned to versioned
    /// data" from a KV mount enabled a moment ago (about a second, measured on a 3-node cluster).
    private static func isTransient(_ response: HTTPResponse) -> Bool {
        switch response.status {
        case 307, 412, 429, 500...599: true
        case 400: errors(of: response).contains { $0.contains("upgrade from non-versioned to versioned data") }
        default: false
        }
    }

    /// The token for requests: the configured one, or one from an AppRole or JWT login (once per
    /// process, kept in memory only).
    func token() throws(KeychainError) -> String {
        switch configuration.credentials {
        case .token(let token, _):
            return token
        case .none:
            throw .openBao(.noToken)
        case .appRole(let roleID, let secretID, let mount):
            return try login(.appRole, mount: mount, ["role_id": roleID, "secret_id": secretID])
        case .jwt(let jwt, let role, let mount):
            var body = ["jwt": jwt]
            if let role { body["role"] = role }
            return try login(.jwt, mount: mount, body)
        }
    }

    /// `POST /v1/auth/MOUNT/login` with `body`; the token it returns, kept for later requests.
    private func login(_ kind: OpenBaoLogin, mount: String, _ body: [String: String]) throws(KeychainError) -> String {
        if let token = state.withLock({ $0.loginToken }) { return token }
        struct Answer: Decodable {
            struct Auth: Decodable {
                var clientToken: String
                enum CodingKeys: String, CodingKey { case clientToken = "client_token" }
            }
            var auth: Auth?
        }
        let path = "auth/\(try kvPath(mount))/login"
        func refused(_ status: Int, _ suffix: String) -> KeychainError {
            .openBao(.loginRefused(kind, source: tokenSource, status: status, suffix: suffix))
        }
        let response: HTTPResponse
        do {
            response = try send("POST", path, json: body, authenticated: false)
        } catch .serverDenied {
            throw refused(403, "")
        }
        guard response.status == 200 else { throw refused(response.status, Self.errorSuffix(response)) }
        guard let token = (try? JSONDecoder().decode(Answer.self, from: Data(response.body)))?.auth?.clientToken
        else {
            throw .backendFailure(detail: "the \(tokenSource) at \(path) returned no token")
        }
        state.withLock { $0.loginToken = token }
        return token
    }

    /// Where the token comes from, for messages (never the token).
    var tokenSource: String {
        switch configuration.credentials {
        case .token(_, let source): source
        case .appRole(_, _, let mount): "AppRole login at auth/\(mount)"
        case .jwt(_, _, let mount): "JWT login at auth/\(mount)"
        case .none: "nowhere"
        }
    }

    private func denied(_ method: String, _ path: String, _ response: HTTPResponse) -> String {
        "OpenBao denied \(method) on \(path)\(Self.errorSuffix(response)): the token (from \(tokenSource)) "
            + "is invalid or expired, or its policy lacks that capability there. Check with: "
            + "bao token capabilities \(path)"
    }

    private func mapped(_ failure: HTTPFailure) -> KeychainError {
        let address = configuration.shownAddress
        switch failure {
        case .noLibrary:
            return .serverUnavailable(
                detail: "the OpenBao backend needs libcurl (libcurl.so.4), which is not installed. "
                    + "Install it: apt-get install libcurl4")
        case .cannotConnect(let message):
            return .serverUnavailable(
                detail: "cannot reach OpenBao at \(address) (\(message)). Check BAO_ADDR and that the "
                    + "server runs: bao status")
        case .tls(let message):
            return .serverUnavailable(
                detail: "the TLS connection to OpenBao at \(address) failed (\(message)). For a private CA, "
                    + "set BAO_CACERT to its PEM file (or BAO_CAPATH to a directory of them)")
        case .timedOut:
            return .serverTimedOut(address: address, seconds: timeout, detail: "no answer")
        case .connectionLost(let message), .other(let message):
            return .serverUnavailable(detail: "the request to OpenBao at \(address) failed: \(message)")
        }
    }

    /// The `errors` array of an error answer.
    static func errors(of response: HTTPResponse) -> [String] {
        struct Answer: Decodable { var errors: [String]? }
        return (try? JSONDecoder().decode(Answer.self, from: Data(response.body)))?.errors ?? []
    }

    /// `: first error` of an answer, or nothing.
    static func errorSuffix(_ response: HTTPResponse) -> String {
        errors(of: response).first.map { ": " + $0.replacing("\n", with: " ") } ?? ""
    }
}
