import Foundation
import Glibc
import TestSupport
import Testing

/// age plugins that fail, exit, hang, flood or are missing: a clear error, a documented exit
/// code, nothing the plugin sent shown raw, no process left behind.
@Suite("Age plugins that misbehave")
struct AgePluginAttackTests {
    /// A tree vault for a plugin key of `mode` beside an X25519 one, with one item written by the
    /// X25519 identity.
    private func vault(_ mode: String, _ scratch: ScratchDirectory) throws -> (vault: String, identity: String) {
        let plugin = try KCTest.key(mode, recipientMode: "n", in: scratch, name: "plugin.txt")
        let x25519 = try KCTest.x25519(in: scratch, name: "x25519.txt")
        let vault = scratch.path("tree")
        let made = try KCTest.cli(
            ["vault", "init", "--recipient", plugin.recipient, "--recipient", x25519.recipient], vault: vault, scratch)
        #expect(made.status == 0, "\(made.stderr)")
        let set = try KCTest.cli(
            ["-s", "ci", "set", "token"], vault: vault, identity: x25519.identity, stdin: "guarded", scratch)
        #expect(set.status == 0, "\(set.stderr)")
        return (vault, plugin.identity)
    }

    /// A plugin's error is shown escaped on one line (no raw escape sequence), 77; one that exits
    /// at once: its status, 77; one that floods its output with an endless line: refused, 77.
    @Test(arguments: [
        ("f", "kctest fails as asked \\u{001B}[31m(red)"), ("e", "exited with status 3"),
        ("x", "sent a line longer than"), ("m", "not canonical base64"),
    ])
    func aFailingPluginEndsWithItsMessageEscaped(mode: String, message: String) throws {
        let scratch = try ScratchDirectory("plugin-fail")
        defer { scratch.remove() }
        let (vault, identity) = try vault(mode, scratch)
        let got = try KCTest.cli(["-s", "ci", "get", "token"], vault: vault, identity: identity, scratch)
        #expect(got.status == 77 && got.stdout.isEmpty, "\(got.stderr)")
        #expect(got.stderr.contains("the age plugin age-plugin-kctest failed: ") && got.stderr.contains(message))
        #expect(!got.stderr.contains("\u{1B}"), "a raw escape reached the terminal: \(got.stderr)")
        // Writing to a failing recipient: nothing is written.
        let recipient = try KCTest.key(mode, in: scratch, name: "bad.txt").recipient
        let made = try KCTest.cli(["vault", "init", "--recipient", recipient], vault: scratch.path("bad"), scratch)
        #expect(made.status == 77 && made.stderr.contains("age-plugin-kctest"), "\(made.stderr)")
    }

    /// A plugin that answers a wrong file key is that plugin's failure (77, named), never a
    /// damaged vault (65, whose hint is to start a new one).
    @Test func aWrongFileKeyIsThePluginsFailure() throws {
        let scratch = try ScratchDirectory("plugin-wrong")
        defer { scratch.remove() }
        let (vault, identity) = try vault("w", scratch)
        let got = try KCTest.cli(["-s", "ci", "get", "token"], vault: vault, identity: identity, scratch)
        #expect(got.status == 77 && got.stdout.isEmpty, "\(got.stderr)")
        #expect(got.stderr.contains("age-plugin-kctest failed: it gave a file key that does not open"), "\(got.stderr)")
        #expect(!got.stderr.contains("new vault"), "\(got.stderr)")
    }

    /// A plugin that never answers is ended after --timeout (SIGTERM, then SIGKILL, reaped): the
    /// command fails with 75 in about that time, and the plugin's process is gone.
    @Test func aHangingPluginIsEndedAfterTheTimeout() throws {
        let scratch = try ScratchDirectory("plugin-hang")
        defer { scratch.remove() }
        let (vault, identity) = try vault("h", scratch)
        let started = Date()
        let got = try KCTest.cli(
            ["--timeout", "2", "-s", "ci", "get", "token"], vault: vault, identity: identity, scratch)
        let elapsed = Date().timeIntervalSince(started)
        #expect(got.status == 75, "\(got.stderr)")
        #expect(got.stderr.contains("age-plugin-kctest did not answer within 2 s"), "\(got.stderr)")
        #expect(elapsed >= 2 && elapsed < 5, "\(elapsed) s")
        let sessions = KCTest.sessions(scratch).filter { $0.machine == "identity-v1" }
        #expect(sessions.count == 1, "\(sessions)")
        for session in sessions { #expect(kill(session.pid, 0) == -1 && errno == ESRCH, "pid \(session.pid) lives") }
        // A recipient that hangs: vault init ends alike.
        let recipient = try KCTest.key("h", in: scratch, name: "hang.txt").recipient
        let made = try KCTest.cli(
            ["--timeout", "1", "vault", "init", "--recipient", recipient], vault: scratch.path("hung"), scratch)
        #expect(made.status == 75, "\(made.stderr)")
        for session in KCTest.sessions(scratch) { #expect(kill(session.pid, 0) == -1 && errno == ESRCH) }
    }

    /// A plugin missing from PATH: the error names it and says what to install (77), for an
    /// identity and for a recipient.
    @Test func aPluginMissingFromPathIsNamed() throws {
        let scratch = try ScratchDirectory("plugin-missing")
        defer { scratch.remove() }
        let (vault, identity) = try vault("n", scratch)
        let got = try KCTest.cli(
            ["-s", "ci", "get", "token"], vault: vault, identity: identity, scratch, withPlugin: false)
        #expect(got.status == 77, "\(got.stderr)")
        #expect(
            got.stderr.contains("age-plugin-kctest is not in PATH; install the plugin for kctest"), "\(got.stderr)")
        let recipient = try KCTest.key("n", in: scratch, name: "other.txt").recipient
        let made = try KCTest.cli(
            ["vault", "init", "--recipient", recipient], vault: scratch.path("other"), scratch, withPlugin: false)
        #expect(made.status == 77 && made.stderr.contains("is not in PATH"), "\(made.stderr)")
    }
}
