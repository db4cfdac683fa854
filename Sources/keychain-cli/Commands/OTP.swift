import ArgumentParser
import FoundationEssentials
import Glibc
import KeychainCore

extension KeychainCLI {
    struct OTP: KeychainCommand {
        static let configuration = CommandConfiguration(
            commandName: "otp",
            abstract: "Print the current one-time code (TOTP) of the seed stored under KEY.",
            discussion: """
                KEY holds an otpauth://totp/ URI (the text of the QR code a service shows when \
                two-factor authentication is turned on) or its bare base32 seed (then SHA1, 6 \
                digits, 30 seconds): RFC 6238, as oathtool --totp and authenticator apps compute \
                it. Prints the code and a newline; --json adds the seconds it stays valid.

                  printf '%s' "$OTPAUTH_URI" | keychain-cli set npm-2fa   # otpauth://totp/…
                  npm publish --otp="$(keychain-cli otp npm-2fa)"
                  keychain-cli otp npm-2fa --json
                """)

        @OptionGroup(title: "Global options") var globals: GlobalOptions
        @ParentCommand var root: KeychainCLI

        @Argument(help: "The key of the stored seed or otpauth:// URI.", completion: .keyNames)
        var key: String

        @Option(
            name: .customLong("at"), parsing: .unconditional,
            help: ArgumentHelp("The code at this Unix time (seconds since 1970) instead of now.", valueName: "time"))
        var time: Int64?

        @Flag(help: "Print a JSON object: code, remaining (seconds), period, digits and algorithm.")
        var json = false

        func validate() throws {
            if let time, time < 0 { throw ValidationError("--at must be a Unix time: 0 or more seconds") }
        }

        func run() throws {
            let key = try KeychainKey(key)
            let keychain = try keychain()
            guard var stored = try keychain.data(for: key) else {
                throw KeychainError.notFound(service: keychain.service.rawValue, key: key.rawValue)
            }
            defer { wipe(&stored) }
            let password = try OneTimePassword(stored: stored, key: key)
            let now = self.time ?? Int64(Glibc.time(nil))
            let code = password.code(at: now)
            guard json else { return try writeOutput(Array((code + "\n").utf8)) }
            try writeJSON(
                Code(
                    code: code, remaining: password.secondsLeft(at: now), period: password.period,
                    digits: password.digits, algorithm: password.algorithm.rawValue))
        }

        struct Code: Encodable {
            var code: String
            var remaining: Int
            var period: Int
            var digits: Int
            var algorithm: String
        }
    }
}
