import Foundation
import TestSupport
import Testing

/// Debian's docker-credential-secretservice (golang-docker-credential-helpers).
private func stockDockerHelper(_ action: String, _ input: String) throws -> ProcessResult {
    try runProcess(
        "/usr/bin/docker-credential-secretservice", [action], stdin: Data(input.utf8),
        environment: KeyringSession.current!.environment)
}

@Suite("docker credentials shared with docker-credential-secretservice", .keyringSession)
struct DockerCredentialInteropTests {
    @Test func eachHelperReadsWhatTheOtherStored() throws {
        let theirs = "https://\(uniqueService()).example".lowercased()
        let ours = "\(uniqueService()).example:5000".lowercased()
        #expect(
            try stockDockerHelper("store", #"{"ServerURL":"\#(theirs)","Username":"<token>","Secret":"id-token"}"#)
                .status == 0)
        #expect(try dockerHelper("store", #"{"ServerURL":"\#(ours)","Username":"bob","Secret":"pw"}"#).status == 0)

        let read = jsonObject(try dockerHelper("get", theirs).stdoutText)
        #expect(read as NSDictionary == ["ServerURL": theirs, "Username": "<token>", "Secret": "id-token"])
        let readByThem = jsonObject(try stockDockerHelper("get", ours).stdoutText)
        #expect(readByThem as NSDictionary == ["ServerURL": ours, "Username": "bob", "Secret": "pw"])
        for list in [try dockerHelper("list", ""), try stockDockerHelper("list", "")] {
            let servers = jsonObject(list.stdoutText)
            #expect(servers[theirs] as? String == "<token>" && servers[ours] as? String == "bob")
        }
        // Erasing with ours removes their item, and the other way round.
        #expect(try dockerHelper("erase", theirs).status == 0)
        #expect(try stockDockerHelper("get", theirs).stdoutText.contains("credentials not found in native keychain"))
        #expect(try stockDockerHelper("erase", ours).status == 0)
        #expect(try dockerHelper("get", ours).stdoutText == "credentials not found in native keychain\n")
    }

    /// Several users' items for one server (docker-credential-secretservice keeps one per user):
    /// our get answers the user our list names, and theirs names the same.
    @Test func severalUsersForOneServerGetTheUserListNames() throws {
        let server = "\(uniqueService()).example".lowercased()
        for user in ["zed", "amy", "mid"] {
            let stored = try stockDockerHelper(
                "store", #"{"ServerURL":"\#(server)","Username":"\#(user)","Secret":"s-\#(user)"}"#)
            #expect(stored.status == 0)
        }
        let ours = jsonObject(try dockerHelper("get", server).stdoutText)
        let listed = jsonObject(try dockerHelper("list", "").stdoutText)[server] as? String
        let theirs = jsonObject(try stockDockerHelper("get", server).stdoutText)
        #expect(ours["Username"] as? String == listed)
        #expect(ours["Username"] as? String == theirs["Username"] as? String)
        #expect(ours["Secret"] as? String == "s-\(listed ?? "")")
        // Our erase removes every user's item for the server.
        #expect(try dockerHelper("erase", server).status == 0)
        #expect(try stockDockerHelper("get", server).stdoutText.contains("credentials not found in native keychain"))
    }

    /// No prompter: a locked keyring is one message and exit 1, within the timeout.
    @Test func aLockedKeyringIsAMessageAndExit1() throws {
        let session = try KeyringSession.start()
        defer { session.stop() }
        #expect(
            try dockerHelper("store", #"{"ServerURL":"r.example","Username":"u","Secret":"s"}"#, session: session)
                .status == 0)
        try session.lockLogin()
        let started = Date()
        let result = try runProcess(
            dockerHelperDirectory + "/docker-credential-keychain-cli", ["get"], stdin: Data("r.example".utf8),
            environment: dockerEnvironment(session: session, extra: ["KEYCHAIN_TIMEOUT": "2"]))
        #expect(Date().timeIntervalSince(started) < 10)
        #expect(result.status == 1)
        #expect(result.stdoutText.split(separator: "\n").count == 1 && !result.stdoutText.contains("\"Secret\""))
    }
}
