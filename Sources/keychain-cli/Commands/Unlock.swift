import ArgumentParser
import FoundationEssentials
import KeychainCore
import KeychainHolder

extension KeychainCLI {
    struct Unlock: KeychainCommand {
        static let configuration = CommandConfiguration(
            abstract: "Open the vault once and hold it open for later commands.",
            discussion: """
                Opens the vault as every command does (its passphrase from --passphrase-fd, \
                --passphrase-file, $KEYCHAIN_PASSPHRASE or a prompt; or an identity) and gives \
                its file key (a tree vault: an identity that opens it), never a passphrase, \
                to your holder: a keychain-cli in the \
                background, started when none runs. Until keychain-cli lock, --ttl, --idle or \
                a suspend (where logind runs; it delays the suspend until the keys are \
                forgotten), every command on this vault given no passphrase \
                (get, set, list, delete, exec, inject, export, import, the git and docker \
                helpers) asks the holder instead of asking you.

                The holder listens on $XDG_RUNTIME_DIR/keychain-cli/holder.sock (else \
                /tmp/keychain-cli-UID/), answers your uid only, reads the vault again when it \
                changed, writes under the vault's lock as any writer does, and keeps its memory \
                out of core dumps (and out of swap as root or with ulimit -l unlimited). A vault \
                re-keyed meanwhile (vault passwd) asks for its passphrase again. Unlocking again \
                sets new limits. Exits 1 when there is no vault, 77 without its passphrase.

                  keychain-cli --vault ~/secrets.age unlock --ttl 8h --idle 30m
                  keychain-cli --vault ~/secrets.age get github-token
                  keychain-cli lock          # every vault you unlocked
                """)

        @OptionGroup(title: "Global options") var globals: GlobalOptions
        @ParentCommand var root: KeychainCLI

        @Option(
            help: ArgumentHelp(
                "Lock the vault this long after now (suspended time counts): 30m, 8h, 1h30m, 1w, or none.",
                valueName: "duration"))
        var ttl = "8h"

        @Option(
            help: ArgumentHelp("Lock the vault once it has gone unused this long (or none).", valueName: "duration"))
        var idle = "none"

        func validate() throws {
            _ = try Self.seconds(ttl, option: "--ttl")
            _ = try Self.seconds(idle, option: "--idle")
        }

        func run() throws {
            let (ttl, idle) = (try Self.seconds(ttl, option: "--ttl"), try Self.seconds(idle, option: "--idle"))
            if let tree = try settings.treeVaultStore() {
                // The identity's one copy outside swift-crypto's key: wiped with the request.
                guard
                    let request = try tree.withHeldIdentity({ type, key in
                        HolderRequest.hold(
                            HolderRequest.Hold(
                                vault: HolderRequest.vaultKey(tree.directory), header: Data(),
                                fileKey: HeldKey(copying: key), stanzaTypes: [], ttl: ttl, idle: idle, tree: true,
                                identity: type))
                    })
                else {
                    throw CommandFailure(
                        kind: .denied,
                        message: "\(tree.directory) is a team tree vault: give the identity of one of its recipients "
                            + "(--identity PATH or $KEYCHAIN_IDENTITY) to hold it")
                }
                return try hold(request, path: tree.directory, ttl: ttl, idle: idle)
            }
            let store = try settings.vaultStore()
            guard let header = try store.openedHeader() else {
                throw CommandFailure.notFound(
                    "there is no vault at \(store.path) to unlock; the first set creates one")
            }
            // The key's one copy outside the header's own: the request shares it, and it is
            // overwritten once the request is gone (HeldKey's deinit).
            let request = HolderRequest.hold(
                HolderRequest.Hold(
                    vault: HolderRequest.vaultKey(store.path), header: Data(header.bytes),
                    fileKey: header.withFileKey(HeldKey.init(copying:)), stanzaTypes: header.stanzaTypes, ttl: ttl,
                    idle: idle))
            try hold(request, path: store.path, ttl: ttl, idle: idle)
        }

        /// Hands `request` to the holder (started when none runs), and says until when `path` is held.
        private func hold(_ request: HolderRequest, path: String, ttl: Double?, idle: Double?) throws {
            let timeout = try settings.resolvedTimeout()
            _ = try HolderProcess.ask(
                request, place: HolderPlace.current(), start: Environment.all(except: Set(Settings.secretVariables)),
                timeout: timeout)
            let limits = [
                ttl.map { "for \(Self.text($0))" }, idle.map { "until \(Self.text($0)) unused" },
            ]
            .compactMap(\.self)
            let until = limits.isEmpty ? "until locked" : limits.joined(separator: ", or ")
            warn("\(path) is unlocked \(until); keychain-cli lock locks it")
        }

        static let units: KeyValuePairs<Character, Double> = ["w": 604_800, "d": 86400, "h": 3600, "m": 60, "s": 1]

        /// The seconds `text` gives, nil for `none`: a whole number of seconds (`90`), or numbers
        /// each with a unit, largest first, as ssh-agent's -t reads them (`90s`, `30m`, `8h`, `2d`,
        /// `1w`, `1h30m`).
        static func seconds(_ text: String, option: String) throws -> Double? {
            if text == "none" { return nil }
            var total = 0.0
            var digits = ""
            var lastUnit = Double.infinity
            var valid = !text.isEmpty && text.utf8.count <= 32
            for character in text where valid {
                if character.isASCII && character.isNumber {
                    digits.append(character)
                } else if let unit = units.first(where: { $0.key == character })?.value, let value = Int(digits),
                    unit < lastUnit
                {
                    (total, digits, lastUnit) = (total + Double(value) * unit, "", unit)
                } else {
                    valid = false
                }
            }
            if valid, !digits.isEmpty {
                if let value = Int(digits), lastUnit == .infinity { total = Double(value) } else { valid = false }
            }
            guard valid, total >= 1, total <= 30 * 86400 else {
                throw ValidationError(
                    "\(option) must be a number of seconds, or numbers with units w, d, h, m, s, largest first "
                        + "(90s, 30m, 8h, 1h30m, 2d, 1w), from 1 second to 30 days; or none")
            }
            return total
        }

        /// `seconds` in the largest unit that divides it (`8h`, `90m`, `45s`).
        static func text(_ seconds: Double) -> String {
            let unit = units.first { seconds.truncatingRemainder(dividingBy: $0.value) == 0 } ?? ("s", 1)
            return "\(Int(seconds / unit.value))\(unit.key)"
        }
    }
}
