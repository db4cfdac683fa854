import ArgumentParser
import Glibc
import KeychainCore

extension CompletionKind {
    /// The keys of the service on the backend the command line names so far.
    static var keyNames: CompletionKind {
        .custom { words, index, prefix in KeyCompletion.keys(words: words, completing: index, prefix: prefix) }
    }
}

/// Completion of KEY arguments (bash, zsh and fish call `keychain-cli ---completion` with the
/// words typed so far): the keys `list` would print for the service and backend those words
/// name. It never asks for anything (a vault opens only by $KEYCHAIN_PASSPHRASE, a passphrase
/// file or an identity file), gives up after ``seconds``, and offers nothing on any error: a
/// completion must never print a message into the line being typed.
enum KeyCompletion {
    static let seconds = 2.0

    static func keys(words: [String], completing index: Int, prefix: String) -> [String] {
        // Messages of a library (GLib) would land in the middle of the line being typed.
        let null = open("/dev/null", O_WRONLY)
        dup2(null, STDERR_FILENO)
        // A backend that outlasts its own limit ends this process, and the shell offers nothing.
        alarm(UInt32(seconds) + 1)
        var settings = settings(from: words.enumerated().filter { $0.offset != index }.map(\.element).dropFirst())
        settings.mayPrompt = false
        settings.timeout = min(settings.timeout ?? seconds, seconds)
        guard let keychain = try? settings.keychain(listing: .keysOnly), let items = try? keychain.items() else {
            return []
        }
        // A key with a line break (or a tab, fish's separator) cannot be offered: completions are
        // one to a line. A key that starts with - only after --, where it cannot be an option.
        // zsh inserts a `!` unquoted (history expansion is off where its completion runs), so
        // that the line would fail: such a key is not offered there.
        let afterTerminator = words.prefix(index).contains("--")
        let shell = Environment.value("SAP_SHELL") ?? ""
        // bash passes the word as typed (`A\$H`, `'A$H`); the keys are matched against it unquoted.
        let typed = shellWord(prefix)
        return items.map(\.key)
            .filter {
                $0.hasPrefix(typed) && !$0.contains("\n") && !$0.contains("\t")
                    && (afterTerminator || !$0.hasPrefix("-")) && (shell != "zsh" || !$0.contains("!"))
            }
            .sorted().compactMap { escaped($0, for: shell, typed: prefix) }
    }

    /// `key` as the shell's completion script must get it, or nil when it cannot be offered.
    /// - bash: the text bash inserts as it is, quoted in the style the word was begun with
    ///   (``bashScript(_:)`` turns bash's own quoting off for keys: it leaves `$` and `` ` ``
    ///   bare when no file has that name, so that a key ``a`reboot`b`` would run a command).
    /// - zsh: `_describe` takes `name:description`, so a colon is escaped.
    static func escaped(_ key: String, for shell: String, typed prefix: String = "") -> String? {
        switch (shell, prefix.first) {
        case ("bash", "'"):
            // Inside '…' every character is itself, but ' cannot be written.
            return key.contains("'") ? nil : key
        case ("bash", "\""):
            // Inside "…", a backslash keeps $ ` " \ literal; a ! would expand history.
            return key.contains("!") ? nil : backslashed(key, only: ["$", "`", "\"", "\\"])
        case ("bash", _):
            return backslashed(key, only: bashSpecial)
        case ("zsh", _):
            return key.replacing("\\", with: "\\\\").replacing(":", with: "\\:")
        default:
            return key
        }
    }

    /// The ASCII characters bash may give a meaning to in a word: every one but letters, digits
    /// and `-_./+,%`, so including `:`, `=` and `@`, where bash splits words for completion.
    static let bashSpecial = Set(
        (0..<128).map { Character(Unicode.Scalar(UInt8($0))) }.filter {
            !$0.isLetter && !$0.isNumber && !"-_./+,%".contains($0)
        })

    /// `text` with a backslash before each of `characters`.
    private static func backslashed(_ text: String, only characters: Set<Character>) -> String {
        var result = ""
        for character in text {
            if characters.contains(character) { result.append("\\") }
            result.append(character)
        }
        return result
    }

    /// The completion script bash gets: ArgumentParser's, but for KEY arguments. Its script
    /// passes every candidate through `compgen -W` (which expands it as shell words and compares
    /// it with the word unquoted) and inserts it with `complete -o filenames` quoting. Keys are
    /// instead read as lines into `COMPREPLY` as ``escaped(_:for:typed:)`` quoted them, with
    /// that quoting off. Nil for another shell's script.
    static func bashScript(_ generated: String) -> String? {
        guard generated.hasPrefix("#!/bin/bash") else { return nil }
        let call = #"__keychain-cli_add_completions -W "$(__keychain-cli_custom_complete ---completion "#
        let lines = generated.split(separator: "\n", omittingEmptySubsequences: false).map { line in
            guard let range = line.firstRange(of: call), line.hasSuffix(#")""#) else { return String(line) }
            let arguments = line[range.upperBound...].dropLast(2)
            return line[..<range.lowerBound] + "compopt +o filenames; __keychain-cli_add_keys ---completion "
                + arguments
        }
        let reader = """
            __keychain-cli_add_keys() {
                local key
                while IFS='' read -r key; do
                    COMPREPLY+=("${key}")
                done < <(__keychain-cli_custom_complete "${@}")
            }

            """
        return lines.joined(separator: "\n").replacing(
            "_keychain-cli() {\n", with: reader + "_keychain-cli() {\n", maxReplacements: 1)
    }

    /// The global options among `words`, as `--name value` or `--name=value`; descriptors are
    /// left out (the shell's, not the user's).
    static func settings(from words: ArraySlice<String>) -> Settings {
        var settings = Settings()
        var remaining = words.makeIterator()
        while let word = remaining.next() {
            if word == "--" { break }
            let parts = word.split(separator: "=", maxSplits: 1).map(String.init)
            guard let option = GlobalOption(name: parts[0]), option != .passphraseFD, option != .identityFD else {
                continue
            }
            guard let value = parts.count == 2 ? parts[1] : remaining.next() else { break }
            _ = option.assign(shellWord(value), to: &settings)
        }
        return settings
    }

    /// A word as the shell would pass it, for the forms people type in an option's value:
    /// quotes removed ('…', "…", backslashes), a leading ~ and $NAME or ${NAME} expanded.
    /// Anything else (command substitution, globs) is left as typed.
    static func shellWord(_ word: String) -> String {
        let characters = Array(word)
        var result = ""
        var quote: Character? = nil
        var index = 0
        func environment(_ name: String) -> String { Environment.value(name) ?? "" }
        while index < characters.count {
            let character = characters[index]
            index += 1
            switch (quote, character) {
            case (nil, "'"), (nil, "\""): quote = character
            case ("'", "'"), ("\"", "\""): quote = nil
            case (nil, "\\"), ("\"", "\\"):
                if index < characters.count {
                    result.append(characters[index])
                    index += 1
                }
            case (nil, "~") where index == 1: result += environment("HOME")
            case (nil, "$"), ("\"", "$"):
                let braced = index < characters.count && characters[index] == "{"
                if braced { index += 1 }
                let start = index
                while index < characters.count,
                    characters[index].isLetter || characters[index].isNumber
                        || characters[index] == "_"
                {
                    index += 1
                }
                result += environment(String(characters[start..<index]))
                if braced && index < characters.count && characters[index] == "}" { index += 1 }
            default: result.append(character)
            }
        }
        return result
    }
}
