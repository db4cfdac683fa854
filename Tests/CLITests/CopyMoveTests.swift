import Foundation
import TestSupport
import Testing

/// `cp` and `mv` on one backend: items and whole services, an occupied DST kept (73) unless
/// --force, on every backend.
@Suite("cp and mv on one backend", .keyringSession)
struct CopyMoveTests {
    private func get(_ address: String) throws -> String? {
        let slash = address.firstIndex(of: "/")!
        let read = try cli(["-s", String(address[..<slash]), "get", String(address[address.index(after: slash)...])])
        return read.status == 0 ? read.stdoutText : nil
    }

    private func set(_ address: String, _ value: String) throws {
        let slash = address.firstIndex(of: "/")!
        let stored = try cli(
            ["-s", String(address[..<slash]), "set", String(address[address.index(after: slash)...])],
            stdin: Data(value.utf8))
        #expect(stored.status == 0, "\(stored.stderr)")
    }

    @Test(arguments: CLIBackend.allCases)
    func itemsAreCopiedAndMovedAndAnOccupiedDestinationIsKept(on backend: CLIBackend) throws {
        try backend.run {
            let service = uniqueService()
            try set("\(service)/a", "first value")
            try set("\(service)/taken", "kept value")

            let copied = try cli(["-s", service, "cp", "a", "b"])
            #expect(copied.status == 0 && copied.stdoutText.isEmpty && copied.stderr.isEmpty, "\(copied.stderr)")
            #expect(try get("\(service)/a") == "first value" && get("\(service)/b") == "first value")

            let moved = try cli(["-s", service, "mv", "b", "c"])
            #expect(moved.status == 0, "\(moved.stderr)")
            #expect(try get("\(service)/b") == nil && get("\(service)/c") == "first value")

            for verb in ["cp", "mv"] {
                let refused = try cli(["-s", service, verb, "a", "taken"])
                #expect(refused.status == 73)
                #expect(refused.stderr.contains("a secret is stored at '\(service)/taken'"))
                #expect(refused.stderr.contains("--force replaces it"))
                #expect(!refused.stderr.contains("first value"))
                #expect(try get("\(service)/a") == "first value" && get("\(service)/taken") == "kept value")
            }
            #expect(try cli(["-s", service, "mv", "--force", "a", "taken"]).status == 0)
            #expect(try get("\(service)/a") == nil && get("\(service)/taken") == "first value")

            // SERVICE/KEY on either side, split at the first '/'; a reference escapes a '/'.
            let other = uniqueService()
            #expect(try cli(["-s", service, "mv", "c", "\(other)/deploy/key"]).status == 0)
            #expect(try get("\(other)/deploy/key") == "first value" && get("\(service)/c") == nil)
            #expect(try cli(["cp", "keychain://\(other)/deploy/key", "keychain://\(service)/x%2Fy"]).status == 0)
            #expect(try cli(["-s", service, "get", "x/y"]).stdoutText == "first value")

            let missing = try cli(["-s", service, "mv", "dev/nothing", "z"])
            #expect(missing.status == 1)
            #expect(
                missing.stderr.contains("no secret at 'dev/nothing'")
                    && missing.stderr.contains("split at the first '/'"))
            #expect(try cli(["-s", service, "mv", "taken", "\(service)/taken"]).status == 64)
            _ = try cli(["-s", service, "reset", "--yes"])
            _ = try cli(["-s", other, "reset", "--yes"])
        }
    }

    @Test(arguments: CLIBackend.allCases)
    func wholeServicesAreCopiedAndMoved(on backend: CLIBackend) throws {
        try backend.run {
            let (source, copy, moved) = (uniqueService(), uniqueService(), uniqueService())
            for key in ["one", "two", "three/x"] { try set("\(source)/\(key)", "value of \(key)") }

            #expect(try cli(["cp", "-r", source, copy]).status == 0)
            // One occupied key refuses the whole service before anything is written.
            try set("\(moved)/two", "theirs")
            let refused = try cli(["-s", source, "mv", "--service-to", moved])
            #expect(refused.status == 73 && refused.stderr.contains("'\(moved)/two'"), "\(refused.stderr)")
            #expect(try get("\(moved)/one") == nil && get("\(source)/one") == "value of one")

            #expect(try cli(["-s", source, "mv", "--service-to", moved, "--force"]).status == 0)
            for key in ["one", "two", "three/x"] {
                #expect(try get("\(moved)/\(key)") == "value of \(key)")
                #expect(try get("\(copy)/\(key)") == "value of \(key)")
                #expect(try get("\(source)/\(key)") == nil)
            }
            let empty = try cli(["cp", "-r", source, copy])
            #expect(empty.status == 1 && empty.stderr.contains("holds no secrets"))
            for service in [copy, moved] { _ = try cli(["-s", service, "reset", "--yes"]) }
        }
    }
}
