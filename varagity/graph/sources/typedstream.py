"""The text of an iMessage ``attributedBody``: an NSAttributedString in NSArchiver's
"typedstream" format.

Newer macOS releases often leave ``message.text`` NULL and keep the text only in this
blob. The format is undocumented; what we rely on (the layout every Mac OS X release
writes, as the open-source typedstream readers describe it):

* header: streamer version ``4``, the signature ``streamtyped`` (little-endian) or
  ``typedstream`` (big-endian) as a length-prefixed string, the system version (1000);
* a group of values prefixed by its type-encoding string (``@`` for an object);
* an object: the tag ``0x84`` (new), its class chain (each new class: ``0x84``, its name
  as a shared string, its version; ending in ``0x85`` nil or a reference to a class
  already seen), its content groups, and ``0x86`` (end of object);
* an NSAttributedString's first content is its string: an ``@`` group holding an
  NSString (or NSMutableString) object whose content is one ``+`` group, a byte string
  (UTF-8) prefixed by its length;
* integers are one signed byte, unless the byte is a tag: ``0x81`` then two bytes,
  ``0x82`` then four (so a text over 127 bytes has a ``0x81`` length);
* strings are *shared*: ``0x84`` introduces a new one, and a byte from ``0x92`` on
  refers to the n-th string seen before (classes and objects are numbered in a table of
  their own).

:func:`attributed_body_text` walks that structure to the string; a blob it cannot walk
(another writer, a damaged row) falls back to a bounded scan for the NSString payload,
and anything else is ``None`` — never an exception.
"""

from __future__ import annotations

import re
from typing import Literal

_TAG_INT2 = -127  # 0x81
_TAG_INT4 = -126  # 0x82
_TAG_FLOAT = -125  # 0x83
_TAG_NEW = -124  # 0x84
_TAG_NIL = -123  # 0x85
_TAG_END = -122  # 0x86
_FIRST_TAG, _LAST_TAG = -128, -111
_FIRST_REFERENCE = _LAST_TAG + 1  # 0x92: reference number 0

_SIGNATURES: dict[bytes, Literal["little", "big"]] = {
    b"streamtyped": "little",
    b"typedstream": "big",
}
_STRING_CLASSES = (b"NSString", b"NSMutableString")


class _Malformed(ValueError):
    """The blob does not have the structure described above."""


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0
        self.order: Literal["little", "big"] = "little"
        self.strings: list[bytes] = []
        self.classes: list[list[bytes] | None] = []  # the object table: a class's chain

    def take(self, count: int) -> bytes:
        if count < 0 or self.pos + count > len(self.data):
            raise _Malformed(f"needs {count} bytes at offset {self.pos}")
        chunk = self.data[self.pos : self.pos + count]
        self.pos += count
        return chunk

    def head(self) -> int:
        return int.from_bytes(self.take(1), "little", signed=True)

    def integer(self, head: int | None = None, *, signed: bool = True) -> int:
        head = self.head() if head is None else head
        if head == _TAG_INT2:
            return int.from_bytes(self.take(2), self.order, signed=signed)
        if head == _TAG_INT4:
            return int.from_bytes(self.take(4), self.order, signed=signed)
        if _FIRST_TAG <= head <= _LAST_TAG:
            raise _Malformed(f"tag {head & 0xFF:#x} where an integer belongs")
        return head if signed else head & 0xFF

    def unshared_string(self, head: int | None = None) -> bytes | None:
        head = self.head() if head is None else head
        if head == _TAG_NIL:
            return None
        return self.take(self.integer(head, signed=False))

    def shared_string(self) -> bytes | None:
        head = self.head()
        if head == _TAG_NIL:
            return None
        if head == _TAG_NEW:
            string = self.unshared_string()
            if string is None:
                raise _Malformed("a new shared string cannot be nil")
            self.strings.append(string)
            return string
        index = self.integer(head) - _FIRST_REFERENCE
        if not 0 <= index < len(self.strings):
            raise _Malformed(f"reference to string #{index}, {len(self.strings)} seen")
        return self.strings[index]

    def header(self) -> None:
        version = self.take(1)[0]
        if version != 4:
            raise _Malformed(f"streamer version {version}, not 4")
        signature = self.unshared_string()
        if signature not in _SIGNATURES:
            raise _Malformed(f"signature {signature!r}")
        self.order = _SIGNATURES[signature]
        self.integer(signed=False)  # system version (1000 on every Mac OS X)

    def class_chain(self) -> list[bytes]:
        """The names of a class and its superclasses, most derived first."""
        names: list[bytes] = []
        slots: list[int] = []
        head = self.head()
        while head == _TAG_NEW:
            name = self.shared_string()
            if name is None:
                raise _Malformed("a class name cannot be nil")
            self.integer()  # class version
            slots.append(len(self.classes))
            self.classes.append(None)
            names.append(name)
            head = self.head()
        if head != _TAG_NIL:  # a class seen before: its chain completes ours
            index = self.integer(head) - _FIRST_REFERENCE
            if not 0 <= index < len(self.classes) or self.classes[index] is None:
                raise _Malformed(f"reference to class #{index}")
            names.extend(self.classes[index] or [])
        for depth, slot in enumerate(slots):
            self.classes[slot] = names[depth:]
        return names

    def new_object(self) -> list[bytes]:
        """Read an object's start and class chain; return the chain."""
        if self.head() != _TAG_NEW:
            raise _Malformed("expected a new object")
        self.classes.append(None)  # the object itself takes a reference number
        return self.class_chain()


def _structured(blob: bytes) -> str:
    reader = _Reader(blob)
    reader.header()
    if reader.shared_string() != b"@":
        raise _Malformed("the archive does not start with an object")
    chain = reader.new_object()
    if not any(name.endswith(b"AttributedString") for name in chain):
        raise _Malformed(f"top object is a {chain[0]!r}, not an attributed string")
    if reader.shared_string() != b"@":
        raise _Malformed("the attributed string does not start with its string")
    chain = reader.new_object()
    if not any(name in _STRING_CLASSES for name in chain):
        raise _Malformed(f"the attributed string holds a {chain[0]!r}")
    if reader.shared_string() != b"+":
        raise _Malformed("the string's content is not a byte string")
    payload = reader.unshared_string()
    if payload is None:
        raise _Malformed("nil string")
    return payload.decode("utf-8", errors="replace")


_FALLBACK = re.compile(rb"NSString.{1,12}?\x01\x2b", re.DOTALL)


def _scan(blob: bytes) -> str | None:
    """The NSString payload found by pattern: the class name, then the ``+`` type."""
    match = _FALLBACK.search(blob)
    if match is None:
        return None
    reader = _Reader(blob)
    reader.pos = match.end()
    try:
        payload = reader.unshared_string()
    except _Malformed:
        return None
    return None if payload is None else payload.decode("utf-8", errors="replace")


def attributed_body_text(blob: bytes | None) -> str | None:
    """The plain text of an ``attributedBody`` blob, or ``None`` when it holds none."""
    if not blob:
        return None
    try:
        return _structured(bytes(blob))
    except _Malformed:
        return _scan(bytes(blob))
