import ArgumentParser
import KeychainCore

/// Usage mistakes the argument parser reports unhelpfully, or in words that must not be repeated:
/// unknown commands (with a suggestion), `help` of an unknown command, and its messages rewritten
/// to one line that never echoes what followed `set KEY`.
enum UsageCheck {
    /// The command names, `help` included.
    static let commands = KeychainCLI.configuration.subcommands.map(commandName) + ["help"]

    /// The global options that take a value, which may come before the command name (and the
    /// parser's own, which `make install` uses to write the completion scripts).
    private static let globalOptionsWithValues = Swift.Set(GlobalOption.names + ["--generate-completion-script"])

    /// Refuses an unknown command, and `help` of one, before the parser (which would print the
    /// root help and exit 0 for `help nosuch`).
    static func beforeParsing(_ arguments: [String]) throws {
        // The completion scripts' own requests (---completion …) are the parser's business.
        if arguments.first?.hasPrefix("---") == true { return }
        let words = positionalWords(arguments)
        guard let command = words.first else { return }
        if command == "help", let topic = words.dropFirst().first, !commands.contains(topic) {
            throw unknownCommand(topic)
        }
        if !commands.contains(command) { throw unknownCommand(command) }
    }

    /// The parser's message for `error`, on one line, without a doubled period, with a hint where
    /// one helps, and without any word that followed `set` (it may be the secret).
    static func message(for error: any Error, arguments: [String]) -> String {
        var message = KeychainCLI.message(for: error)
        // A key or passphrase given where a path belongs (`--identity "$(cat key)"`, which the
        // parser reads as an unknown option) is never repeated, nor any of its lines.
        for (index, argument) in arguments.enumerated() {
            guard let kind = misplacedSecretKind(argument) else { continue }
            let option = index > 0 && arguments[index - 1].hasPrefix("-") ? arguments[index - 1] : nil
            if let option, PathValue.hints[option] != nil {
                return PathValue.refusal(of: option, kind: kind) + ". See 'keychain-cli --help'"
            }
            let lines = argument.split(whereSeparator: \.isNewline).filter { $0.count >= 8 }
            if message.contains(argument) || lines.contains(where: { message.contains($0) }) {
                return "could not parse the arguments; one holds \(kind) and is not repeated here. "
                    + "See 'keychain-cli --help'"
            }
        }
        message = message.split(separator: "\n").map { $0.trimming() }.joined(separator: " ")
        while message.hasSuffix(".") { message.removeLast() }
        let words = positionalWords(arguments)
        let command = words.first.flatMap { commands.contains($0) ? $0 : nil }
        let help = "See 'keychain-cli \(command.map { "\($0) " } ?? "")--help'"
        if command == "set", let setIndex = arguments.firstIndex(of: "set") {
            let echoed = arguments[(setIndex + 1)...].contains { word in
                !word.isEmpty && !setOptionNames.contains(word) && message.contains(word)
            }
            if echoed {
                return "could not parse the arguments of set; they are not repeated here, since one may be "
                    + "a secret. set takes one KEY (a key that starts with - goes after --: set -- -KEY) and "
                    + "reads the secret from standard input: printf '%s' \"$SECRET\" | keychain-cli set KEY. \(help)"
            }
        }
        if command == "get" || command == "delete",
            let dashed = arguments.indices.last(where: { isDashedKey(at: $0, in: arguments) }).map({ arguments[$0] }),
            secretKind(inAnyPartOf: dashed) == nil
        {
            message +=
                ". A key that starts with - goes after --: keychain-cli \(command!) -- \(escapedForDisplay(dashed))"
        }
        return "\(message). \(help)"
    }

    private static let setOptionNames: Swift.Set<String> =
        globalOptionsWithValues.union(["--from-env", "--from-file", "--raw", "--allow-empty", "-h", "--help", "set"])
    private static let knownOptionNames: Swift.Set<String> =
        optionsWithValues.union([
            "-n", "--no-newline", "--newline", "--raw", "--json", "--ignore-missing", "--clip", "-h", "--help",
        ])

    /// The options of get and delete that take a value: the global ones, and --clear-after.
    private static let optionsWithValues = globalOptionsWithValues.union(["--clear-after"])

    /// Whether `arguments[index]` looks like a key that starts with - given before `--`: not an
    /// option, not `--option=value` of one, and not the value of an option (`--timeout -1`).
    private static func isDashedKey(at index: Int, in arguments: [String]) -> Bool {
        let argument = arguments[index]
        guard argument.hasPrefix("-"), argument != "--", !knownOptionNames.contains(argument) else { return false }
        if let equals = argument.firstIndex(of: "="), knownOptionNames.contains(String(argument[..<equals])) {
            return false
        }
        return index == 0 || !optionsWithValues.contains(arguments[index - 1])
    }

    /// The words that are neither options nor the values of global options, up to `--`.
    private static func positionalWords(_ arguments: [String]) -> [String] {
        var words: [String] = []
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            if argument == "--" { break }
            if globalOptionsWithValues.contains(argument) {
                index += 2
                continue
            }
            if !argument.hasPrefix("-") { words.append(argument) }
            index += 1
        }
        return words
    }

    private static func unknownCommand(_ word: String) -> CommandFailure {
        let commands = commands.filter { $0 != "help" }
        let nearest = commands.map { ($0, editDistance($0, word)) }.min { $0.1 < $1.1 }
        let suggestion = nearest.flatMap { $0.1 <= 2 ? "Did you mean '\($0.0)'? " : nil } ?? ""
        return CommandFailure.usage(
            "unknown command \(quotedValue(word, expected: "a command")). \(suggestion)The commands are "
                + commands.joined(separator: ", ") + "; see 'keychain-cli --help'")
    }

    /// Levenshtein distance, for suggestions among a dozen short names.
    static func editDistance(_ a: String, _ b: String) -> Int {
        let a = Array(a.unicodeScalars)
        let b = Array(b.unicodeScalars)
        var previous = Array(0...b.count)
        for i in 1...max(1, a.count) where !a.isEmpty {
            var current = [i] + Array(repeating: 0, count: b.count)
            for j in stride(from: 1, through: b.count, by: 1) {
                current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
            }
            previous = current
        }
        return previous[b.count]
    }
}
