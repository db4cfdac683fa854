import Foundation
import TestSupport
import Testing

/// The openbao backend's own behaviour against real `bao` servers: interop with the bao CLI, KV
/// history, concurrent writers, auth (tokens, ~/.vault-token, AppRole, JWT) and policies (its
/// connections are in OpenBaoConnectionTests). The backend-neutral suites run on it too
/// (CLIBackend.openbao).
@Suite("OpenBao backend")
struct OpenBaoTests {
    @Test func theBaoCLIAndKeychainCLIReadEachOthersSecrets() throws {
        try CLIBackend.withOpenBaoMount { server, mount throws in
            let put = try server.bao(["kv", "put", "\(mount)/ci", "github-token=ghp_from_bao", "other=x"])
            #expect(put.status == 0, "\(put.stderr)")
            #expect(try cli(["-s", "ci", "get", "github-token"]).stdoutText == "ghp_from_bao")
            #expect(try cli(["-s", "ci", "set", "npm-token"], input: "npm_from_kc").status == 0)
            let field = try server.bao(["kv", "get", "-field=npm-token", "\(mount)/ci"])
            #expect(field.stdoutText == "npm_from_kc")
            // Setting one key kept the fields bao wrote.
            #expect(try server.bao(["kv", "get", "-field=other", "\(mount)/ci"]).stdoutText == "x")
            // Nested paths are services; list --all-services walks the metadata folders.
            _ = try server.bao(["kv", "put", "\(mount)/team/deploy", "key=v"])
            #expect(
                try cli(["list", "--all-services"]).stdoutText
                    == "ci\tgithub-token\nci\tnpm-token\nci\tother\nteam/deploy\tkey\n")
            // Binary secrets: {"keychain-cli:base64": …}, byte for byte back.
            let bytes = Data([0, 0xFF, 0x80, 10])
            #expect(try cli(["-s", "ci", "set", "blob", "--raw"], stdin: bytes).status == 0)
            #expect(try cli(["-s", "ci", "get", "blob"]).stdout == bytes)
            let raw = try server.api("GET", "\(mount)/data/ci")
            #expect(raw.body.contains(#""blob":{"keychain-cli:base64":"AP+ACg=="}"#))
            // A field another tool wrote as a number or object reads as its JSON text.
            let patch = try server.api(
                "POST", "\(mount)/data/ci", json: #"{"data":{"port":8200,"cfg":{"a":true}}}"#)
            #expect(patch.status == 200)
            #expect(try cli(["-s", "ci", "get", "port"]).stdoutText == "8200")
            #expect(try cli(["-s", "ci", "get", "cfg"]).stdoutText == #"{"a":true}"#)
        }
    }

    @Test func deleteKeepsHistoryAndResetIsUndoneWithUndelete() throws {
        try CLIBackend.withOpenBaoMount { server, mount throws in
            #expect(try cli(["-s", "ci", "set", "a"], input: "1").status == 0)
            #expect(try cli(["-s", "ci", "set", "b"], input: "2").status == 0)
            #expect(try cli(["-s", "ci", "delete", "a"]).status == 0)
            #expect(try cli(["-s", "ci", "delete", "a"]).status == 1)
            // Version 2 still holds a: the history keeps it.
            #expect(try server.bao(["kv", "get", "-version=2", "-field=a", "\(mount)/ci"]).stdoutText == "1")
            #expect(try cli(["-s", "ci", "reset", "--yes"]).stdoutText == "removed 1 secret of service 'ci'\n")
            #expect(try cli(["-s", "ci", "list"]).stdoutText == "")
            #expect(try cli(["-s", "ci", "get", "b"]).status == 1)
            #expect(try server.bao(["kv", "undelete", "-versions=3", "\(mount)/ci"]).status == 0)
            #expect(try cli(["-s", "ci", "get", "b"]).stdoutText == "2")
            // After a reset, a set writes on top of the deleted version.
            #expect(try cli(["-s", "ci", "reset", "--yes"]).status == 0)
            #expect(try cli(["-s", "ci", "set", "c"], input: "3").status == 0)
            #expect(try cli(["-s", "ci", "list"]).stdoutText == "c\n")
        }
    }

    @Test func eightConcurrentWritersOfOneServiceAllSurvive() throws {
        try CLIBackend.withOpenBaoMount { _, _ throws in
            let script = (0..<8).map { #"printf v\#($0) | "$KC" -s ci set key-\#($0) & "# }.joined() + "wait"
            for _ in 0..<3 {
                let result = try shell(script)
                #expect(result.status == 0, "\(result.stderr)")
            }
            #expect(try cli(["-s", "ci", "list"]).stdoutText == (0..<8).map { "key-\($0)\n" }.joined())
            for index in 0..<8 { #expect(try cli(["-s", "ci", "get", "key-\(index)"]).stdoutText == "v\(index)") }
        }
    }

    @Test func tokensComeFromVaultVariablesAndTheTokenFile() throws {
        try CLIBackend.withOpenBaoMount { server, _ throws in
            let home = try ScratchDirectory("bao-home")
            defer { home.remove() }
            let base: [String: String] = ["BAO_TOKEN": "", "HOME": home.url.path]
            #expect(try cli(["-s", "ci", "set", "k"], input: "v").status == 0)
            // No token anywhere: 77, saying where one can come from.
            let none = try cli(["-s", "ci", "get", "k"], extra: base)
            #expect(none.status == 77)
            #expect(none.stderr.contains("no OpenBao token") && none.stderr.contains("bao login"))
            try "root\n".write(toFile: home.path(".vault-token"), atomically: true, encoding: .utf8)
            #expect(try cli(["-s", "ci", "get", "k"], extra: base).stdoutText == "v")
            // VAULT_* stand in for BAO_*.
            var vault = base
            vault["BAO_ADDR"] = ""
            vault["VAULT_ADDR"] = server.address
            vault["VAULT_TOKEN"] = "root"
            #expect(try cli(["-s", "ci", "get", "k"], extra: vault).stdoutText == "v")
            let bad = try cli(["-s", "ci", "get", "k"], extra: ["BAO_TOKEN": "not-a-token"])
            #expect(bad.status == 77)
            #expect(bad.stderr.contains("denied GET on") && bad.stderr.contains("/data/ci"))
            #expect(!bad.stderr.contains("not-a-token"))
        }
    }

    @Test func appRoleLoginAndAPolicyThatDenies() throws {
        try CLIBackend.withOpenBaoMount { server, mount throws in
            let auth = "approle-" + UUID().uuidString.prefix(8).lowercased()
            #expect(try server.api("POST", "sys/auth/\(auth)", json: #"{"type":"approle"}"#).status == 204)
            let policy = #"path "\#(mount)/data/ci" { capabilities = ["read", "create", "update", "patch"] }"#
            #expect(try server.putPolicy("\(mount)-ci", policy) == 204)
            #expect(
                try server.api("POST", "auth/\(auth)/role/ci", json: #"{"token_policies":"\#(mount)-ci"}"#).status
                    == 204)
            let roleID =
                (jsonObject(try server.api("GET", "auth/\(auth)/role/ci/role-id").body)["data"] as? [String: Any])?[
                    "role_id"]
                as? String ?? ""
            let secretID =
                (jsonObject(try server.api("POST", "auth/\(auth)/role/ci/secret-id").body)["data"] as? [String: Any])?[
                    "secret_id"] as? String ?? ""
            #expect(!roleID.isEmpty && !secretID.isEmpty)
            let files = try ScratchDirectory("approle")
            defer { files.remove() }
            try secretID.write(toFile: files.path("secret-id"), atomically: true, encoding: .utf8)
            let appRole = [
                "BAO_TOKEN": "", "HOME": files.url.path, "KEYCHAIN_OPENBAO_APPROLE_MOUNT": auth,
                "KEYCHAIN_OPENBAO_ROLE_ID": roleID, "KEYCHAIN_OPENBAO_SECRET_ID_FILE": files.path("secret-id"),
            ]
            #expect(try cli(["-s", "ci", "set", "token"], stdin: Data("from-ci".utf8), extra: appRole).status == 0)
            #expect(try cli(["-s", "ci", "get", "token"], extra: appRole).stdoutText == "from-ci")
            // The policy covers secret ci only: another service is denied, naming its path.
            let denied = try cli(["-s", "prod", "get", "token"], extra: appRole)
            #expect(denied.status == 77)
            #expect(denied.stderr.contains("\(mount)/data/prod") && denied.stderr.contains("policy"))
            let doctor = try cli(["-s", "ci", "doctor"], extra: appRole)
            #expect(
                doctor.stdoutText.contains("✓ policy: \(mount)/data/ci: create, patch, read, update"),
                "\(doctor.stdoutText)")
            // A wrong secret id: 77, and the login's refusal is named.
            var wrong = appRole
            wrong["KEYCHAIN_OPENBAO_SECRET_ID_FILE"] = nil
            wrong["KEYCHAIN_OPENBAO_SECRET_ID"] = "00000000-0000-0000-0000-000000000000"
            let refused = try cli(["-s", "ci", "get", "token"], extra: wrong)
            #expect(refused.status == 77)
            #expect(refused.stderr.contains("AppRole login"))
            // Half an AppRole is a usage error.
            wrong["KEYCHAIN_OPENBAO_SECRET_ID"] = nil
            #expect(try cli(["-s", "ci", "get", "token"], extra: wrong).status == 64)
        }
    }

    @Test func jwtLoginWithACIJobsIdentityToken() throws {
        try CLIBackend.withOpenBaoMount { server, mount throws in
            // The CI provider's side: an RSA key whose public half the jwt auth method trusts.
            let files = try ScratchDirectory("jwt")
            defer { files.remove() }
            let openssl = { (arguments: [String]) throws -> ProcessResult in
                try runProcess("/usr/bin/openssl", arguments, environment: ["PATH": "/usr/bin:/bin"])
            }
            _ = try openssl([
                "genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", files.path("key"),
            ])
            let publicKey = try openssl(["pkey", "-in", files.path("key"), "-pubout"]).stdoutText
            let auth = "jwt-" + UUID().uuidString.prefix(8).lowercased()
            #expect(try server.api("POST", "sys/auth/\(auth)", json: #"{"type":"jwt"}"#).status == 204)
            let config = try JSONSerialization.data(withJSONObject: ["jwt_validation_pubkeys": [publicKey]])
            #expect(
                try server.api("POST", "auth/\(auth)/config", json: String(decoding: config, as: UTF8.self)).status
                    == 204)
            let policy = #"path "\#(mount)/data/ci" { capabilities = ["read"] }"#
            #expect(try server.putPolicy("\(mount)-jwt", policy) == 204)
            let role =
                #"{"role_type":"jwt","user_claim":"sub","bound_audiences":["keychain-cli-test"],"token_policies":["\#(mount)-jwt"]}"#
            #expect(try server.api("POST", "auth/\(auth)/role/ci", json: role).status == 204)
            func signed(audience: String) throws -> String {
                func base64URL(_ data: Data) -> String {
                    data.base64EncodedString().replacing("+", with: "-").replacing("/", with: "_")
                        .replacing("=", with: "")
                }
                let now = Int(Date().timeIntervalSince1970)
                let claims =
                    #"{"sub":"ci-job-42","aud":"\#(audience)","iat":\#(now),"nbf":\#(now - 5),"exp":\#(now + 300)}"#
                let input = base64URL(Data(#"{"alg":"RS256","typ":"JWT"}"#.utf8)) + "." + base64URL(Data(claims.utf8))
                let signature = try runProcess(
                    "/usr/bin/openssl", ["dgst", "-sha256", "-sign", files.path("key")], stdin: Data(input.utf8),
                    environment: ["PATH": "/usr/bin:/bin"])
                return input + "." + base64URL(signature.stdout)
            }
            try signed(audience: "keychain-cli-test").write(
                toFile: files.path("id-token"), atomically: true, encoding: .utf8)
            _ = try server.bao(["kv", "put", "\(mount)/ci", "deploy-key=from-bao"])
            let jwt = [
                "BAO_TOKEN": "", "HOME": files.url.path, "KEYCHAIN_OPENBAO_JWT_FILE": files.path("id-token"),
                "KEYCHAIN_OPENBAO_JWT_ROLE": "ci", "KEYCHAIN_OPENBAO_JWT_MOUNT": auth,
            ]
            let read = try cli(["-s", "ci", "get", "deploy-key"], extra: jwt)
            #expect(read.stdoutText == "from-bao", "\(read.stderr)")
            // The role's policy reads ci only: a write there is denied (77), naming the path.
            let write = try cli(["-s", "ci", "set", "other"], stdin: Data("x".utf8), extra: jwt)
            #expect(write.status == 77)
            #expect(write.stderr.contains("\(mount)/data/ci"))
            #expect(
                try cli(["-s", "ci", "doctor"], extra: jwt).stdoutText.contains("token from JWT login at auth/\(auth)"))
            // exec does not hand the identity token on to the command.
            var inline = jwt
            inline["KEYCHAIN_OPENBAO_JWT_FILE"] = nil
            inline["KEYCHAIN_OPENBAO_JWT"] = try String(contentsOfFile: files.path("id-token"), encoding: .utf8)
            let exec = try cli(
                [
                    "-s", "ci", "exec", "--no-mask", "--env", "K=deploy-key", "--", "/bin/sh", "-c",
                    #"echo "$K ${KEYCHAIN_OPENBAO_JWT:-unset}""#,
                ],
                extra: inline)
            #expect(exec.stdoutText == "from-bao unset\n", "\(exec.stderr)")
            // A token for another audience: the login is refused (77) and the message says what to check.
            inline["KEYCHAIN_OPENBAO_JWT"] = try signed(audience: "someone-else")
            let refused = try cli(["-s", "ci", "get", "deploy-key"], extra: inline)
            #expect(refused.status == 77)
            #expect(refused.stderr.contains("JWT login") && refused.stderr.contains("KEYCHAIN_OPENBAO_JWT"))
        }
    }
}
