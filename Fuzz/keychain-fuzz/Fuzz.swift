import Glibc
// libFuzzer's entry point over KeychainCore's parsers (FuzzTargets), and, in an ordinary build,
// a replayer that runs each file given to it through one target (the tests replay the corpora).
//
//   make fuzz                                  every target for FUZZ_SECONDS each (default 600)
//   KEYCHAIN_FUZZ_TARGET=template .build-fuzz/debug/keychain-fuzz Fuzz/corpus/template
//   .build/debug/keychain-fuzz template FILE…  (replay)
import KeychainFuzzTargets

/// The target libFuzzer drives: `$KEYCHAIN_FUZZ_TARGET`.
/// Writes `text` to standard error.
private func complain(_ text: String) {
    var text = text
    text.withUTF8 { _ = write(STDERR_FILENO, $0.baseAddress, $0.count) }
}

private let fuzzTarget: String = getenv("KEYCHAIN_FUZZ_TARGET").map { String(cString: $0) } ?? ""

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
    guard FuzzTargets.run(fuzzTarget, bytes) else {
        complain("keychain-fuzz: set KEYCHAIN_FUZZ_TARGET to one of \(FuzzTargets.names)\n")
        exit(64)
    }
    return 0
}

#if FUZZING
    /// libFuzzer's driver, which its own `main` calls; SwiftPM links an executable's entry point
    /// under the name `keychain_fuzz_main`, so that entry point hands over to it.
    @_silgen_name("LLVMFuzzerRunDriver")
    func runFuzzerDriver(
        _ argc: UnsafeMutablePointer<CInt>,
        _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
        _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt
    ) -> CInt

    @_cdecl("keychain_fuzz_main")
    func fuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
        var count = argc
        var arguments = argv
        return runFuzzerDriver(&count, &arguments) { data, size in fuzzOneInput(data, size) }
    }
#else
    @main
    enum Replay {
        /// `keychain-fuzz TARGET FILE…`: runs every file through the target; exits 0 when none crashed.
        static func main() {
            let arguments = CommandLine.arguments.dropFirst()
            guard let target = arguments.first, FuzzTargets.names.contains(target) else {
                complain("usage: keychain-fuzz TARGET FILE… (targets: \(FuzzTargets.names))\n")
                exit(64)
            }
            for path in arguments.dropFirst() {
                guard let file = fopen(path, "rb") else {
                    complain("keychain-fuzz: cannot open \(path)\n")
                    exit(74)
                }
                var bytes: [UInt8] = []
                var buffer = [UInt8](repeating: 0, count: 65_536)
                while true {
                    let count = fread(&buffer, 1, buffer.count, file)
                    if count == 0 { break }
                    bytes += buffer[0..<count]
                }
                fclose(file)
                _ = FuzzTargets.run(target, bytes)
            }
        }
    }
#endif
