"""The encrypted session's edge cases, as a client meets them on serve: a public value sent in
127 bytes (libsecret sends it without its leading zero byte) or zero-padded to 128 (kwalletd5's
clients must), one that begins with 0xFF and a byte of 0x80 or more (kwalletd5 reads it as
signed), and a shared value that begins with a zero byte
(libsecret and gnome-keyring hash all 128 bytes of it). Each is drawn until it comes, then an
item is created in that session with a secret encrypted as libsecret encrypts it, and read back.
Prints one line per case: its name, and "ok" or what went wrong."""

import hashlib
import hmac
import os

from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from jeepney.wrappers import DBusErrorResponse
from ssclient import DEFAULT_ALIAS, I_COLLECTION, I_ITEM, I_SERVICE, I_SESSION, SERVICE, Client

PRIME = int(
    "FFFFFFFFFFFFFFFFC90FDAA22168C234C4C6628B80DC1CD129024E088A67CC74020BBEA63B139B22514A08798E3404DD"
    "EF9519B3CD3A431B302B0A6DF25F14374FE1356D6D51C245E485B576625E7EC6F44C42E9A637ED6B0BFF5CB6F406B7ED"
    "EE386BFB5A899FA5AE9F24117C4B1FE649286651ECE65381FFFFFFFFFFFFFFFF", 16)
ALGORITHM = "dh-ietf1024-sha256-aes128-cbc-pkcs7"


def key_of(shared):
    """HKDF-SHA256 of the shared value's 128 bytes, no salt, no info: libsecret's key."""
    pseudorandom = hmac.new(bytes(32), shared.to_bytes(128, "big"), hashlib.sha256).digest()
    return hmac.new(pseudorandom, b"\x01", hashlib.sha256).digest()[:16]


def encrypt(key, plaintext):
    iv = os.urandom(16)
    count = 16 - len(plaintext) % 16
    encryptor = Cipher(algorithms.AES(key), modes.CBC(iv)).encryptor()
    return iv, encryptor.update(plaintext + bytes([count]) * count) + encryptor.finalize()


def decrypt(key, iv, value):
    decryptor = Cipher(algorithms.AES(key), modes.CBC(iv)).decryptor()
    padded = decryptor.update(value) + decryptor.finalize()
    return padded[:-padded[-1]]


def exponent_whose_value(test):
    """A random exponent whose public value passes `test`."""
    while True:
        exponent = int.from_bytes(os.urandom(32), "big")
        if test(pow(2, exponent, PRIME).to_bytes(128, "big")):
            return exponent


def try_case(client, name, exponent, length, want_zero_shared=False, tries=4000):
    for _ in range(tries):
        public = pow(2, exponent, PRIME).to_bytes(128, "big")[128 - length:]
        output, session = client.call(SERVICE, I_SERVICE, "OpenSession", "sv", (ALGORITHM, ("ay", public)))
        shared = pow(int.from_bytes(bytes(output[1]), "big"), exponent, PRIME)
        if want_zero_shared and shared >> 1016 != 0:
            client.call(session, I_SESSION, "Close", "", ())
            exponent = int.from_bytes(os.urandom(32), "big")
            continue
        if not want_zero_shared and shared >> 1016 == 0:
            # One session in 256: the other cases keep their shared value clear of this one.
            client.call(session, I_SESSION, "Close", "", ())
            continue
        key = key_of(shared)
        secret = ("secret of " + name).encode()
        iv, value = encrypt(key, secret)
        properties = {
            "org.freedesktop.Secret.Item.Attributes": ("a{ss}", {"service": "edges", "username": name}),
            "org.freedesktop.Secret.Item.Label": ("s", name),
        }
        item = client.call(DEFAULT_ALIAS, I_COLLECTION, "CreateItem", "a{sv}(oayays)b",
                           (properties, (session, iv, value, "text/plain"), True))[0]
        _, back_iv, back, _ = client.call(item, I_ITEM, "GetSecret", "o", (session,))[0]
        client.call(session, I_SESSION, "Close", "", ())
        got = decrypt(key, bytes(back_iv), bytes(back))
        return "ok" if got == secret else "read back %r" % got
    return "never came in %d sessions" % tries


def main():
    client = Client()
    short = exponent_whose_value(lambda value: value[0] == 0)
    cases = [
        ("127 bytes", short, 127, False),
        ("128 bytes, leading zero", short, 128, False),
        ("begins with 0xFF", exponent_whose_value(lambda value: value[0] == 0xFF and value[1] >= 0x80), 128, False),
        ("shared value begins with zero", int.from_bytes(os.urandom(32), "big"), 128, True),
    ]
    for name, exponent, length, zero_shared in cases:
        try:
            print(name + ": " + try_case(client, name, exponent, length, zero_shared), flush=True)
        except DBusErrorResponse as error:
            print("%s: %s %s" % (name, error.name, error.data), flush=True)


main()
