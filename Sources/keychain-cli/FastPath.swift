#if canImport(Glibc)
    import Glibc
#endif

/// The invocations scripts repeat in loops, `get KEY` and `set KEY` with their everyday options
/// (the service, the timeout, and the backend's: --backend, --vault, --passphrase-file|fd,
/// --identity, --identity-fd), parsed by hand and run through the same ``GetRequest`` and ``SetRequest`` as the parsed commands;
/// and `--version` alone.
///
/// The argument parser finds its commands by reflection and dynamic casts, each of which scans
/// every protocol conformance in the binary: about 9 million instructions (2.5 ms) per process,
/// more than a third of what a whole `get` costs here. Anything this parser does not recognise
/// exactly (help, other commands and options, `--`, a repeated option, a third word) goes to the
/// argument parser, so errors and help come from one place. The CLI tests run every supported
/// form both ways (`KEYCHAIN_CLI_NO_FAST_PATH=1` turns this off) and compare the results.
enum FastPath {
    /// The exit status, or nil when the arguments need the full parser.
    static func run(_ arguments: ArraySlice<String>) -> Int32? {
        guard getenv("KEYCHAIN_CLI_NO_FAST_PATH") == nil else { return nil }
        if arguments.elementsEqual(["--version"]) {
            // What the parser prints for it, without the 3-5 ms it spends looking the commands up.
            print(KeychainCLI.version)
            return 0
        }
        guard let command = parse(arguments) else { return nil }
        do {
            try command()
            return 0
        } catch {
            return reportingFailure(error)
        }
    }

    static func parse(_ arguments: ArraySlice<String>) -> (() throws -> Void)? {
        var options = KeychainOptions()
        var words: [String] = []
        var flags: [String] = []
        var remaining = arguments.makeIterator()
        while let argument = remaining.next() {
            switch argument {
            case "-s", "--service":
                guard options.service == nil, let value = remaining.next(), !value.hasPrefix("-") else { return nil }
                options.service = value
            case "--timeout":
                // The same bounds as GlobalOptions.validate(); anything else gets the parser's error.
                guard options.timeout == nil, let value = remaining.next(), let seconds = Double(value),
                    seconds > 0 && seconds <= 86_400
                else { return nil }
                options.timeout = seconds
            case "--backend":
                guard options.backend == nil, let value = remaining.next(), let backend = Backend(rawValue: value)
                else { return nil }
                options.backend = backend
            case "--vault", "--passphrase-file", "--identity":
                guard let value = remaining.next(), !value.isEmpty, !value.hasPrefix("-") else { return nil }
                switch argument {
                case "--vault" where options.vault == nil: options.vault = value
                case "--passphrase-file" where options.passphraseFile == nil: options.passphraseFile = value
                case "--identity" where options.identity == nil: options.identity = value
                default: return nil  // given twice
                }
            case "--passphrase-fd", "--identity-fd":
                guard let value = remaining.next(), let fd = Int32(value), fd >= 0 else { return nil }
                switch argument {
                case "--passphrase-fd" where options.passphraseFD == nil: options.passphraseFD = fd
                case "--identity-fd" where options.identityFD == nil: options.identityFD = fd
                default: return nil
                }
            case _ where argument.hasPrefix("-"):
                guard !flags.contains(argument) else { return nil }
                flags.append(argument)
            default:
                words.append(argument)
            }
        }
        // Two sources of one thing: the parser's error.
        guard words.count == 2, options.passphraseFile == nil || options.passphraseFD == nil,
            options.identity == nil || options.identityFD == nil
        else { return nil }
        let key = words[1]
        switch words[0] {
        case "get":
            guard flags.count <= 1, let output = flags.isEmpty ? .terminalNewline : getOutput(flags[0]) else {
                return nil
            }
            let request = GetRequest(key: key, output: output)
            return { try request.perform(in: makeKeychain(options)) }
        case "set":
            guard flags.allSatisfy({ $0 == "--raw" || $0 == "--allow-empty" }) else { return nil }
            let request = SetRequest(
                key: key, raw: flags.contains("--raw"), allowEmpty: flags.contains("--allow-empty"))
            return { try request.perform(in: makeKeychain(options)) }
        default:
            return nil
        }
    }

    /// The output a `get` flag asks for. A switch, not a dictionary literal: instantiating a
    /// dictionary type at run time scans the binary's protocol conformances, 0.2 ms per process.
    private static func getOutput(_ flag: String) -> GetRequest.Output? {
        switch flag {
        case "-n": .noNewline
        case "--newline": .newline
        case "--raw": .raw
        case "--json": .json
        default: nil
        }
    }
}
