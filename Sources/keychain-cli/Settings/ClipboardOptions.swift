import ArgumentParser

/// `--clip` and `--clear-after`, for `get` and `generate`.
struct ClipboardOptions: ParsableArguments {
    static let defaultSeconds = 45
    static let secondsRange = 1...86_400

    @Flag(
        help: ArgumentHelp(
            "Put the secret on the clipboard instead of standard output (wl-copy under Wayland, else xclip "
                + "or xsel), and clear it after --clear-after seconds if it still holds the secret."))
    var clip = false

    @Option(
        parsing: .unconditional,
        help: ArgumentHelp(
            "With --clip: clear the clipboard after this many seconds (1 to 86400). Default: 45.",
            valueName: "seconds"))
    var clearAfter: Int?

    func validate() throws {
        if let clearAfter {
            guard clip else { throw ValidationError("--clear-after goes with --clip") }
            guard Self.secondsRange.contains(clearAfter) else {
                throw ValidationError("--clear-after must be a whole number of seconds from 1 to 86400")
            }
        }
    }

    var seconds: Int { clearAfter ?? Self.defaultSeconds }
}
