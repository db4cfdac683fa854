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
        let shell = getenv("SAP_SHELL").map { String(cString: $0) } ?? ""
        return items.map(\.key)
            .filter {
                $0.hasPrefix(prefix) && !$0.contains("\n") && !$0.contains("\t")
                    && (afterTerminator || !$0.hasPrefix("-")) && (shell != "zsh" || !$0.contains("!"))
            }
            .sorted().map { escaped($0, for: shell) }
    }

    /// `key` as the shell's completion script must get it. bash's passes each line to
    /// `compgen -W`, which expands it as shell words: a key named `$(rm -rf ~)` would run. So
    /// every character but letters and digits is escaped with a backslash, which that expansion
    /// removes; bash then quotes the literal key as it inserts it (`complete -o filenames`).
    /// zsh's `_describe` takes `name:description`, so a colon is escaped.
    static func escaped(_ key: String, for shell: String) -> String {
        switch shell {
        case "bash":
            return backslashed(key)
        case "zsh":
            return key.replacing("\\", with: "\\\\").replacing(":", with: "\\:")
        default:
            return key
        }
    }

    /// `text` with a backslash before every ASCII character but letters and digits.
    private static func backslashed(_ text: String) -> String {
        var result = ""
        for character in text {
            if character.isASCII && !character.isLetter && !character.isNumber { result.append("\\") }
            result.append(character)
        }
        return result
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
        func environment(_ name: String) -> String { getenv(name).map { String(cString: $0) } ?? "" }
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
