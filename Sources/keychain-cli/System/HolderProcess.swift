import CLinux
import Glibc
import KeychainCore
import KeychainHolder

/// `unlock` and `lock` talking to this user's holder, and `unlock` starting it when none runs:
/// `keychain-cli holder`, in a session of its own, which says on its descriptor 3 when it listens.
enum HolderProcess {
    /// The holder's reply to `request`, or nil when no holder runs and `start` is nil; `start`
    /// is the environment of a holder to start (without keychain-cli's secrets: the key comes
    /// over its socket).
    /// - Throws: the holder's error, ``KeychainError/insecureFile(detail:)`` for a place that is
    ///   not private, ``KeychainError/backendFailure(detail:)`` when no holder can be had.
    static func ask(_ request: HolderRequest, place: HolderPlace, start: [String]?, timeout: Double) throws
        -> HolderReply?
    {
        // Three tries: a holder that is ending (its last vault just expired) refuses a hold or
        // closes without an answer, and the next try starts another.
        for _ in 0..<3 {
            guard let fd = try place.connect(timeout: timeout) else {
                guard let start else { return nil }
                try startHolder(place, variables: start)
                continue
            }
            defer { close(fd) }
            let deadline = monotonicSeconds() + timeout
            let isHold = if case .hold = request { true } else { false }
            guard
                let reply = try HolderWire.exchange(
                    request, on: fd, socket: place.socket, deadline: deadline, seconds: timeout)
            else {
                // It ended meanwhile (its last vault expired): it holds nothing; a hold starts another.
                guard isHold else { return nil }
                usleep(300_000)
                continue
            }
            switch reply {
            case .failed(let error): throw error
            case .notHeld where isHold:
                usleep(300_000)
                continue
            default: return reply
            }
        }
        throw KeychainError.backendFailure(detail: "no holder could be started at \(place.socket)")
    }

    /// Tells the holder, if one runs, to forget the vault at `path`, re-keyed just now: the key
    /// it holds opens only the versions before (which git's history may keep). It would find
    /// out at the next request anyway; nothing is said when no holder runs or it cannot be asked.
    static func forgetRekeyed(_ path: String) {
        let place = HolderPlace.current()
        guard HeldVaultStore.mayHold(place) else { return }
        _ = try? ask(
            .forget(vault: HolderRequest.vaultKey(path)), place: place, start: nil, timeout: 1)
    }

    /// Starts the holder and waits until it listens (or another one does).
    private static func startHolder(_ place: HolderPlace, variables: [String]) throws {
        _ = try place.check(creating: true)
        var ends: [Int32] = [0, 0]
        guard pipe2(&ends, O_CLOEXEC) == 0 else {
            throw CommandFailure.io("cannot make a pipe: \(String(cString: strerror(errno)))")
        }
        defer { close(ends[0]) }
        var arguments: [UnsafeMutablePointer<CChar>?] = [strdup("keychain-cli"), strdup("holder"), nil]
        var holderVariables: [UnsafeMutablePointer<CChar>?] = variables.map { strdup($0) } + [nil]
        defer { for pointer in arguments + holderVariables { free(pointer) } }
        let pid = keychain_cli_spawn_service("/proc/self/exe", &arguments, &holderVariables, ends[1], 1)
        close(ends[1])
        guard pid > 0 else {
            throw KeychainError.backendFailure(detail: "cannot start the holder: \(String(cString: strerror(errno)))")
        }
        // Its word, to the end of the pipe: "ready", "running" (another holder listens), or why not.
        var said: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 512)
        let deadline = monotonicSeconds() + 10
        while monotonicSeconds() < deadline {
            var poller = pollfd(fd: ends[0], events: Int16(POLLIN), revents: 0)
            let ready = poll(&poller, 1, 100)
            guard ready >= 0 || errno == EINTR else { break }
            guard ready > 0 else { continue }
            let count = read(ends[0], &chunk, chunk.count)
            if count == 0 { break }
            if count > 0 { said += chunk[..<count] }
        }
        var status: Int32 = 0
        _ = waitpid(pid, &status, WNOHANG)
        let lines = String(decoding: said, as: UTF8.self).split(separator: "\n").map(String.init)
        for line in lines where line.hasPrefix("keychain-cli: ") { writeError(line + "\n") }
        guard lines.contains("ready") || lines.contains("running") else {
            let reason = lines.first { $0.hasPrefix("error: ") }.map { String($0.dropFirst(7)) } ?? "it did not start"
            throw KeychainError.backendFailure(detail: "cannot start the holder: \(reason)")
        }
    }
}
