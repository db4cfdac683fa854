// libsecret, GIO, GObject, GLib, libgcrypt, libxml2 and zlib loaded on the first call into them, not at start.
//
// Linked as usual, these six libraries (and their own dependencies) load, relocate and run their
// constructors in every process: `--version`, a vault `get` and an OpenBao `get` included, which
// call none of them. Instead each function keychain-cli calls (symbols.h) gets a stand-in here, of
// the same name and hidden from other libraries: a jump through its own pointer, which first points
// at a resolver that dlopen()s the library, looks the function up (dlsym), stores it in the
// pointer and jumps on to it with the caller's registers as they were. Later calls take one
// indirect jump. The same technique as Implib.so, written for the names keychain-cli uses. The
// release link passes --as-needed, so that the libraries, no longer referenced, are not named as
// needed (Tests/package/test-package checks it); scripts/make-deb still names them in Depends.
//
// x86-64 only (the System V calling convention below); elsewhere nothing is defined here and the
// functions are linked from their libraries as before.
#include "library_loader.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#if defined(__x86_64__) && defined(__linux__)

// One per function, written by the assembly below: where its calls jump (the resolver's entry for
// this function until it is resolved), the library it is in, and its name.
struct keychain_lazy_record {
    void *target;
    long library;
    const char *name;
};

static const char *const keychain_lazy_sonames[] = {"libsecret-1.so.0", "libgcrypt.so.20", "libxml2.so.2", "libz.so.1"};
static void *keychain_lazy_handles[4];

// The handle of `library`, opened on first use; NULL (with the message in `error`) when it
// cannot be loaded.
static void *keychain_lazy_open(long library, char *error, size_t size) {
    void *handle = __atomic_load_n(&keychain_lazy_handles[library], __ATOMIC_ACQUIRE);
    if (handle != NULL) return handle;
    // Two threads may both open it: dlopen counts references and returns the same handle.
    handle = dlopen(keychain_lazy_sonames[library], RTLD_NOW | RTLD_LOCAL);
    if (handle == NULL) {
        const char *reason = dlerror();
        snprintf(error, size, "%s", reason != NULL ? reason : "unknown error");
        return NULL;
    }
    __atomic_store_n(&keychain_lazy_handles[library], handle, __ATOMIC_RELEASE);
    return handle;
}

// Called by keychain_lazy_common with the record of the function called first: its address in
// the library, stored for the next calls. There is no caller to return an error to, so a library
// that cannot be loaded ends the process with a message and exit code 69 (backend unavailable);
// the .deb depends on these libraries, so this is a broken installation.
__attribute__((used, visibility("hidden"))) void *keychain_lazy_resolve(struct keychain_lazy_record *record) {
    char error[512];
    void *handle = keychain_lazy_open(record->library, error, sizeof error);
    void *address = handle != NULL ? dlsym(handle, record->name) : NULL;
    if (address == NULL) {
        if (handle != NULL) snprintf(error, sizeof error, "%s has no %s", keychain_lazy_sonames[record->library], record->name);
        // What to do: each library's Debian package, and what works without it.
        static const char *const hints[] = {
            "Install it (Debian: libsecret-1-0), or choose the vault or openbao backend",
            "Install it (Debian: libgcrypt20), or choose the vault or openbao backend",
            "Install it (Debian: libxml2): import --format keepassxc reads keepassxc-cli's XML with it",
            "Install it (Debian: zlib1g): import reads a KDBX 3.1 database's attachments with it",
        };
        char message[1024];
        int length = snprintf(message, sizeof message, "keychain-cli: error: %s could not be loaded (%s). %s.\n",
            keychain_lazy_sonames[record->library], error, hints[record->library]);
        if (length > 0) (void)!write(2, message, (size_t)length < sizeof message ? (size_t)length : sizeof message - 1);
        _exit(69);
    }
    __atomic_store_n(&record->target, address, __ATOMIC_RELEASE);
    return address;
}

// The resolver's entry: %r11 holds the record. It keeps every register a call may pass arguments
// in (%rdi, %rsi, %rdx, %rcx, %r8, %r9, %rax: the vector count of a variadic call, %xmm0-7),
// resolves, restores them and jumps to the function, which returns to the original caller. On
// entry %rsp is 8 past a 16-byte boundary (the caller's return address); seven pushes and 128
// bytes keep the call below aligned.
__asm__(
    ".pushsection .text\n"
    ".balign 16\n"
    "keychain_lazy_common:\n"
    "  push %rdi\n  push %rsi\n  push %rdx\n  push %rcx\n  push %r8\n  push %r9\n  push %rax\n"
    "  sub $128, %rsp\n"
    "  movdqu %xmm0, 0(%rsp)\n  movdqu %xmm1, 16(%rsp)\n  movdqu %xmm2, 32(%rsp)\n  movdqu %xmm3, 48(%rsp)\n"
    "  movdqu %xmm4, 64(%rsp)\n  movdqu %xmm5, 80(%rsp)\n  movdqu %xmm6, 96(%rsp)\n  movdqu %xmm7, 112(%rsp)\n"
    "  mov %r11, %rdi\n"
    "  call keychain_lazy_resolve\n"
    "  mov %rax, %r11\n"
    "  movdqu 0(%rsp), %xmm0\n  movdqu 16(%rsp), %xmm1\n  movdqu 32(%rsp), %xmm2\n  movdqu 48(%rsp), %xmm3\n"
    "  movdqu 64(%rsp), %xmm4\n  movdqu 80(%rsp), %xmm5\n  movdqu 96(%rsp), %xmm6\n  movdqu 112(%rsp), %xmm7\n"
    "  add $128, %rsp\n"
    "  pop %rax\n  pop %r9\n  pop %r8\n  pop %rcx\n  pop %rdx\n  pop %rsi\n  pop %rdi\n"
    "  jmp *%r11\n"
    ".popsection\n");

// Each function: its record (writable data), its name, the stand-in (hidden: libraries loaded
// later bind to the real function, never to this) and the entry that hands its record to
// keychain_lazy_common.
#define KEYCHAIN_LAZY(library, name)                                                              \
    __asm__(".pushsection .data\n"                                                                \
            ".balign 8\n"                                                                         \
            "keychain_lazy_record_" #name ":\n"                                                   \
            "  .quad keychain_lazy_entry_" #name "\n"                                             \
            "  .quad " #library "\n"                                                              \
            "  .quad keychain_lazy_name_" #name "\n"                                              \
            ".popsection\n"                                                                       \
            ".pushsection .rodata\n"                                                              \
            "keychain_lazy_name_" #name ": .asciz \"" #name "\"\n"                                \
            ".popsection\n"                                                                       \
            ".pushsection .text\n"                                                                \
            ".globl " #name "\n"                                                                  \
            ".hidden " #name "\n"                                                                 \
            ".type " #name ", @function\n"                                                        \
            ".balign 16\n" #name ":\n"                                                            \
            "  jmp *keychain_lazy_record_" #name "(%rip)\n"                                       \
            "keychain_lazy_entry_" #name ":\n"                                                    \
            "  lea keychain_lazy_record_" #name "(%rip), %r11\n"                                  \
            "  jmp keychain_lazy_common\n"                                                        \
            ".popsection\n");
#include "symbols.h"
#undef KEYCHAIN_LAZY

#endif
