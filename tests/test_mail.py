"""The memo as an email: the .eml parses back with the standard library, and
``planner send`` delivers it byte for byte to a real SMTP server (aiosmtpd) that the test
starts on 127.0.0.1. Nothing here talks to any other machine.
"""

from __future__ import annotations

import base64
import email
import email.policy
import mimetypes
import os
import re
import socket
import subprocess
from pathlib import Path

import openpyxl
import pytest
from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult, LoginPassword

from conftest import EXAMPLE, SMALL_WORKLOADS, run_cli, trim_workloads
from planner.memo import mail
from planner.memo import render as memo
from planner.plan.build import build_plan

XLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
TO = ["Capacity team <cap@example.org>", "finance@example.org"]
SENDER = "KV planner <planner@example.org>"
FIXED = ("--fixed-time", "2026-10-01T09:00:00+00:00", "--fixed-sha256", "0123456789abcdef" * 4)


def planner(*args, cwd: Path, env_extra: dict | None = None) -> subprocess.CompletedProcess:
    """In this process (planner.cli.main.main), the password variable never inherited."""
    return run_cli(*args, cwd=cwd, env_extra=env_extra, drop=(mail.PASSWORD_ENV,))


def small_with_demand(path: Path) -> Path:
    """The example cut to its first SMALL_WORKLOADS workloads, with their own Demand rows (the
    example's Demand gives each of them a row in every quarter 2027-Q1..Q4, so the plan's periods
    stay 2027-Q1–Q4) and no Scenarios sheet (its rows name workloads cut away)."""
    wb = openpyxl.load_workbook(EXAMPLE)
    trim_workloads(wb, SMALL_WORKLOADS)
    kept = {r[0] for r in wb["Workloads"].iter_rows(min_row=2, values_only=True)}
    ws = wb["Demand"]
    for r in range(ws.max_row, 1, -1):  # bottom up: the rows above keep their numbers
        if ws.cell(r, 1).value not in kept:
            ws.delete_rows(r)
    assert {(r[0], r[1]) for r in ws.iter_rows(min_row=2, values_only=True)} == {
        (w, f"2027-Q{q}") for w in kept for q in (1, 2, 3, 4)}
    del wb["Scenarios"]
    wb.save(path)
    return path


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    """A run with the memo, its charts and an .eml, of the example cut to 3 workloads (every part
    of the message is there as for the whole example; the whole example's memo: test_memo's goldens)."""
    d = tmp_path_factory.mktemp("mail")
    src = small_with_demand(tmp_path_factory.mktemp("mail-input") / "small.xlsx")
    r = planner("run", src, "-o", d / "q4.xlsx", "--eml", d / "q4.eml", "--to", TO[0], "--to", TO[1],
                "--from", SENDER, "--subject", "Capacity plan 2026-Q4 (α, ≥ 99%)", *FIXED, cwd=d)
    assert r.returncode == 0, r.stderr
    assert f"wrote email {d / 'q4.eml'}" in r.stdout and "not sent" in r.stdout
    return d


def parsed(path: Path) -> email.message.EmailMessage:
    return email.message_from_bytes(path.read_bytes(), policy=email.policy.default)


# --------------------------------------------------------------------------- the .eml
def test_eml_structure_alternatives_inline_images_attachment(run_dir):
    msg = parsed(run_dir / "q4.eml")
    assert msg.get_content_type() == "multipart/mixed"
    assert not msg.defects
    assert [p.get_content_type() for p in msg.walk()] == [
        "multipart/mixed", "multipart/alternative", "text/plain", "multipart/related", "text/html",
        "image/png", "image/png", XLSX]
    for part in msg.walk():
        assert not part.defects, part.get_content_type()

    text = msg.get_body(preferencelist=("plain",))
    html = msg.get_body(preferencelist=("html",))
    assert text.get_content_type() == "text/plain" and html.get_content_type() == "text/html"
    assert text.get_content_charset() == html.get_content_charset() == "utf-8"
    plain, page = text.get_content(), html.get_content()
    assert plain.startswith("KV-CACHE CAPACITY PLAN 2027-Q1–Q4")  # the plan's periods, not the run's quarter and "q4.xlsx (attached)" in plain
    assert "The workbook q4.xlsx is attached" in page

    # every image the HTML shows is an inline part of the message, byte-identical to the chart file
    cids = re.findall(r'<img src="cid:([^"]+)"', page)
    assert len(cids) == 2
    images = {p["Content-ID"].strip("<>"): p for p in msg.walk() if p.get_content_maintype() == "image"}
    assert set(images) == set(cids)
    for cid, part in images.items():
        assert part.get_content_disposition() == "inline"
        assert part.get_content() == (run_dir / part.get_filename()).read_bytes()
    assert {p.get_filename() for p in images.values()} == {"q4-ttft.png", "q4-tpm.png"}
    related = next(p for p in msg.walk() if p.get_content_type() == "multipart/related")
    assert [p.get_content_type() for p in related.iter_parts()][0] == "text/html"

    # the workbook, attached with its proper type, byte for byte
    atts = list(msg.iter_attachments())
    assert len(atts) == 1
    att = atts[0]
    assert att.get_content_type() == XLSX and att.get_content_disposition() == "attachment"
    assert att.get_filename() == "q4.xlsx"
    assert att.get_content() == (run_dir / "q4.xlsx").read_bytes()


def test_eml_headers_and_bodies_match_the_memo(run_dir):
    msg = parsed(run_dir / "q4.eml")
    assert msg["Subject"] == "Capacity plan 2026-Q4 (α, ≥ 99%)"
    assert msg["From"] == SENDER
    assert [a.addr_spec for a in msg["To"].addresses] == ["cap@example.org", "finance@example.org"]
    assert msg["Date"].datetime.isoformat() == "2026-10-01T09:00:00+00:00"
    assert re.fullmatch(r"<[^@<>\s]+@example\.org>", msg["Message-ID"])
    # the HTML body is the memo file's, with the images by cid instead of embedded (data: URIs)
    page = msg.get_body(preferencelist=("html",)).get_content().replace("\r\n", "\n")
    on_disk = (run_dir / "q4-memo.html").read_text(encoding="utf-8")
    cids = re.findall(r'src="cid:([^"]+)"', page)
    assert len(cids) == 2
    for cid, name in zip(cids, ("q4-ttft.png", "q4-tpm.png")):
        uri = "data:image/png;base64," + base64.b64encode((run_dir / name).read_bytes()).decode("ascii")
        page = page.replace(f'src="cid:{cid}"', f'src="{uri}"')
    page = page.replace("The workbook q4.xlsx is attached:", "The workbook q4.xlsx beside this memo holds every "
                                                               "number below as a live Excel model.")
    assert page.replace(" it holds every number below as a live Excel model.", "") == on_disk


def test_eml_is_7bit_with_crlf_and_short_lines(run_dir):
    data = (run_dir / "q4.eml").read_bytes()
    assert max(data) < 128  # 7-bit: any server, any relay
    assert b"\n" not in data.replace(b"\r\n", b"")  # CRLF only: the file is what SMTP carries
    assert data.endswith(b"\r\n")
    assert max(len(line) for line in data.split(b"\r\n")) <= 998


def test_attachment_type_does_not_come_from_mimetypes(monkeypatch, tmp_path):
    monkeypatch.setattr(mimetypes, "guess_type", lambda *a, **k: (None, None))
    monkeypatch.setattr(mimetypes, "types_map", {})
    plan = build_plan(EXAMPLE)
    out = tmp_path / "w.xlsx"
    out.write_bytes(b"PK\x03\x04 not really a workbook, but bytes to attach")
    m = memo.build_memo(plan, out, charts=False)  # the attachment is the point (the charts: run_dir's email)
    msg = email.message_from_bytes(mail.message_bytes(mail.build_message(m, out, to=["a@example.org"])),
                                   policy=email.policy.default)
    att = next(msg.iter_attachments())
    assert att.get_content_type() == XLSX and att.get_content() == out.read_bytes()
    assert msg["Subject"] == m.subject and m.subject.startswith("KV-cache capacity plan 2027-Q1–Q4: ")


@pytest.mark.parametrize("args, message", [
    (("--to", "not-an-address"), "not an email address"),
    (("--to", "a@example.org, b@example.org"), "not one email address"),
    (("--from", "x@example.org\nBcc: victim@example.org"), "line break"),
    (("--subject", "hi\r\nBcc: victim@example.org"), "line break"),
])
def test_bad_addresses_or_subject_are_refused_before_anything_is_written(tmp_path, args, message):
    r = planner("run", EXAMPLE, "-o", tmp_path / "o" / "p.xlsx", "--eml", tmp_path / "o" / "p.eml", *args,
                cwd=tmp_path)
    assert r.returncode == 2 and message in r.stderr, r.stderr
    assert "Traceback" not in r.stderr
    assert not (tmp_path / "o").exists()


def test_email_options_need_eml_and_a_memo(tmp_path):
    r = planner("run", EXAMPLE, "-o", tmp_path / "p.xlsx", "--to", "a@example.org", cwd=tmp_path)
    assert r.returncode == 2 and "need --eml" in r.stderr
    r = planner("run", EXAMPLE, "-o", tmp_path / "p.xlsx", "--eml", tmp_path / "p.eml", "--no-memo", cwd=tmp_path)
    assert r.returncode == 2 and "--no-memo cannot be combined" in r.stderr
    r = planner("run", EXAMPLE, "-o", tmp_path / "p.xlsx", "--eml", tmp_path / "p-memo.md", cwd=tmp_path)
    assert r.returncode == 2 and "must be an .eml file" in r.stderr
    assert os.listdir(tmp_path) == []


# --------------------------------------------------------------------------- sending
class Sink:
    """aiosmtpd handler keeping every message as received."""

    def __init__(self):
        self.messages: list[tuple[str, list[str], bytes]] = []

    async def handle_DATA(self, server, session, envelope):
        self.messages.append((envelope.mail_from, list(envelope.rcpt_tos), envelope.original_content))
        return "250 2.0.0 accepted"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def smtp_server():
    """start(**smtp_options) -> (sink, 'HOST:PORT') of an SMTP server on 127.0.0.1."""
    started = []

    def start(**options):
        sink = Sink()
        ctl = Controller(sink, hostname="127.0.0.1", port=free_port(), ready_timeout=10, **options)
        ctl.start()
        started.append(ctl)
        return sink, f"127.0.0.1:{ctl.port}"

    yield start
    for ctl in started:
        ctl.stop()


def test_send_delivers_the_eml_byte_for_byte(run_dir, smtp_server):
    sink, where = smtp_server()
    eml = run_dir / "q4.eml"
    r = planner("send", eml, "--smtp", where, "--timeout", "10", cwd=run_dir)
    assert r.returncode == 0, r.stderr
    assert f"sent {eml} to cap@example.org, finance@example.org via {where}" in r.stdout
    assert len(sink.messages) == 1
    mail_from, rcpts, content = sink.messages[0]
    assert mail_from == "planner@example.org"
    assert rcpts == ["cap@example.org", "finance@example.org"]
    assert content == eml.read_bytes()
    got = email.message_from_bytes(content, policy=email.policy.default)
    assert next(got.iter_attachments()).get_content() == (run_dir / "q4.xlsx").read_bytes()


@pytest.mark.filterwarnings("ignore:Requiring AUTH while not requiring TLS")  # loopback test server
def test_send_logs_in_with_the_password_from_the_environment(run_dir, smtp_server):
    seen = []

    def authenticator(server, session, envelope, mechanism, auth_data):
        assert isinstance(auth_data, LoginPassword)
        seen.append((auth_data.login, auth_data.password))
        ok = auth_data.password == b"s3cret pass"
        return AuthResult(success=ok, handled=False)  # handled=False: the server answers 535

    sink, where = smtp_server(authenticator=authenticator, auth_require_tls=False, auth_required=True)
    eml = run_dir / "q4.eml"
    base = ("send", eml, "--smtp", where, "--user", "planner", "--timeout", "10")

    r = planner(*base, cwd=run_dir)  # no password in the environment: refused before connecting
    assert r.returncode == 2 and mail.PASSWORD_ENV in r.stderr and "nothing was sent" in r.stderr
    assert seen == [] and sink.messages == []

    r = planner(*base, cwd=run_dir, env_extra={mail.PASSWORD_ENV: "wrong"})
    assert r.returncode == 1 and "login as planner failed" in r.stderr and "Traceback" not in r.stderr
    assert sink.messages == []

    r = planner(*base, cwd=run_dir, env_extra={mail.PASSWORD_ENV: "s3cret pass"})
    assert r.returncode == 0, r.stderr
    assert seen[-1] == (b"planner", b"s3cret pass")
    assert [m[2] for m in sink.messages] == [eml.read_bytes()]


def test_send_has_no_password_option(run_dir):
    r = planner("send", run_dir / "q4.eml", "--smtp", "127.0.0.1:1", "--password", "x", cwd=run_dir)
    assert r.returncode == 2 and "unrecognized arguments: --password" in r.stderr


def test_send_refuses_a_clear_text_password_to_another_host(run_dir):
    r = planner("send", run_dir / "q4.eml", "--smtp", "smtp.example.org:25", "--user", "u", cwd=run_dir,
                env_extra={mail.PASSWORD_ENV: "p"})
    assert r.returncode == 2 and "add --starttls" in r.stderr


def test_send_starttls_to_a_server_without_it_fails_cleanly(run_dir, smtp_server):
    sink, where = smtp_server()
    r = planner("send", run_dir / "q4.eml", "--smtp", where, "--starttls", "--timeout", "10", cwd=run_dir)
    assert r.returncode == 1 and "sending" in r.stderr and "failed" in r.stderr and "STARTTLS" in r.stderr
    assert "Traceback" not in r.stderr and sink.messages == []


def test_send_to_a_closed_port_fails_cleanly(run_dir):
    r = planner("send", run_dir / "q4.eml", "--smtp", f"127.0.0.1:{free_port()}", "--timeout", "5", cwd=run_dir)
    assert r.returncode == 1 and "failed" in r.stderr and "Traceback" not in r.stderr


def test_send_needs_sender_and_recipients(tmp_path, smtp_server, small_example):
    sink, where = smtp_server()
    # the addresses are the point: an email without the charts (--no-charts), of the 3-workload
    # example, is refused the same way
    r = planner("run", small_example, "-o", tmp_path / "p.xlsx", "--eml", tmp_path / "p.eml", "--no-charts", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "no recipient yet" in r.stdout
    r = planner("send", tmp_path / "p.eml", "--smtp", where, cwd=tmp_path)
    assert r.returncode == 2 and "no From address" in r.stderr and "nothing was sent" in r.stderr
    data = (tmp_path / "p.eml").read_bytes().replace(b"Subject:", b"From: a@example.org\r\nSubject:", 1)
    (tmp_path / "q.eml").write_bytes(data)
    r = planner("send", tmp_path / "q.eml", "--smtp", where, cwd=tmp_path)
    assert r.returncode == 2 and "no recipient" in r.stderr
    (tmp_path / "b.eml").write_bytes(data.replace(b"Subject:", b"To: b@example.org\r\nBcc: c@example.org\r\n"
                                                  b"Subject:", 1))
    r = planner("send", tmp_path / "b.eml", "--smtp", where, cwd=tmp_path)
    assert r.returncode == 2 and "Bcc" in r.stderr
    assert sink.messages == []
    r = planner("send", tmp_path / "missing.eml", "--smtp", where, cwd=tmp_path)
    assert r.returncode == 2 and "no such file" in r.stderr
    r = planner("send", tmp_path / "p.eml", "--smtp", "nohostport", cwd=tmp_path)
    assert r.returncode == 2 and "HOST:PORT" in r.stderr
