import Foundation
import TestSupport
import Testing

/// Debian's docker-credential-secretservice (golang-docker-credential-helpers).
private func stockDockerHelper(_ action: String, _ input: String, session: KeyringSession = KeyringSession.current!)
    throws -> ProcessResult
{
    try runProcess(
        "/usr/bin/docker-credential-secretservice", [action], stdin: Data(input.utf8),
        environment: session.environment)
}

@Suite("docker credentials shared with docker-credential-secretservice", .keyringSession)
struct DockerCredentialInteropTests {
    /// In a keyring of its own: docker-credential-secretservice's list fails whole ("Error from
    /// list function") when another client deletes an item while it lists (measured 3 to 4 lists
    /// of 60 beside a store/erase loop), and the shared keyring's other tests delete all the time.
    @Test func eachHelperReadsWhatTheOtherStored() throws {
        let session = try KeyringSession.start()
        defer { session.stop() }
        let theirs = "https://\(uniqueService()).example".lowercased()
        let ours = "\(uniqueService()).example:5000".lowercased()
        #expect(
            try stockDockerHelper(
                "store", #"{"ServerURL":"\#(theirs)","Username":"<token>","Secret":"id-token"}"#, session: session
            ).status == 0)
        #expect(
            try dockerHelper("store", #"{"ServerURL":"\#(ours)","Username":"bob","Secret":"pw"}"#, session: session)
                .status == 0)

        let read = jsonObject(try dockerHelper("get", theirs, session: session).stdoutText)
        #expect(read as NSDictionary == ["ServerURL": theirs, "Username": "<token>", "Secret": "id-token"])
        let readByThem = jsonObject(try stockDockerHelper("get", ours, session: session).stdoutText)
        #expect(readByThem as NSDictionary == ["ServerURL": ours, "Username": "bob", "Secret": "pw"])
        for (who, list) in [
            ("ours", try dockerHelper("list", "", session: session)),
            ("theirs", try stockDockerHelper("list", "", session: session)),
        ] {
            let servers = jsonObject(list.stdoutText)
            #expect(servers[theirs] as? String == "<token>", "\(who): \(list.stdoutText)")
            #expect(servers[ours] as? String == "bob", "\(who): \(list.stdoutText)")
        }
        // Erasing with ours removes their item, and the other way round.
        #expect(try dockerHelper("erase", theirs, session: session).status == 0)
        #expect(
            try stockDockerHelper("get", theirs, session: session).stdoutText.contains(
                "credentials not found in native keychain"))
        #expect(try stockDockerHelper("erase", ours, session: session).status == 0)
        #expect(
            try dockerHelper("get", ours, session: session).stdoutText == "credentials not found in native keychain\n")
    }

    /// Our list stays whole while another client stores and erases items beside it, where theirs
    /// fails now and then (the reason the test above has a keyring of its own).
    @Test func ourListSurvivesItemsErasedWhileItLists() throws {
        let session = try KeyringSession.start()
        defer { session.stop() }
        let kept = "\(uniqueService()).example".lowercased()
        #expect(
            try dockerHelper("store", #"{"ServerURL":"\#(kept)","Username":"kept","Secret":"s"}"#, session: session)
                .status == 0)
        let script = """
            ( for i in $(seq 1 400); do
                printf '{"ServerURL":"churn%s.example","Username":"u","Secret":"s"}' $i \\
                  | docker-credential-secretservice store
                echo churn$i.example | docker-credential-secretservice erase
              done ) &
            failed=0
            for i in $(seq 1 40); do
              docker-credential-keychain-cli list </dev/null | grep -q '"\(kept)":"kept"' || failed=$((failed+1))
            done
            kill $! 2>/dev/null; wait
            echo "$failed"
            """
        let result = try runProcess("/bin/bash", ["-c", script], environment: dockerEnvironment(session: session))
        #expect(result.stdoutText == "0\n", "lists without the kept item: \(result.stdoutText) \(result.stderr)")
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
        // (Within the timeout: a process timeout of 10 times it throws ProcessTimedOut.)
        let result = try runProcess(
            dockerHelperDirectory + "/docker-credential-keychain-cli", ["get"], stdin: Data("r.example".utf8),
            environment: dockerEnvironment(session: session, extra: ["KEYCHAIN_TIMEOUT": "2"]), timeout: 20)
        #expect(result.status == 1)
        #expect(result.stdoutText.split(separator: "\n").count == 1 && !result.stdoutText.contains("\"Secret\""))
    }
}
