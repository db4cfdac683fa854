/// Where stored secrets occur in streams of bytes (`scan`): every form masked output hides of
/// each (``MaskedForms/labelled(_:)``: the value, its lines, base64 wrapped across lines, URL- and
/// JSON-escaped, …), found by the masking automaton one block at a time, however a form is split
/// between blocks. What it keeps of a stream is the automaton's open state (never more than
/// ``longestSpan`` bytes' worth of positions), so its memory does not grow with the stream.
///
/// The forms are the secrets' bytes: the automaton overwrites its copy of them when it goes.
package struct SecretFinder: Sendable {
    /// A secret (its index in those given) and the form of it found.
    package struct Owner: Sendable, Equatable {
        package var secret: Int
        package var label: String
    }

    /// A form found: its bytes from `start` to `end` (offsets in the stream), and every secret
    /// it is a form of (two keys may hold one value).
    package struct Match: Sendable {
        package var start: Int
        package var end: Int
        package var owners: [Owner]
    }

    private let automaton: MaskingAutomaton
    private let owners: [[Owner]]
    private var stream: MaskingStream
    private var total = 0
    /// The most bytes one match may cover: its longest form, with a line break (CR LF) between
    /// any two bytes where it is wrapped base64.
    package let longestSpan: Int

    /// Looks for the forms of `secrets` at least `minimumLength` bytes long.
    package init(secrets: [[UInt8]], minimumLength: Int) {
        var entries: [(form: [UInt8], acrossLines: Bool, owner: Owner)] = []
        for (index, secret) in secrets.enumerated() {
            let forms = MaskedForms.labelled(secret)
            entries += forms.plain.map { ($0.form, false, Owner(secret: index, label: $0.label)) }
            entries += forms.acrossLines.map { ($0.form, true, Owner(secret: index, label: $0.label)) }
        }
        entries = entries.filter { $0.form.count >= max(minimumLength, MaskedForms.minimumLength) }
        entries.sort { $0.form.lexicographicallyPrecedes($1.form) }
        // One form for each byte string, with every secret it is a form of; it wraps where any
        // of them does.
        var plain: [[UInt8]] = []
        var acrossLines: [[UInt8]] = []
        var plainOwners: [[Owner]] = []
        var acrossOwners: [[Owner]] = []
        var index = 0
        while index < entries.count {
            var next = index
            var wraps = false
            var owners: [Owner] = []
            while next < entries.count && entries[next].form == entries[index].form {
                wraps = wraps || entries[next].acrossLines
                if !owners.contains(where: { $0.secret == entries[next].owner.secret }) {
                    owners.append(entries[next].owner)
                }
                next += 1
            }
            if wraps {
                acrossLines.append(entries[index].form)
                acrossOwners.append(owners)
            } else {
                plain.append(entries[index].form)
                plainOwners.append(owners)
            }
            index = next
        }
        automaton = MaskingAutomaton(plain: plain, acrossLines: acrossLines)
        owners = plainOwners + acrossOwners
        stream = MaskingStream(automaton: automaton)
        longestSpan = max(1, automaton.longestForm * 3)
        for index in entries.indices { wipe(&entries[index].form) }
        for index in plain.indices { wipe(&plain[index]) }
        for index in acrossLines.indices { wipe(&acrossLines[index]) }
    }

    /// Whether there is nothing to look for.
    package var isEmpty: Bool { automaton.isEmpty }

    /// The forms that end in `bytes`, the stream's next bytes, in the order they end.
    package mutating func find(in bytes: UnsafeRawBufferPointer) -> [Match] {
        guard !automaton.isEmpty else {
            total += bytes.count
            return []
        }
        let found = stream.matches(in: bytes, from: total)
        total += bytes.count
        return found.map { Match(start: $0.start, end: $0.end, owners: owners[$0.form]) }
    }

    /// How many bytes of the stream have been read.
    package var offset: Int { total }

    /// Begins another stream: nothing open in the last one goes on into it.
    package mutating func restart() {
        stream = MaskingStream(automaton: automaton)
        total = 0
    }
}
