import Foundation
import Testing

@testable import KeychainCore
@testable import KeychainFormats
@testable import KeychainSystem

@Suite("Files: atomic writes")
struct FilesTests {
    /// `vault keygen`'s guarantee: an identity file that appeared after its check is never
    /// replaced, because the new file only gets its name by a link.
    @Test func aWriteThatMustNotReplaceLeavesAnExistingFileAlone() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("kc-files-\(UUID())").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = "\(directory)/identity.txt"
        try writeFileAtomically(path, Array("first".utf8), replacing: false)
        #expect(throws: FileError.self) { try writeFileAtomically(path, Array("second".utf8), replacing: false) }
        do {
            try writeFileAtomically(path, Array("second".utf8), replacing: false)
        } catch {
            #expect(error.code == EEXIST)
        }
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "first")
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory) == ["identity.txt"])
        try writeFileAtomically(path, Array("third".utf8))
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "third")
    }

    /// What a writer killed between linkat and rename leaves is removed by the next write once
    /// old; a user's file of the same shape (`.NAME.backup`, 0600) is not, however old.
    @Test func onlyThisProgramsOwnLeftoversAreRemoved() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("kc-files-\(UUID())").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let names = [
            ".out.keychain-cli.AbC123", ".out.backup", ".out.AbC123", ".out.keychain-cli.AbC12",
            ".out.keychain-cli.v2.bak", ".out.keychain-cli.my-old", ".out.keychain-cli.(copy)",
        ]
        for name in names {
            let path = "\(directory)/\(name)"
            try "x".write(toFile: path, atomically: false, encoding: .utf8)
            chmod(path, 0o600)
            try FileManager.default.setAttributes(
                [.modificationDate: Date(timeIntervalSinceNow: -3600)], ofItemAtPath: path)
        }
        // Of the right name but not 0600: the user's (a chmod of a copy).
        for (name, mode) in [(".out.keychain-cli.Mode07", 0o700), (".out.keychain-cli.Mode04", 0o400)] {
            let path = "\(directory)/\(name)"
            try "x".write(toFile: path, atomically: false, encoding: .utf8)
            chmod(path, mode_t(mode))
            try FileManager.default.setAttributes(
                [.modificationDate: Date(timeIntervalSinceNow: -3600)], ofItemAtPath: path)
        }
        try writeFileAtomically("\(directory)/out", Array("new".utf8))
        let left = try Set(FileManager.default.contentsOfDirectory(atPath: directory))
        #expect(left == Set(["out", ".out.keychain-cli.Mode07", ".out.keychain-cli.Mode04"] + names.dropFirst()))
    }

    /// A name of 240 bytes (80 CJK characters) is replaced like any other: its temporary name
    /// would be too long, so it gets a hashed one.
    @Test func aLongNameIsReplacedToo() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("kc-files-\(UUID())").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = "\(directory)/\(String(repeating: "鍵", count: 80))"
        try writeFileAtomically(path, Array("first".utf8))
        try writeFileAtomically(path, Array("second".utf8))
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "second")
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory).count == 1)
    }

    /// A FIFO, a character device and a descriptor are written into; a regular file, nothing or
    /// a link to either is replaced; a directory is refused.
    @Test func anOutputPathIsJudgedByWhatIsThere() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("kc-files-\(UUID())").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        #expect(mkfifo("\(directory)/fifo", 0o600) == 0)
        try "x".write(toFile: "\(directory)/file", atomically: false, encoding: .utf8)
        try FileManager.default.createSymbolicLink(atPath: "\(directory)/to-null", withDestinationPath: "/dev/null")
        try FileManager.default.createSymbolicLink(atPath: "\(directory)/to-file", withDestinationPath: "file")
        try FileManager.default.createSymbolicLink(atPath: "\(directory)/dangling", withDestinationPath: "nothing")
        #expect(OutputTarget("\(directory)/fifo") == .stream)
        #expect(OutputTarget("/dev/null") == .stream)
        #expect(OutputTarget("\(directory)/to-null") == .stream)
        #expect(OutputTarget("/dev/stdout") == .descriptor(1))
        #expect(OutputTarget("/dev/fd/7") == .descriptor(7))
        #expect(OutputTarget("/proc/self/fd/2") == .descriptor(2))
        #expect(OutputTarget("\(directory)/file") == .file)
        #expect(OutputTarget("\(directory)/to-file") == .file)
        #expect(OutputTarget("\(directory)/dangling") == .file)
        #expect(OutputTarget("\(directory)/missing") == .file)
        #expect(OutputTarget(directory) == .refused("a directory"))
    }
}

@Suite("An export document that JSON tools would read otherwise")
struct ImportFileStrictJSONTests {
    static func refusal(_ text: String) -> String {
        do {
            _ = try ImportFile.items(of: text, source: "f", json: nil, defaultService: try ServiceName("s"))
            Issue.record("read")
            return ""
        } catch {
            return "\(error)"
        }
    }

    /// A comma before a closing bracket and a member given twice (which the decoder reads) are
    /// refused by line and item; a file that starts with [ and does not parse, by line.
    @Test func isRefusedByLineAndItem() {
        let head = #"{"format":"keychain-cli-export","version":1,"items":["#
        let ok = #"{"service":"s","key":"a","encoding":"utf8","secret":"1"}"#
        #expect(
            Self.refusal(head + "\n" + ok + ",\n" + #"{"service":"s","key":"k","encoding":"utf8","secret":"2",}]}"#)
                .hasPrefix(
                    "f, line 3: item 2 has a comma right before a closing bracket"))
        #expect(
            Self.refusal(head + ok + "],\n\"items\":[]}").hasPrefix(
                "f, line 2: the document has the field 'items' twice; nothing was stored"))
        #expect(Self.refusal("[1,]").contains("is not valid JSON (it starts with [ but does not parse: line 1"))
    }
}

@Suite("RepeatedMember: a JSON member given twice")
struct RepeatedMemberTests {
    @Test(arguments: [
        (#"{"a":1,"a":2}"#, RepeatedMember(name: "a", item: nil)),
        (#"{"items":[{"service":"p"},{"service":"p","\u0073ervice":"t"}]}"#, RepeatedMember(name: "service", item: 2)),
        (#"{"items":[{"k":{"x":1,"x":2}}]}"#, RepeatedMember(name: "x", item: 1)),
        (#"{"items":[],"items":[]}"#, RepeatedMember(name: "items", item: nil)),
        (#"{"\ud83d\ude00":1,"😀":2}"#, RepeatedMember(name: "😀", item: nil)),
    ])
    func isFound(_ json: String, _ expected: RepeatedMember) {
        #expect(RepeatedMember.first(in: json.utf8) == expected)
    }

    @Test(arguments: [
        #"{"a":1,"b":{"a":2},"c":[{"a":3},{"a":4}]}"#, #"{"a":"\"a\"","b":"a"}"#, #"["a","a"]"#,
        #"{"a":"x\"","a"#, "",
    ])
    func isNotFoundWhereEachObjectNamesAMemberOnce(_ json: String) {
        #expect(RepeatedMember.first(in: json.utf8) == nil)
    }
}
