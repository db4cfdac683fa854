import CLinux
import FoundationEssentials
import Glibc
import KeychainCore

/// A D-Bus session bus of our own (`serve -- COMMAND`): a dbus-daemon listening on a socket in a
/// new private directory, with no service files, so that nothing but us can become the Secret
/// Service on it. Stopped and its directory removed by ``stop()``, or, when serve is killed
/// before it can, by a guardian process, which also ends the command (``guardCommand(_:)``).
struct PrivateBus {
    let address: String
    let daemon: pid_t
    let directory: String
    /// The guardian process and the write end of its lifeline.
    private let guardian: (pid: pid_t, lifeline: Int32)?

    static func start() throws -> PrivateBus {
        // The guardian makes the directory: from then on, whatever ends serve, it goes (serve's
        // stop(), or its guardian), and before it nothing is there to leave.
        let template = "\(temporaryDirectory())/keychain-cli-bus.XXXXXX"
        let (directory, guardian) = try makeGuardedDirectory(template)
        func abandon() {
            remove(directory)
            release(guardian)
        }
        // The limits a session bus has (session.conf): dbus-daemon's own defaults allow a client
        // 128 calls in flight, and libsecret reads the properties of every item found at once.
        let configuration = """
            <busconfig>
              <type>session</type>
              <listen>unix:path=\(directory)/bus</listen>
              <auth>EXTERNAL</auth>
              <policy context="default">
                <allow send_destination="*" eavesdrop="true"/>
                <allow eavesdrop="true"/>
                <allow own="*"/>
              </policy>
              <limit name="max_replies_per_connection">50000</limit>
              <limit name="max_match_rules_per_connection">50000</limit>
              <limit name="max_incoming_bytes">1000000000</limit>
              <limit name="max_outgoing_bytes">1000000000</limit>
              <limit name="max_message_size">1000000000</limit>
            </busconfig>
            """
        do {
            try writeFileAtomically("\(directory)/bus.conf", Array(configuration.utf8))
        } catch {
            abandon()
            throw error
        }
        var pipeEnds: [Int32] = [0, 0]
        guard pipe(&pipeEnds) == 0, fcntl(pipeEnds[0], F_SETFD, FD_CLOEXEC) == 0,
            fcntl(pipeEnds[1], F_SETFD, FD_CLOEXEC) == 0
        else {
            abandon()
            throw CommandFailure(kind: .io, message: "cannot make a pipe for the private bus: \(errnoText())")
        }
        defer { close(pipeEnds[0]) }
        guard let program = executable(named: "dbus-daemon") else {
            close(pipeEnds[1])
            abandon()
            throw KeychainError.noSessionBus(
                detail: "serve -- COMMAND needs dbus-daemon, which is not in PATH; install it (apt install dbus-daemon)"
            )
        }
        let arguments = [
            "dbus-daemon", "--config-file=\(directory)/bus.conf", "--nofork", "--nopidfile", "--print-address=3",
        ]
        var argv = arguments.map { strdup($0) } + [nil]
        defer { for argument in argv { free(argument) } }
        // No environment: the daemon is an ordinary process of the user, and ours holds the
        // vault's passphrase ($KEYCHAIN_PASSPHRASE), which /proc/PID/environ would show.
        var emptyEnvironment: [UnsafeMutablePointer<CChar>?] = [nil]
        let pid = keychain_cli_spawn_service(program, &argv, &emptyEnvironment, pipeEnds[1], 0)
        let failure = errno
        close(pipeEnds[1])
        guard pid > 0 else {
            abandon()
            throw KeychainError.noSessionBus(
                detail: "cannot start dbus-daemon for the private bus (\(String(cString: strerror(failure))))")
        }
        var line: [UInt8] = []
        var byte: UInt8 = 0
        while read(pipeEnds[0], &byte, 1) == 1, byte != UInt8(ascii: "\n") { line.append(byte) }
        let bus = PrivateBus(
            address: String(decoding: line, as: UTF8.self), daemon: pid, directory: directory, guardian: guardian)
        guard !line.isEmpty else {
            bus.stop()
            throw KeychainError.noSessionBus(detail: "dbus-daemon did not start a private bus")
        }
        // Read once the address is printed: gone, nothing but the socket is left to a SIGKILL.
        unlink("\(directory)/bus.conf")
        return bus
    }

    /// Tells the guardian the command's pid: if serve ends without ``stop()`` (SIGKILL), the
    /// guardian ends the command as serve would (SIGTERM, SIGKILL 5 s later) rather than leave it
    /// running without its bus.
    func guardCommand(_ command: pid_t) {
        guard let (_, lifeline) = guardian else { return }
        var message: [UInt8] = [UInt8(ascii: "p")] + withUnsafeBytes(of: Int32(command)) { Array($0) }
        _ = Glibc.write(lifeline, &message, message.count)
    }

    /// Stops the daemon and removes its directory, then lets the guardian go.
    func stop() {
        // A second for it to go, then SIGKILL: nothing of ours is in it to lose.
        terminate(daemon, graceSeconds: 1)
        PrivateBus.remove(directory)
        PrivateBus.release(guardian)
    }

    /// Tells the guardian that serve stopped everything itself, and reaps it.
    private static func release(_ guardian: (pid: pid_t, lifeline: Int32)?) {
        guard let (pid, lifeline) = guardian else { return }
        var done = UInt8(ascii: "x")
        _ = Glibc.write(lifeline, &done, 1)
        close(lifeline)
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
    }

    /// A new directory from `template` and its guardian (see keychain_cli_spawn_guardian), with
    /// the write end of its lifeline; when no guardian can be started, the directory without one
    /// (serve then works as before, without it).
    private static func makeGuardedDirectory(
        _ template: String
    ) throws -> (directory: String, guardian: (pid: pid_t, lifeline: Int32)?) {
        guard let (read, write) = makePipe() else { return (try makeDirectory(template), nil) }
        guard let (reportRead, reportWrite) = makePipe() else {
            close(read)
            close(write)
            return (try makeDirectory(template), nil)
        }
        let pid = keychain_cli_spawn_guardian(read, reportWrite, template, 5000)
        close(reportWrite)
        close(read)
        guard pid > 0 else {
            close(reportRead)
            close(write)
            return (try makeDirectory(template), nil)
        }
        var line: [UInt8] = []
        var byte: UInt8 = 0
        while Glibc.read(reportRead, &byte, 1) == 1, byte != UInt8(ascii: "\n") { line.append(byte) }
        close(reportRead)
        guard line.isEmpty else { return (String(decoding: line, as: UTF8.self), (pid, write)) }
        // It could not make it: its status is mkdtemp's errno.
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
        close(write)
        errno = (status >> 8) & 0xff
        throw cannotMakeDirectory()
    }

    private static func makeDirectory(_ template: String) throws -> String {
        var bytes = Array(template.utf8CString)
        guard mkdtemp(&bytes) != nil else { throw cannotMakeDirectory() }
        return String(decoding: bytes.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    private static func cannotMakeDirectory() -> CommandFailure {
        CommandFailure(kind: .io, message: "cannot make a directory for the private bus: \(errnoText())")
    }

    private static func remove(_ directory: String) {
        unlink("\(directory)/bus")
        unlink("\(directory)/bus.conf")
        rmdir(directory)
    }

    private static func temporaryDirectory() -> String {
        for name in ["XDG_RUNTIME_DIR", "TMPDIR"] {
            if let value = Environment.value(name), value.hasPrefix("/") { return value }
        }
        return "/tmp"
    }
}

private func errnoText() -> String { String(cString: strerror(errno)) }
