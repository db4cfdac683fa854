internal import CLibSecret
import FoundationEssentials
import KeychainDBus
import KeychainStore

// The provider's objects on the bus: their interfaces (introspection data), their registration
// with GDBus, and the C callbacks that hand each call to the provider on the main loop's thread.

enum ProviderInterface {
    static let service = "org.freedesktop.Secret.Service"
    static let collection = "org.freedesktop.Secret.Collection"
    static let item = "org.freedesktop.Secret.Item"
    static let session = "org.freedesktop.Secret.Session"
    static let objectManager = "org.freedesktop.DBus.ObjectManager"
    static let servicePath = "/org/freedesktop/secrets"
    static let sessionPrefix = "/org/freedesktop/secrets/session/"

    /// The interfaces as the Secret Service specification gives them, with what clients use of
    /// them, and D-Bus's standard ObjectManager on the service object.
    static let xml = """
        <node>
          <interface name="org.freedesktop.Secret.Service">
            <method name="OpenSession"><arg name="algorithm" type="s" direction="in"/>
              <arg name="input" type="v" direction="in"/><arg name="output" type="v" direction="out"/>
              <arg name="result" type="o" direction="out"/></method>
            <method name="CreateCollection"><arg name="properties" type="a{sv}" direction="in"/>
              <arg name="alias" type="s" direction="in"/><arg name="collection" type="o" direction="out"/>
              <arg name="prompt" type="o" direction="out"/></method>
            <method name="SearchItems"><arg name="attributes" type="a{ss}" direction="in"/>
              <arg name="unlocked" type="ao" direction="out"/><arg name="locked" type="ao" direction="out"/></method>
            <method name="Unlock"><arg name="objects" type="ao" direction="in"/>
              <arg name="unlocked" type="ao" direction="out"/><arg name="prompt" type="o" direction="out"/></method>
            <method name="Lock"><arg name="objects" type="ao" direction="in"/>
              <arg name="locked" type="ao" direction="out"/><arg name="Prompt" type="o" direction="out"/></method>
            <method name="GetSecrets"><arg name="items" type="ao" direction="in"/>
              <arg name="session" type="o" direction="in"/>
              <arg name="secrets" type="a{o(oayays)}" direction="out"/></method>
            <method name="ReadAlias"><arg name="name" type="s" direction="in"/>
              <arg name="collection" type="o" direction="out"/></method>
            <method name="SetAlias"><arg name="name" type="s" direction="in"/>
              <arg name="collection" type="o" direction="in"/></method>
            <property name="Collections" type="ao" access="read"/>
            <signal name="CollectionCreated"><arg name="collection" type="o"/></signal>
            <signal name="CollectionDeleted"><arg name="collection" type="o"/></signal>
            <signal name="CollectionChanged"><arg name="collection" type="o"/></signal>
          </interface>
          <interface name="org.freedesktop.Secret.Collection">
            <method name="Delete"><arg name="prompt" type="o" direction="out"/></method>
            <method name="SearchItems"><arg name="attributes" type="a{ss}" direction="in"/>
              <arg name="results" type="ao" direction="out"/></method>
            <method name="CreateItem"><arg name="properties" type="a{sv}" direction="in"/>
              <arg name="secret" type="(oayays)" direction="in"/><arg name="replace" type="b" direction="in"/>
              <arg name="item" type="o" direction="out"/><arg name="prompt" type="o" direction="out"/></method>
            <property name="Items" type="ao" access="read"/>
            <property name="Label" type="s" access="readwrite"/>
            <property name="Locked" type="b" access="read"/>
            <property name="Created" type="t" access="read"/>
            <property name="Modified" type="t" access="read"/>
            <signal name="ItemCreated"><arg name="item" type="o"/></signal>
            <signal name="ItemDeleted"><arg name="item" type="o"/></signal>
            <signal name="ItemChanged"><arg name="item" type="o"/></signal>
          </interface>
          <interface name="org.freedesktop.Secret.Item">
            <method name="Delete"><arg name="Prompt" type="o" direction="out"/></method>
            <method name="GetSecret"><arg name="session" type="o" direction="in"/>
              <arg name="secret" type="(oayays)" direction="out"/></method>
            <method name="SetSecret"><arg name="secret" type="(oayays)" direction="in"/></method>
            <property name="Locked" type="b" access="read"/>
            <property name="Attributes" type="a{ss}" access="readwrite"/>
            <property name="Label" type="s" access="readwrite"/>
            <property name="Type" type="s" access="readwrite"/>
            <property name="Created" type="t" access="read"/>
            <property name="Modified" type="t" access="read"/>
          </interface>
          <interface name="org.freedesktop.Secret.Session">
            <method name="Close"/>
          </interface>
          <interface name="org.freedesktop.DBus.ObjectManager">
            <method name="GetManagedObjects"><arg name="objects" type="a{oa{sa{sv}}}" direction="out"/></method>
            <signal name="InterfacesAdded"><arg name="object" type="o"/>
              <arg name="interfaces" type="a{sa{sv}}"/></signal>
            <signal name="InterfacesRemoved"><arg name="object" type="o"/>
              <arg name="interfaces" type="as"/></signal>
          </interface>
        </node>
        """

    /// The parsed interfaces; they live as long as the process.
    nonisolated(unsafe) static let node: UnsafeMutablePointer<GDBusNodeInfo> = g_dbus_node_info_new_for_xml(xml, nil)!

    static func info(_ name: String) -> UnsafeMutablePointer<GDBusInterfaceInfo> {
        g_dbus_node_info_lookup_interface(node, name)!
    }
}

/// One part of the object tree on the bus: a root object and its numbered children (a
/// collection and its items, the sessions), registered with GDBus once for the whole run, with
/// the provider answering for whichever objects exist at the moment of each call.
///
/// Why not one registration per object: GLib 2.74 calls a queued `Properties.Set` through the
/// interface table of the object it was sent to without checking that the object is still
/// registered (its `Get` and method calls check); a client that sent `Item.Delete` and then two
/// `Properties.Set` without waiting made serve call a freed table (a SIGSEGV). A subtree's table
/// is never freed while serving, and calls to its objects all go through the provider's one
/// method handler (properties included), in the order they came.
final class ProviderSubtree {
    enum Kind {
        /// /org/freedesktop/secrets: the Service and the ObjectManager.
        case service
        /// A collection (its own path or an alias's) and its items.
        case collection(ServedCollection)
        /// The sessions, under /org/freedesktop/secrets/session.
        case sessions
    }

    let kind: Kind
    unowned let provider: SecretServiceProvider

    init(kind: Kind, provider: SecretServiceProvider) {
        self.kind = kind
        self.provider = provider
    }

    /// The interfaces of the root (`node` nil) or of the child `node`: every number is a child,
    /// so that a call to an item that no longer exists is answered in turn, by the provider.
    func interfaces(_ node: String?) -> [String] {
        switch (kind, node.map(isNumber)) {
        case (.service, nil): [ProviderInterface.service, ProviderInterface.objectManager]
        case (.collection, nil): [ProviderInterface.collection]
        case (.collection, true): [ProviderInterface.item]
        case (.sessions, true): [ProviderInterface.session]
        default: []
        }
    }

    /// The children that exist now, for introspection.
    func children() -> [String] {
        switch kind {
        case .service: []
        case .collection(let collection): collection.index.items.keys.sorted().map(String.init)
        case .sessions:
            provider.sessions.keys.sorted().map { String($0.dropFirst(ProviderInterface.sessionPrefix.count)) }
        }
    }

    private func isNumber(_ node: String) -> Bool { Int(node).map { $0 > 0 && String($0) == node } ?? false }
}

extension SecretServiceProvider {
    /// Puts the objects under `root` on the bus for the whole run.
    func register(_ root: String, _ kind: ProviderSubtree.Kind) throws(KeychainError) {
        let subtree = ProviderSubtree(kind: kind, provider: self)
        var vtable = GDBusSubtreeVTable(
            enumerate: providerEnumerate, introspect: providerIntrospect, dispatch: providerDispatch,
            padding: (nil, nil, nil, nil, nil, nil, nil, nil))
        let (id, error) = catchingError {
            g_dbus_connection_register_subtree(
                connection, root, &vtable, G_DBUS_SUBTREE_FLAGS_DISPATCH_TO_UNENUMERATED_NODES,
                Unmanaged.passUnretained(subtree).toOpaque(), nil, $0)
        }
        guard id != 0 else {
            throw .backendFailure(detail: "cannot put \(root) on the bus: \(error?.message ?? "unknown error")")
        }
        subtrees.append(subtree)
    }

    /// Sends `signal` of `interface` from `path`.
    func emit(_ interface: String, _ signal: String, from path: String, _ argument: OwnedVariant) {
        g_dbus_connection_emit_signal(connection, nil, path, interface, signal, argument.raw, nil)
    }

    /// Tells clients that cache properties (libsecret's proxies) that `names` of `interface` at
    /// `path` changed.
    func propertiesChanged(_ interface: String, _ names: [String], at path: String) {
        let values = names.compactMap { name in (try? property(interface, name, at: path)).map { (name, $0) } }
        let arguments = Variant.tuple([
            Variant.string(interface), Variant.propertyMap(values), Variant.noStrings(),
        ])
        emit("org.freedesktop.DBus.Properties", "PropertiesChanged", from: path, arguments)
    }
}

/// The one table every object's calls go through (properties included: no getter or setter, so
/// GDBus hands `org.freedesktop.DBus.Properties` calls to the method handler); it lives as long
/// as the process.
private nonisolated(unsafe) let interfaceVTable: UnsafeMutablePointer<GDBusInterfaceVTable> = {
    let table = UnsafeMutablePointer<GDBusInterfaceVTable>.allocate(capacity: 1)
    table.initialize(
        to: GDBusInterfaceVTable(
            method_call: providerMethodCall, get_property: nil, set_property: nil,
            padding: (nil, nil, nil, nil, nil, nil, nil, nil)))
    return table
}()

private func subtree(_ data: gpointer?) -> ProviderSubtree {
    Unmanaged<ProviderSubtree>.fromOpaque(data!).takeUnretainedValue()
}

private func text(_ pointer: UnsafePointer<gchar>?) -> String { pointer.map { String(cString: $0) } ?? "" }

private let providerEnumerate: GDBusSubtreeEnumerateFunc = { _, _, _, data in
    let names = subtree(data).children()
    let array = g_malloc0_n(gsize(names.count + 1), gsize(MemoryLayout<UnsafeMutablePointer<gchar>?>.stride))!
        .bindMemory(to: UnsafeMutablePointer<gchar>?.self, capacity: names.count + 1)
    for (index, name) in names.enumerated() { array[index] = g_strdup(name) }
    return array
}

private let providerIntrospect: GDBusSubtreeIntrospectFunc = { _, _, _, node, data in
    let names = subtree(data).interfaces(node.map { String(cString: $0) })
    guard !names.isEmpty else { return nil }
    let array = g_malloc0_n(
        gsize(names.count + 1), gsize(MemoryLayout<UnsafeMutablePointer<GDBusInterfaceInfo>?>.stride))!
        .bindMemory(to: UnsafeMutablePointer<GDBusInterfaceInfo>?.self, capacity: names.count + 1)
    for (index, name) in names.enumerated() { array[index] = g_dbus_interface_info_ref(ProviderInterface.info(name)) }
    return array
}

private let providerDispatch: GDBusSubtreeDispatchFunc = { _, _, _, _, _, userData, data in
    userData?.pointee = Unmanaged.passUnretained(subtree(data).provider).toOpaque()
    return UnsafePointer(interfaceVTable)
}

private let providerMethodCall: GDBusInterfaceMethodCallFunc = {
    _, sender, path, interface, method, parameters, invocation, data in
    let call = ProviderCall(
        sender: text(sender), path: text(path), interface: text(interface), method: text(method),
        parameters: parameters!)
    do throws(ProviderError) {
        let reply = try Unmanaged<SecretServiceProvider>.fromOpaque(data!).takeUnretainedValue().handle(call)
        reply.use { g_dbus_method_invocation_return_value(invocation, $0) }
    } catch {
        g_dbus_method_invocation_return_dbus_error(invocation, error.name, error.message)
    }
}

/// One method call, as the provider handles it.
struct ProviderCall {
    let sender: String
    let path: String
    let interface: String
    let method: String
    let parameters: OpaquePointer

    /// Child `index` of the arguments.
    func argument(_ index: Int) -> OwnedVariant {
        OwnedVariant(taking: g_variant_get_child_value(parameters, gsize(index))!)
    }

    func string(_ index: Int) -> String { argument(index).string }
}
