import Foundation
import Testing

@testable import KeychainCore
@testable import KeychainSystem

/// The masking of `exec`'s output, as a stream: the same result however the output is split
/// into writes (spans that touch across writes are one mask too), and no byte of any form left
/// showing.
@Suite("Masked output: forms and the stream")
struct MaskingStreamTests {
    /// `text` through a stream hiding `forms`, written in the given pieces.
    private func masked(_ text: [UInt8], hiding forms: [[UInt8]], pieces: [Int]) -> [UInt8] {
        var stream = MaskingStream(hiding: forms)
        var output: [UInt8] = []
        var start = 0
        for size in pieces + [text.count] where start < text.count {
            let end = min(text.count, start + size)
            Array(text[start..<end]).withUnsafeBytes { stream.write($0, into: &output) }
            start = end
        }
        stream.finish(into: &output)
        return output
    }

    /// Every byte covered by an occurrence of a form (overlapping, touching, nested) becomes part
    /// of one mask; the naive reference marks them one by one.
    private func reference(_ text: [UInt8], hiding forms: [[UInt8]]) -> [UInt8] {
        var covered = [Bool](repeating: false, count: text.count)
        for form in forms where form.count <= text.count {
            for start in 0...(text.count - form.count) where Array(text[start..<start + form.count]) == form {
                for index in start..<start + form.count { covered[index] = true }
            }
        }
        var output: [UInt8] = []
        for index in text.indices {
            if !covered[index] {
                output.append(text[index])
            } else if index == 0 || !covered[index - 1] {
                output += MaskingStream.mask
            }
        }
        return output
    }

    @Test func anySplitGivesWhatTheNaiveReferenceGives() {
        var generator = SystemRandomNumberGenerator()
        let alphabet = Array("abcdef\n".utf8)
        for _ in 0..<400 {
            let forms = (0..<Int.random(in: 1...4, using: &generator)).map { _ in
                (0..<Int.random(in: 4...9, using: &generator)).map { _ in alphabet.randomElement(using: &generator)! }
            }.filter { !$0.contains(UInt8(ascii: "\n")) }
            guard !forms.isEmpty else { continue }
            var text: [UInt8] = []
            while text.count < 300 {
                text +=
                    Bool.random(using: &generator)
                    ? forms.randomElement(using: &generator)!.prefix(Int.random(in: 1...9, using: &generator))
                    : [alphabet.randomElement(using: &generator)!]
            }
            let expected = String(decoding: reference(text, hiding: forms), as: UTF8.self)
            func masked(_ pieces: [Int]) -> String {
                String(decoding: self.masked(text, hiding: forms, pieces: pieces), as: UTF8.self)
            }
            #expect(masked([text.count]) == expected)
            let pieces = (0..<50).map { _ in Int.random(in: 1...12, using: &generator) }
            #expect(masked(pieces) == expected, "\(forms) \(pieces)")
            #expect(masked(Array(repeating: 1, count: 300)) == expected)
        }
    }

    /// Bytes that only begin a form are held back until the next write, and written unchanged
    /// by finish (a prompt); a newline ends every hold, since no form holds one.
    @Test func aBeginningIsHeldUntilTheNextWriteOrTheEnd() {
        var stream = MaskingStream(hiding: [Array("secret-value".utf8)])
        var output: [UInt8] = []
        Array("password: secr".utf8).withUnsafeBytes { stream.write($0, into: &output) }
        #expect(String(decoding: output, as: UTF8.self) == "password: ")
        #expect(stream.isHolding)
        stream.finish(into: &output)
        #expect(String(decoding: output, as: UTF8.self) == "password: secr")
        output = []
        Array("secret-val\nsecret-".utf8).withUnsafeBytes { stream.write($0, into: &output) }
        Array("value!".utf8).withUnsafeBytes { stream.write($0, into: &output) }
        #expect(String(decoding: output, as: UTF8.self) == "secret-val\n***!")
        #expect(!stream.isHolding)
    }

    /// What is masked for a value: itself whole, its lines, base64 at three offsets (only the
    /// characters the value alone decides), JSON and URL forms; nothing under four bytes.
    @Test func theFormsOfAValue() {
        let all = MaskedForms.of(Array("ab/c\"d\né😀x\n".utf8))
        let forms = Set((all.plain + all.acrossLines).map { String(decoding: $0, as: UTF8.self) })
        #expect(forms.contains("ab/c\"d"))
        #expect(forms.contains("é😀x"))
        #expect(forms.contains("ab/c\"d\né😀x\n"))
        #expect(forms.contains(String(Data("ab/c\"d\né😀x\n".utf8).base64EncodedString().prefix(20))))
        #expect(forms.contains(String(Data("b/c\"d\né😀x\n".utf8).base64EncodedString().prefix(18))))
        #expect(forms.contains(#"ab/c\"d\né😀x\n"#))
        #expect(forms.contains(#"ab\/c\"d\né😀x\n"#))
        #expect(forms.contains(#"ab/c\"d\n\u00e9\ud83d\ude00x\n"#))
        #expect(forms.contains("ab%2Fc%22d%0A%C3%A9%F0%9F%98%80x%0A"))
        #expect(MaskedForms.of(Array("abc".utf8)).isEmpty)
        #expect(MaskedForms.isTooShort(Array("é😀x".utf8)))
        #expect(MaskedForms.of(Array("abcd".utf8)).plain.allSatisfy { $0.count >= 4 })
        #expect(MaskedEncodings.base64(Array("abcd".utf8)[...]) == Array("YWJjZA".utf8.dropLast()))
    }
}
