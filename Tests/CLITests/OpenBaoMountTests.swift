import Foundation
import TestSupport
import Testing

/// The mount under KEYCHAIN_OPENBAO_MOUNT, as a CI job can get it wrong: a typo (no such mount), a
/// KV version 1 mount (where a KV version 2 path names another secret), or a KV version 2 mount
/// that requires check-and-set on every write.
@Suite("OpenBao mounts: missing, KV version 1, cas_required")
struct OpenBaoMountTests {
    /// Every command that reads or writes, and what it is given on standard input.
    static let commands: [([String], String?)] = [
        (["-s", "ci", "set", "k"], "v"), (["-s", "ci", "get", "k"], nil), (["-s", "ci", "delete", "k"], nil),
        (["-s", "ci", "list"], nil), (["list", "--all-services"], nil), (["-s", "ci", "reset", "--yes"], nil),
        (["-s", "ci", "export", "--yes"], nil), (["-s", "ci", "import"], "A=1\n"),
        (["git-credential", "store"], "protocol=https\nhost=git.example\nusername=u\npassword=p\n\n"),
        (["git-credential", "get"], "protocol=https\nhost=git.example\n\n"),
    ]

    @Test func aKVVersion1MountIsRefusedAndNothingIsWrittenThere() throws {
        try CLIBackend.withOpenBaoMount { server, _ throws in
            let mount = "v1" + uniqueService().suffix(8).lowercased()
            let enabled = try server.bao(["secrets", "enable", "-version=1", "-path=\(mount)", "kv"])
            #expect(enabled.status == 0, "\(enabled.stderr)")
            try CLIBackend.$overrides.withValue(
                CLIBackend.overrides.merging(["KEYCHAIN_OPENBAO_MOUNT": mount]) { _, b in b }
            ) {
                for (arguments, input) in Self.commands {
                    let result = try cli(arguments, stdin: input.map { Data($0.utf8) })
                    #expect(result.status == 69, "\(arguments): \(result.stderr)")
                    #expect(
                        result.stderr.contains("'\(mount)'") && result.stderr.contains("KV version 1"),
                        "\(result.stderr)")
                    #expect(result.stdout.isEmpty, "\(arguments)")
                }
                let doctor = try cli(["-s", "ci", "doctor"])
                #expect(doctor.status == 69)
                #expect(doctor.stdoutText.contains("✗ mount: '\(mount)'"), "\(doctor.stdoutText)")
            }
            // Nothing was written anywhere under the mount (a KV version 2 write would have made `data/ci`).
            let listed = try server.bao(["kv", "list", mount])
            #expect(listed.status != 0 && !listed.stdoutText.contains("data"), "\(listed.stdoutText)")
            #expect(try server.api("GET", "\(mount)/data/ci").status == 404)
        }
    }

    @Test func aMissingMountIsRefusedNamingItAndTheDoctorDoesNotBlameTheToken() throws {
        try CLIBackend.withOpenBaoMount { _, real throws in
            let typo = real + "x"
            try CLIBackend.$overrides.withValue(
                CLIBackend.overrides.merging(["KEYCHAIN_OPENBAO_MOUNT": typo]) { _, b in b }
            ) {
                for (arguments, input) in Self.commands {
                    let result = try cli(arguments, stdin: input.map { Data($0.utf8) })
                    #expect(result.status == 69, "\(arguments): \(result.stderr)")
                    #expect(result.stderr.contains("no mount '\(typo)'"), "\(result.stderr)")
                }
                let doctor = try cli(["-s", "ci", "doctor"])
                #expect(doctor.status == 69, "\(doctor.stdoutText)")
                #expect(doctor.stdoutText.contains("✓ token:"), "\(doctor.stdoutText)")
                #expect(doctor.stdoutText.contains("✗ mount: OpenBao at"), "\(doctor.stdoutText)")
                #expect(doctor.stdoutText.contains("no mount '\(typo)'"), "\(doctor.stdoutText)")
            }
            // The right mount still reads as empty, with 1 for a missing key.
            #expect(try cli(["-s", "ci", "get", "k"]).status == 1)
            #expect(try cli(["-s", "ci", "list"]).stdoutText == "")
        }
    }

    /// With `cas_required=true` on the mount, OpenBao refuses a write without `cas` (400
    /// "check-and-set parameter required"): each write sends the version it read.
    @Test func everyWriteOnACASRequiredMountSucceeds() throws {
        try CLIBackend.withOpenBaoMount { server, mount throws in
            let configured = try server.bao(["write", "\(mount)/config", "cas_required=true"])
            #expect(configured.status == 0, "\(configured.stderr)")
            #expect(try cli(["-s", "ci", "set", "a"], input: "1").status == 0)
            let replaced = try cli(["-s", "ci", "set", "a"], input: "2")
            #expect(replaced.status == 0, "\(replaced.stderr)")
            #expect(try cli(["-s", "ci", "set", "b"], input: "3").status == 0)
            #expect(try cli(["-s", "ci", "import", "--overwrite"], input: "A=4\nC=5\n").status == 0)
            #expect(try cli(["-s", "ci", "delete", "b"]).status == 0)
            #expect(try server.bao(["kv", "get", "-field=a", "\(mount)/ci"]).stdoutText == "2")
            #expect(try cli(["-s", "ci", "list"]).stdoutText == "A\nC\na\n")
            // Concurrent writers of one secret all land: a mismatch reads again and retries.
            let writers = try (0..<6).map { index in
                let (process, input) = try launchCLI(["-s", "ci", "set", "w\(index)"])
                input.write(Data("v\(index)".utf8))
                try input.close()
                return process
            }
            #expect(writers.allSatisfy { $0.wait(timeout: 60) && $0.ending == "exited with status 0" })
            for index in 0..<6 { #expect(try cli(["-s", "ci", "get", "w\(index)"]).stdoutText == "v\(index)") }
            #expect(try cli(["-s", "ci", "reset", "--yes"]).status == 0)
            #expect(try cli(["-s", "ci", "list"]).stdoutText == "")
        }
    }
}
