import CLibSecret
import FoundationEssentials

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
            <property name="Type" type="s" access="read"/>
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

extension SecretServiceProvider {
    /// Puts `interface` on the object at `path`; its calls reach ``handle(_:)``.
    func register(_ path: String, _ interface: String) throws(KeychainError) {
        var vtable = GDBusInterfaceVTable(
            method_call: providerMethodCall, get_property: providerGetProperty, set_property: providerSetProperty,
            padding: (nil, nil, nil, nil, nil, nil, nil, nil))
        var error: UnsafeMutablePointer<GError>?
        let id = g_dbus_connection_register_object(
            connection, path, ProviderInterface.info(interface), &vtable, Unmanaged.passUnretained(self).toOpaque(),
            nil, &error)
        guard id != 0 else {
            defer { g_error_free(error) }
            throw .backendFailure(detail: "cannot put \(path) on the bus: \(String(cString: error!.pointee.message))")
        }
        registrations[path, default: []].append(id)
    }

    /// Takes the object at `path` off the bus, with every interface it has.
    func unregister(_ path: String) {
        for id in registrations.removeValue(forKey: path) ?? [] { g_dbus_connection_unregister_object(connection, id) }
    }

    /// Sends `signal` of `interface` from `path` with one object path argument.
    func emit(_ interface: String, _ signal: String, from path: String, _ argument: OpaquePointer) {
        g_dbus_connection_emit_signal(connection, nil, path, interface, signal, argument, nil)
    }

    /// Tells clients that caches properties (libsecret's proxies) that `names` of `interface` at
    /// the paths changed.
    func propertiesChanged(_ interface: String, _ names: [String], at paths: [String]) {
        for path in paths {
            let values = names.compactMap { name in property(interface, name, at: path).map { (name, $0) } }
            let arguments = Variant.tuple([
                Variant.string(interface), Variant.propertyMap(values),
                g_variant_new_strv(nil, 0)!,
            ])
            emit("org.freedesktop.DBus.Properties", "PropertiesChanged", from: path, arguments)
        }
    }
}

/// The provider behind a callback's user data.
private func provider(_ data: gpointer?) -> SecretServiceProvider {
    Unmanaged<SecretServiceProvider>.fromOpaque(data!).takeUnretainedValue()
}

private func text(_ pointer: UnsafePointer<gchar>?) -> String { pointer.map { String(cString: $0) } ?? "" }

private let providerMethodCall: GDBusInterfaceMethodCallFunc = {
    _, sender, path, interface, method, parameters, invocation, data in
    let call = ProviderCall(
        sender: text(sender), path: text(path), interface: text(interface), method: text(method),
        parameters: parameters!)
    do throws(ProviderError) {
        let reply = try provider(data).handle(call)
        g_dbus_method_invocation_return_value(invocation, reply)
    } catch {
        g_dbus_method_invocation_return_dbus_error(invocation, error.name, error.message)
    }
}

private let providerGetProperty: GDBusInterfaceGetPropertyFunc = { _, _, path, interface, name, _, data in
    provider(data).property(text(interface), text(name), at: text(path))
}

private let providerSetProperty: GDBusInterfaceSetPropertyFunc = { _, _, path, interface, name, value, failure, data in
    do throws(ProviderError) {
        try provider(data).setProperty(text(interface), text(name), to: value!, at: text(path))
        return 1
    } catch {
        g_set_error_literal(failure, ProviderError.domain, error.code, error.message)
        return 0
    }
}

/// One method call, as the provider handles it.
struct ProviderCall {
    let sender: String
    let path: String
    let interface: String
    let method: String
    let parameters: OpaquePointer

    /// Child `index` of the arguments; the caller unrefs it.
    func argument(_ index: Int) -> OpaquePointer { Variant.child(parameters, index) }

    func string(_ index: Int) -> String {
        let value = argument(index)
        defer { g_variant_unref(value) }
        return Variant.text(value)
    }
}
