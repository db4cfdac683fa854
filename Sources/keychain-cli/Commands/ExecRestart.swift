import ArgumentParser
import Glibc
import KeychainCore
import KeychainHolder

// exec --restart-on-change: the services of what the command was given are watched (watch's
// machinery, every backend), and a change to one of its secrets starts it again with the new
// values (System/RestartingRun.swift runs it).

/// exec's options for restarting the command when its secrets change.
struct RestartOptions: ParsableArguments {
    @Flag(
        name: .customLong("restart-on-change"),
        help: "Watch the secrets the command was given and restart it with the new values when one changes.")
    var onChange = false

    @Option(
        name: .customLong("restart-signal"), parsing: .unconditional,
        help: ArgumentHelp(
            "With --restart-on-change: the signal that stops the command, by name or number (default TERM).",
            valueName: "signal"))
    var signalName: String?

    @Option(
        name: .customLong("restart-grace"), parsing: .unconditional,
        help: ArgumentHelp(
            "With --restart-on-change: seconds the command has to end before SIGKILL (default 10).",
            valueName: "seconds"))
    var grace: Double?

    /// The signals --restart-signal takes by name (with or without SIG, any case).
    static let signalNames: [String: Int32] = [
        "HUP": SIGHUP, "INT": SIGINT, "QUIT": SIGQUIT, "ABRT": SIGABRT, "KILL": SIGKILL, "USR1": SIGUSR1,
        "USR2": SIGUSR2, "PIPE": SIGPIPE, "ALRM": SIGALRM, "TERM": SIGTERM, "WINCH": SIGWINCH,
    ]

    /// The signal of --restart-signal (SIGTERM when not given); nil when it names none.
    var signal: Int32? {
        guard let name = signalName else { return SIGTERM }
        if let number = Int32(name) { return number > 0 && number < 65 ? number : nil }
        let upper = name.uppercased()
        return Self.signalNames[upper.hasPrefix("SIG") ? String(upper.dropFirst(3)) : upper]
    }

    var policy: RestartPolicy { RestartPolicy(signal: signal ?? SIGTERM, grace: grace ?? 10) }

    func validate() throws {
        guard onChange else {
            guard signalName == nil && grace == nil else {
                throw ValidationError("--restart-signal and --restart-grace go with --restart-on-change")
            }
            return
        }
        guard signal != nil else {
            throw ValidationError(
                "--restart-signal takes a signal's name or number: TERM, SIGTERM, HUP, INT, QUIT, USR1, USR2, 15, …")
        }
        if let grace, !(grace >= 0 && grace <= 3600) {
            throw ValidationError("--restart-grace must be between 0 and 3600 seconds")
        }
    }
}

extension KeychainCLI.Exec {
    /// Seconds between two looks of a watch that polls (as watch's default --interval).
    static let pollInterval = 1.0

    /// Runs the command as exec does, starting it again when a secret it was given changes.
    /// - Throws: ``CommandFailure`` when the command cannot be started (127, 126) or a service
    ///   cannot be watched (as for watch).
    func runRestarting(_ first: ExecInputs, keychain: Keychain) throws -> Never {
        let outcome = "the command was not restarted and keeps running"
        // The environment it starts from; ours is not changed again (the watches' threads read it).
        let baseline = Environment.all(except: [])
        // What the watches' threads look for: the secrets given, by where they went.
        let watched = Locked(first.origins)
        // A watch that polls (OpenBao, a tree vault) sees a burst of writes a poll at a time.
        let store = (keychain.store as? HeldVaultStore)?.direct ?? keychain.store  // (unlock's holder watches directly)
        let polled = store is OpenBaoStore || store is TreeVaultStore
        let requests = try RestartRequests(quiet: RestartPolicy.quiet + (polled ? Self.pollInterval : 0))
        let sources = self.sources
        let services = Set(first.sources.map(\.service) + sources.fromServices).sorted()
        announce(first.secrets)
        var current = first
        try runMaskedRestarting(
            command, first: try start(first, in: baseline), hiding: OutputMasks(first.secrets.map(\.value)),
            policy: restart.policy, requests: requests,
            watch: {
                try services.map { service in
                    // (A watch lasts as long as its Keychain: both are kept.)
                    let watcher = Keychain(service: try ServiceName(service), store: keychain.store)
                    let watch = try watcher.watch(pollingEvery: Self.pollInterval) { result in
                        Self.received(result, in: service, of: watched.withLock { $0 }, from: sources, requests)
                    }
                    return (watcher, watch)
                }
            },
            next: {
                let inputs: ExecInputs
                do {
                    inputs = try self.inputs(from: keychain, outcome: outcome)
                } catch {
                    let message = failureMessage(error) ?? "\(error)"
                    requests.note(message.contains(outcome) ? message : "\(message); \(outcome)")
                    return nil
                }
                guard !inputs.gives(sameAs: current) else { return nil }
                let changed = inputs.secrets.filter { secret in !current.secrets.contains { $0.value == secret.value } }
                do {
                    let next = try start(inputs, in: baseline)
                    announce(changed)
                    current = inputs
                    watched.withLock { $0 = inputs.origins }
                    return next
                } catch {
                    requests.note(failureMessage(error).map { "\($0); \(outcome)" } ?? "\(error)")
                    return nil
                }
            })
    }

    /// What the command is started with for `inputs`: `baseline` with its variables (and
    /// $CREDENTIALS_DIRECTORY for its files, in a new directory) in place.
    private func start(_ inputs: ExecInputs, in baseline: [String]) throws -> CommandStart {
        let directory = try inputs.files.isEmpty ? nil : CredentialsDirectory(writing: inputs.files)
        var names = Set(inputs.variables.map(\.name))
        if directory != nil { names.insert("CREDENTIALS_DIRECTORY") }
        var environment = baseline.filter { !names.contains(String($0.prefix { $0 != "=" })) }
        environment += inputs.variables.map { "\($0.name)=\(String(decoding: $0.value, as: UTF8.self))" }
        if let directory { environment.append("CREDENTIALS_DIRECTORY=\(directory.path)") }
        return CommandStart(
            variables: environment, secrets: inputs.secrets.map(\.value), cleanup: { directory?.remove() })
    }

    /// One report of the watch of `service` (on its thread): a change to a secret the command
    /// was given, or to a key --from gives it, restarts it; a secret it was given deleted is told
    /// and changes nothing (the command keeps its value); a watch that fails is told.
    private static func received(
        _ result: Result<KeychainChange, KeychainError>, in service: String,
        of origins: [(source: KeychainReference, shown: String)],
        from sources: VariableSources, _ requests: RestartRequests
    ) {
        let change: KeychainChange
        switch result {
        case .success(let success): change = success
        case .failure(let error):
            requests.note(
                "cannot watch service \(quotedValue(service, expected: "a service name")) any more ("
                    + "\(failureMessage(error) ?? "\(error)")); the command keeps running and is not restarted "
                    + "for its changes")
            return
        }
        let key = change.key.rawValue
        let given = origins.filter { $0.source.service == service && $0.source.key == key }.map(\.shown)
        let fromService = sources.fromServices.contains(service) && sources.selects(key)
        if change.kind == .deleted && !given.isEmpty {
            requests.note(
                "\(given.joined(separator: ", ")): the secret \(quotedValue(key, expected: "a key name")) of service "
                    + "\(quotedValue(service, expected: "a service name")) was deleted; the command keeps running "
                    + "with the value it was given")
            if !fromService { return }
        }
        if !given.isEmpty || fromService { requests.changed() }
    }
}
