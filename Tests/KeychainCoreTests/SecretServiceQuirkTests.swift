import Foundation
import Testing

@testable import KeychainDBus
@testable import KeychainSecretService
@testable import KeychainSecretSession
@testable import KeychainStore

/// Each quirk of a Secret Service provider the client handles (SecretServiceCalls.swift), played
/// once by a scripted service and met by the same calls on every transport: the in-process fake
/// bus, our own wire and GDBus (both to scripted_service.py on a private bus). No provider's
/// timing is involved: the service answers what the scenario says, in the order it says.
@Suite("Secret Service quirks: each scripted once, met on every transport")
struct SecretServiceQuirkTests {
    static let service = "org.freedesktop.Secret.Service"
    static let properties = "org.freedesktop.DBus.Properties"
    static let defaultAlias = "/org/freedesktop/secrets/aliases/default"
    static let item = "/org/freedesktop/secrets/collection/login/1"
    static let unknownMethod = BusScenario.Reply.error(
        "org.freedesktop.DBus.Error.UnknownMethod", "Method SearchItems is not implemented")
    static let unknownObject = BusScenario.Reply.error("org.freedesktop.DBus.Error.UnknownObject", "No such object")

    /// gnome-keyring 42 answers SearchItems with UnknownMethod when an item it matched is deleted
    /// during the search: the client searches again.
    @Test(arguments: Transport.allCases)
    func anItemVanishingMidSearchIsSearchedForAgain(_ transport: Transport) throws {
        let found = BusScenario.Reply.values([paths(["/a"]), paths([])])
        let scenario = BusScenario().answering(
            Self.service, "SearchItems", Self.unknownMethod, Self.unknownMethod, found)
        try ScriptedPeer.playing(scenario, over: transport) { peer in
            let result = try peer.run { try search(on: $0) }
            #expect(result.unlocked == ["/a"] && result.locked.isEmpty)
            #expect(try peer.events().map(\.description) == Array(repeating: "SearchItems", count: 3))
        }
    }

    /// … but not forever: after five UnknownMethods in a row it says so.
    @Test(arguments: Transport.allCases)
    func aSearchThatKeepsMeetingVanishedItemsGivesUpAfterFiveTries(_ transport: Transport) throws {
        let scenario = BusScenario().answering(
            Self.service, "SearchItems",
            Array(repeating: Self.unknownMethod, count: 5) + [.values([paths(["/a"]), paths([])])])
        try ScriptedPeer.playing(scenario, over: transport) { peer throws in
            #expect(
                throws: KeychainError.backendFailure(
                    detail: "the Secret Service's search kept failing while items changed")
            ) { try peer.run { try search(on: $0) } }
            #expect(try peer.events().map(\.description) == Array(repeating: "SearchItems", count: 5))
        }
    }

    /// KeePassXC's locked database shows no items (Locked true, Items empty); one unlocked, or
    /// locked but showing its items, or no default collection at all, is not that.
    @Test(arguments: Transport.allCases)
    func aLockedDefaultCollectionThatHidesItsItemsIsToldApart(_ transport: Transport) throws {
        let locked = { (flag: Bool) in BusScenario.Reply.values([.variant(.boolean(flag))]) }
        let items = { (items: [String]) in BusScenario.Reply.values([.variant(paths(items))]) }
        let scenario = BusScenario().answering(
            Self.properties, "Get", at: Self.defaultAlias,
            locked(true), items([]),  // KeePassXC, locked
            locked(false),  // unlocked: its Items are not asked
            locked(true), items([Self.item]),  // locked, showing its items
            Self.unknownObject)  // no default collection
        try ScriptedPeer.playing(scenario, over: transport) { peer in
            let hides = try peer.run { bus in
                try (0..<4).map { _ in try SecretServiceConnection.hidesItemsWhileLocked(on: bus) }
            }
            #expect(hides == [true, false, false, false])
            let (lockedGet, itemsGet) = (
                "Get org.freedesktop.Secret.Collection Locked", "Get org.freedesktop.Secret.Collection Items"
            )
            #expect(
                try peer.events().map(\.description) == [
                    lockedGet, itemsGet, lockedGet, lockedGet, itemsGet, lockedGet,
                ])
        }
    }

    /// CreateItem that asks for a prompt, a locked collection, or none at all: each told apart, so
    /// that the client performs the prompt, unlocks the collection, or leaves its creation to
    /// libsecret.
    @Test(arguments: Transport.allCases)
    func aPromptALockedOrAMissingCollectionLeaveTheCreationToLibsecret(_ transport: Transport) throws {
        let created = { (prompt: String) in BusScenario.Reply.values([.objectPath(Self.item), .objectPath(prompt)]) }
        let scenario = BusScenario().answering(
            "org.freedesktop.Secret.Collection", "CreateItem", at: Self.defaultAlias,
            created("/org/freedesktop/secrets/prompt/1"), created("/"),
            .error("org.freedesktop.Secret.Error.IsLocked", "Cannot create an item in a locked collection"),
            Self.unknownObject)
        let session = SessionPair().ours
        try ScriptedPeer.playing(scenario, over: transport) { peer in
            let made = try peer.run { bus in
                try (0..<4).map { _ in
                    try SecretServiceConnection.createItem(
                        Data("s3cret".utf8), attributes: [("service", "quirks")], label: "quirks",
                        contentType: "text/plain", in: session, on: bus)
                }
            }
            #expect(made == [.prompt("/org/freedesktop/secrets/prompt/1"), .created, .locked, .noCollection])
            #expect(try peer.events().map(\.description) == Array(repeating: "CreateItem", count: 4))
        }
    }

    /// A service that never answers: the wait ends in the time-out of the operation, not a hang
    /// (the fake throws it at once, the real transports after `seconds`; how long is not asserted).
    @Test(arguments: Transport.allCases)
    func aServiceThatNeverAnswersEndsInATimeOut(_ transport: Transport) throws {
        let scenario = BusScenario().answering(Self.service, "SearchItems", .never)
        try ScriptedPeer.playing(scenario, over: transport) { peer throws in
            #expect(throws: KeychainError.timedOut(operation: ScriptedPeer.operation, seconds: 0.5)) {
                try peer.run(seconds: 0.5) { try search(on: $0) }
            }
            #expect(try peer.events().map(\.description) == ["SearchItems"])
        }
    }

    /// A service with no encrypted session (NotSupported): no session, no error (the caller
    /// reads through libsecret); one that has: the session its answer names, with the key both
    /// sides derive.
    @Test(arguments: Transport.allCases)
    func anOpenSessionNotSupportedIsNoSession(_ transport: Transport) throws {
        let (ours, theirs) = (SecretSession.KeyExchange(), SecretSession.KeyExchange())
        let path = "/org/freedesktop/secrets/session/7"
        let scenario = BusScenario().answering(
            Self.service, "OpenSession",
            .error("org.freedesktop.DBus.Error.NotSupported", "Algorithm not supported"),
            .values([.variant(.bytes(theirs.paddedPublicValue)), .objectPath(path)]))
        try ScriptedPeer.playing(scenario, over: transport) { peer in
            let (refused, opened) = try peer.run { bus in
                (try openSession(ours, on: bus), try openSession(ours, on: bus))
            }
            #expect(refused == nil)
            let session = try #require(opened)
            #expect(session.path == path)
            let sealed = try SecretSession(path: path, exchange: theirs, peer: ours.paddedPublicValue)
                .encrypt(Data("agreed".utf8))
            #expect(try session.decrypt(parameters: sealed.parameters, value: sealed.value) == Data("agreed".utf8))
            let opening = "OpenSession " + SecretSession.algorithm
            #expect(try peer.events().map(\.description) == [opening, opening])
        }
    }

    /// kwalletd5 sends an empty secret for an item it is deleting: the item's Label, asked only
    /// for an empty secret, tells a vanished item (nil) from one whose secret is empty.
    @Test(arguments: Transport.allCases)
    func kwalletsEmptySecretOfAnItemBeingDeletedIsNoSecret(_ transport: Transport) throws {
        let pair = SessionPair()
        let scenario = try BusScenario()
            .answering(
                "org.freedesktop.Secret.Item", "GetSecret", at: Self.item, pair.sent(""), pair.sent(""),
                pair.sent("s3cret")
            )
            .answering(
                Self.properties, "Get", at: Self.item, Self.unknownObject, .values([.variant(.string("quirks"))]))
        try ScriptedPeer.playing(scenario, over: transport) { peer in
            let secrets = try peer.run { bus in
                try (0..<3).map { _ in try readSecret(at: Self.item, in: pair.ours, on: bus) }
            }
            #expect(secrets == [nil, Data(), Data("s3cret".utf8)])
            let label = "Get org.freedesktop.Secret.Item Label"
            #expect(try peer.events().map(\.description) == ["GetSecret", label, "GetSecret", label, "GetSecret"])
        }
    }

    /// SetSecret on an item another client deleted: false, not an error; and, vanished or not,
    /// watchers were told (SecretChanged on the item's path) and the bus pinged behind it.
    @Test(arguments: Transport.allCases)
    func aSetSecretOnAVanishedItemIsFalseAndStillSignalled(_ transport: Transport) throws {
        let scenario = BusScenario().answering(
            "org.freedesktop.Secret.Item", "SetSecret", at: Self.item, Self.unknownObject, .values([]))
        let session = SessionPair().ours
        try ScriptedPeer.playing(scenario, over: transport) { peer in
            let put = try peer.run { bus in
                try (0..<2).map { _ in
                    try SecretServiceConnection.putSecret(Data("new".utf8), at: Self.item, in: session, on: bus)
                }
            }
            #expect(put == [false, true])
            let events = try peer.events()
            let once = ["SetSecret", "signal SecretChanged", "Ping"]
            #expect(events.map(\.description) == once + once)
            #expect(events.filter { $0.kind == .signal }.map(\.path) == [Self.item, Self.item])
        }
    }
}

/// An `ao` of `paths`.
private func paths(_ paths: [String]) -> BusValue { .array(element: "o", paths.map(BusValue.objectPath)) }

// The client's calls as its callers make them, generic so that a test's `any BusConnection`
// opens into the connection's own type.

private func search<Bus: BusConnection>(on bus: Bus) throws -> (unlocked: [String], locked: [String]) {
    let pairs = [("service", "quirks")]
    return try SecretServiceConnection.searchResult(SecretServiceConnection.sendSearch(pairs, on: bus), pairs, on: bus)
}

private func openSession<Bus: BusConnection>(_ exchange: SecretSession.KeyExchange, on bus: Bus) throws
    -> SecretSession?
{
    try SecretServiceConnection.openedSession(
        SecretServiceConnection.sendOpenSession(exchange, on: bus), exchange, on: bus)
}

private func readSecret<Bus: BusConnection>(at path: String, in session: SecretSession, on bus: Bus) throws -> Data? {
    try SecretServiceConnection.secret(
        SecretServiceConnection.sendGetSecret(at: path, in: session, on: bus), at: path, in: session, on: bus)
}

/// Both ends of one encrypted session: ours, and the service's, which seals what it sends.
private struct SessionPair {
    let ours: SecretSession
    let theirs: SecretSession

    init(path: String = "/org/freedesktop/secrets/session/1") {
        let (client, service) = (SecretSession.KeyExchange(), SecretSession.KeyExchange())
        ours = SecretSession(path: path, exchange: client, peer: service.paddedPublicValue)
        theirs = SecretSession(path: path, exchange: service, peer: client.paddedPublicValue)
    }

    /// GetSecret's answer, `secret` sealed by the service: `(oayays)`.
    func sent(_ secret: String) throws -> BusScenario.Reply {
        let sealed = try theirs.encrypt(Data(secret.utf8))
        return .values([
            .structure([
                .objectPath(theirs.path), .bytes(sealed.parameters), .bytes(sealed.value), .string("text/plain"),
            ])
        ])
    }
}
