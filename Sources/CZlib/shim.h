#ifndef KEYCHAIN_CLI_ZLIB_SHIM_H
#define KEYCHAIN_CLI_ZLIB_SHIM_H

// zlib's inflate, for the gzip-compressed attachments in a KDBX 3.1 database's XML export
// (import --format keepassxc), loaded on first use through CLibraryLoader like libxml2.
#include <zlib.h>

#endif
