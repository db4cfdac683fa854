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

    /// Forms that wrap (base64), with a line break (LF or CRLF) anywhere between their bytes,
    /// however the output is split: no byte that an occurrence covers shows, but line breaks.
    @Test func wrappedFormsLeaveNoByteShowingAcrossBreaks() {
        var generator = SystemRandomNumberGenerator()
        let alphabet = Array("ABab".utf8)
        /// Where `form` ends if it occurs at `start` with a line break before any byte but the first.
        func end(of form: [UInt8], in text: [UInt8], at start: Int) -> Int? {
            var index = start
            for (offset, byte) in form.enumerated() {
                if offset > 0 && index < text.count && text[index] == 0x0A {
                    index += 1
                } else if offset > 0 && index + 1 < text.count && text[index] == 0x0D && text[index + 1] == 0x0A {
                    index += 2
                }
                guard index < text.count, text[index] == byte else { return nil }
                index += 1
            }
            return index
        }
        for _ in 0..<500 {
            let forms = (0..<Int.random(in: 1...3, using: &generator)).map { _ in
                (0..<Int.random(in: 4...10, using: &generator)).map { _ in alphabet.randomElement(using: &generator)! }
            }
            var text: [UInt8] = []
            while text.count < 200 {
                switch Int.random(in: 0..<6, using: &generator) {
                case 0: text += [0x0A]
                case 1: text += [0x0D, 0x0A]
                case 2: text += forms.randomElement(using: &generator)!
                default: text.append(alphabet.randomElement(using: &generator)!)
                }
            }
            var covered = [Bool](repeating: false, count: text.count)
            for form in forms {
                for start in text.indices {
                    if let end = end(of: form, in: text, at: start) {
                        for index in start..<end { covered[index] = true }
                    }
                }
            }
            let shown = text.indices.filter { !covered[$0] && text[$0] != 0x0A && text[$0] != 0x0D }.count
            for size in [text.count, 1, 3, 7] {
                var stream = MaskingStream(hiding: MaskForms(acrossLines: forms))
                var output: [UInt8] = []
                for start in stride(from: 0, to: text.count, by: size) {
                    Array(text[start..<min(text.count, start + size)]).withUnsafeBytes {
                        stream.write($0, into: &output)
                    }
                }
                stream.finish(into: &output)
                let left = String(decoding: output, as: UTF8.self).replacingOccurrences(of: "***", with: "")
                #expect(left.utf8.filter { $0 != 0x0A && $0 != 0x0D }.count == shown, "\(forms) \(text) \(size)")
            }
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
