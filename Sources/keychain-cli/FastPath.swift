import KeychainCore

/// The invocations scripts repeat in loops, `get KEY` and `set KEY` with their everyday options
/// (the service, the timeout, and the backend's: --backend, --vault, --passphrase-file|fd,
/// --identity, --identity-fd, --signing-key, --allowed-signers, --require-signed), parsed by hand and run through the same ``GetRequest`` and ``SetRequest`` as the parsed commands;
/// and `--version` alone.
///
/// The argument parser finds its commands by reflection and dynamic casts, each of which scans
/// every protocol conformance in the binary: more than a third of what a whole `get` costs
/// (callgrind; bench/RESULTS.md has the times). Anything this parser does not recognise
/// exactly (help, other commands and options, `--`, a repeated option, a third word) goes to the
/// argument parser, so errors and help come from one place. The CLI tests run every supported
/// form both ways (`KEYCHAIN_CLI_NO_FAST_PATH=1` turns this off) and compare the results.
enum FastPath {
    /// The exit status, or nil when the arguments need the full parser.
    static func run(_ arguments: ArraySlice<String>) -> Int32? {
        if Environment.isSet("KEYCHAIN_CLI_NO_FAST_PATH") { return nil }
        if arguments.elementsEqual(["--version"]) {
            // What the parser prints for it, without the time it spends looking the commands up,
            // and written directly: print's generic machinery (a dynamic cast per argument) maps
            // code pages --version has no other use for. Like print, a closed stdout is no error.
            _ = try? writeOutput(Array((KeychainCLI.version + "\n").utf8))
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
        var settings = Settings()
        var words: [String] = []
        var flags: [String] = []
        var remaining = arguments.makeIterator()
        while let argument = remaining.next() {
            if let option = GlobalOption(name: argument) {
                // The parser's checks (GlobalOption.assign); anything else gets the parser's error.
                guard let value = remaining.next(), option.assign(value, to: &settings) else { return nil }
                continue
            }
            if argument == "--require-signed" {
                // The one global flag; given twice, the parser's word on it.
                guard !settings.requireSigned else { return nil }
                settings.requireSigned = true
                continue
            }
            if argument.hasPrefix("-") {
                // A command's flag before the command's name is the parser's error (`--json get k`).
                guard !words.isEmpty, !flags.contains(argument) else { return nil }
                flags.append(argument)
            } else {
                words.append(argument)
            }
        }
        // Options the parser refuses (Settings.misuse): the parser's error.
        guard words.count == 2, settings.misuse == nil else { return nil }
        let key = words[1]
        switch words[0] {
        case "get":
            guard flags.count <= 1, let output = flags.isEmpty ? .terminalNewline : getOutput(flags[0]) else {
                return nil
            }
            let request = GetRequest(key: key, output: output)
            return { try request.perform(in: settings.keychain()) }
        case "set":
            guard flags.allSatisfy({ $0 == "--raw" || $0 == "--allow-empty" }) else { return nil }
            let request = SetRequest(
                key: key, raw: flags.contains("--raw"), allowEmpty: flags.contains("--allow-empty"))
            return { try request.perform(in: settings.keychain()) }
        default:
            return nil
        }
    }

    /// The output a `get` flag asks for. A switch, not a dictionary literal: instantiating a
    /// dictionary type at run time scans the binary's protocol conformances.
    private static func getOutput(_ flag: String) -> GetRequest.Output? {
        switch flag {
        case "-n", "--no-newline": .noNewline
        case "--newline": .newline
        case "--raw": .raw
        case "--json": .json
        default: nil
        }
    }
}
