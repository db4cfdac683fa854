#ifndef KEYCHAIN_CLI_LIBSECRET_SHIM_H
#define KEYCHAIN_CLI_LIBSECRET_SHIM_H

// secret-paths.h (reading one item's secret by object path, unlocking paths) is behind this
// switch although it has not changed since libsecret 0.7; `get` needs it to search before it
// opens the encrypted session, so that a miss costs no key exchange.
#define SECRET_API_SUBJECT_TO_CHANGE 1
#include <libsecret/secret.h>
#include <glib-unix.h>
#include <fcntl.h>
#include <unistd.h>

// The schema every keychain-cli item is written with and looked up by.
// Swift imports SecretSchema.attributes as a 32-element tuple, so the schema is built here as a
// function-local static instead of in Swift. SECRET_SCHEMA_DONT_MATCH_NAME makes lookups ignore
// xdg:schema, so items stored by secret-tool, python keyring, go-keyring or keyring-rs are found.
static inline const SecretSchema *keychain_cli_schema(void) {
    static const SecretSchema schema = {
        "org.freedesktop.Secret.Generic",
        SECRET_SCHEMA_DONT_MATCH_NAME,
        {
            {"service", SECRET_SCHEMA_ATTRIBUTE_STRING},
            {"username", SECRET_SCHEMA_ATTRIBUTE_STRING},
            {"application", SECRET_SCHEMA_ATTRIBUTE_STRING},
            {NULL, 0},
        },
    };
    return &schema;
}

// Network passwords (NetworkCredential): written with libsecret's compat network schema, as
// git-credential-libsecret (Debian) and GNOME's network clients write them, and looked up by its
// attributes alone (SECRET_SCHEMA_DONT_MATCH_NAME), so that upstream git's org.git.Password items
// are found too.
// (secret_get_schema, not the SECRET_SCHEMA_COMPAT_NETWORK variable: a function can be loaded on
// first use, see CLibraryLoader.)
static inline const SecretSchema *keychain_cli_network_schema(void) {
    return secret_get_schema(SECRET_SCHEMA_TYPE_COMPAT_NETWORK);
}
static inline const SecretSchema *keychain_cli_network_search_schema(void) {
    static const SecretSchema schema = {
        "org.gnome.keyring.NetworkPassword",
        SECRET_SCHEMA_DONT_MATCH_NAME,
        {
            {"user", SECRET_SCHEMA_ATTRIBUTE_STRING},
            {"domain", SECRET_SCHEMA_ATTRIBUTE_STRING},
            {"object", SECRET_SCHEMA_ATTRIBUTE_STRING},
            {"protocol", SECRET_SCHEMA_ATTRIBUTE_STRING},
            {"port", SECRET_SCHEMA_ATTRIBUTE_INTEGER},
            {"server", SECRET_SCHEMA_ATTRIBUTE_STRING},
            {"authtype", SECRET_SCHEMA_ATTRIBUTE_STRING},
            {NULL, 0},
        },
    };
    return &schema;
}

// Docker registry credentials, as docker-credential-secretservice writes and finds them (its
// schema name is matched, so only docker's items are found).
static inline const SecretSchema *keychain_cli_docker_schema(void) {
    static const SecretSchema schema = {
        "io.docker.Credentials",
        SECRET_SCHEMA_NONE,
        {
            {"label", SECRET_SCHEMA_ATTRIBUTE_STRING},
            {"server", SECRET_SCHEMA_ATTRIBUTE_STRING},
            {"username", SECRET_SCHEMA_ATTRIBUTE_STRING},
            {"docker_cli", SECRET_SCHEMA_ATTRIBUTE_STRING},
            {NULL, 0},
        },
    };
    return &schema;
}

// SECRET_ERROR is a macro over a function call; Swift cannot import function-like macros.
static inline GQuark keychain_cli_secret_error_quark(void) { return secret_error_get_quark(); }

// G_IO_ERROR and G_DBUS_ERROR are macros too.
static inline GQuark keychain_cli_io_error_quark(void) { return g_io_error_quark(); }
static inline GQuark keychain_cli_dbus_error_quark(void) { return g_dbus_error_quark(); }

// G_VARIANT_TYPE casts a string literal, which has static storage in C; a Swift string passed to
// g_variant_type_checked_ lives only for that one call, so the types are made here.
static inline const GVariantType *keychain_cli_type_object_path_reply(void) { return G_VARIANT_TYPE("(o)"); }
static inline const GVariantType *keychain_cli_type_string_pair(void) { return G_VARIANT_TYPE("{ss}"); }
static inline const GVariantType *keychain_cli_type_string(void) { return G_VARIANT_TYPE_STRING; }
static inline const GVariantType *keychain_cli_type_byte(void) { return G_VARIANT_TYPE_BYTE; }
static inline const GVariantType *keychain_cli_type_bytestring(void) { return G_VARIANT_TYPE_BYTESTRING; }
static inline const GVariantType *keychain_cli_type_property_pair(void) { return G_VARIANT_TYPE("{sv}"); }
static inline const GVariantType *keychain_cli_type_interface_entry(void) { return G_VARIANT_TYPE("{sa{sv}}"); }
static inline const GVariantType *keychain_cli_type_managed_object(void) { return G_VARIANT_TYPE("{oa{sa{sv}}}"); }
static inline const GVariantType *keychain_cli_type_object_path(void) { return G_VARIANT_TYPE_OBJECT_PATH; }

// The provider's (serve) replies and arguments.
static inline const GVariantType *keychain_cli_type_secret_entry(void) { return G_VARIANT_TYPE("{o(oayays)}"); }
static inline const GVariantType *keychain_cli_type_uint32_reply(void) { return G_VARIANT_TYPE("(u)"); }
static inline const GVariantType *keychain_cli_type_string_reply(void) { return G_VARIANT_TYPE("(s)"); }

// A descriptor of our own for the socket under `bus` (close-on-exec), to learn from `poll` when
// it hangs up: GDBus's own thread reads and closes its descriptor, which a poll on it would race;
// -1 when the bus is not on a socket (a unixexec: address).
static inline int keychain_cli_bus_socket_duplicate(GDBusConnection *bus) {
    GIOStream *stream = g_dbus_connection_get_stream(bus);
    if (!G_IS_SOCKET_CONNECTION(stream)) return -1;
    return fcntl(g_socket_get_fd(g_socket_connection_get_socket(G_SOCKET_CONNECTION(stream))), F_DUPFD_CLOEXEC, 3);
}

#endif
