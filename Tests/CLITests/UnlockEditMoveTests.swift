import Foundation
import TestSupport
import Testing

/// `edit`, `mv` and `cp` on a vault that `unlock` holds: their writes over what they read go
/// through the holder (its `replace` request), decided under the vault's lock, with no passphrase.
@Suite("edit, mv and cp through unlock's holder")
struct UnlockEditMoveTests {
    @Test(arguments: [false, true])
    func editAndMoveGoThroughTheHolder(tree: Bool) throws {
        let place = try UnlockPlace(tree: tree, inMemory: true)
        defer { place.finish() }
        #expect(try place.run(["unlock"], passphrase: true).status == 0)

        let edited = try place.run(["edit", "token"], extra: ["EDITOR": "sed -i s/held-secret/edited/", "VISUAL": ""])
        #expect(edited.status == 0, "\(edited.stderr)")
        let expected = place.secret.replacing("held-secret", with: "edited")
        #expect(try place.run(["get", "token"], passphrase: true).stdoutText == expected, "stored in the file")

        // Another writer (straight to the file, with the passphrase) while the editor is open.
        let script = #"printf theirs | KEYCHAIN_PASSPHRASE="$P" "$KC" set token && sed -i s/edited/mine/ "$1""#
        let conflict = try place.run(
            ["edit", "token"],
            extra: [
                "EDITOR": "sh -c '\(script)' editor", "VISUAL": "", "KC": keychainCLIPath, "P": CLIBackend.passphrase,
            ])
        #expect(conflict.status == 75, "\(conflict.stderr)")
        #expect(try place.run(["get", "token"]).stdoutText == "theirs", "their change kept")

        #expect(try place.run(["mv", "token", "moved"]).status == 0)
        #expect(try place.run(["cp", "moved", "other/copy"]).status == 0)
        #expect(
            try place.run(["list", "--all-services"], passphrase: true).stdoutText.split(separator: "\n").sorted()
                == ["keychain-cli\tmoved", "other\tcopy"])
        #expect(place.holders().count == 1, "one holder served them all")
    }
}
