#!/usr/bin/env python3
"""The guest's keyboard and screen through QEMU's QMP socket (machine.py opens it).

As a library: ``QMP(path)`` with ``.cmd(obj)``, ``.type(text)``, ``.key(combo)``,
``.release_modifiers()``, ``.click(x, y)``, ``.screen()`` (RGB pixels), ``.shot(png_path)``.
As a tool (a person looking at a running guest)::

    qmp.py SOCK cmd JSON        one QMP command, prints the answer
    qmp.py SOCK type TEXT       types TEXT on the guest's console ("\\n" is Enter)
    qmp.py SOCK key COMBO...    keys by QEMU qcode, e.g. ret ctrl-c ctrl-alt-f2
    qmp.py SOCK shot OUT.png    a screenshot as PNG (no imaging library needed)

Typing sends each key's press and release as separate events with a pause between them.
QMP's send-key with a shift combination lost a release now and then under TCG (seen: after a
few hundred shifted characters the guest kept shift held), so shifted characters get their
own shift press and release, and callers that must be exact check what the screen shows.
"""
from __future__ import annotations

import json
import os
import socket
import struct
import sys
import tempfile
import time
import zlib

SHIFTED = {'!': '1', '@': '2', '#': '3', '$': '4', '%': '5', '^': '6', '&': '7', '*': '8',
           '(': '9', ')': '0', '_': 'minus', '+': 'equal', '{': 'bracket_left',
           '}': 'bracket_right', '|': 'backslash', ':': 'semicolon', '"': 'apostrophe',
           '<': 'comma', '>': 'dot', '?': 'slash', '~': 'grave_accent'}
PLAIN = {' ': 'spc', '\n': 'ret', '\t': 'tab', '-': 'minus', '=': 'equal', '[': 'bracket_left',
         ']': 'bracket_right', '\\': 'backslash', ';': 'semicolon', "'": 'apostrophe',
         ',': 'comma', '.': 'dot', '/': 'slash', '`': 'grave_accent'}
MODIFIERS = ('shift', 'shift_r', 'ctrl', 'ctrl_r', 'alt', 'alt_r', 'meta_l', 'meta_r')
PAUSE = 0.02  # seconds between two key events: the guest's keyboard queue is short


class QMPError(RuntimeError):
    pass


def keys_for(ch: str) -> tuple[bool, str]:
    """(shift?, qcode) for one character."""
    if ch.isascii() and ch.isalpha():
        return ch.isupper(), ch.lower()
    if ch.isascii() and ch.isdigit():
        return False, ch
    if ch in PLAIN:
        return False, PLAIN[ch]
    if ch in SHIFTED:
        return True, SHIFTED[ch]
    raise QMPError(f'cannot type {ch!r}')


class QMP:
    def __init__(self, path: str, timeout: float = 30):
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.settimeout(timeout)
        self.sock.connect(path)
        self.file = self.sock.makefile('rwb')
        self.file.readline()  # the greeting
        self.cmd({'execute': 'qmp_capabilities'})

    def close(self) -> None:
        try:
            self.file.close()
        finally:
            self.sock.close()

    def cmd(self, obj: dict) -> dict:
        """One command; its answer (asynchronous events on the way are skipped)."""
        self.file.write(json.dumps(obj).encode() + b'\n')
        self.file.flush()
        while True:
            line = self.file.readline()
            if not line:
                raise QMPError('QMP socket closed')
            msg = json.loads(line)
            if 'return' in msg or 'error' in msg:
                return msg

    def _event(self, qcode: str, down: bool) -> None:
        r = self.cmd({'execute': 'input-send-event', 'arguments': {'events': [
            {'type': 'key', 'data': {'down': down, 'key': {'type': 'qcode', 'data': qcode}}}]}})
        if 'error' in r:
            raise QMPError(json.dumps(r))
        time.sleep(PAUSE)

    def press(self, qcodes: list[str]) -> None:
        """Presses the keys in order, then releases them in reverse order."""
        for q in qcodes:
            self._event(q, True)
        for q in reversed(qcodes):
            self._event(q, False)

    def type(self, text: str) -> None:
        for ch in text:
            shift, q = keys_for(ch)
            self.press(['shift', q] if shift else [q])

    def key(self, combo: str) -> None:
        """A combination by qcodes joined with '-', e.g. 'ctrl-c', 'ret', 'ctrl-alt-f2'."""
        self.press(['minus'] if combo == 'minus' else combo.split('-'))

    def click(self, x: int, y: int) -> None:
        """A left click at pixel (x, y) of the screen, by the USB tablet's absolute axes
        (0..0x7fff across the screen)."""
        w, h, _ = self.screen()
        for events in ([{'type': 'abs', 'data': {'axis': 'x', 'value': x * 0x7fff // (w - 1)}},
                        {'type': 'abs', 'data': {'axis': 'y', 'value': y * 0x7fff // (h - 1)}}],
                       [{'type': 'btn', 'data': {'down': True, 'button': 'left'}}],
                       [{'type': 'btn', 'data': {'down': False, 'button': 'left'}}]):
            r = self.cmd({'execute': 'input-send-event', 'arguments': {'events': events}})
            if 'error' in r:
                raise QMPError(json.dumps(r))
            time.sleep(PAUSE)

    def release_modifiers(self) -> None:
        """Releases every modifier: undoes a press whose release the guest lost."""
        for q in MODIFIERS:
            self._event(q, False)

    def screen(self) -> tuple[int, int, bytes]:
        """The guest's display now: width, height and RGB bytes, row by row."""
        fd, ppm = tempfile.mkstemp(suffix='.ppm')
        os.close(fd)
        try:
            r = self.cmd({'execute': 'screendump', 'arguments': {'filename': ppm}})
            if 'error' in r:
                raise QMPError(json.dumps(r))
            return read_ppm(ppm)
        finally:
            os.unlink(ppm)

    def shot(self, png: str) -> str:
        """A screenshot of the guest's display, written as PNG to png."""
        write_png(png, *self.screen())
        return png


def read_ppm(ppm: str) -> tuple[int, int, bytes]:
    data = open(ppm, 'rb').read()
    fields, pos = [], 0
    while len(fields) < 4:
        while data[pos:pos + 1].isspace():
            pos += 1
        if data[pos:pos + 1] == b'#':
            pos = data.index(b'\n', pos) + 1
            continue
        end = pos
        while not data[end:end + 1].isspace():
            end += 1
        fields.append(data[pos:end])
        pos = end
    pos += 1
    if fields[0] != b'P6':
        raise QMPError(f'screendump is not a P6 PPM: {fields[0]!r}')
    w, h = int(fields[1]), int(fields[2])
    return w, h, data[pos:pos + w * h * 3]


def write_png(png: str, w: int, h: int, pix: bytes) -> None:
    raw = b''.join(b'\x00' + pix[y * w * 3:(y + 1) * w * 3] for y in range(h))

    def chunk(kind: bytes, body: bytes) -> bytes:
        return (struct.pack('>I', len(body)) + kind + body
                + struct.pack('>I', zlib.crc32(kind + body) & 0xffffffff))
    with open(png, 'wb') as f:
        f.write(b'\x89PNG\r\n\x1a\n' + chunk(b'IHDR', struct.pack('>IIBBBBB', w, h, 8, 2, 0, 0, 0))
                + chunk(b'IDAT', zlib.compress(raw, 6)) + chunk(b'IEND', b''))


def main(argv: list[str]) -> int:
    if len(argv) < 3:
        print(__doc__)
        return 2
    q = QMP(argv[1])
    what, args = argv[2], argv[3:]
    if what == 'cmd':
        print(json.dumps(q.cmd(json.loads(args[0]))))
    elif what == 'type':
        q.type(' '.join(args).replace('\\n', '\n'))
    elif what == 'key':
        for combo in args:
            q.key(combo)
    elif what == 'shot':
        print(q.shot(os.path.abspath(args[0])))
    else:
        print(__doc__)
        return 2
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
