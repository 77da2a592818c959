"""A raw Kerberos AP-REQ (Beaker's auth.login_krbv) checked by MIT Kerberos' krb5_rd_req with the server's keytab.

bkr asks GSS-API for a DCE-style context, whose first token is a bare KRB_AP_REQ, and sends only that. MIT's
GSS-API acceptor takes such a token, but gives the client's name only at the end of the DCE exchange (a third
token bkr never sends), so the name cannot come from gssapi. Beaker's own server calls krb5_rd_req (through
python-krbV, long unmaintained); no maintained Python package wraps it (PyPI `krb5` has keytabs and
credentials, not rd_req), so it is called here in libkrb5 itself, the library gssapi already loads. It does
every check: the ticket is for a principal of the keytab, in its lifetime, decrypts with the keytab's key, and
the authenticator is fresh and not a replay (MIT's replay cache, as for Negotiate). docs/access.md.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import functools

from ...domain.errors import Unauthenticated


class _Data(ctypes.Structure):  # krb5_data
    _fields_ = [("magic", ctypes.c_int32), ("length", ctypes.c_uint), ("data", ctypes.c_void_p)]


class _EncData(ctypes.Structure):  # krb5_enc_data
    _fields_ = [("magic", ctypes.c_int32), ("enctype", ctypes.c_int32), ("kvno", ctypes.c_uint32),
                ("ciphertext", _Data)]


class _EncTicketPart(ctypes.Structure):  # krb5_enc_tkt_part: its leading fields, up to the client
    _fields_ = [("magic", ctypes.c_int32), ("flags", ctypes.c_int32), ("session", ctypes.c_void_p),
                ("client", ctypes.c_void_p)]


class _Ticket(ctypes.Structure):  # krb5_ticket
    _fields_ = [("magic", ctypes.c_int32), ("server", ctypes.c_void_p), ("enc_part", _EncData),
                ("enc_part2", ctypes.POINTER(_EncTicketPart))]


@functools.cache
def _library():
    """libkrb5 (MIT), loaded on first use: a site without Kerberos never loads it."""
    lib = ctypes.CDLL(ctypes.util.find_library("krb5") or "libkrb5.so.3")
    p, i = ctypes.c_void_p, ctypes.c_int32
    for name, args in {"krb5_init_context": [ctypes.POINTER(p)], "krb5_free_context": [p],
                       "krb5_kt_resolve": [p, ctypes.c_char_p, ctypes.POINTER(p)], "krb5_kt_close": [p, p],
                       "krb5_rd_req": [p, ctypes.POINTER(p), ctypes.POINTER(_Data), p, p, ctypes.POINTER(i),
                                       ctypes.POINTER(ctypes.POINTER(_Ticket))],
                       "krb5_free_ticket": [p, ctypes.POINTER(_Ticket)], "krb5_auth_con_free": [p, p],
                       "krb5_unparse_name": [p, p, ctypes.POINTER(p)], "krb5_free_unparsed_name": [p, p],
                       "krb5_get_error_message": [p, i], "krb5_free_error_message": [p, p]}.items():
        function = getattr(lib, name)
        function.argtypes = args
        function.restype = p if name == "krb5_get_error_message" else (None if name.startswith("krb5_free")
                                                                        else i)
    return lib


def read_request(keytab: str, request: bytes) -> tuple[str, str]:
    """(client principal, server principal) of an AP-REQ that MIT accepts with `keytab`; Unauthenticated with
    MIT's reason ("Ticket expired", "Request is a replay", "... not found in keytab"...) otherwise."""
    lib = _library()
    context = ctypes.c_void_p()
    code = lib.krb5_init_context(ctypes.byref(context))
    if code:
        raise Unauthenticated(f"the Kerberos library could not start (error {code})")
    table, auth, ticket = ctypes.c_void_p(), ctypes.c_void_p(), ctypes.POINTER(_Ticket)()
    buffer = ctypes.create_string_buffer(request, len(request))
    try:
        _check(lib, context, lib.krb5_kt_resolve(context, keytab.encode(), ctypes.byref(table)))
        data = _Data(0, len(request), ctypes.cast(buffer, ctypes.c_void_p))
        # server NULL: any principal of the keytab (as for Negotiate); MIT keeps the replay cache
        _check(lib, context, lib.krb5_rd_req(context, ctypes.byref(auth), ctypes.byref(data), None, table, None,
                                             ctypes.byref(ticket)))
        return (_name(lib, context, ticket.contents.enc_part2.contents.client),
                _name(lib, context, ticket.contents.server))
    finally:
        if ticket:
            lib.krb5_free_ticket(context, ticket)
        if auth:
            lib.krb5_auth_con_free(context, auth)
        if table:
            lib.krb5_kt_close(context, table)
        lib.krb5_free_context(context)


def _name(lib, context, principal) -> str:
    text = ctypes.c_void_p()
    _check(lib, context, lib.krb5_unparse_name(context, principal, ctypes.byref(text)))
    try:
        return ctypes.string_at(text.value).decode()
    finally:
        lib.krb5_free_unparsed_name(context, text)


def _check(lib, context, code: int) -> None:
    if code:
        message = lib.krb5_get_error_message(context, code)
        try:
            reason = ctypes.string_at(message).decode(errors="replace")
        finally:
            lib.krb5_free_error_message(context, message)
        raise Unauthenticated(f"the Kerberos ticket was refused: {' '.join(reason.split())}")
