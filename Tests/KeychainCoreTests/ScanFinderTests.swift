import Foundation
import Testing

@testable import KeychainSystem

/// The finder scan runs files through: the same matches, at the same offsets, whatever blocks
/// the stream comes in; every secret a form belongs to named, with its form's label.
@Suite("scan's SecretFinder: matches, offsets and labels across blocks")
struct ScanFinderTests {
    static let token = Array("ghp_Zq8vN2xK7mW4pR9tY3uH6jD1sF5gL0aB".utf8)
    static let key = Array("first-line-of-the-key\nsecond-line-of-the-key".utf8)

    /// `text` through a finder of `secrets` in blocks of `size` bytes: (start, end, secret, label).
    static func matches(_ text: [UInt8], secrets: [[UInt8]], size: Int) -> [[String]] {
        var finder = SecretFinder(secrets: secrets, minimumLength: 8)
        var found: [[String]] = []
        var offset = 0
        while offset < text.count {
            let block = Array(text[offset..<min(offset + size, text.count)])
            for match in block.withUnsafeBytes({ finder.find(in: $0) }) {
                for owner in match.owners {
                    found.append(["\(match.start)", "\(match.end)", "\(owner.secret)", owner.label])
                }
            }
            offset += size
        }
        return found
    }

    @Test func everyBlockSizeFindsTheSameMatches() {
        let wrapped = Data(Self.token).base64EncodedString().enumerated().map {
            "\($0.offset % 10 == 9 ? "\r\n" : "")\($0.element)"
        }
        .joined()
        let text =
            Array("a \(String(decoding: Self.token, as: UTF8.self)) b\n\(wrapped)\n".utf8) + [0, 0xFF]
            + Self.key + Array(" and again: second-line-of-the-key\n".utf8)
        let secrets = [Self.token, Self.key, Self.token]  // two keys that hold one value
        let whole = Self.matches(text, secrets: secrets, size: text.count)
        #expect(whole.contains(["2", "38", "0", "plain"]) && whole.contains(["2", "38", "2", "plain"]), "\(whole)")
        #expect(whole.contains { $0[2] == "0" && $0[3] == "base64" }, "\(whole)")
        #expect(whole.contains { $0[2] == "1" && $0[3] == "plain" }, "\(whole)")
        #expect(whole.contains { $0[2] == "1" && $0[3] == "line 2" }, "\(whole)")
        for size in [1, 2, 3, 5, 7, 16, 64] {
            #expect(Self.matches(text, secrets: secrets, size: size) == whole, "blocks of \(size)")
        }
    }

    @Test func shortFormsAreLeftOutAndLabelsNameTheLine() {
        let forms = MaskedForms.labelled(Self.key)
        #expect(forms.plain.first?.label == "plain")
        #expect(forms.plain.contains { $0.label == "line 1" && $0.form == Array("first-line-of-the-key".utf8) })
        #expect(forms.acrossLines.contains { $0.label == "base64 of line 2" })
        #expect(MaskedForms.of(Self.key).plain == forms.plain.map(\.form))
        // Seven bytes: the value itself is left out, its padded base64 (eight) is not.
        var finder = SecretFinder(secrets: [Array("short12".utf8)], minimumLength: 8)
        #expect(!finder.isEmpty)
        #expect(Array("x short12 y".utf8).withUnsafeBytes { finder.find(in: $0) }.isEmpty)
    }
}
