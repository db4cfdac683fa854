#!/usr/bin/python3
"""Answers KeePassXC 2.7.4's two dialogs on scripts/with-keepassxc's private Xvfb display, as the
user at the desktop would, through XTest (libX11 and libXtst, which keepassxc itself depends on):

- "Access Request": KeePassXC 2.7.4 asks it when a client replaces (CreateItem with replace) an
  item another D-Bus connection stored, even with FdoSecrets/ConfirmAccessItem=false (KeePassXC
  issues #7623 and #9255, fixed in 2.7.6). Answered with Return: "Allow Selected", remembered.
- "Unlock Database": every Secret Service Unlock of a locked database opens it. Answered with the
  database password from $KPXC_ANSWER_PASSWORD.

Without it a headless client waits forever for either answer."""
import ctypes, os, select, sys, time
from ctypes import c_void_p, c_ulong, c_long, c_int, c_uint, c_char_p, POINTER, byref
x11 = ctypes.CDLL("libX11.so.6")
xtst = ctypes.CDLL("libXtst.so.6")
x11.XOpenDisplay.restype = c_void_p; x11.XOpenDisplay.argtypes = [c_char_p]
x11.XDefaultRootWindow.restype = c_ulong; x11.XDefaultRootWindow.argtypes = [c_void_p]
x11.XQueryTree.argtypes = [c_void_p, c_ulong, POINTER(c_ulong), POINTER(c_ulong),
                           POINTER(POINTER(c_ulong)), POINTER(c_uint)]
x11.XFetchName.argtypes = [c_void_p, c_ulong, POINTER(c_char_p)]
x11.XFree.argtypes = [c_void_p]
x11.XSetInputFocus.argtypes = [c_void_p, c_ulong, c_int, c_ulong]
x11.XRaiseWindow.argtypes = [c_void_p, c_ulong]
x11.XKeysymToKeycode.restype = ctypes.c_ubyte; x11.XKeysymToKeycode.argtypes = [c_void_p, c_ulong]
x11.XSync.argtypes = [c_void_p, c_int]
x11.XSelectInput.argtypes = [c_void_p, c_ulong, c_long]
x11.XConnectionNumber.argtypes = [c_void_p]
x11.XPending.argtypes = [c_void_p]
x11.XNextEvent.argtypes = [c_void_p, c_void_p]
x11.XSetErrorHandler.argtypes = [c_void_p]
xtst.XTestFakeKeyEvent.argtypes = [c_void_p, c_uint, c_int, c_ulong]

class XWindowAttributes(ctypes.Structure):
    _fields_ = [("x", c_int), ("y", c_int), ("width", c_int), ("height", c_int), ("border_width", c_int),
                ("depth", c_int), ("visual", c_void_p), ("root", c_ulong), ("class_", c_int),
                ("bit_gravity", c_int), ("win_gravity", c_int), ("backing_store", c_int),
                ("backing_planes", c_ulong), ("backing_pixel", c_ulong), ("save_under", c_int),
                ("colormap", c_ulong), ("map_installed", c_int), ("map_state", c_int),
                ("all_event_masks", c_long), ("your_event_mask", c_long),
                ("do_not_propagate_mask", c_long), ("override_redirect", c_int), ("screen", c_void_p)]
x11.XGetWindowAttributes.argtypes = [c_void_p, c_ulong, POINTER(XWindowAttributes)]
ERRH = ctypes.CFUNCTYPE(c_int, c_void_p, c_void_p)(lambda d, e: 0)  # ignore BadWindow races
x11.XSetErrorHandler(ERRH)

ACCESS = b"KeePassXC -  Access Request"
UNLOCK = b"Unlock Database - KeePassXC"
DELETE = b"Delete entry?"  # shown with ConfirmDeleteItem=true; declined (Escape) when asked to
password = os.environ.get("KPXC_ANSWER_PASSWORD", "")
decline_deletions = os.environ.get("KPXC_DECLINE_DELETIONS") == "1"
dpy = x11.XOpenDisplay(None)
if not dpy:
    sys.exit("answer-dialogs: cannot open display")
root = x11.XDefaultRootWindow(dpy)
x11.XSelectInput(dpy, root, 1 << 19)  # SubstructureNotifyMask: wake up when windows are mapped
kc = lambda keysym: x11.XKeysymToKeycode(dpy, keysym)
RETURN, CTRL, KEY_A = kc(0xff0d), kc(0xffe3), kc(0x61)

def key(code, press):
    xtst.XTestFakeKeyEvent(dpy, code, press, 0)

def tap(code):
    key(code, 1); key(code, 0)

def windows():
    r, p, n, kids = c_ulong(), c_ulong(), c_uint(), POINTER(c_ulong)()
    if not x11.XQueryTree(dpy, root, byref(r), byref(p), byref(kids), byref(n)):
        return []
    wins = [kids[i] for i in range(n.value)]
    if kids:
        x11.XFree(kids)
    return wins

def title(w):
    name = c_char_p()
    if not x11.XFetchName(dpy, w, byref(name)) or not name.value:
        return None
    t = name.value
    x11.XFree(name)
    return t

tried = {}
def scan():
    for w in windows():
        t = title(w)
        if t not in (ACCESS, UNLOCK) and not (decline_deletions and t == DELETE):
            continue
        a = XWindowAttributes()
        if not x11.XGetWindowAttributes(dpy, w, byref(a)) or a.map_state != 2:  # not IsViewable
            tried.pop(w, None)  # Qt re-uses hidden dialog windows: answer again when re-shown
            continue
        now = time.monotonic()
        if now - tried.get(w, -10) < 3.0:
            continue
        tried[w] = now
        time.sleep(0.1)  # let Qt finish showing/focusing the widget
        x11.XRaiseWindow(dpy, w)
        x11.XSetInputFocus(dpy, w, 1, 0)  # RevertToPointerRoot, CurrentTime
        x11.XSync(dpy, 0)
        time.sleep(0.05)
        if t == DELETE:
            tap(kc(0xff1b))  # Escape: "No"
            x11.XSync(dpy, 0)
            print("answer-dialogs: %.3f declined %r (window 0x%x)" % (time.monotonic(), t.decode(), w), file=sys.stderr, flush=True)
            continue
        if t == UNLOCK:
            key(CTRL, 1); tap(KEY_A); key(CTRL, 0)
            for ch in password:
                tap(kc(ord(ch)))
        tap(RETURN)
        x11.XSync(dpy, 0)
        print("answer-dialogs: %.3f answered %r (window 0x%x)" % (time.monotonic(), t.decode(), w), file=sys.stderr, flush=True)

fd = x11.XConnectionNumber(dpy)
ev = ctypes.create_string_buffer(256)
while True:
    scan()
    if not x11.XPending(dpy):
        select.select([fd], [], [], 2.0)
    while x11.XPending(dpy):
        x11.XNextEvent(dpy, ev)
        if ctypes.c_int.from_buffer(ev).value == 18:  # UnmapNotify: XUnmapEvent.window at offset 40
            tried.pop(ctypes.c_ulong.from_buffer(ev, 40).value, None)
    time.sleep(0.05)
