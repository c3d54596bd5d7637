"""The memo as a ready-to-send email (.eml), and sending one.

:func:`build_message` makes a standard MIME message::

    multipart/mixed
    ├── multipart/alternative
    │   ├── text/plain                 the memo's plain-text body
    │   └── multipart/related
    │       ├── text/html              the HTML memo, images as cid: references
    │       └── image/png ...          the charts, inline
    └── application/vnd.openxmlformats-officedocument.spreadsheetml.sheet
                                       the workbook, attached byte for byte

All parts are 7-bit clean (quoted-printable or base64) and lines end in CRLF, so the
file is exactly what goes over SMTP. The workbook's type is set explicitly, never taken
from the platform's mimetypes table (which lacks .xlsx on some systems).

Nothing is ever sent by ``planner run``: only :func:`send_eml` (``planner send``) talks
to a mail server, with the password from the environment variable
:data:`PASSWORD_ENV`, never from the command line.
"""

from __future__ import annotations

import datetime as _dt
import email
import email.policy
import ipaddress
import smtplib
import ssl
from email.message import EmailMessage
from email.utils import format_datetime, getaddresses, make_msgid, parseaddr
from pathlib import Path

XLSX_TYPE = ("application", "vnd.openxmlformats-officedocument.spreadsheetml.sheet")
PASSWORD_ENV = "PLANNER_SMTP_PASSWORD"
POLICY = email.policy.SMTP.clone(cte_type="7bit")  # CRLF line ends; 8-bit text as QP/base64
DEFAULT_TIMEOUT = 60.0  # seconds, for every SMTP operation


class SendError(Exception):
    """Sending failed (connection, TLS, authentication or the server refused)."""


# --------------------------------------------------------------------------- addresses
def check_address(value: str, what: str) -> str:
    """One address (``ann@example.org`` or ``Ann <ann@example.org>``), checked.

    Parameters
    ----------
    value : str
        The address as given on the command line.
    what : str
        Its option, for the message (``--to``).

    Returns
    -------
    str
        The address, stripped.

    Raises
    ------
    ValueError
        Not exactly one address with a local part and a domain, or a line break in it.
    """
    v = value.strip()
    if any(c in v for c in "\r\n\0"):
        raise ValueError(f"{what} {value!r}: an address may not contain a line break")
    found = getaddresses([v])
    if len(found) != 1 or not found[0][1]:
        raise ValueError(f"{what} {value!r}: not one email address")
    local, at, domain = found[0][1].rpartition("@")
    if not at or not local or not domain or " " in found[0][1]:
        raise ValueError(f"{what} {value!r}: not an email address (name@domain)")
    return v


def check_headers(to: list[str] | None, sender: str | None, subject: str | None) -> None:
    """Check the ``--to``, ``--from`` and ``--subject`` values before anything is written.

    Raises
    ------
    ValueError
        With the offending option and value.
    """
    for a in to or []:
        check_address(a, "--to")
    if sender is not None:
        check_address(sender, "--from")
    from planner.inputs.cells import line_break

    if subject is not None and (brk := line_break(subject, strip=False)):
        raise ValueError(f"--subject may not contain a line break ({brk})")


# --------------------------------------------------------------------------- build
def build_message(memo, workbook: str | Path, *, to: list[str] | None = None, sender: str | None = None,
                  subject: str | None = None, date: _dt.datetime | None = None) -> EmailMessage:
    """The email of ``memo`` with ``workbook`` attached.

    Parameters
    ----------
    memo : planner.memo.render.Memo
        The rendered memo (its ``email_text``, ``email_html`` and ``charts``).
    workbook : path
        The written workbook; attached byte for byte under its file name.
    to : list of str, optional
        Recipients (``To``); the message can be completed in a mail client without.
    sender : str, optional
        ``From``; ``planner send`` needs it.
    subject : str, optional
        Default: the memo's subject line (quarter, GPUs and cost per hour).
    date : datetime, optional
        ``Date`` header; default now.

    Returns
    -------
    email.message.EmailMessage
    """
    check_headers(to, sender, subject)
    workbook = Path(workbook)
    msg = EmailMessage(policy=POLICY)
    msg["Subject"] = subject if subject is not None else memo.subject
    if sender:
        msg["From"] = sender
    if to:
        msg["To"] = ", ".join(to)
    msg["Date"] = format_datetime(date or _dt.datetime.now(_dt.timezone.utc))
    domain = parseaddr(sender)[1].rpartition("@")[2] if sender else ""
    msg["Message-ID"] = make_msgid(idstring="kv-planner", domain=domain or "kv-planner.invalid")
    msg.set_content(memo.email_text, subtype="plain", charset="utf-8")
    msg.add_alternative(memo.email_html, subtype="html", charset="utf-8")
    html = msg.get_payload()[1]
    for c in memo.charts:
        html.add_related(c.png, maintype="image", subtype="png", cid=f"<{c.cid}>", filename=c.filename,
                         disposition="inline")
    msg.add_attachment(workbook.read_bytes(), maintype=XLSX_TYPE[0], subtype=XLSX_TYPE[1],
                       filename=workbook.name)
    return msg


def message_bytes(msg: EmailMessage) -> bytes:
    """The message as an .eml file holds it and SMTP carries it (CRLF, 7-bit)."""
    data = msg.as_bytes(policy=POLICY)
    return data if data.endswith(b"\r\n") else data + b"\r\n"


# --------------------------------------------------------------------------- send
def parse_smtp(value: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[::1]:25`` for IPv6) as ``(host, port)``; ValueError if malformed."""
    host, sep, port = value.strip().rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"--smtp {value!r}: give HOST:PORT, e.g. smtp.example.org:587")
    return host.strip("[]"), int(port)


def _is_loopback(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def envelope(data: bytes) -> tuple[str, list[str]]:
    """Sender and recipients of a message: ``From`` and every ``To``/``Cc`` address.

    Raises
    ------
    ValueError
        No From, no recipient, or a ``Bcc`` header (it would be delivered to everyone).
    """
    msg = email.message_from_bytes(data, policy=email.policy.default)
    if msg.get("Bcc") is not None:
        raise ValueError("the message has a Bcc header, which every recipient would see: remove it")
    sender = parseaddr(str(msg.get("From") or ""))[1]
    if not sender:
        raise ValueError("the message has no From address: build it with planner run --eml ... --from ADDR")
    rcpts = [a for _, a in getaddresses([str(v) for v in (msg.get_all("To") or []) + (msg.get_all("Cc") or [])])
             if a]
    if not rcpts:
        raise ValueError("the message has no recipient: build it with planner run --eml ... --to ADDR")
    return sender, rcpts


def send_eml(path: str | Path, host: str, port: int, *, starttls: bool = False, user: str | None = None,
             password: str | None = None, timeout: float = DEFAULT_TIMEOUT) -> list[str]:
    """Send the .eml file ``path`` as it is, byte for byte, over SMTP.

    Parameters
    ----------
    path : path
        The message (as written by ``planner run --eml``).
    host, port : str, int
        The SMTP server.
    starttls : bool, default False
        Upgrade the connection with STARTTLS (certificate verified) before anything else.
    user, password : str, optional
        Log in; a password is refused over an unencrypted connection to another machine.
    timeout : float
        Seconds for each network operation.

    Returns
    -------
    list of str
        The recipients the server accepted.

    Raises
    ------
    ValueError
        The message or the options are wrong (nothing was sent).
    SendError
        Connecting, TLS, login or delivery failed.
    """
    data = Path(path).read_bytes()
    sender, rcpts = envelope(data)
    if user and password is None:
        raise ValueError(f"--user needs the password in the environment variable {PASSWORD_ENV}")
    if user and not starttls and not _is_loopback(host):
        raise ValueError(f"refusing to send a password unencrypted to {host}: add --starttls")
    try:
        with smtplib.SMTP(host, port, timeout=timeout) as smtp:
            smtp.ehlo()
            if starttls:
                smtp.starttls(context=ssl.create_default_context())
                smtp.ehlo()
            if user:
                smtp.login(user, password or "")
            opts = ["BODY=8BITMIME"] if any(b > 127 for b in data) and smtp.has_extn("8bitmime") else []
            refused = smtp.sendmail(sender, rcpts, data, mail_options=opts)
    except smtplib.SMTPRecipientsRefused as err:
        raise SendError(f"{host}:{port} refused every recipient: "
                        + "; ".join(f"{a} ({c} {m.decode(errors='replace')})" for a, (c, m) in
                                    err.recipients.items())) from None
    except smtplib.SMTPAuthenticationError as err:
        raise SendError(f"{host}:{port}: login as {user} failed ({err.smtp_code} "
                        f"{err.smtp_error.decode(errors='replace')})") from None
    except smtplib.SMTPResponseException as err:
        raise SendError(f"{host}:{port}: {err.smtp_code} {err.smtp_error.decode(errors='replace')}") from None
    except (smtplib.SMTPException, ssl.SSLError, OSError) as err:
        raise SendError(f"{host}:{port}: {err}") from None
    return [a for a in rcpts if a not in refused]
