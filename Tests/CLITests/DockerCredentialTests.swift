import Foundation
import TestSupport
import Testing

@Suite("docker credential helper", .keyringSession)
struct DockerCredentialTests {
    @Test(arguments: CLIBackend.allCases)
    func storeGetListEraseAndTheExactMiss(on backend: CLIBackend) throws {
        try backend.run { () throws in
            let server = "\(uniqueService()).registry.example:5000".lowercased()
            let store = try dockerHelper("store", #"{"ServerURL":"\#(server)","Username":"bob","Secret":"s3cr3t"}"#)
            #expect(store.status == 0, "\(store.stdoutText)\(store.stderr)")
            let get = try dockerHelper("get", server + "\n")
            #expect(get.status == 0)
            #expect(
                jsonObject(get.stdoutText) as NSDictionary == [
                    "ServerURL": server, "Username": "bob", "Secret": "s3cr3t",
                ])
            // Storing another user for the server replaces the first: one credential per server.
            #expect(
                try dockerHelper("store", #"{"ServerURL":"\#(server)","Username":"ann","Secret":"two"}"#).status == 0)
            #expect(jsonObject(try dockerHelper("get", server).stdoutText)["Username"] as? String == "ann")
            #expect(
                try dockerHelper("store", #"{"ServerURL":"\#(server)","Username":"bob","Secret":"s3cr3t"}"#).status == 0
            )
            // An identity token round-trips with its "<token>" user name.
            let token = "https://\(server)/token"
            #expect(
                try dockerHelper("store", #"{"ServerURL":"\#(token)","Username":"<token>","Secret":"id"}"#).status == 0)
            let list = jsonObject(try dockerHelper("list", "").stdoutText)
            #expect(list[server] as? String == "bob")
            #expect(list[token] as? String == "<token>")
            #expect(try dockerHelper("erase", server).status == 0)
            let miss = try dockerHelper("get", server)
            #expect(miss.status == 1)
            #expect(miss.stdoutText == "credentials not found in native keychain\n")
            let eraseMiss = try dockerHelper("erase", server)
            #expect(eraseMiss.status == 1 && eraseMiss.stdoutText == "credentials not found in native keychain\n")
        }
    }

    @Test(arguments: [CLIBackend.vault, .openbao])
    func onTheVaultAndOpenBaoTheyAreItemsOfTheServiceDocker(on backend: CLIBackend) throws {
        try backend.run { () throws in
            #expect(
                try dockerHelper("store", #"{"ServerURL":"r.example:5000","Username":"u","Secret":"s"}"#).status == 0)
            #expect(try cli(["-s", "docker", "list"]).stdoutText == "r.example:5000\n")
            let stored = jsonObject(try cli(["-s", "docker", "get", "r.example:5000"]).stdoutText)
            #expect(stored as NSDictionary == ["Username": "u", "Secret": "s"])
        }
    }

    /// docker-credential-helpers' own cases (credentials_test.go, error.go) as facts: what a
    /// helper answers to docker's index URL, and its fixed words for a missing server URL or
    /// user name, which tools compare.
    @Test(arguments: CLIBackend.allCases)
    func theHelperLibrarysOwnCases(on backend: CLIBackend) throws {
        try backend.run { () throws in
            let server = "https://\(uniqueService().lowercased()).docker.io/v1/"
            let stored = try dockerHelper("store", #"{"ServerURL":"\#(server)","Username":"foo","Secret":"bar"}"#)
            #expect(stored.status == 0, "\(stored.stdoutText)")
            // get reads the server URL with its surrounding white space trimmed (CRLF included).
            let got = try dockerHelper("get", server + "\r\n")
            #expect(
                jsonObject(got.stdoutText) as NSDictionary == ["ServerURL": server, "Username": "foo", "Secret": "bar"])
            #expect(try dockerHelper("erase", " \(server)\n").status == 0)
            let gone = try dockerHelper("get", server)
            #expect(gone.status == 1 && gone.stdoutText == "credentials not found in native keychain\n")
            for (action, input, message) in [
                ("store", #"{"ServerURL":"","Username":"foo","Secret":"bar"}"#, "no credentials server URL"),
                ("store", #"{"Username":"foo","Secret":"bar"}"#, "no credentials server URL"),
                ("store", #"{"ServerURL":"\#(server)","Username":"","Secret":"bar"}"#, "no credentials username"),
                ("get", "", "no credentials server URL"), ("erase", " \n", "no credentials server URL"),
            ] {
                let refused = try dockerHelper(action, input)
                #expect(refused.status == 1 && refused.stdoutText == message + "\n", "\(action) \(input)")
            }
            #expect(try dockerHelper("get", server).status == 1, "a refused store stored nothing")
            // A field left out is empty, as their decoder reads it.
            #expect(try dockerHelper("store", #"{"ServerURL":"\#(server)","Username":"foo"}"#).status == 0)
            #expect(jsonObject(try dockerHelper("get", server).stdoutText)["Secret"] as? String == "")
            #expect(try dockerHelper("erase", server).status == 0)
        }
    }

    @Test func badInputAndUnknownActionsAreMessagesOnStdoutAndExit1() throws {
        let bad = try dockerHelper("store", "not json")
        #expect(bad.status == 1)
        #expect(bad.stdoutText.contains("ServerURL"))
        let unknown = try dockerHelper("frobnicate", "")
        #expect(unknown.status == 1 && unknown.stdoutText.contains("unknown action"))
        let version = try dockerHelper("version", "")
        #expect(version.status == 0 && version.stdoutText.hasPrefix("docker-credential-keychain-cli"))
    }

    /// The real docker CLI, with no daemon: `docker logout` erases through credsStore and credHelpers.
    @Test(arguments: CLIBackend.allCases)
    func dockerLogoutErasesThroughCredsStoreAndCredHelpers(on backend: CLIBackend) throws {
        try backend.run { () throws in
            let config = try ScratchDirectory("docker-config")
            defer { config.remove() }
            // credsStore: docker logout erases the bare host, then its http:// and https:// forms,
            // all through the store; credHelpers: only names its entry holds go to the helper.
            for (index, (json, stored)) in [
                (#"{"credsStore": "keychain-cli"}"#, "https://HOST"),
                (#"{"credHelpers": {"HOST": "keychain-cli"}}"#, "HOST"),
            ].enumerated() {
                let host = "\(uniqueService()).registry\(index).example".lowercased()
                let server = stored.replacingOccurrences(of: "HOST", with: host)
                try Data(json.replacingOccurrences(of: "HOST", with: host).utf8).write(
                    to: config.url.appendingPathComponent("config.json"))
                let store = try dockerHelper("store", #"{"ServerURL":"\#(server)","Username":"u","Secret":"s"}"#)
                #expect(store.status == 0)
                let logout = try runProcess(
                    dockerCLIPath, ["logout", host],
                    environment: dockerEnvironment(extra: ["DOCKER_CONFIG": config.url.path]))
                #expect(logout.status == 0, "\(json): \(logout.stdoutText)\(logout.stderr)")
                #expect(try dockerHelper("get", server).status == 1, "\(json)")
            }
        }
    }
}
