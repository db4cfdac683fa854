import Foundation
import Testing

@testable import KeychainDBus
@testable import KeychainSecretService

/// Unix descriptors on our own wire, as logind's `Inhibit` answers with one: negotiated with the
/// authentication, received with the bytes of their message (`SCM_RIGHTS`), handed to the caller
/// with the reply.
@Suite("Bus descriptors: received on our wire with their replies")
struct BusDescriptorTests {
    static let interface = "org.keychain_cli.Test.Descriptors"

    /// Two calls back to back, each answered with a pipe's read end holding its own text: each
    /// reply carries its own descriptor, close-on-exec, and reading it gives that text.
    @Test func eachReplyCarriesItsOwnDescriptor() throws {
        let scenario = BusScenario().answering(Self.interface, "Take", .descriptor("held"), .descriptor("again"))
        let service = try ScriptedService.start(scenario)
        defer { service.stop() }
        let endpoint = try #require(SessionBusSocket.Endpoint(service.address))
        let wire = try #require(BusWire(endpoint, operation: "test", seconds: 30, descriptors: true))
        let calls = try (0..<2).map { _ in try wire.call(SecretServiceConnection.busName, "/", Self.interface, "Take") }
        let texts = try calls.map { serial -> String in
            let reply = try wire.reply(to: serial)
            #expect(reply.signature == "h" && reply.descriptors.count == 1)
            var body = reply.body
            let index = Int(try body.uint32())
            let descriptor = try #require(reply.descriptors.indices.contains(index) ? reply.descriptors[index] : nil)
            defer { close(descriptor) }
            #expect(fcntl(descriptor, F_GETFD) & FD_CLOEXEC != 0)
            return String(decoding: readToEnd(descriptor), as: UTF8.self)
        }
        #expect(wire.descriptorsAgreed)
        #expect(texts == ["held", "again"])
    }
}

/// Every byte of `descriptor`, until its writer is gone.
private func readToEnd(_ descriptor: Int32) -> [UInt8] {
    var bytes: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 256)
    while case let count = read(descriptor, &buffer, buffer.count), count > 0 { bytes += buffer[..<count] }
    return bytes
}
