import Foundation
import Testing

@testable import KeychainCore
@testable import KeychainFormats
@testable import KeychainSystem

/// What issue 58 found masked output missing, as facts on the forms and the stream: the forms
/// GitHub's runner masks (its value encoders, each piece of a value), the spellings encoders
/// write that were missed, wrapped base64 with CRLF, repetitive secrets, slow writers, and the
/// pieces `::add-mask::` may carry.
@Suite("Masked output: the runner's forms, and more")
struct MaskingRunnerFormsTests {
    /// `text` masked for `secrets`, written `size` bytes at a time (0: at once), ended.
    private func masked(_ text: String, hiding secrets: [String], writes size: Int = 0) -> String {
        var forms = MaskForms()
        for secret in secrets { forms += MaskedForms.of(Array(secret.utf8)) }
        var stream = MaskingStream(hiding: forms)
        var output: [UInt8] = []
        let bytes = Array(text.utf8)
        for start in stride(from: 0, to: bytes.count, by: size == 0 ? max(1, bytes.count) : size) {
            Array(bytes[start..<min(bytes.count, start + (size == 0 ? bytes.count : size))]).withUnsafeBytes {
                stream.write($0, into: &output)
            }
        }
        stream.finish(into: &output)
        return String(decoding: output, as: UTF8.self)
    }

    /// .NET's System.Text.Json (`\u0022 \u0027 \u002B \u0060`, `<` as `\u003C`, non-ASCII as
    /// `\u00E9`), Newtonsoft's `\u2028`, and a form as URLSearchParams and Java's URLEncoder write
    /// it (`~` as `%7E`, `*` kept, `!'()` encoded, a space as `+`).
    @Test func dotNetJSONAndFormEncodingAreMasked() {
        let secret = "pa\"ss'w+rd`<é>~*!()x y\u{2028}"
        let dotNet = #"pa\u0022ss\u0027w\u002Brd\u0060\u003C\u00E9\u003E~*!()x y\u2028"#
        #expect(masked("json: \"\(dotNet)\"\n", hiding: [secret]) == "json: \"***\"\n")
        let newtonsoft = #"pa\"ss'w+rd`<é>~*!()x y\u2028"#
        #expect(masked("[\(newtonsoft)]", hiding: [secret]) == "[***]")
        let form = "pa%22ss%27w%2Brd%60%3C%C3%A9%3E%7E*%21%28%29x+y%E2%80%A8"
        #expect(masked("a=\(form)&b=1", hiding: [secret]) == "a=***&b=1")
    }

    /// Each line of a value trimmed, and split at a lone CR as well as LF, as the runner
    /// registers it: an indented kubeconfig line printed trimmed, the part of a line after a CR.
    @Test func piecesAreTrimmedAndSplitAtCR() {
        let kubeconfig = "clusters:\n  - cluster:\n      token: kube-token-1234\n"
        #expect(masked("token: kube-token-1234\n", hiding: [kubeconfig]) == "***\n")
        #expect(masked("[second-part]", hiding: ["first-part\rsecond-part"]) == "[***]")
        #expect(masked("x 123\n456\n789 y", hiding: ["123\n456\n789"]) == "x *** y")  // lines all short
        #expect(
            MaskedForms.pieces(of: Array("  xy  \r\nab\rcdefg \n".utf8))
                == ["xy", "ab", "cdefg"].map { Array($0.utf8) })
    }

    /// The runner's encoders besides JSON, URI and base64: XML, the expression form (`'`
    /// doubled), a command line's `\"`, the inside of a quoted value, PowerShell's halves at `&`,
    /// and base64 with its padding.
    @Test func theRunnersOtherEncodersAreMasked() {
        let secret = "it's \"a\" <tag> & more"
        #expect(masked("x it&apos;s &quot;a&quot; &lt;tag&gt; &amp; more y", hiding: [secret]) == "x *** y")
        #expect(masked("x it''s \"a\" <tag> & more y", hiding: [secret]) == "x *** y")
        #expect(masked(#"x C:\dir \"it\" y"#, hiding: [#"C:\dir "it""#]) == "x *** y")
        #expect(masked("<inside-the-quotes>", hiding: ["\"inside-the-quotes\""]) == "<***>")
        #expect(masked("[it's \"a\" <tag> &]", hiding: [secret]) == "[***]")
        #expect(masked("[user&+xsecond-half]", hiding: ["user&+xsecond-half"]) == "[***]")
        #expect(masked("[second-half]", hiding: ["user&+xsecond-half"]) == "[***]")
        let padded = Data("abcde".utf8).base64EncodedString()
        #expect(masked("b64 \(padded) end", hiding: ["abcde"]) == "b64 *** end")
    }

    /// Base64 wrapped at any width, LF or CRLF (MIME through a pipe), wherever the secret
    /// starts in a line: no line of it shows, and the text around it does.
    @Test func base64WrappedWithCRLFIsMasked() {
        let secret = String(repeating: "0123456789abcdefghij", count: 6)
        for prefix in ["", "x", "xy", String(repeating: "z", count: 50)] {
            let encoded = Data((prefix + secret).utf8).base64EncodedString(options: [
                .lineLength76Characters, .endLineWithCarriageReturn, .endLineWithLineFeed,
            ])
            let text = "begin\r\n" + encoded + "\r\nend\r\n"
            for size in [0, 1, 7] {
                let output = masked(text, hiding: [secret], writes: size)
                #expect(output.hasPrefix("begin\r\n") && output.hasSuffix("\r\nend\r\n") && output.contains("***"))
                for line in encoded.components(separatedBy: "\r\n").dropFirst().dropLast() {
                    #expect(!output.contains(line), "\(line) shows in \(output)")
                }
            }
        }
    }

    /// A repetitive secret (`a`×N and `b`) in a long run of `a`: masked where it ends, the
    /// `a`s before it shown; the same written a byte at a time and at odd sizes.
    @Test func aRepetitiveSecretIsFoundInARunOfItsFirstByte() {
        let secret = String(repeating: "a", count: 5_001) + "b"
        let text = String(repeating: "a", count: 20_000) + "b|" + secret + "|"
        let expected = String(repeating: "a", count: 20_000 - 5_001) + "***|***|"
        for size in [0, 1, 4_096, 5_003] {
            #expect(masked(text, hiding: [secret], writes: size) == expected)
        }
    }

    /// Output that is all one growing span (the base64 of a run of `a`, which the shifted base64
    /// of `a`×N + `b` cannot be told from) goes out as one mask as it comes: what is held back
    /// stays within the longest form and its line breaks, not the whole output.
    @Test func aSpanAsLongAsTheOutputIsNotHeldWhole() {
        let secret = Array(String(repeating: "a", count: 3_001).utf8) + [UInt8(ascii: "b")]
        var stream = MaskingStream(hiding: MaskedForms.of(secret))
        let text = Array(
            Data(repeating: UInt8(ascii: "a"), count: 60_000).base64EncodedData(options: .lineLength76Characters))
        var output: [UInt8] = []
        var most = 0
        for start in stride(from: 0, to: text.count, by: 4_096) {
            Array(text[start..<min(text.count, start + 4_096)]).withUnsafeBytes { stream.write($0, into: &output) }
            most = max(most, stream.heldCount)
        }
        stream.finish(into: &output)
        #expect(String(decoding: output, as: UTF8.self) == "***Fh")  // (every form there ends in "YW")
        #expect(most < 3 * 4_100 / 3 + 4_096, "\(most) bytes held")
    }

    /// Split anywhere, and held across pauses: once four bytes of a secret are open, two bytes
    /// a write with a pause (``MaskingStream/release(into:)``) after each still mask all of it;
    /// a pause with fewer than four bytes open lets those show (a prompt), and the rest is still
    /// masked.
    @Test func aSlowWriterIsMaskedAndAShortPromptShows() {
        let secret = Array("slow-secret-value".utf8)
        var stream = MaskingStream(hiding: MaskedForms.of(secret))
        var output: [UInt8] = []
        Array("> slow".utf8).withUnsafeBytes { stream.write($0, into: &output) }
        stream.release(into: &output)
        #expect(String(decoding: output, as: UTF8.self) == "> ")
        let text = Array("-secret-value\n".utf8)
        for start in stride(from: 0, to: text.count, by: 2) {
            Array(text[start..<min(text.count, start + 2)]).withUnsafeBytes { stream.write($0, into: &output) }
            stream.release(into: &output)
        }
        stream.finish(into: &output)
        #expect(String(decoding: output, as: UTF8.self) == "> ***\n")
        output = []
        Array("login: slo".utf8).withUnsafeBytes { stream.write($0, into: &output) }
        #expect(String(decoding: output, as: UTF8.self) == "login: ")
        stream.release(into: &output)
        #expect(String(decoding: output, as: UTF8.self) == "login: slo")
        Array("w-secret-value!".utf8).withUnsafeBytes { stream.write($0, into: &output) }
        stream.finish(into: &output)
        #expect(String(decoding: output, as: UTF8.self) == "login: slo***!")
        let whole = "a slow-secret-value b slow-secret-value-slow-secret-value c"
        for cut in 1..<whole.utf8.count {
            var stream = MaskingStream(hiding: MaskedForms.of(secret))
            var output: [UInt8] = []
            Array(whole.utf8.prefix(cut)).withUnsafeBytes { stream.write($0, into: &output) }
            Array(whole.utf8.dropFirst(cut)).withUnsafeBytes { stream.write($0, into: &output) }
            stream.finish(into: &output)
            #expect(String(decoding: output, as: UTF8.self) == "a *** b ***-*** c", "cut at \(cut)")
        }
    }

    /// Forms added while a pause has let the beginning of a form go (serve learns a secret
    /// then): the rest of that form is still masked.
    @Test func formsAddedAfterAPauseStillMaskAFormBegun() {
        var stream = MaskingStream(hiding: MaskedForms.of(Array("slow-secret-value".utf8)))
        var output: [UInt8] = []
        Array("login: slo".utf8).withUnsafeBytes { stream.write($0, into: &output) }
        stream.release(into: &output)
        Array("w-".utf8).withUnsafeBytes { stream.write($0, into: &output) }
        stream.release(into: &output)
        var more = MaskedForms.of(Array("slow-secret-value".utf8))
        more += MaskedForms.of(Array("other-secret".utf8))
        stream.hide(more, into: &output)
        Array("secret-value! other-secret".utf8).withUnsafeBytes { stream.write($0, into: &output) }
        stream.finish(into: &output)
        #expect(String(decoding: output, as: UTF8.self) == "login: slo***! ***")
    }

    /// `::add-mask::` carries only pieces the runner registers as they are: split at CR and LF
    /// and trimmed, each of 4 characters or more, so that no short piece is masked everywhere.
    @Test func addMaskCarriesOnlyPiecesSafeToRegister() {
        #expect(GitHubEnvironmentFile.maskCommands(for: ["  xy  "]) == "")
        #expect(GitHubEnvironmentFile.maskCommands(for: ["ab\rcdefgh"]) == "::add-mask::cdefgh\n")
        #expect(
            GitHubEnvironmentFile.maskCommands(for: ["  first line 100%  \r\n\tsecond\n ab \n"])
                == "::add-mask::first line 100%25\n::add-mask::second\n")
    }
}
