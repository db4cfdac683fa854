import Foundation
import Testing

@testable import KeychainCore
@testable import KeychainFormats

/// keychain://SERVICE/KEY[?field=NAME]: what each spelling names, what is refused, and that any
/// name is written back to a text that names it again.
@Suite("References")
struct ReferenceTests {
    @Test(
        arguments: [
            ("keychain://ci/github-token", "ci", "github-token", nil),
            ("keychain://ci/dir/sub/key", "ci", "dir/sub/key", nil),  // a / in the key stands as it is (inject's rule)
            ("keychain://a%2Fb/c%3Fd%23e%25f", "a/b", "c?d#e%f", nil),
            ("keychain://web/github?field=username", "web", "github", "username"),
            ("keychain://web/git%3Fhub?field=user%20name", "web", "git?hub", "user name"),
            ("keychain://s%C3%A9rvice/k%2fey", "sérvice", "k/ey", nil),  // lower-case hex too
            ("keychain://svc/my key", "svc", "my key", nil),
            ("keychain://svc/k?field=a=b", "svc", "k", "a=b"),
            ("keychain://web/entry?field=R&D login", "web", "entry", "R&D login"),  // & needs no escape
        ] as [(String, String, String, String?)])
    func aReferenceNamesItsSecret(text: String, service: String, key: String, field: String?) throws {
        let reference = try KeychainReference(parsing: text)
        #expect(reference == KeychainReference(service: service, key: key, field: field))
    }

    @Test(arguments: [
        ("keychain://svc", "should be keychain://SERVICE/KEY"),
        ("keychain:///key", "should be keychain://SERVICE/KEY"),
        ("keychain://svc/", "should be keychain://SERVICE/KEY"),
        ("keychain://svc/k#frag", "has a #"),
        ("keychain://svc/100%", "not followed by two hex digits"),
        ("keychain://svc/a%zz", "not followed by two hex digits"),
        ("keychain://svc/%FF", "not UTF-8"),
        ("keychain://svc/k?version=2", "takes one ?field=NAME"),
        ("keychain://svc/k?field=", "takes one ?field=NAME"),
        ("keychain://svc/k?field=a?b", "takes one ?field=NAME"),
        ("keychain://%2F/k%00", "holds"),
        ("op://vault/item/field", "does not start with keychain://"),
    ])
    func aMalformedReferenceIsRefusedNamingWhy(text: String, words: String) {
        do {
            let reference = try KeychainReference(parsing: text)
            // A NUL is a byte like another here; the key's own rules refuse it later.
            #expect(words == "holds" && reference.key == "k\0")
        } catch {
            #expect(error.description.contains(words), "\(text): \(error.description)")
            #expect(error.isUsageError)
        }
    }

    @Test func anyNameIsWrittenBackToATextThatNamesIt() throws {
        let awkward = [
            "a/b", "a&b", "c?d", "e#f", "100%", "%41", " lead", "tab\there", "new\nline", "ü/ß", "?field=x", "a b",
        ]
        for service in awkward {
            for key in awkward + ["x/y/z"] {
                for field in [nil, "user name", "a#b?c%d"] {
                    let reference = KeychainReference(service: service, key: key, field: field)
                    #expect(try KeychainReference(parsing: reference.text) == reference, "\(reference.text)")
                }
            }
        }
        #expect(KeychainReference(service: "a/b", key: "c/d").text == "keychain://a%2Fb/c/d")
    }

    @Test func opRunsRuleOnlyAWholeValueIsAReference() {
        #expect(KeychainReference.isReference("keychain://s/k"))
        #expect(!KeychainReference.isReference("x keychain://s/k"))
        #expect(!KeychainReference.isReference(" keychain://s/k"))
        #expect(!KeychainReference.isReference("KEYCHAIN://s/k"))
        #expect(!KeychainReference.isReference("https://host/keychain://s/k"))
    }

    /// An env file of mappings stays one (NAME=KEY); a quoted value, an export line or a
    /// reference makes it a .env, whose other values are literals.
    @Test func anEnvFileIsMappingsUnlessItReadsAsADotEnv() throws {
        let mappings = try EnvironmentMapping.parse("# keys\nA=token\nB=ci/deploy-key\n", path: "m.env")
        #expect(mappings.map(\.name) == ["A", "B"])
        #expect(
            mappings.map { $0.reference(defaultService: "dflt") } == [
                KeychainReference(service: "dflt", key: "token"), KeychainReference(service: "ci", key: "deploy-key"),
            ])
        let dotenv = try EnvironmentMapping.parse(
            "HOST=localhost\nexport PORT=5432\nQ=\"a # b\"\nT=keychain://ci/token\nU=\"keychain://web/gh?field=username\"\n"
                + "MID=see keychain://ci/token\n",
            path: ".env")
        #expect(dotenv.map(\.origin) == [".env:1", ".env:2", ".env:3", ".env:4", ".env:5", ".env:6"])
        let literals = dotenv.compactMap { mapping -> String? in
            if case .literal(let value) = mapping.value { return value }
            return nil
        }
        #expect(literals == ["localhost", "5432", "a # b", "see keychain://ci/token"])
        #expect(
            dotenv.compactMap { $0.reference(defaultService: "dflt") } == [
                KeychainReference(service: "ci", key: "token"),
                KeychainReference(service: "web", key: "gh", field: "username"),
            ])
        #expect(throws: FormatError.self) { try EnvironmentMapping.parse("A=x\nB=keychain://ci\n", path: "b.env") }
        #expect(throws: FormatError.self) { try EnvironmentMapping.parse("T=keychain://ci/t\n1X=y\n", path: "c.env") }
    }
}
