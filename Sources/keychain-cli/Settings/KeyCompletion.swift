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
        // A key with a line break cannot be offered: completions are one to a line.
        return items.map(\.key).filter { $0.hasPrefix(prefix) && !$0.contains("\n") }.sorted()
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
            _ = option.assign(value, to: &settings)
        }
        return settings
    }
}
